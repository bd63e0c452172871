//! High availability against a real API server (`tools/kube/cluster.sh`): two replicas of
//! `allocator-master kube --leader_elect` share a `coordination.k8s.io/v1` Lease; the leader is
//! killed with SIGKILL while pods are being bound; the other takes over within the lease
//! duration, and every pod ends bound exactly once (read from the API), none lost.

use std::process::Command;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use workspace_tests::kube::{Cluster, NodeSpec, Placed, per_node};

const PODS: usize = 1_000;
const NODES: usize = 30;

fn bound(pods: &[Placed]) -> usize {
    pods.iter().filter(|p| p.node.is_some()).count()
}

/// Waits for a line of `lines` that contains `text`, at most `seconds`.
fn wait_line(lines: &Receiver<String>, text: &str, seconds: u64) -> bool {
    let end = Instant::now() + Duration::from_secs(seconds);
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(text) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

#[test]
fn killing_the_leader_mid_way_binds_every_pod_exactly_once() {
    let cluster = Cluster::start();
    cluster.namespace("kube-system");
    cluster.namespace("ha");
    for i in 0..NODES {
        cluster.node(&NodeSpec::new(&format!("node-{i:02}"), 4));
    }
    cluster.pods("ha", "p", PODS, 100);
    // Slow bindings (50 a second) so that the leader dies with most pods still pending.
    let args = [
        "--leader_elect",
        "--leader_elect_lease_duration",
        "3secs",
        "--leader_elect_renew_deadline",
        "2secs",
        "--leader_elect_retry_period",
        "500ms",
        "--kube_api_qps",
        "50",
        "--kube_api_burst",
        "1",
    ];
    // (Whether a replica leads is read from the API, by its bindings, and from its stderr;
    // the first may say so before it announces its address, so it is not awaited by line.)
    let (first, _first_lines) = cluster.scheduler(&args);
    let (done, _) = cluster.wait_pods(30.0, |pods| bound(pods) >= 20);
    assert!(done, "the first replica leads and binds");
    let (second, second_lines) = cluster.scheduler(&args);
    let (done, _) = cluster.wait_pods(30.0, |pods| bound(pods) >= 60);
    assert!(done, "the leader binds on");
    let before = bound(&cluster.placed());
    assert!(before < PODS, "killed mid-way: {before} of {PODS} bound");
    let early: Vec<String> = second_lines.try_iter().filter(|l| l.contains("leads")).collect();
    assert!(early.is_empty(), "the follower does not lead while the leader lives: {early:?}");
    let status =
        Command::new("kill").args(["-KILL", &first.pid().to_string()]).status().expect("kill");
    assert!(status.success());
    let killed = Instant::now();
    drop(first);
    assert!(wait_line(&second_lines, "leads", 30), "the second replica takes over");
    let took_over = killed.elapsed();
    assert!(
        took_over < Duration::from_secs(3 + 2),
        "taken over within the lease duration (3 s) and a retry: {took_over:?}"
    );
    let (done, pods) = cluster.wait_pods(120.0, |pods| bound(pods) == PODS);
    assert!(done, "every pod bound after the failover: {} of {PODS}", bound(&pods));
    // Exactly once: every pod of the namespace is there once, with one node; and no node holds
    // more than it has.
    let mut names: Vec<&str> = pods.iter().map(|p| p.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), PODS, "no pod lost or duplicated");
    for (node, (cpu, _)) in per_node(&pods) {
        assert!(cpu <= 4000, "{node} over-committed: {cpu}m");
    }
    eprintln!(
        "failover: {before} of {PODS} bound when the leader was killed; taken over in {took_over:?}"
    );
    drop(second);
}
