//! Pods bound before the scheduler started, or by someone else, count in their namespace's
//! role: its DRF share, its quota and the explanations see them while they run, and their
//! resources come back when they end. Checked against a real API server
//! (`tools/kube/cluster.sh`), with placements read from the API.

use serde_json::{Value, json};
use workspace_tests::kube::{Cluster, NodeSpec, Placed};
use workspace_tests::serve::Serve;

fn bound(pods: &[Placed]) -> usize {
    pods.iter().filter(|p| p.node.is_some()).count()
}

fn bound_in(pods: &[Placed], ns: &str) -> usize {
    pods.iter().filter(|p| p.namespace == ns && p.node.is_some()).count()
}

fn get(scheduler: &Serve, path: &str) -> Value {
    let (status, body) = scheduler.request("GET", path, "");
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).expect("a JSON answer")
}

/// Waits until the scheduler's explanation of `role` satisfies `done`; the last one either way.
fn wait_explain(scheduler: &Serve, role: &str, done: impl Fn(&Value) -> bool) -> Value {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let explained = get(scheduler, &format!("/explain?role={role}"));
        if done(&explained) || std::time::Instant::now() >= end {
            return explained;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn share(explained: &Value) -> f64 {
    explained["dominant_share"].as_f64().unwrap_or(f64::NAN)
}

#[test]
fn after_a_restart_a_role_holding_bound_pods_is_ordered_after_a_role_holding_none() {
    let cluster = Cluster::start();
    // `a-old` sorts first by name: only its share can put it after `b-new`.
    cluster.namespace("a-old");
    cluster.namespace("b-new");
    cluster.node(&NodeSpec::new("n0", 4));
    cluster.pods("a-old", "first", 2, 1000);
    let (scheduler, _lines) = cluster.scheduler(&[]);
    let (done, pods) = cluster.wait_pods(30.0, |pods| bound(pods) == 2);
    assert!(done, "the first two bound: {pods:?}");
    drop(scheduler);
    // Room for two more pods: two of each role wait for it.
    cluster.pods("a-old", "late", 2, 1000);
    cluster.pods("b-new", "p", 2, 1000);
    let (scheduler, _lines) = cluster.scheduler(&[]);
    let (done, pods) = cluster.wait_pods(30.0, |pods| bound(pods) == 4);
    assert!(done, "the node filled again: {pods:?}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pods = cluster.placed();
    assert_eq!(bound_in(&pods, "b-new"), 2, "the role holding nothing went first: {pods:?}");
    assert_eq!(bound_in(&pods, "a-old"), 2, "only the two bound before the restart: {pods:?}");
    let old = get(&scheduler, "/explain?role=a-old");
    assert!(share(&old) >= 0.49, "a-old holds half the cores: {old}");
}

#[test]
fn pods_bound_before_a_restart_count_in_their_roles_share_at_once() {
    let cluster = Cluster::start();
    cluster.namespace("team");
    cluster.node(&NodeSpec::new("n0", 4));
    cluster.pods("team", "p", 2, 1000);
    let (scheduler, _lines) = cluster.scheduler(&[]);
    let (done, pods) = cluster.wait_pods(30.0, |pods| bound(pods) == 2);
    assert!(done, "bound: {pods:?}");
    drop(scheduler);
    let (scheduler, _lines) = cluster.scheduler(&[]);
    let explained = wait_explain(&scheduler, "team", |e| share(e) > 0.0);
    assert!((share(&explained) - 0.5).abs() < 0.01, "2 of 4 cores: {explained}");
    let metrics = get(&scheduler, "/metrics/snapshot");
    assert_eq!(metrics["kubernetes/pods_bound_elsewhere_in_shares"], json!(2.0), "{metrics}");
}

#[test]
fn a_pod_bound_by_another_scheduler_counts_in_its_namespaces_share() {
    let cluster = Cluster::start();
    cluster.namespace("others");
    cluster.node(&NodeSpec::new("n0", 4));
    cluster.pod(
        json!({"metadata": {"name": "theirs", "namespace": "others"},
            "spec": {"schedulerName": "default-scheduler", "nodeName": "n0"}}),
        2000,
    );
    let (scheduler, _lines) = cluster.scheduler(&[]);
    let explained = wait_explain(&scheduler, "others", |e| share(e) > 0.0);
    assert!((share(&explained) - 0.5).abs() < 0.01, "2 of 4 cores: {explained}");
}

#[test]
fn a_deleted_pod_bound_elsewhere_gives_its_share_and_room_back() {
    let cluster = Cluster::start();
    cluster.namespace("mixed");
    cluster.node(&NodeSpec::new("n0", 2));
    let (scheduler, _lines) = cluster.scheduler(&[]);
    // Bound by name while the scheduler runs (as another scheduler would).
    cluster.pod(
        json!({"metadata": {"name": "theirs", "namespace": "mixed"},
            "spec": {"schedulerName": "default-scheduler", "nodeName": "n0"}}),
        2000,
    );
    let explained = wait_explain(&scheduler, "mixed", |e| share(e) > 0.0);
    assert!(share(&explained) > 0.99, "the whole node: {explained}");
    cluster.pods("mixed", "ours", 1, 1000);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(bound(&cluster.placed()), 1, "no room for ours beside theirs");
    cluster.delete_pod("mixed", "theirs");
    let (done, pods) = cluster.wait_pods(30.0, |pods| pods.len() == 1 && bound(pods) == 1);
    assert!(done, "their room went to ours: {pods:?}");
    let explained = wait_explain(&scheduler, "mixed", |e| share(e) < 0.6);
    assert!((share(&explained) - 0.5).abs() < 0.01, "only ours now, 1 of 2 cores: {explained}");
    let metrics = get(&scheduler, "/metrics/snapshot");
    assert_eq!(metrics["kubernetes/pods_bound_elsewhere_in_shares"], json!(0.0), "{metrics}");
}
