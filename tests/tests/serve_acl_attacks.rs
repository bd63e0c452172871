//! A red team's second pass at the ACLs by object (issue 43): each test is one of its attacks,
//! which read or changed what it should not before the fix.

use std::path::PathBuf;

use allocator_mesos::base64_encode;
use serde_json::{Value, json};
use workspace_tests::serve::Serve;

const CLUSTER: &str = "tests/python/cluster.json";
const JSON: &str = "Content-Type: application/json";
const FORM: &str = "Content-Type: application/x-www-form-urlencoded";

fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("serve-acl-attacks-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Principals `ops` (secret `s`) and `low` (secret `l`), and read-write authentication.
fn start(test: &str, acls: &str, more: &[&str]) -> Serve {
    let creds = dir(test).join("credentials.json");
    std::fs::write(
        &creds,
        r#"{"credentials": [{"principal": "ops", "secret": "s"}, {"principal": "low", "secret": "l"}]}"#,
    )
    .unwrap();
    let creds = creds.display().to_string();
    let mut args = vec!["--duration", "60", "--scenario", CLUSTER, "--acls", acls];
    args.extend(["--credentials", &creds, "--authenticate_http_readwrite"]);
    args.extend_from_slice(more);
    Serve::start(&args)
}

fn basic(principal: &str, secret: &str) -> String {
    format!("Authorization: Basic {}", base64_encode(format!("{principal}:{secret}").as_bytes()))
}

fn as_user(serve: &Serve, who: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let auth = match who {
        "ops" => basic("ops", "s"),
        _ => basic("low", "l"),
    };
    let kind = if body.starts_with('{') || body.starts_with('[') { JSON } else { FORM };
    let (status, _, answer) = serve.request_with(method, path, &[kind, &auth], body);
    (status, answer)
}

/// Subscribes a framework over the scheduler API: the id the master gave it, and its stream.
fn subscribe(serve: &Serve) -> (String, std::io::BufReader<std::net::TcpStream>) {
    let info = json!({"user": "u", "name": "f", "roles": ["r1"],
                      "capabilities": [{"type": "MULTI_ROLE"}]});
    let body = json!({"type": "SUBSCRIBE", "subscribe": {"framework_info": info}}).to_string();
    let (status, _, mut stream) = serve.open_stream("/api/v1/scheduler", &[JSON], &body);
    assert_eq!(status, 200);
    let heard = workspace_tests::serve::read_for(&mut stream, 1.0);
    let start = heard.find("\"framework_id\":{\"value\":\"").expect("SUBSCRIBED") + 26;
    (heard[start..].split('"').next().unwrap().to_owned(), stream)
}

fn form_resources(agent: &str, resources: &Value) -> String {
    let encoded: String = resources
        .to_string()
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("slaveId={agent}&resources={encoded}")
}

#[test]
fn a_none_rule_denies_the_requests_that_name_no_principal_or_no_object() {
    let acls = r#"{
        "view_flags": [{"principals": {"type": "ANY"}, "flags": {"type": "NONE"}}],
        "plan": [{"principals": {"type": "ANY"}, "roles": {"type": "NONE"}}],
        "set_log_level": [{"principals": {"type": "ANY"}, "level": {"type": "NONE"}}],
        "update_weights": [{"principals": {"type": "NONE"}, "roles": {"values": ["prod"]}}]}"#;
    let serve = Serve::start(&["--duration", "60", "--scenario", CLUSTER, "--acls", acls]);
    assert_eq!(serve.request("GET", "/master/flags", "").0, 403);
    let change = json!({"op": "update_weights", "weights": {"r1": 2}}).to_string();
    assert_eq!(serve.request("POST", "/plan", &change).0, 403);
    let set = json!({"type": "SET_LOGGING_LEVEL",
        "set_logging_level": {"level": 3, "duration": {"nanoseconds": 1_000_000_000i64}}});
    assert_eq!(serve.request("POST", "/api/v1", &set.to_string()).0, 403);
    assert_eq!(serve.request("POST", "/weights", r#"{"weights": {"prod": 5}}"#).0, 403);
    assert_eq!(serve.request("POST", "/weights", r#"{"weights": {"dev": 5}}"#).0, 200);
}

#[test]
fn a_reservation_is_authorized_by_its_role_in_either_resource_format() {
    let acls = r#"{"reserve_resources": [
        {"principals": {"values": ["low"]}, "roles": {"values": ["dev"]}},
        {"principals": {"values": ["low"]}, "roles": {"type": "NONE"}}]}"#;
    let serve = start("reserve", acls, &[]);
    let legacy =
        json!([{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1}, "role": "prod"}]);
    let (status, answer) =
        as_user(&serve, "low", "POST", "/master/reserve", &form_resources("a1", &legacy));
    assert_eq!(status, 403, "{answer}");
    let dev = json!([{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1}, "role": "dev"}]);
    assert_eq!(
        as_user(&serve, "low", "POST", "/master/reserve", &form_resources("a1", &dev)).0,
        202
    );
    let claimed = json!([{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1},
        "reservations": [{"type": "DYNAMIC", "role": "dev", "principal": "ops"}]}]);
    let (status, answer) =
        as_user(&serve, "low", "POST", "/master/reserve", &form_resources("a2", &claimed));
    assert_eq!(status, 400, "a reservation in another principal's name: {answer}");
}

#[test]
fn an_unreserve_is_authorized_by_who_made_the_reservation_not_who_it_claims() {
    let acls = r#"{"unreserve_resources": [
        {"principals": {"values": ["low"]}, "reserver_principals": {"values": ["low"]}},
        {"principals": {"values": ["low"]}, "reserver_principals": {"type": "NONE"}}]}"#;
    let serve = start("unreserve", acls, &[]);
    let by = |principal: Option<&str>| {
        let mut reservation = json!({"type": "DYNAMIC", "role": "prod"});
        if let Some(p) = principal {
            reservation["principal"] = json!(p);
        }
        json!([{"name": "cpus", "type": "SCALAR", "scalar": {"value": 2}, "reservations": [reservation]}])
    };
    let made =
        as_user(&serve, "ops", "POST", "/master/reserve", &form_resources("a3", &by(Some("ops"))));
    assert_eq!(made.0, 202, "{}", made.1);
    for claim in [Some("low"), None] {
        let (status, answer) =
            as_user(&serve, "low", "POST", "/master/unreserve", &form_resources("a3", &by(claim)));
        assert_eq!(status, 403, "claiming {claim:?}: {answer}");
    }
    let state: Value = serde_json::from_str(&serve.request("GET", "/state", "").1).unwrap();
    assert!(state.to_string().contains("cpus(prod"), "ops's reservation is still there: {state}");
}

#[test]
fn a_schedule_that_drops_other_machines_windows_needs_their_acl_too() {
    let acls = r#"{"update_maintenance_schedules": [
        {"principals": {"values": ["low"]}, "machines": {"values": ["a1"]}},
        {"principals": {"values": ["low"]}, "machines": {"type": "NONE"}}]}"#;
    let serve = start("schedule", acls, &[]);
    let window = |host: &str| {
        json!({"machine_ids": [{"hostname": host}],
               "unavailability": {"start": {"nanoseconds": 4_000_000_000_000_000_000i64}}})
    };
    let post = |who: &str, windows: Vec<Value>| {
        as_user(
            &serve,
            who,
            "POST",
            "/master/maintenance/schedule",
            &json!({"windows": windows}).to_string(),
        )
        .0
    };
    assert_eq!(post("ops", vec![window("a2"), window("a4")]), 200);
    assert_eq!(post("low", vec![window("a1")]), 403, "it would drop a2's and a4's windows");
    assert_eq!(post("low", vec![]), 403, "nor wipe the schedule");
}

#[test]
fn an_explanation_is_only_for_a_caller_who_may_see_everything_it_names() {
    let deny =
        r#"{"view_frameworks": [{"principals": {"type": "ANY"}, "users": {"type": "NONE"}}]}"#;
    let serve = Serve::start(&["--duration", "60", "--acls", deny]);
    for query in ["role=batch", "role=analytics", "framework=batch-0", "framework=nobody"] {
        let (status, answer) = serve.request("GET", &format!("/explain?{query}"), "");
        assert_eq!(status, 403, "{query}: {answer}");
        assert!(!answer.contains("batch-") && !answer.contains("service-"), "{answer}");
    }
}

#[test]
fn framework_ids_cannot_be_taken_in_advance() {
    let serve = Serve::start(&["--duration", "60", "--scenario", CLUSTER]);
    let ids = [subscribe(&serve).0, subscribe(&serve).0];
    for id in &ids {
        let suffix = id.rsplit('-').take(5).collect::<Vec<_>>();
        assert_eq!(suffix.len(), 5, "a UUID ends the id: {id}");
        assert_eq!(id.len(), ids[0].len());
    }
    let common = ids[0].chars().zip(ids[1].chars()).take_while(|(a, b)| a == b).count();
    assert!(ids[0].len() - common >= 20, "the two ids differ in their random part: {ids:?}");
}

#[test]
fn an_unauthorized_caller_learns_nothing_of_what_exists_from_a_refusal() {
    let acls = r#"{"update_quotas": [
            {"principals": {"values": ["low"]}, "roles": {"values": ["dev"]}},
            {"principals": {"values": ["low"]}, "roles": {"type": "NONE"}}],
        "view_frameworks": [{"principals": {"type": "ANY"}, "users": {"type": "NONE"}}]}"#;
    let serve = start("oracle", acls, &[]);
    for role in ["nonexistent", "prod"] {
        let (status, answer) =
            as_user(&serve, "low", "DELETE", &format!("/master/quota/{role}"), "");
        assert_eq!(status, 403, "{role}: {answer}");
        assert!(!answer.contains(role), "{answer}");
    }
    // A hidden framework is, to the plan, an unknown one.
    let (id, _stream) = subscribe(&serve);
    let plan = |framework: &str| {
        let change = json!({"op": "suppress_offers", "framework": framework}).to_string();
        as_user(&serve, "ops", "POST", "/plan", &change)
    };
    let (hidden, unknown) = (plan(&id), plan("nobody"));
    assert_eq!(hidden.0, 400, "{}", hidden.1);
    assert_eq!(hidden.1.replace(&id, "X"), unknown.1.replace("nobody", "X"));
}

#[test]
fn state_shows_a_maintenance_window_only_to_who_may_see_it() {
    let acls = r#"{"get_maintenance_schedules": [
        {"principals": {"type": "ANY"}, "machines": {"type": "NONE"}}]}"#;
    let serve = start("window", acls, &["--authenticate_http_readonly"]);
    let schedule = json!({"windows": [{"machine_ids": [{"hostname": "a2"}],
        "unavailability": {"start": {"nanoseconds": 4_000_000_000_000_000_000i64}}}]});
    assert_eq!(
        as_user(&serve, "ops", "POST", "/master/maintenance/schedule", &schedule.to_string()).0,
        200
    );
    let (_, state) = as_user(&serve, "low", "GET", "/state", "");
    let state: Value = serde_json::from_str(&state).unwrap();
    let a2 = state["agents"].as_array().unwrap().iter().find(|a| a["agent"] == "a2").unwrap();
    assert!(a2["unavailability"].is_null(), "{a2}");
}

#[test]
fn a_misspelt_acl_field_or_quota_on_the_default_role_is_refused() {
    let typo =
        r#"{"view_frameworks": [{"principals": {"type": "ANY"}, "user": {"type": "NONE"}}]}"#;
    let out = workspace_tests::run_master(&["serve", "--acls", typo, "--duration", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown field \"user\""));
    let serve = Serve::start(&["--duration", "60", "--scenario", CLUSTER]);
    let (status, answer) =
        serve.request("POST", "/quota", r#"{"role": "*", "guarantees": "cpus:1"}"#);
    assert_eq!(status, 400, "{answer}");
}

#[test]
fn the_log_is_never_written_through_a_planted_link() {
    let logs = dir("log-link");
    let victim = logs.join("victim.txt");
    std::fs::write(&victim, "keep me").unwrap();
    std::os::unix::fs::symlink(&victim, logs.join("allocator-master.log")).unwrap();
    let out = workspace_tests::run_master(&[
        "serve",
        "--log_dir",
        logs.to_str().unwrap(),
        "--duration",
        "1",
        "--scenario",
        CLUSTER,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--log_dir"));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
}
