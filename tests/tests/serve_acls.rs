//! ACLs by object on every path (issue 43): what a principal may not see is left out of every
//! answer that would show it — Mesos's v0 endpoints, the v1 operator calls, `serve`'s own
//! `/state`, `/explain` and `/plan` — and a maintenance call is authorized over every agent it
//! touches. Each test is an attack that read or changed what it should not before the fix.

use std::path::PathBuf;

use allocator_mesos::base64_encode;
use serde_json::{Value, json};
use workspace_tests::serve::{Serve, read_for};

const JSON: &str = "Content-Type: application/json";

/// A file in the test's own temporary folder.
fn file(test: &str, name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("serve-acls-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Two agents; a framework the scenario plays (`hidden-fw`, running half-second tasks in
/// `secret-role` without end, so that every allocation run offers it what ended);
/// weights and quotas for `dev` and `prod`.
fn scenario(test: &str) -> String {
    let events = json!([
        {"op": "add_agent", "agent": "a1", "resources": "cpus:8;mem:8192"},
        {"op": "add_agent", "agent": "a2", "resources": "cpus:8;mem:8192"},
        {"op": "update_weights", "weights": {"dev": 2, "prod": 3}},
        {"op": "update_quota", "role": "dev", "guarantees": "cpus:1"},
        {"op": "update_quota", "role": "prod", "guarantees": "cpus:2"},
        {"op": "add_framework", "framework": "hidden-fw", "roles": ["secret-role"],
         "tasks": {"resources": "cpus:1;mem:128", "duration": 0.5}}
    ]);
    let text = json!({"config": {"allocation_interval": 1}, "events": events}).to_string();
    file(test, "scenario.json", &text).display().to_string()
}

fn credentials(test: &str) -> String {
    let text = r#"{"credentials": [{"principal": "ops", "secret": "ops-secret"},
                                   {"principal": "dev", "secret": "dev-secret"}]}"#;
    file(test, "credentials.json", text).display().to_string()
}

fn basic(principal: &str, secret: &str) -> String {
    format!("Authorization: Basic {}", base64_encode(format!("{principal}:{secret}").as_bytes()))
}

fn start(test: &str, flags: &[&str]) -> Serve {
    let scenario = scenario(test);
    let mut args = vec!["--duration", "60", "--scenario", &scenario];
    args.extend_from_slice(flags);
    let serve = Serve::start(&args);
    // The framework has its tasks once an allocation run has offered it the agents.
    for _ in 0..100 {
        if serve.request("GET", "/master/tasks", "").1.contains("task-") {
            return serve;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    serve
}

/// Every read path that shows frameworks, tasks or roles: Mesos's v0 endpoints in their
/// spellings, `serve`'s own, and the metrics.
const READS: &[&str] = &[
    "/state",
    "/master/state",
    "/state.json",
    "/master/state.json",
    "/master/frameworks",
    "/frameworks",
    "/master/frameworks.json",
    "/master/tasks",
    "/tasks",
    "/master/roles",
    "/roles",
    "/master/slaves",
    "/metrics/snapshot",
];

/// The v1 operator calls that read frameworks, tasks or roles.
const CALLS: &[&str] =
    &["GET_STATE", "GET_FRAMEWORKS", "GET_TASKS", "GET_ROLES", "GET_AGENTS", "GET_METRICS"];

fn operator(serve: &Serve, call: &str, auth: Option<&str>) -> (u16, String) {
    let mut headers = vec![JSON];
    headers.extend(auth);
    let body = json!({"type": call}).to_string();
    let (status, _, answer) = serve.request_with("POST", "/api/v1", &headers, &body);
    (status, answer)
}

fn get(serve: &Serve, path: &str, auth: Option<&str>) -> (u16, String) {
    let headers: Vec<&str> = auth.into_iter().collect();
    let (status, _, answer) = serve.request_with("GET", path, &headers, "");
    (status, answer)
}

const DENY_FRAMEWORKS: &str =
    r#"{"view_frameworks": [{"principals": {"type": "ANY"}, "users": {"type": "NONE"}}]}"#;

#[test]
fn without_acls_the_framework_shows_on_every_path_the_attack_reads() {
    // The control for the test below: these paths do show the framework.
    let serve = start("open", &[]);
    for path in ["/state", "/master/state", "/master/frameworks", "/master/tasks", "/roles"] {
        assert!(get(&serve, path, None).1.contains("hidden-fw"), "{path}");
    }
    for call in ["GET_STATE", "GET_FRAMEWORKS", "GET_TASKS", "GET_ROLES"] {
        assert!(operator(&serve, call, None).1.contains("hidden-fw"), "{call}");
    }
}

#[test]
fn the_deny_idiom_hides_the_framework_on_every_read_path() {
    let serve = start("deny", &["--acls", DENY_FRAMEWORKS]);
    for path in READS {
        let (status, answer) = get(&serve, path, None);
        assert_eq!(status, 200, "{path}: {answer}");
        assert!(!answer.contains("hidden-fw"), "{path} shows the framework: {answer}");
    }
    for call in CALLS {
        let (status, answer) = operator(&serve, call, None);
        assert_eq!(status, 200, "{call}: {answer}");
        assert!(!answer.contains("hidden-fw"), "{call} shows the framework: {answer}");
    }
}

#[test]
fn the_deny_idiom_refuses_an_explanation_of_the_framework_however_the_query_names_it() {
    let serve = start("explain", &["--acls", DENY_FRAMEWORKS]);
    for query in [
        "framework=hidden-fw",
        "framework=hidden-fw&role=secret-role",
        "role=secret-role&framework=hidden-fw",
    ] {
        let (status, answer) = get(&serve, &format!("/explain?{query}"), None);
        assert_eq!(status, 403, "{query}: {answer}");
    }
    // The role is not hidden, but its explanation would name the framework: refused too.
    let (status, answer) = get(&serve, "/explain?role=secret-role", None);
    assert_eq!(status, 403, "{answer}");
    assert!(!answer.contains("hidden-fw"), "{answer}");
}

#[test]
fn a_plan_shows_no_offer_of_a_framework_the_caller_may_not_see() {
    let serve = start("plan", &["--acls", DENY_FRAMEWORKS]);
    // A change that does not name the framework: its next run still offers it what ended.
    let change = json!({"op": "update_weights", "weights": {"secret-role": 5}}).to_string();
    let (status, answer) = serve.request("POST", "/plan", &change);
    assert_eq!(status, 200, "{answer}");
    assert!(!answer.contains("hidden-fw"), "the plan shows the framework: {answer}");
    let open = start("plan-open", &[]);
    assert!(open.request("POST", "/plan", &change).1.contains("hidden-fw"), "the control");
}

#[test]
fn a_principal_sees_only_the_roles_weights_and_quotas_its_acls_list() {
    let creds = credentials("roles");
    let acls = r#"{"permissive": false,
        "view_frameworks": [{"principals": {"type": "ANY"}, "users": {"type": "ANY"}}],
        "view_roles": [{"principals": {"values": ["dev"]}, "roles": {"values": ["dev"]}}],
        "get_quotas": [{"principals": {"values": ["dev"]}, "roles": {"values": ["dev"]}}]}"#;
    let serve = start(
        "roles",
        &[
            "--credentials",
            &creds,
            "--authenticate_http_readonly",
            "--authenticate_http_readwrite",
            "--acls",
            acls,
        ],
    );
    let dev = basic("dev", "dev-secret");
    for path in ["/roles", "/master/weights", "/master/quota", "/state"] {
        let (status, answer) = get(&serve, path, Some(&dev));
        assert_eq!(status, 200, "{path}: {answer}");
        assert!(answer.contains("\"dev\""), "{path} shows dev's own role: {answer}");
        assert!(!answer.contains("\"prod\""), "{path} shows another role: {answer}");
    }
    for call in ["GET_ROLES", "GET_WEIGHTS", "GET_QUOTA"] {
        let (status, answer) = operator(&serve, call, Some(&dev));
        assert_eq!(status, 200, "{call}: {answer}");
        assert!(answer.contains("\"dev\""), "{call} shows dev's own role: {answer}");
        assert!(!answer.contains("\"prod\""), "{call} shows another role: {answer}");
    }
    let ops = basic("ops", "ops-secret");
    let (_, roles) = operator(&serve, "GET_ROLES", Some(&ops));
    assert!(!roles.contains("\"dev\""), "ops is listed for no role: {roles}");
}

#[test]
fn the_share_history_in_state_holds_only_the_roles_the_caller_may_see() {
    let creds = credentials("share-history");
    let acls = r#"{"permissive": false,
        "view_frameworks": [{"principals": {"type": "ANY"}, "users": {"type": "ANY"}}],
        "view_roles": [{"principals": {"values": ["dev"]}, "roles": {"values": ["dev"]}},
                       {"principals": {"values": ["ops"]}, "roles": {"type": "ANY"}}]}"#;
    let serve = start(
        "share-history",
        &["--credentials", &creds, "--authenticate_http_readonly", "--acls", acls],
    );
    let history = |principal: &str, secret: &str| {
        let (status, answer) = get(&serve, "/state", Some(&basic(principal, secret)));
        assert_eq!(status, 200, "{answer}");
        let state: Value = serde_json::from_str(&answer).unwrap();
        state["share_history"].clone()
    };
    // The control: ops may see every role, and secret-role's shares are in its history.
    let ops = history("ops", "ops-secret");
    assert!(!ops["times"].as_array().unwrap().is_empty(), "{ops}");
    let shares = ops["shares"]["secret-role"].as_array().expect("secret-role's history");
    assert_eq!(shares.len(), ops["times"].as_array().unwrap().len(), "{ops}");
    assert!(shares.iter().any(|s| s.as_f64().unwrap() > 0.0), "{ops}");
    let dev = history("dev", "dev-secret");
    assert!(!dev["times"].as_array().unwrap().is_empty(), "{dev}");
    assert!(dev["shares"].get("secret-role").is_none(), "dev may not see secret-role: {dev}");
}

#[test]
fn a_maintenance_acl_covers_every_agent_the_call_touches() {
    let creds = credentials("maintenance");
    let acls = r#"{"permissive": false,
        "start_maintenances": [{"principals": {"values": ["ops"]}, "machines": {"values": ["a1"]}}]}"#;
    let serve = start(
        "maintenance",
        &["--credentials", &creds, "--authenticate_http_readwrite", "--acls", acls],
    );
    let ops = basic("ops", "ops-secret");
    let start_maintenance = |machine: Value| {
        let call = json!({"type": "START_MAINTENANCE",
                          "start_maintenance": {"machines": [machine]}});
        serve.request_with("POST", "/api/v1", &[JSON, &ops], &call.to_string()).0
    };
    assert_eq!(start_maintenance(json!({"hostname": "a1", "ip": "a2"})), 403);
    let slaves: Value = serde_json::from_str(&get(&serve, "/master/slaves", None).1).unwrap();
    let agents: Vec<&str> =
        slaves["slaves"].as_array().unwrap().iter().filter_map(|s| s["id"].as_str()).collect();
    assert!(agents.contains(&"a2"), "a2 is still up: {slaves}");
    assert_eq!(start_maintenance(json!({"ip": "a2"})), 403, "a2 by its other field");
    assert_eq!(start_maintenance(json!({"hostname": "a1"})), 200, "a1 is allowed");
}

#[test]
fn a_principal_sees_the_maintenance_schedule_only_for_its_machines() {
    let creds = credentials("schedule");
    let acls = r#"{
        "get_maintenance_schedules": [
            {"principals": {"values": ["dev"]}, "machines": {"values": ["a1"]}},
            {"principals": {"values": ["dev"]}, "machines": {"type": "NONE"}}]}"#;
    let serve = start(
        "schedule",
        &["--credentials", &creds, "--authenticate_http_readwrite", "--acls", acls],
    );
    let ops = basic("ops", "ops-secret");
    let window = |host: &str| {
        json!({"machine_ids": [{"hostname": host}],
               "unavailability": {"start": {"nanoseconds": 4_000_000_000_000_000_000i64}}})
    };
    let schedule = json!({"type": "UPDATE_MAINTENANCE_SCHEDULE", "update_maintenance_schedule":
        {"schedule": {"windows": [window("a1"), window("a2")]}}});
    let (status, _, answer) =
        serve.request_with("POST", "/api/v1", &[JSON, &ops], &schedule.to_string());
    assert_eq!(status, 200, "{answer}");
    let (_, seen) = operator(&serve, "GET_MAINTENANCE_SCHEDULE", Some(&basic("dev", "dev-secret")));
    assert!(seen.contains("\"a1\"") && !seen.contains("\"a2\""), "{seen}");
    let (_, all) = operator(&serve, "GET_MAINTENANCE_SCHEDULE", Some(&ops));
    assert!(all.contains("\"a1\"") && all.contains("\"a2\""), "{all}");
}

/// What an operator subscriber hears while a framework of user `alice` subscribes.
fn operator_stream_while_alice_subscribes(test: &str, flags: &[&str]) -> String {
    let mut args = vec!["--heartbeat_interval", "0.2"];
    args.extend_from_slice(flags);
    let serve = start(test, &args);
    let subscribe = json!({"type": "SUBSCRIBE"}).to_string();
    let (status, _, mut operator) = serve.open_stream("/api/v1", &[JSON], &subscribe);
    assert_eq!(status, 200);
    let mut heard = read_for(&mut operator, 0.5);
    let info = json!({"user": "alice", "name": "alice-fw", "roles": ["r1"],
                      "capabilities": [{"type": "MULTI_ROLE"}]});
    let body = json!({"type": "SUBSCRIBE", "subscribe": {"framework_info": info}}).to_string();
    let (status, _, _framework) = serve.open_stream("/api/v1/scheduler", &[JSON], &body);
    assert_eq!(status, 200);
    heard.push_str(&read_for(&mut operator, 1.5));
    assert!(heard.contains("HEARTBEAT"), "the stream is alive: {heard}");
    heard
}

#[test]
fn an_operator_subscriber_hears_of_every_framework_without_acls() {
    let heard = operator_stream_while_alice_subscribes("stream-open", &[]);
    assert!(heard.contains("hidden-fw"), "SUBSCRIBED shows the played framework: {heard}");
    assert!(heard.contains("FRAMEWORK_ADDED") && heard.contains("alice-fw"), "{heard}");
}

#[test]
fn an_operator_subscriber_hears_nothing_of_frameworks_its_acls_hide() {
    let heard = operator_stream_while_alice_subscribes("stream-deny", &["--acls", DENY_FRAMEWORKS]);
    assert!(heard.contains("SUBSCRIBED"), "{heard}");
    assert!(!heard.contains("hidden-fw"), "SUBSCRIBED shows a hidden framework: {heard}");
    assert!(!heard.contains("alice-fw"), "an event shows a hidden framework: {heard}");
    assert!(!heard.contains("FRAMEWORK_ADDED"), "{heard}");
}
