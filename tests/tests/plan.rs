//! What-if (issue 24): `allocator-master plan` predicts the offers of the next allocation run
//! after a change; applying the change for real makes exactly those offers.

use std::process::Command;

use allocator_sim::allocator_scenario::AllocatorScenario;
use allocator_sim::allocator_scenario::print::op_to_json;
use allocator_sim::plan::history_until;
use serde_json::{Value, json};
use workspace_tests::{master, workspace_root};

fn plan(at: f64, change: &Value) -> Value {
    let out = Command::new(master())
        .args(["plan", "--at", &at.to_string(), "--change", &change.to_string(), "--json"])
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("a JSON plan")
}

/// Runs the default workload to `at`, applies `change`, runs to the next periodic run, and
/// checks the offers made since `at` against `expected` with an `expect_offers` event; returns
/// whether that expectation held.
fn applied_for_real(at: f64, change: &Value, next_run: f64, expected: &Value) -> bool {
    let doc = allocator_sim::workload::default_document(0);
    let scenario = AllocatorScenario::parse(&doc).unwrap();
    let mut events: Vec<Value> =
        history_until(&scenario, at).iter().filter_map(op_to_json).collect();
    // Resets what expect_offers compares: the offers until now are not the question.
    events.push(json!({"op": "expect_offers", "offers": []}));
    events.push(change.clone());
    events.push(json!({"op": "advance", "seconds": next_run - at}));
    events.push(json!({"op": "expect_offers", "offers": expected}));
    let mut root = doc.root.clone();
    root.insert("events".into(), Value::Array(events));
    // One directory per test: tests run in parallel.
    let name = change["op"].as_str().unwrap();
    let dir = std::env::temp_dir().join(format!("plan-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (file, stream) = (dir.join("applied.json"), dir.join("applied.jsonl"));
    std::fs::write(&file, Value::Object(root).to_string()).unwrap();
    let out = Command::new(master())
        .arg("--scenario")
        .arg(&file)
        .arg("--output")
        .arg(&stream)
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&stream).unwrap();
    let last = text
        .lines()
        .rev()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["event"] == "expectation")
        .expect("the expectation after the change");
    std::fs::remove_dir_all(&dir).unwrap();
    last["ok"] == true
}

fn predicted_then_applied(at: f64, change: Value) -> Value {
    let p = plan(at, &change);
    let next_run = p["next_allocation_run"].as_f64().unwrap();
    assert!(
        applied_for_real(at, &change, next_run, &p["offers"]["with_change"]),
        "applying {change} at {at} did not make the predicted offers {}",
        p["offers"]["with_change"]
    );
    p
}

#[test]
fn a_weight_change_is_predicted_as_applied() {
    let p = predicted_then_applied(30.0, json!({"op": "update_weights", "weights": {"batch": 10}}));
    assert!(
        !p["difference"]["only_with_change"].as_array().unwrap().is_empty(),
        "weighting batch up changes who is offered what: {p}"
    );
}

#[test]
fn an_agent_going_away_is_predicted_as_applied() {
    predicted_then_applied(45.5, json!({"op": "remove_agent", "agent": "agent-010"}));
}

#[test]
fn a_quota_limit_is_predicted_as_applied() {
    predicted_then_applied(
        12.0,
        json!({"op": "update_quota", "role": "batch", "limits": "cpus:50"}),
    );
}

#[test]
fn a_plan_changes_nothing_a_change_would_not() {
    let p = plan(30.0, &json!({"op": "update_whitelist", "hostnames": null}));
    assert_eq!(p["offers"]["with_change"], p["offers"]["without"]);
    assert!(p["difference"]["only_with_change"].as_array().unwrap().is_empty());
}

#[test]
fn a_change_that_is_not_a_plannable_event_is_refused_in_one_line() {
    let out = Command::new(master())
        .args(["plan", "--at", "1", "--change", r#"{"op": "tick"}"#])
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--change") && err.lines().count() == 1, "{err}");
}
