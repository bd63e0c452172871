//! `POST /plan` and `GET /explain` on a live master (issue 24): a prediction that changes
//! nothing, and an account with numbers.

use serde_json::Value;
use workspace_tests::serve::Serve;

/// The default workload, 20 virtual seconds per second, for at most a minute.
fn start() -> Serve {
    Serve::start(&["--speed", "20", "--duration", "60"])
}

/// One request; the status and the JSON body (`null` when there is none).
fn request(live: &Serve, method: &str, path: &str, body: &str) -> (u16, Value) {
    let (status, payload) = live.request(method, path, body);
    (status, serde_json::from_str(payload.trim()).unwrap_or(Value::Null))
}

#[test]
fn post_plan_predicts_the_next_run_and_changes_nothing() {
    let live = start();
    let change = r#"{"op": "update_weights", "weights": {"batch": 10}}"#;
    let (status, plan) = request(&live, "POST", "/plan", change);
    assert_eq!(status, 200, "{plan}");
    assert!(plan["offers"]["with_change"].is_array() && plan["offers"]["without"].is_array());
    assert!(plan["next_allocation_run"].as_f64() > plan["at"].as_f64(), "{plan}");
    let (_, state) = request(&live, "GET", "/state", "");
    let batch = state["roles"].as_array().unwrap().iter().find(|r| r["role"] == "batch");
    assert_eq!(
        batch.map(|r| r["weight"].clone()),
        Some(Value::from(1.0)),
        "the weight is unchanged"
    );
}

#[test]
fn post_plan_with_a_bad_change_is_answered_400() {
    let live = start();
    let (status, answer) = request(&live, "POST", "/plan", r#"{"op": "pause"}"#);
    assert_eq!(status, 400);
    assert!(answer["error"].as_str().unwrap().contains("a change is one scenario event"));
    let (status, _) = request(&live, "GET", "/plan", "");
    assert_eq!(status, 405);
}

#[test]
fn get_explain_accounts_for_a_role_and_a_framework() {
    let live = start();
    let (status, role) = request(&live, "GET", "/explain?role=services", "");
    assert_eq!(status, 200, "{role}");
    assert_eq!(role["role"], "services");
    let order = role["reasons"].as_array().unwrap().iter().find(|r| r["reason"] == "role_order");
    assert!(order.is_some_and(|o| o["rank"].as_u64() >= Some(1)), "{role}");
    let (status, fw) = request(&live, "GET", "/explain?framework=service-0", "");
    assert_eq!(status, 200, "{fw}");
    assert_eq!(fw["framework"], "service-0");
    assert!(fw["roles"][0]["rank"].as_u64() >= Some(1), "{fw}");
    let (status, _) = request(&live, "GET", "/explain", "");
    assert_eq!(status, 400);
}
