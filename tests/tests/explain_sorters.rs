//! Explanations (issue 24) with sorters loaded from modules by flag: the account gives the
//! sorter module's own key (its `dominant_share` answer) and the place in its order, or says
//! plainly that the module gives no key.

use std::process::Command;

use serde_json::{Value, json};
use workspace_tests::{manifest_for, master, workspace_root};

/// Roles `a` (weight 1) and `b` (weight 2), one framework each, and two agents: `b` is served
/// first by a strict-priority sorter and takes everything.
fn scenario() -> Value {
    json!({"events": [
        {"op": "update_weights", "weights": {"b": 2}},
        {"op": "add_framework", "framework": "fa", "roles": ["a"]},
        {"op": "add_framework", "framework": "fb", "roles": ["b"]},
        {"op": "add_agent", "agent": "a1", "resources": "cpus:4;mem:1024"},
        {"op": "add_agent", "agent": "a2", "resources": "cpus:4;mem:1024"}
    ]})
}

/// Runs the scenario with `modules` and both sorters `sorter`, explaining `subject`; the
/// explanation of the summary.
fn explanation(modules: &str, sorter: &str, subject: &str) -> Value {
    let dir = std::env::temp_dir()
        .join(format!("explain-sorters-{}-{sorter}-{subject}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (file, stream) = (dir.join("s.json"), dir.join("s.jsonl"));
    std::fs::write(&file, scenario().to_string()).unwrap();
    let out = Command::new(master())
        .args(["--modules", modules, "--role_sorter", sorter, "--framework_sorter", sorter])
        .args(["--explain", subject, "--scenario"])
        .arg(&file)
        .arg("--output")
        .arg(&stream)
        .current_dir(workspace_root())
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&stream).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["event"] == "summary")
        .expect("a summary")["explanation"]
        .clone()
}

fn reason<'a>(explanation: &'a Value, code: &str) -> &'a Value {
    explanation["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["reason"] == code)
        .unwrap_or_else(|| panic!("no reason '{code}' in {explanation:#}"))
}

#[test]
fn a_weighted_priority_role_sorter_gives_its_key_and_place() {
    let e = explanation("examples/modules.json", "weighted_priority", "a");
    let order = reason(&e, "role_order");
    assert_eq!(
        [&order["sorter"], &order["rank"], &order["of"], &order["key"]],
        [&json!("weighted_priority"), &json!(2), &json!(2), &json!(0.0)],
        "{order:#}"
    );
    assert_eq!(order["ahead"], json!([{"role": "b", "key": 1.0}]), "b, weight 2, first: {order:#}");
}

#[test]
fn a_weighted_priority_framework_sorter_gives_its_key_and_place() {
    let e = explanation("examples/modules.json", "weighted_priority", "fb");
    let order = reason(&e, "framework_order");
    assert_eq!(
        [&order["role"], &order["sorter"], &order["rank"], &order["of"], &order["key"]],
        [&json!("b"), &json!("weighted_priority"), &json!(1), &json!(1), &json!(1.0)],
        "{order:#}"
    );
}

#[test]
fn a_random_role_sorter_gives_its_key_and_a_place() {
    let e = explanation("examples/modules.json", "random", "b");
    let order = reason(&e, "role_order");
    assert_eq!(
        [&order["sorter"], &order["of"], &order["key"]],
        [&json!("random"), &json!(2), &json!(1.0)],
        "{order:#}"
    );
    assert!(matches!(order["rank"].as_u64(), Some(1 | 2)), "{order:#}");
}

#[test]
fn a_sorter_module_without_a_key_is_said_to_give_none() {
    let e = explanation(&manifest_for("minimal_module", &["fifo"]), "fifo", "a");
    let order = reason(&e, "role_order");
    assert_eq!(
        [&order["sorter"], &order["key"], &order["of"]],
        [&json!("fifo"), &Value::Null, &json!(2)]
    );
    let place = order["rank"].as_u64().unwrap();
    assert!(
        order["text"]
            .as_str()
            .unwrap()
            .contains(&format!("the sorter module 'fifo' gives no key; place {place} of 2")),
        "{order:#}"
    );
}
