//! `allocator-master kube` against a real API server (tools/kube/cluster.sh): pods bound where
//! they fit and where they may go.

use std::time::Duration;

use serde_json::json;
use workspace_tests::kube::{Cluster, NodeSpec, per_node};

#[test]
fn pending_pods_are_bound_where_they_fit() {
    let cluster = Cluster::start();
    cluster.namespace("team-a");
    for i in 0..3 {
        cluster.node(&NodeSpec::new(&format!("node-{i}"), 2));
    }
    cluster.pods("team-a", "p", 5, 1000);
    let (_scheduler, _lines) = cluster.scheduler(&[]);
    let (done, pods) =
        cluster.wait_pods(30.0, |pods| pods.iter().filter(|p| p.node.is_some()).count() == 5);
    assert!(done, "every pod bound: {pods:?}");
    for (node, (cpu, _)) in per_node(&pods) {
        assert!(cpu <= 2000, "{node} over-committed: {cpu}m");
    }
    std::thread::sleep(Duration::from_millis(10));
    let _ = json!({});
}
