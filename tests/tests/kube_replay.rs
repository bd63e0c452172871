//! From the lab to a cluster, the same `.so` (issue 47): the packing experiment's pod list
//! replayed through a real API server (`tools/kube/cluster.sh`, KWOK as the kubelet) by
//! `allocator-master kube-replay`, placed by `allocator-master kube` with the module libraries
//! `experiment` loads, ends with the allocated-GPU share the experiment computes on the same
//! nodes, pods, policy and seed (read back from the API: what is bound where).
//!
//! Small: 40 of the 1,213 GPU nodes (taken evenly along the list, so its GPU models are mixed)
//! and the default pod list tuned to 1.3 × their GPUs, as the experiment tunes it.

use std::path::Path;

use serde_json::Value;
use workspace_tests::kube::Cluster;
use workspace_tests::{master, run_master};

const NODES: &str = "data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv";
const PODS: &str = "data/alibaba-gpu-v2023/openb_pod_list_default.csv";

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("the JSON output");
    serde_json::from_str(&text).expect("JSON")
}

/// What one replay gave: the experiment's and the cluster's allocated-GPU %, pods, pods bound,
/// and the pods whose node differs (`name: experiment's node, cluster's node`).
struct Replayed {
    experiment: f64,
    cluster: f64,
    pods: u64,
    bound: u64,
    moved: Vec<String>,
}

/// Replays the small pod list with `policy` and seed 42, one pod stated a run (as the
/// experiment places them).
fn replay(policy: &str) -> Replayed {
    let cluster = Cluster::start();
    cluster.kwok();
    let dir = cluster.dir().to_owned();
    let kubeconfig = cluster.kubeconfig.display().to_string();
    let manifest = dir.join("modules.json").display().to_string();
    let plan = dir.join("trace.json");
    let created = run_master(&[
        "kube-replay",
        "trace",
        "--kubeconfig",
        &kubeconfig,
        "--nodes",
        NODES,
        "--pods",
        PODS,
        "--seed",
        "42",
        "--node_limit",
        "40",
        "--allocator",
        policy,
        "--modules",
        "examples/modules.json",
        "--manifest_out",
        &manifest,
        "--output",
        &plan.display().to_string(),
    ]);
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let plan = read_json(&plan);
    let pods = plan["pods"].as_u64().expect("pods");
    let master = master().display().to_string();
    let measured = dir.join("measure.json");
    let log = dir.join("scheduler.log").display().to_string();
    let out = run_master(&[
        "kube-replay",
        "measure",
        "--kubeconfig",
        &kubeconfig,
        "--namespace",
        "replay",
        "--expect",
        &pods.to_string(),
        "--settle",
        "5",
        "--timeout",
        "90",
        "--label",
        policy,
        "--log",
        &log,
        "--output",
        &measured.display().to_string(),
        "--",
        &master,
        "kube",
        "--kubeconfig",
        &kubeconfig,
        "--listen",
        "127.0.0.1:0",
        "--roles_config_map",
        "none",
        "--modules",
        &manifest,
        "--allocator",
        policy,
        "--seed",
        "42",
        "--allocation_interval",
        "20ms",
        "--request_window",
        "1",
    ]);
    assert!(
        out.status.success(),
        "{}\nthe scheduler's log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let measured = read_json(&measured);
    let ours = &measured["placements"];
    let moved = plan["experiment_placements"]
        .as_object()
        .expect("the experiment's placements")
        .iter()
        .filter(|(pod, node)| ours[pod.as_str()] != **node)
        .map(|(pod, node)| format!("{pod}: {node}, {}", ours[pod.as_str()]))
        .collect();
    Replayed {
        experiment: plan["experiment_allocated_percent"].as_f64().expect("experiment %"),
        cluster: measured["allocated_gpu_percent"].as_f64().expect("cluster %"),
        pods,
        bound: measured["bound"].as_u64().expect("bound"),
        moved,
    }
}

/// The cluster's allocated-GPU share is the experiment's within 1 pp; in fact every pod is
/// bound to the node the experiment put it on (none moved).
fn check(policy: &str) {
    let r = replay(policy);
    eprintln!(
        "{policy}: experiment {:.2} %, cluster {:.2} % ({} of {} pods bound, {} on another node)",
        r.experiment,
        r.cluster,
        r.bound,
        r.pods,
        r.moved.len()
    );
    assert!(r.bound > 0 && r.bound <= r.pods);
    assert!(
        (r.experiment - r.cluster).abs() <= 1.0,
        "{policy}: the cluster allocates {:.2} % of the GPUs, the experiment {:.2} %",
        r.cluster,
        r.experiment
    );
    assert!(
        r.moved.is_empty(),
        "{policy}: pods on another node than the experiment's: {:?}",
        r.moved
    );
}

#[test]
fn fgd_on_the_cluster_binds_each_pod_where_the_experiment_places_it() {
    check("FGD");
}

#[test]
fn bestfit_on_the_cluster_binds_each_pod_where_the_experiment_places_it() {
    check("BestFit");
}

#[test]
fn random_on_the_cluster_binds_each_pod_where_the_experiment_places_it() {
    check("Random");
}
