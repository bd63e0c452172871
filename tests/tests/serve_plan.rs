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

#[test]
fn a_flood_of_plans_is_bounded_and_other_requests_are_answered_meanwhile() {
    let live = std::sync::Arc::new(start());
    // Let the workload build some history to replay.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let change = r#"{"op": "update_weights", "weights": {"batch": 10}}"#;
    let flood: Vec<_> = (0..24)
        .map(|_| {
            let live = live.clone();
            std::thread::spawn(move || request(&live, "POST", "/plan", change).0)
        })
        .collect();
    // While the plans are made, the master answers other requests.
    let (status, state) = request(&live, "GET", "/state", "");
    assert_eq!(status, 200, "{state}");
    let statuses: Vec<u16> = flood.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(statuses.iter().all(|s| *s == 200 || *s == 503), "{statuses:?}");
    assert!(statuses.contains(&200), "{statuses:?}");
    let (_, metrics) = request(&live, "GET", "/metrics/snapshot", "");
    let refused = statuses.iter().filter(|s| **s == 503).count() as u64;
    assert_eq!(metrics["master/plans_refused"].as_u64(), Some(refused), "{metrics}");
}
