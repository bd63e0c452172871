//! The embedded default workload: what `allocator-master` runs without `--scenario`.
//!
//! A realistic cluster generated from the seed: a few hundred agents of three shapes (two with
//! GPUs), four roles with weights (one with a quota), long-running services, short batch jobs,
//! analytics jobs and a GPU training framework, over ten simulated minutes with one agent
//! failure.

use allocator_api::rng::Rng;
use serde_json::{Value, json};

use crate::scenario::Document;

/// The default workload as a scenario document (`seed` shapes the cluster and the run).
pub fn default_document(seed: u64) -> Document {
    let value = default_scenario(seed);
    let Value::Object(root) = value else { unreachable!("a scenario is an object") };
    Document { file: format!("<embedded default workload, seed {seed}>"), root }
}

/// The default workload as scenario JSON.
pub fn default_scenario(seed: u64) -> Value {
    let mut rng = Rng::new(seed ^ 0x5EED);
    let mut events = Vec::new();
    let agents = 240 + rng.below(80) as usize;
    for i in 0..agents {
        let (resources, rack) = match i {
            0 | 1 => ("cpus:32;mem:262144;disk:1000000;gpus:8;ports:[31000-32000]", "gpu"),
            _ if rng.below(100) < 20 => {
                ("cpus:32;mem:131072;disk:1000000;ports:[31000-32000]", "large")
            }
            _ => ("cpus:16;mem:65536;disk:500000;ports:[31000-32000]", "standard"),
        };
        events.push(
            json!({"op": "add_agent", "agent": format!("agent-{i:03}"), "resources": resources,
                           "attributes": {"rack": format!("rack-{}", i % 12), "kind": rack}}),
        );
    }
    events.push(json!({"op": "update_weights", "weights": {"services": 3, "analytics": 2, "batch": 1, "ml": 1}}));
    events.push(
        json!({"op": "update_quota", "role": "analytics", "guarantees": "cpus:400;mem:1638400"}),
    );
    for i in 0..3 {
        events.push(json!({"op": "add_framework", "framework": format!("service-{i}"), "roles": ["services"],
            "tasks": {"resources": "cpus:2;mem:8192", "count": 150 + rng.below(100), "per_offer": 20, "refuse_seconds": 10}}));
    }
    events.push(json!({"op": "advance", "seconds": 5}));
    for i in 0..6 {
        let duration = 30 + rng.below(90);
        events.push(json!({"op": "add_framework", "framework": format!("batch-{i}"), "roles": ["batch"],
            "tasks": {"resources": "cpus:1;mem:2048", "count": 1500 + rng.below(1000), "duration": duration,
                      "per_offer": 32, "refuse_seconds": 2}}));
    }
    for i in 0..2 {
        events.push(json!({"op": "add_framework", "framework": format!("analytics-{i}"), "roles": ["analytics"],
            "tasks": {"resources": "cpus:4;mem:16384", "count": 250, "duration": 300, "per_offer": 16, "refuse_seconds": 5}}));
    }
    events.push(json!({"op": "add_framework", "framework": "trainer", "roles": ["ml"],
        "capabilities": ["MULTI_ROLE", "GPU_RESOURCES"],
        "tasks": {"resources": "cpus:4;mem:32768;gpus:1", "count": 24, "duration": 600, "per_offer": 8, "refuse_seconds": 5}}));
    events.push(json!({"op": "advance", "seconds": 120}));
    let failed = format!("agent-{:03}", 2 + rng.below(agents as u64 - 2));
    events.push(json!({"op": "remove_agent", "agent": failed}));
    events.push(json!({"op": "advance", "seconds": 180}));
    events.push(json!({"op": "add_agent", "agent": failed, "resources": "cpus:16;mem:65536;disk:500000;ports:[31000-32000]",
                       "attributes": {"rack": "rack-0", "kind": "standard"}}));
    events.push(json!({"op": "remove_framework", "framework": "batch-5"}));
    events.push(json!({"op": "advance", "seconds": 300}));
    json!({"description": "embedded default workload: services, batch, analytics (with quota) and GPU training",
           "config": {"seed": seed}, "events": events})
}
