//! `allocator-master kube` against a real API server (`tools/kube/cluster.sh`): every check
//! reads what is bound where from the API, never from the scheduler's own books.

use std::collections::BTreeMap;

use allocator_api::AllocatorOptions;
use allocator_host::master::Setup;
use allocator_host::registry::ModuleRegistry;
use allocator_sim::allocator_scenario::AllocatorScenario;
use allocator_sim::driver::Driver;
use allocator_sim::output::EventStream;
use allocator_sim::scenario::Document;
use serde_json::{Value, json};
use workspace_tests::kube::{Cluster, NodeSpec, Placed, per_node};
use workspace_tests::manifest_for;

/// No node holds more than it has, by the pods bound there (cpu, and pods per node).
fn assert_not_overcommitted(pods: &[Placed], cpu_milli: i64, max_pods: usize) {
    for (node, (cpu, count)) in per_node(pods) {
        assert!(cpu <= cpu_milli, "{node} over-committed: {cpu}m of {cpu_milli}m");
        assert!(count <= max_pods, "{node} holds {count} pods, more than {max_pods}");
    }
}

fn bound_in(pods: &[Placed], ns: &str) -> usize {
    pods.iter().filter(|p| p.namespace == ns && p.node.is_some()).count()
}

fn bound(pods: &[Placed]) -> usize {
    pods.iter().filter(|p| p.node.is_some()).count()
}

const TEAMS: [(&str, f64); 3] = [("team-a", 1.0), ("team-b", 1.0), ("team-c", 2.0)];
const NODES: usize = 50;
const PODS_PER_TEAM: usize = 120;

/// The built-in master's answer for the same cluster and demand, through the simulated
/// frameworks (one per namespace, as the scheduler makes of bare pods), with allocation paused
/// while it is set up as the scheduler does at start: running tasks per namespace.
fn built_in_answer(allocator: &str, registry: &ModuleRegistry) -> BTreeMap<String, usize> {
    let mut events = vec![json!({"op": "pause"})];
    for i in 0..NODES {
        events.push(json!({"op": "add_agent", "agent": format!("node-{i:02}"),
            "resources": "cpus:4;mem:16384;pods:110"}));
    }
    let weights: serde_json::Map<String, Value> =
        TEAMS.iter().map(|(t, w)| (t.to_string(), json!(w))).collect();
    events.push(json!({"op": "update_weights", "weights": weights}));
    for (team, _) in TEAMS {
        events.push(json!({"op": "add_framework", "framework": format!("{team}/pods"),
            "roles": [team], "capabilities": ["MULTI_ROLE", "GPU_RESOURCES"],
            "tasks": {"resources": "cpus:1;mem:256;pods:1", "count": PODS_PER_TEAM,
                      "refuse_seconds": 2, "request": PODS_PER_TEAM}}));
    }
    events.push(json!({"op": "resume"}));
    events.push(json!({"op": "advance", "seconds": 5}));
    let mut root = serde_json::Map::new();
    root.insert("events".into(), Value::Array(events));
    let doc = Document { file: "kube-twin".into(), root };
    let scenario = AllocatorScenario::parse(&doc).expect("the twin scenario parses");
    let options = AllocatorOptions {
        allocation_interval: 0.1,
        fairness_excluded_resource_names: vec!["pods".into()].into(),
        ..AllocatorOptions::default()
    };
    let mut setup = Setup::new(allocator, "drf", "drf");
    setup.options =
        AllocatorOptions { role_sorter: "drf".into(), framework_sorter: "drf".into(), ..options };
    let mut driver = Driver::new(registry, setup, "kube-twin").expect("a master");
    driver.run(&scenario, &mut EventStream::sink()).expect("the twin runs");
    TEAMS
        .iter()
        .map(|(t, _)| {
            let n = driver.master().running_tasks(&format!("{t}/pods")).unwrap_or(0);
            (t.to_string(), n)
        })
        .collect()
}

/// Three namespaces weighted 1/1/2 (from the roles ConfigMap) on 50 nodes of 4 cores, 120 pods
/// of one core each: the shares the scheduler reaches through the API are the built-in
/// master's for the same demand, within one pod, and no node is over-committed.
fn weighted_shares(allocator: &str, extra: &[&str]) {
    let cluster = Cluster::start();
    for (team, _) in TEAMS {
        cluster.namespace(team);
    }
    for i in 0..NODES {
        cluster.node(&NodeSpec::new(&format!("node-{i:02}"), 4));
    }
    let roles: serde_json::Map<String, Value> =
        TEAMS.iter().map(|(t, w)| (t.to_string(), json!({"weight": w}))).collect();
    cluster.namespace("kube-system");
    cluster.roles(Value::Object(roles));
    for (team, _) in TEAMS {
        cluster.pods(team, "p", PODS_PER_TEAM, 1000);
    }
    let mut args = vec!["--allocator", allocator];
    args.extend_from_slice(extra);
    let (_scheduler, _lines) = cluster.scheduler(&args);
    // 200 cores for 360 pods: the cluster fills up, then nothing moves.
    let (done, pods) = cluster.wait_pods(60.0, |pods| bound(pods) == NODES * 4);
    assert!(done, "{allocator}: the cluster fills up; bound: {}", bound(&pods));
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pods = cluster.placed();
    assert_eq!(bound(&pods), NODES * 4, "{allocator}: nothing more is bound");
    assert_not_overcommitted(&pods, 4000, 110);
    let mut registry = ModuleRegistry::new();
    if allocator != "hierarchical" {
        let text = manifest_for(&format!("{}_placement", allocator.to_lowercase()), &[allocator]);
        let (m, source) = allocator_host::manifest::from_flag(&text).expect("a manifest");
        registry.load_manifest(&m, &source).expect("the placement module loads");
    }
    let expected = built_in_answer(allocator, &registry);
    for (team, _) in TEAMS {
        let got = bound_in(&pods, team);
        let want = expected[team];
        assert!(
            got.abs_diff(want) <= 1,
            "{allocator}: {team} got {got} pods, the built-in master's answer is {want} ({expected:?})"
        );
    }
}

#[test]
fn weighted_namespaces_reach_the_built_in_masters_drf_shares() {
    weighted_shares("hierarchical", &[]);
}

#[test]
fn weighted_namespaces_reach_the_same_shares_with_the_drf_sorter_module() {
    let manifest = manifest_for("drf_sorter", &["drf"]);
    weighted_shares(
        "hierarchical",
        &["--modules", &manifest, "--role_sorter", "drf", "--framework_sorter", "drf"],
    );
}

#[test]
fn placement_modules_bestfit_and_fgd_schedule_the_cluster_without_over_committing() {
    for allocator in ["BestFit", "FGD"] {
        let manifest =
            manifest_for(&format!("{}_placement", allocator.to_lowercase()), &[allocator]);
        weighted_shares(allocator, &["--modules", &manifest]);
    }
}

#[test]
fn taints_selectors_affinity_and_cordons_are_respected() {
    let cluster = Cluster::start();
    cluster.namespace("apps");
    let mut ssd = NodeSpec::new("ssd-0", 4);
    ssd.labels = vec![("disk".into(), "ssd".into()), ("zone".into(), "a".into())];
    let mut gpu = NodeSpec::new("tainted-0", 4);
    gpu.taints = vec![("dedicated".into(), "ml".into())];
    gpu.labels = vec![("zone".into(), "b".into())];
    let plain = NodeSpec::new("plain-0", 4);
    let cordoned = NodeSpec::new("cordoned-0", 4);
    for n in [&ssd, &gpu, &plain, &cordoned] {
        cluster.node(n);
    }
    cluster.cordon("cordoned-0");
    // Two pods that want ssd, two that tolerate the taint and require zone b, two plain.
    for i in 0..2 {
        cluster.pod(
            json!({"metadata": {"name": format!("ssd-{i}"), "namespace": "apps"},
            "spec": {"nodeSelector": {"disk": "ssd"}}}),
            1000,
        );
        cluster.pod(json!({"metadata": {"name": format!("ml-{i}"), "namespace": "apps"},
            "spec": {
                "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}}
            }}), 1000);
        cluster.pod(json!({"metadata": {"name": format!("plain-{i}"), "namespace": "apps"}}), 1000);
    }
    // Pod anti-affinity is not supported: it stays Pending with an event saying so.
    cluster.pod(json!({"metadata": {"name": "anti", "namespace": "apps"},
        "spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}}}), 100);
    let (_scheduler, _lines) = cluster.scheduler(&[]);
    let (done, pods) = cluster.wait_pods(30.0, |pods| bound(pods) == 6);
    assert!(done, "six pods bound: {pods:?}");
    for p in &pods {
        let node = p.node.as_deref();
        match p.name.as_str() {
            n if n.starts_with("ssd-") => assert_eq!(node, Some("ssd-0"), "{n}"),
            n if n.starts_with("ml-") => assert_eq!(node, Some("tainted-0"), "{n}"),
            n if n.starts_with("plain-") => {
                assert!(matches!(node, Some("ssd-0" | "plain-0")), "{n} on {node:?}")
            }
            "anti" => assert_eq!(node, None, "an unsupported pod stays Pending"),
            _ => {}
        }
        assert_ne!(node, Some("cordoned-0"), "a cordoned node gets nothing new");
    }
    let mut reason = None;
    for _ in 0..100 {
        reason = cluster.scheduled_condition("apps", "anti");
        if reason.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (status, why, message) = reason.expect("a PodScheduled condition on the unsupported pod");
    assert_eq!((status.as_str(), why.as_str()), ("False", "Unschedulable"));
    assert!(message.contains("pod anti-affinity"), "{message}");
    let events = cluster.events_of("apps", "anti");
    assert!(
        events.iter().any(|(r, n)| r == "FailedScheduling" && n.contains("pod anti-affinity")),
        "{events:?}"
    );
}

#[test]
fn gpu_share_pods_get_a_device_index_and_two_halves_share_one_device() {
    let cluster = Cluster::start();
    cluster.namespace("ml");
    let mut node = NodeSpec::new("gpu-0", 16);
    node.gpus = 2;
    node.labels = vec![("nvidia.com/gpu.product".into(), "V100".into())];
    cluster.node(&node);
    for i in 0..2 {
        cluster.pod(
            json!({"metadata": {"name": format!("half-{i}"), "namespace": "ml",
            "annotations": {"alibabacloud.com/gpu-milli": "500"}}}),
            1000,
        );
    }
    cluster.pod(
        json!({"metadata": {"name": "whole", "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "image": "registry.invalid/pause",
            "resources": {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]}}),
        0,
    );
    // A third whole GPU does not exist: it waits.
    cluster.pod(
        json!({"metadata": {"name": "too-many", "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "image": "registry.invalid/pause",
            "resources": {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "2"}}}]}}),
        0,
    );
    let (_scheduler, _lines) = cluster.scheduler(&[]);
    let (done, pods) = cluster.wait_pods(30.0, |pods| bound(pods) == 3);
    assert!(done, "three pods bound: {pods:?}");
    let index = |name: &str| -> String {
        let p = pods.iter().find(|p| p.name == name).expect("the pod");
        p.annotations
            .get("alibabacloud.com/gpu-index")
            .cloned()
            .unwrap_or_else(|| panic!("{name} has a device index: {p:?}"))
    };
    assert_eq!(index("half-0"), index("half-1"), "the two halves share one device");
    assert_ne!(index("half-0"), index("whole"), "the whole GPU is the other device");
    assert!(pods.iter().any(|p| p.name == "too-many" && p.node.is_none()));
}

#[test]
fn deleting_a_pod_frees_its_room_for_the_next() {
    let cluster = Cluster::start();
    cluster.namespace("q");
    cluster.node(&NodeSpec::new("only", 2));
    cluster.pods("q", "p", 3, 1000);
    let (_scheduler, _lines) = cluster.scheduler(&[]);
    let (done, pods) = cluster.wait_pods(30.0, |pods| bound(pods) == 2);
    assert!(done, "two fit: {pods:?}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(bound(&cluster.placed()), 2, "the third does not fit");
    let first = pods.iter().find(|p| p.node.is_some()).expect("a bound pod").name.clone();
    cluster.delete_pod("q", &first);
    let (done, pods) = cluster.wait_pods(30.0, |pods| pods.len() == 2 && bound(pods) == 2);
    assert!(done, "the waiting pod took the room: {pods:?}");
}

#[test]
fn a_bound_pod_has_the_scheduled_event_kube_scheduler_writes() {
    let cluster = Cluster::start();
    cluster.namespace("seen");
    cluster.node(&NodeSpec::new("n0", 4));
    cluster.pods("seen", "p", 1, 500);
    let (_scheduler, _lines) = cluster.scheduler(&[]);
    let (done, pods) = cluster.wait_pods(30.0, |pods| bound(pods) == 1);
    assert!(done, "{pods:?}");
    let want = ("Scheduled".to_owned(), "Successfully assigned seen/p-0 to n0".to_owned());
    let mut events = Vec::new();
    for _ in 0..100 {
        events = cluster.events_of("seen", "p-0");
        if events.contains(&want) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(events, vec![want], "the pod's events");
}

#[test]
fn a_backlog_that_fits_is_bound_without_a_single_failed_scheduling_report() {
    // 96 pods stated 8 at a time: each new window is stated after a run placed the last one.
    // None of them is ever refused by a run over every node, so none is told it waits (as
    // kube-scheduler tells no pod of its active queue), whatever the runs in between.
    let cluster = Cluster::start();
    cluster.namespace("backlog");
    for i in 0..4 {
        cluster.node(&NodeSpec::new(&format!("n{i}"), 32));
    }
    cluster.pods("backlog", "p", 96, 250);
    let (scheduler, _lines) = cluster.scheduler(&["--request_window", "8"]);
    let (done, pods) = cluster.wait_pods(60.0, |pods| bound(pods) == 96);
    assert!(done, "all 96 fit: {pods:?}");
    let (status, metrics) = scheduler.request("GET", "/metrics/snapshot", "");
    assert_eq!(status, 200, "{metrics}");
    let metrics: Value = serde_json::from_str(&metrics).expect("metrics JSON");
    assert_eq!(metrics["kubernetes/failed_scheduling_reports"], json!(0.0), "{metrics}");
    let told: Vec<_> = pods
        .iter()
        .filter(|p| {
            cluster.events_of("backlog", &p.name).iter().any(|(r, _)| r == "FailedScheduling")
        })
        .map(|p| p.name.clone())
        .collect();
    assert!(told.is_empty(), "pods told they wait: {told:?}");
}

#[test]
fn a_pod_held_by_a_quota_limit_says_so_where_kubernetes_users_look() {
    let cluster = Cluster::start();
    cluster.namespace("kube-system");
    cluster.namespace("capped");
    cluster.node(&NodeSpec::new("n0", 8));
    cluster.roles(json!({"capped": {"quota": {"limits": "cpus:2"}}}));
    cluster.pods("capped", "p", 3, 1000);
    let (_scheduler, _lines) = cluster.scheduler(&[]);
    let (done, pods) = cluster.wait_pods(30.0, |pods| bound(pods) == 2);
    assert!(done, "two within the quota: {pods:?}");
    let waiting = pods.iter().find(|p| p.node.is_none()).expect("one waits").name.clone();
    let mut condition = None;
    for _ in 0..100 {
        condition = cluster.scheduled_condition("capped", &waiting);
        if condition.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (status, reason, message) = condition.expect("a PodScheduled condition");
    assert_eq!((status.as_str(), reason.as_str()), ("False", "Unschedulable"));
    assert!(message.contains("quota limit of role 'capped': cpus 2"), "{message}");
    let events = cluster.events_of("capped", &waiting);
    assert!(
        events.iter().any(|(r, n)| r == "FailedScheduling" && n.contains("quota limit")),
        "{events:?}"
    );
    assert_eq!(bound(&cluster.placed()), 2, "still two");
}

#[test]
fn a_restarted_scheduler_binds_every_pending_pod_exactly_once() {
    let cluster = Cluster::start();
    cluster.namespace("batch");
    for i in 0..20 {
        cluster.node(&NodeSpec::new(&format!("n{i:02}"), 8));
    }
    cluster.pods("batch", "first", 150, 500);
    let (scheduler, _lines) =
        cluster.scheduler(&["--kube_api_qps", "50", "--kube_api_burst", "10"]);
    let (some, _) = cluster.wait_pods(30.0, |pods| bound(pods) >= 20);
    assert!(some, "some pods bound before the kill");
    // SIGKILL mid-way: bindings in flight are lost with it.
    drop(scheduler);
    cluster.pods("batch", "second", 150, 500);
    let (scheduler, _lines) = cluster.scheduler(&[]);
    let (done, pods) = cluster.wait_pods(60.0, |pods| bound(pods) == 300);
    assert!(done, "every pod bound after the restart: {} of 300", bound(&pods));
    assert_not_overcommitted(&pods, 8000, 110);
    // Nothing was bound twice: the API server would have refused the second binding (409),
    // and the restarted scheduler made no binding that failed.
    let (status, body) = scheduler.request("GET", "/metrics/snapshot", "");
    assert_eq!(status, 200);
    let metrics: Value = serde_json::from_str(&body).expect("JSON metrics");
    assert_eq!(metrics["kubernetes/binding_failures"], json!(0.0), "{body}");
    assert_eq!(metrics["kubernetes/pods_pending"], json!(0.0), "{body}");
}

#[test]
fn a_panicking_sorter_module_falls_back_and_pods_are_still_bound() {
    let cluster = Cluster::start();
    cluster.namespace("apps");
    cluster.node(&NodeSpec::new("n0", 4));
    cluster.pods("apps", "p", 4, 1000);
    let manifest = manifest_for("faulty_modules", &["panicky"]);
    let (scheduler, _lines) =
        cluster.scheduler(&["--modules", &manifest, "--role_sorter", "panicky"]);
    let (done, pods) = cluster.wait_pods(30.0, |pods| bound(pods) == 4);
    assert!(done, "bound by the fallback: {pods:?}");
    let (_, body) = scheduler.request("GET", "/metrics/snapshot", "");
    let metrics: Value = serde_json::from_str(&body).expect("JSON metrics");
    assert!(metrics["allocator/module_fallbacks"].as_f64().unwrap_or(0.0) >= 1.0, "{body}");
}

#[test]
fn pods_that_end_under_the_fake_kubelet_give_their_room_to_the_next() {
    let cluster = Cluster::start();
    cluster.kwok();
    cluster.namespace("jobs");
    cluster.node(&NodeSpec::new("n0", 2));
    for i in 0..6 {
        cluster.pod(
            json!({"metadata": {"name": format!("job-{i}"), "namespace": "jobs",
            "annotations": {"kwok.allocator.dev/run-for": "1s"}}}),
            1000,
        );
    }
    let (_scheduler, _lines) = cluster.scheduler(&[]);
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut most_running = 0;
    loop {
        let phases = cluster.phases("jobs");
        let running = phases.values().filter(|p| *p == "Running").count();
        most_running = most_running.max(running);
        assert!(running <= 2, "never more running than fit: {phases:?}");
        if phases.values().all(|p| p == "Succeeded") {
            break;
        }
        assert!(std::time::Instant::now() < end, "every pod ran and ended: {phases:?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(most_running >= 1, "pods ran under KWOK");
}

#[test]
fn pods_of_other_schedulers_count_as_used_until_they_end() {
    let cluster = Cluster::start();
    cluster.namespace("mixed");
    cluster.node(&NodeSpec::new("n0", 2));
    // kube-scheduler's pod, already bound: it holds one of the two cores.
    cluster.pod(
        json!({"metadata": {"name": "theirs", "namespace": "mixed"},
            "spec": {"schedulerName": "default-scheduler", "nodeName": "n0"}}),
        1000,
    );
    cluster.pods("mixed", "ours", 2, 1000);
    let (_scheduler, _lines) = cluster.scheduler(&[]);
    let (done, pods) = cluster.wait_pods(30.0, |pods| bound(pods) == 2);
    assert!(done, "one of ours beside theirs: {pods:?}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let pods = cluster.placed();
    assert_eq!(bound(&pods), 2, "the other one of ours does not fit: {pods:?}");
    assert_not_overcommitted(&pods, 2000, 110);
    cluster.delete_pod("mixed", "theirs");
    let (done, pods) = cluster.wait_pods(30.0, |pods| pods.len() == 2 && bound(pods) == 2);
    assert!(done, "their pod's end made room for ours: {pods:?}");
}

#[test]
fn the_scheduler_speaks_http2_to_the_api_server() {
    let cluster = Cluster::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (status, version) = runtime.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(&cluster.kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
        let client = allocator_kube::client::client(config).expect("a client");
        let request = http::Request::get("/version").body(Vec::new().into()).unwrap();
        let response = client.send(request).await.expect("an answer");
        (response.status(), response.version())
    });
    assert!(status.is_success(), "{status}");
    assert_eq!(version, http::Version::HTTP_2, "one connection carries every request");
}
