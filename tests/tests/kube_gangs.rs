//! Pod groups (gangs) against a real API server (`tools/kube/cluster.sh`): a group of pods
//! labelled `scheduling.x-k8s.io/pod-group` with `scheduling.x-k8s.io/min-member` is bound
//! whole or not at all, and says while it waits how many members are missing. Every check reads
//! what is bound where from the API.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use workspace_tests::kube::{Cluster, NodeSpec, Placed};
use workspace_tests::manifest_for;

fn gpu_pod(name: &str, gpus: u32, extra: Value) -> Value {
    let mut pod = json!({"metadata": {"name": name, "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "image": "registry.invalid/pause",
            "resources": {"requests": {"cpu": "1", "memory": "256Mi"},
                          "limits": {"nvidia.com/gpu": gpus.to_string()}}}]}});
    if let (Some(meta), Some(extra)) = (pod["metadata"].as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            meta.insert(k.clone(), v.clone());
        }
    }
    pod
}

fn gang_member(i: usize, min_member: u32) -> Value {
    gpu_pod(
        &format!("train-{i}"),
        1,
        json!({"labels": {"scheduling.x-k8s.io/pod-group": "train"},
               "annotations": {"scheduling.x-k8s.io/min-member": min_member.to_string()}}),
    )
}

fn gang_bound(pods: &[Placed]) -> Vec<&Placed> {
    pods.iter().filter(|p| p.name.starts_with("train-") && p.node.is_some()).collect()
}

/// Two nodes of two GPUs; a pod bound before the scheduler starts holds both GPUs of `gpu-1`;
/// a gang of four one-GPU pods (minMember 4) stays Pending, none bound, with a reason that
/// says two fit and two are missing, until the holder goes; then all four bind, two a node.
fn a_gang_waits_whole_then_binds_whole(args: &[&str]) {
    let cluster = Cluster::start();
    cluster.namespace("ml");
    for n in ["gpu-0", "gpu-1"] {
        let mut node = NodeSpec::new(n, 16);
        node.gpus = 2;
        cluster.node(&node);
    }
    // Bound by hand (as another scheduler would): it counts as used on gpu-1.
    let mut holder = gpu_pod("holder-bound", 2, json!({}));
    holder["spec"]["nodeName"] = json!("gpu-1");
    cluster.pod(holder, 0);
    for i in 0..4 {
        cluster.pod(gang_member(i, 4), 0);
    }
    let (_scheduler, _lines) = cluster.scheduler(args);
    let start = Instant::now();
    let mut reason = None;
    while start.elapsed() < Duration::from_secs(30) {
        let pods = cluster.placed();
        assert!(gang_bound(&pods).is_empty(), "no member bound while two GPUs are free: {pods:?}");
        if let Some((_, _, message)) = cluster.scheduled_condition("ml", "train-0")
            && message.contains("pod group")
        {
            reason = Some(message);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let reason = reason.expect("a PodScheduled=False condition for the waiting gang");
    assert!(reason.contains("pod group 'ml/train'"), "{reason}");
    assert!(
        reason.contains("2 of the 4 pods it needs at once fit now on 1 of 2 node(s)"),
        "{reason}"
    );
    assert!(reason.contains("2 missing"), "{reason}");
    let events = cluster.events_of("ml", "train-0");
    assert!(
        events.iter().any(|(r, n)| r == "FailedScheduling" && n.contains("2 missing")),
        "{events:?}"
    );
    // Still nothing bound a while later (several allocation runs of 100 ms).
    std::thread::sleep(Duration::from_millis(1500));
    assert!(gang_bound(&cluster.placed()).is_empty(), "still none bound");
    cluster.delete_pod("ml", "holder-bound");
    let (done, pods) = cluster.wait_pods(30.0, |pods| gang_bound(pods).len() == 4);
    assert!(done, "all four bind once four GPUs are free: {pods:?}");
    let on =
        |node: &str| gang_bound(&pods).iter().filter(|p| p.node.as_deref() == Some(node)).count();
    assert_eq!((on("gpu-0"), on("gpu-1")), (2, 2), "{pods:?}");
}

#[test]
fn a_gpu_gang_waits_whole_and_binds_whole_with_bestfit() {
    let manifest = manifest_for("bestfit_placement", &["BestFit"]);
    a_gang_waits_whole_then_binds_whole(&["--modules", &manifest, "--allocator", "BestFit"]);
}

#[test]
fn a_gpu_gang_waits_whole_and_binds_whole_with_the_built_in_allocator() {
    // The built-in allocator ignores requests: the client binds the gang only when all of it
    // fits in the offers of one run.
    a_gang_waits_whole_then_binds_whole(&[]);
}

#[test]
fn a_gang_without_all_its_members_created_waits_and_says_so() {
    let cluster = Cluster::start();
    cluster.namespace("ml");
    let mut node = NodeSpec::new("gpu-0", 16);
    node.gpus = 8;
    cluster.node(&node);
    for i in 0..3 {
        cluster.pod(gang_member(i, 4), 0);
    }
    let (_scheduler, _lines) = cluster.scheduler(&[]);
    let mut reason = None;
    for _ in 0..200 {
        assert!(gang_bound(&cluster.placed()).is_empty(), "three of minMember 4: none bound");
        if let Some((_, _, m)) = cluster.scheduled_condition("ml", "train-0")
            && m.contains("pod group")
        {
            reason = Some(m);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let reason = reason.expect("a reason");
    assert!(reason.contains("1 more must be created"), "{reason}");
    cluster.pod(gang_member(3, 4), 0);
    let (done, pods) = cluster.wait_pods(30.0, |pods| gang_bound(pods).len() == 4);
    assert!(done, "the fourth member completes the gang: {pods:?}");
}
