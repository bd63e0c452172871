//! The live endpoints of `allocator-master kube` against a real API server
//! (`tools/kube/cluster.sh`): metrics, explain (a role, a framework, and why a pending pod
//! waits), plan (what-if, changing nothing), the web page and the state it reads; and the
//! constraints a pod's request states, as the scheduler and a placement module see them.

use serde_json::{Value, json};
use workspace_tests::kube::{Cluster, NodeSpec, Placed};
use workspace_tests::serve::Serve;

fn bound(pods: &[Placed]) -> usize {
    pods.iter().filter(|p| p.node.is_some()).count()
}

/// `GET path`: the status and the JSON answer (`null` when it is not JSON).
fn get(scheduler: &Serve, path: &str) -> (u16, Value) {
    let (status, body) = scheduler.request("GET", path, "");
    (status, serde_json::from_str(body.trim()).unwrap_or(Value::Null))
}

/// Waits until `GET path` answers 200 with a JSON body that satisfies `done`; the last answer.
fn wait_for(scheduler: &Serve, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (status, answer) = get(scheduler, path);
        if (status == 200 && done(&answer)) || std::time::Instant::now() >= end {
            return answer;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// One node of 2 cores holding one bound pod of `apps`, then one pod of `apps` too big to fit
/// beside it.
fn one_bound_one_waiting(cluster: &Cluster) -> Serve {
    cluster.namespace("apps");
    cluster.node(&NodeSpec::new("n0", 2));
    cluster.pods("apps", "small", 1, 1000);
    let (scheduler, _lines) = cluster.scheduler(&[]);
    let (done, pods) = cluster.wait_pods(30.0, |pods| bound(pods) == 1);
    assert!(done, "the small pod bound: {pods:?}");
    cluster.pods("apps", "big", 1, 2000);
    scheduler
}

#[test]
fn metrics_snapshot_has_the_masters_and_the_clusters_numbers() {
    let cluster = Cluster::start();
    let scheduler = one_bound_one_waiting(&cluster);
    let metrics = wait_for(&scheduler, "/metrics/snapshot", |m| {
        m["kubernetes/pods_pending"] == json!(1.0) && m["kubernetes/bindings_done"] == json!(1.0)
    });
    assert_eq!(metrics["kubernetes/nodes"], json!(1.0), "{metrics}");
    assert_eq!(metrics["kubernetes/pods_pending"], json!(1.0), "{metrics}");
    assert_eq!(metrics["kubernetes/bindings_done"], json!(1.0), "{metrics}");
    assert!(metrics["allocator/mesos/allocation_runs"].as_f64() > Some(0.0), "{metrics}");
    assert!(metrics["master/uptime_secs"].as_f64() > Some(0.0), "{metrics}");
}

#[test]
fn explain_of_a_pending_pod_says_why_it_waits() {
    let cluster = Cluster::start();
    let scheduler = one_bound_one_waiting(&cluster);
    let answer = wait_for(&scheduler, "/explain?pod=apps/big-0", |a| a["why"].is_string());
    assert_eq!(answer["phase"], "pending", "{answer}");
    assert_eq!(answer["role"], "apps", "{answer}");
    assert_eq!(answer["framework"], "apps/pods", "{answer}");
    let why = answer["why"].as_str().unwrap_or_default();
    assert!(why.contains("0/1 nodes are available") && why.contains("too little free"), "{why}");
}

#[test]
fn explain_of_a_bound_pod_names_its_node() {
    let cluster = Cluster::start();
    let scheduler = one_bound_one_waiting(&cluster);
    let answer = wait_for(&scheduler, "/explain?pod=apps/small-0", |a| a["phase"] == "bound");
    assert_eq!(answer["node"], "n0", "{answer}");
}

#[test]
fn explain_of_an_unknown_pod_is_answered_404() {
    let cluster = Cluster::start();
    let scheduler = one_bound_one_waiting(&cluster);
    let (status, answer) = get(&scheduler, "/explain?pod=apps/nobody");
    assert_eq!(status, 404, "{answer}");
    let (status, _) = get(&scheduler, "/explain?pod=no-slash");
    assert_eq!(status, 400);
}

#[test]
fn explain_of_a_role_and_a_framework_accounts_for_the_namespace() {
    let cluster = Cluster::start();
    let scheduler = one_bound_one_waiting(&cluster);
    let role =
        wait_for(&scheduler, "/explain?role=apps", |r| r["dominant_share"].as_f64() > Some(0.0));
    assert_eq!(role["role"], "apps", "{role}");
    assert!((role["dominant_share"].as_f64().unwrap_or(0.0) - 0.5).abs() < 0.01, "{role}");
    let (status, fw) = get(&scheduler, "/explain?framework=apps/pods");
    assert_eq!(status, 200, "{fw}");
    assert_eq!(fw["framework"], "apps/pods", "{fw}");
}

#[test]
fn plan_predicts_the_next_run_with_a_change_and_binds_nothing() {
    let cluster = Cluster::start();
    let scheduler = one_bound_one_waiting(&cluster);
    let change = r#"{"op": "update_weights", "weights": {"apps": 3}}"#;
    let (status, body) = scheduler.request("POST", "/plan", change);
    assert_eq!(status, 200, "{body}");
    let plan: Value = serde_json::from_str(&body).expect("a JSON plan");
    assert!(plan["offers"]["with_change"].is_array(), "{plan}");
    assert!(plan["offers"]["without"].is_array(), "{plan}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pods = cluster.placed();
    assert_eq!(bound(&pods), 1, "a plan binds nothing: {pods:?}");
    let (_, state) = get(&scheduler, "/state");
    let apps = state["roles"].as_array().and_then(|r| r.iter().find(|r| r["role"] == "apps"));
    assert_eq!(apps.map(|r| r["weight"].clone()), Some(json!(1.0)), "unchanged: {state}");
}

#[test]
fn the_web_page_and_the_state_it_reads_are_served() {
    let cluster = Cluster::start();
    let scheduler = one_bound_one_waiting(&cluster);
    let (status, headers, page) = scheduler.request_with("GET", "/", &["Accept: text/html"], "");
    assert_eq!(status, 200);
    let content_type = workspace_tests::serve::header(&headers, "Content-Type").unwrap_or_default();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    assert!(page.contains("<html") || page.contains("<!DOCTYPE"), "a page");
    let (status, state) = get(&scheduler, "/master/state");
    assert_eq!(status, 200, "{state}");
    let slaves = state["slaves"].as_array().expect("agents");
    assert_eq!(slaves.len(), 1, "the node as an agent: {state}");
    assert_eq!(slaves[0]["id"], "n0", "{state}");
}

#[test]
fn a_pods_selector_and_taints_are_the_constraints_a_placement_module_places_by() {
    let cluster = Cluster::start();
    cluster.namespace("sel");
    let mut a = NodeSpec::new("zone-a", 1);
    a.labels = vec![("zone".into(), "a".into())];
    let mut b = NodeSpec::new("zone-b", 4);
    b.labels = vec![("zone".into(), "b".into())];
    let mut tainted = NodeSpec::new("tainted", 4);
    tainted.labels = vec![("zone".into(), "a".into())];
    tainted.taints = vec![("dedicated".into(), "gpu".into())];
    for n in [&a, &b, &tainted] {
        cluster.node(n);
    }
    // zone-a is filled by the first pod; the second can only wait (zone-b has the wrong
    // zone, `tainted` a taint it does not tolerate).
    for name in ["first", "second"] {
        cluster.pod(
            json!({"metadata": {"name": name, "namespace": "sel"},
                "spec": {"nodeSelector": {"zone": "a"}}}),
            1000,
        );
    }
    let manifest = workspace_tests::manifest_for("bestfit_placement", &["BestFit"]);
    let (scheduler, _lines) =
        cluster.scheduler(&["--modules", &manifest, "--allocator", "BestFit"]);
    let (done, pods) = cluster.wait_pods(30.0, |pods| bound(pods) == 1);
    assert!(done, "one bound: {pods:?}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pods = cluster.placed();
    assert_eq!(bound(&pods), 1, "{pods:?}");
    assert!(pods.iter().all(|p| p.node.as_deref().is_none_or(|n| n == "zone-a")), "{pods:?}");
    let waiting = pods.iter().find(|p| p.node.is_none()).expect("one waits").name.clone();
    // What the scheduler states to the allocator for the waiting pod.
    let answer = wait_for(&scheduler, &format!("/explain?pod=sel/{waiting}"), |a| {
        a["constraints"].is_array()
    });
    assert_eq!(
        answer["constraints"],
        json!(["zone in [a]", "taint:NoSchedule:dedicated not_exists"]),
        "{answer}"
    );
    // What the module makes of it: no agent meets the constraints and has room (without
    // them, zone-b and tainted would both count).
    let fw = wait_for(&scheduler, "/explain?framework=sel/pods", |f| {
        f["reasons"].as_array().is_some_and(|r| r.iter().any(|x| x["reason"] == "request_waiting"))
    });
    let reasons = fw["reasons"].as_array().expect("reasons");
    let waiting = reasons.iter().find(|r| r["reason"] == "request_waiting").expect("the module's");
    assert_eq!(waiting["agents"], json!(0.0), "{fw}");
}
