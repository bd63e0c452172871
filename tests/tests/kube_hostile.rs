//! Hostile and faulty allocator modules in `allocator-master kube`, against a real API server
//! (`tools/kube/cluster.sh`): a module that panics falls back to the built-in allocator and
//! the pods still bind; a module that offers more than a node has is held by the offer guard.
//! Either way no node is ever over-committed, counted from the API (pods of other schedulers
//! included). The panicking sorter is `kube_scheduling.rs`'s.

use serde_json::{Value, json};
use workspace_tests::kube::{Cluster, NodeSpec, Placed, per_node};
use workspace_tests::{library, serve::Serve};

fn bound(pods: &[Placed]) -> usize {
    pods.iter().filter(|p| p.node.is_some()).count()
}

/// A manifest of one module of fixture library `library_name`, with `parameters`.
fn manifest(library_name: &str, module: &str, parameters: &[(&str, &str)]) -> String {
    let parameters: Vec<Value> =
        parameters.iter().map(|(k, v)| json!({"key": k, "value": v})).collect();
    json!({"libraries": [{"file": library(library_name).display().to_string(),
        "modules": [{"name": module, "parameters": parameters}]}]})
    .to_string()
}

fn metrics(scheduler: &Serve) -> Value {
    let (status, body) = scheduler.request("GET", "/metrics/snapshot", "");
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).expect("JSON metrics")
}

/// Two nodes of 2 cores; with `theirs`, a pod of another scheduler holds one core of `n0`.
/// Six pods of one core wait for the room left: all of it fills, and no node holds more than 2
/// cores.
fn pods_bind_within_capacity(args: &[&str], theirs: bool) -> (Cluster, Serve) {
    let cluster = Cluster::start();
    cluster.namespace("apps");
    cluster.node(&NodeSpec::new("n0", 2));
    cluster.node(&NodeSpec::new("n1", 2));
    if theirs {
        cluster.pod(
            json!({"metadata": {"name": "theirs", "namespace": "apps"},
                "spec": {"schedulerName": "default-scheduler", "nodeName": "n0"}}),
            1000,
        );
    }
    cluster.pods("apps", "p", 6, 1000);
    let (scheduler, _lines) = cluster.scheduler(args);
    let (done, pods) = cluster.wait_pods(30.0, |pods| bound(pods) == 4);
    assert!(done, "the four cores filled: {pods:?}");
    std::thread::sleep(std::time::Duration::from_millis(800));
    let pods = cluster.placed();
    assert_eq!(bound(&pods), 4, "no more than fit: {pods:?}");
    for (node, (cpu, _)) in per_node(&pods) {
        assert!(cpu <= 2000, "{node} over-committed: {cpu}m of 2000m ({pods:?})");
    }
    (cluster, scheduler)
}

#[test]
fn an_allocator_module_that_panics_falls_back_and_pods_bind_within_capacity() {
    let m = manifest("faulty_modules", "faulty_allocator", &[("panic_on_allocate", "1")]);
    let (_cluster, scheduler) =
        pods_bind_within_capacity(&["--modules", &m, "--allocator", "faulty_allocator"], true);
    let metrics = metrics(&scheduler);
    assert!(metrics["allocator/module_fallbacks"].as_f64() >= Some(1.0), "{metrics}");
}

#[test]
fn an_allocator_module_whose_panic_payload_panics_falls_back_and_pods_bind_within_capacity() {
    let m = manifest("hostile_modules", "hostile_allocator", &[("mode", "payload_panics")]);
    let (_cluster, scheduler) =
        pods_bind_within_capacity(&["--modules", &m, "--allocator", "hostile_allocator"], true);
    let metrics = metrics(&scheduler);
    assert!(metrics["allocator/module_fallbacks"].as_f64() >= Some(1.0), "{metrics}");
}

#[test]
fn an_allocator_module_that_over_offers_is_held_by_the_guard_within_capacity() {
    let m = manifest("faulty_modules", "faulty_allocator", &[("overallocate", "true")]);
    // It offers everything to the first framework it knows: ours only, no pod of another
    // scheduler's framework before it.
    let (_cluster, scheduler) =
        pods_bind_within_capacity(&["--modules", &m, "--allocator", "faulty_allocator"], false);
    let metrics = metrics(&scheduler);
    assert!(metrics["allocator/guard/dropped_offers"].as_f64() >= Some(1.0), "{metrics}");
}
