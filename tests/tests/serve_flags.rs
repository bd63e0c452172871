//! The start-up flags a Mesos operator passes (issue 44): `--weights`, `--roles`, `--cluster`,
//! `--log_dir`, `--offer_timeout`, each listed in `/master/flags`; `--zk` refused with how high
//! availability works here; and the operator API's logging level.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use workspace_tests::serve::{Serve, read_for};

const CLUSTER: &str = "tests/python/cluster.json";
const JSON: &str = "Content-Type: application/json";

fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("serve-flags-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn start(flags: &[&str]) -> Serve {
    let mut args = vec!["--duration", "60", "--scenario", CLUSTER];
    args.extend_from_slice(flags);
    Serve::start(&args)
}

fn operator(serve: &Serve, call: Value) -> (u16, Value) {
    let (status, _, body) = serve.request_with("POST", "/api/v1", &[JSON], &call.to_string());
    (status, serde_json::from_str(&body).unwrap_or(Value::String(body)))
}

fn weights(serve: &Serve) -> Value {
    let (_, answer) = operator(serve, json!({"type": "GET_WEIGHTS"}));
    answer["get_weights"]["weight_infos"].clone()
}

fn subscribe_body(role: &str) -> String {
    let info = json!({"user": "alice", "name": "alice-fw", "roles": [role],
                      "capabilities": [{"type": "MULTI_ROLE"}]});
    json!({"type": "SUBSCRIBE", "subscribe": {"framework_info": info}}).to_string()
}

#[test]
fn weights_from_the_flag_apply_and_the_registrys_win_after_a_restart() {
    let work = dir("weights");
    let work = work.to_str().unwrap();
    let flags = ["--weights", "r1=2,r2=3", "--work_dir", work];
    let serve = start(&flags);
    let w = weights(&serve);
    assert!(w.to_string().contains(r#""role":"r1","weight":2.0"#), "{w}");
    let (status, _) = serve.request("POST", "/weights", r#"{"weights": {"r1": 5}}"#);
    assert_eq!(status, 200);
    assert!(serve.stop().success());
    let again = start(&flags);
    let w = weights(&again);
    assert!(w.to_string().contains(r#""role":"r1","weight":5.0"#), "the registry's: {w}");
    assert!(w.to_string().contains(r#""role":"r2","weight":3.0"#), "the flag's: {w}");
}

#[test]
fn a_bad_weights_flag_is_a_usage_error() {
    let out = workspace_tests::run_master(&["serve", "--weights", "r1=-1", "--duration", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--weights"));
}

#[test]
fn a_framework_may_subscribe_only_in_the_roles_the_flag_lists() {
    let serve = start(&["--roles", "r1,r2"]);
    let (status, _, body) =
        serve.request_with("POST", "/api/v1/scheduler", &[JSON], &subscribe_body("r9"));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Role 'r9' is not present in the master's --roles"), "{body}");
    let (status, _, _stream) =
        serve.open_stream("/api/v1/scheduler", &[JSON], &subscribe_body("r1"));
    assert_eq!(status, 200);
}

#[test]
fn an_offer_not_answered_in_time_is_rescinded_and_offered_again() {
    let serve = start(&["--offer_timeout", "1secs"]);
    let (status, _, mut stream) =
        serve.open_stream("/api/v1/scheduler", &[JSON], &subscribe_body("r1"));
    assert_eq!(status, 200);
    let heard = read_for(&mut stream, 4.0);
    let rescind = heard.find("\"RESCIND\"").unwrap_or_else(|| panic!("no RESCIND: {heard}"));
    assert!(heard[..rescind].contains("\"OFFERS\""), "an offer came first: {heard}");
    assert!(
        heard[rescind..].contains("\"OFFERS\""),
        "its resources went back to the allocator and were offered again: {heard}"
    );
}

#[test]
fn without_an_offer_timeout_an_unanswered_offer_stays() {
    let serve = start(&[]);
    let (_, _, mut stream) = serve.open_stream("/api/v1/scheduler", &[JSON], &subscribe_body("r1"));
    let heard = read_for(&mut stream, 3.0);
    assert!(heard.contains("\"OFFERS\"") && !heard.contains("\"RESCIND\""), "{heard}");
}

#[test]
fn the_cluster_log_dir_weights_roles_and_offer_timeout_are_listed_in_flags() {
    let logs = dir("listed");
    let serve = start(&[
        "--cluster",
        "prod-east",
        "--log_dir",
        logs.to_str().unwrap(),
        "--weights",
        "r1=2",
        "--roles",
        "r1",
        "--offer_timeout",
        "30secs",
    ]);
    let flags: Value = serde_json::from_str(&serve.request("GET", "/master/flags", "").1).unwrap();
    let flags = &flags["flags"];
    assert_eq!(flags["cluster"], "prod-east", "{flags}");
    assert_eq!(flags["weights"], "r1=2", "{flags}");
    assert_eq!(flags["roles"], "r1", "{flags}");
    assert_eq!(flags["offer_timeout"], "30secs", "{flags}");
    assert!(flags["log_dir"].is_string(), "{flags}");
    let (_, v1) = operator(&serve, json!({"type": "GET_FLAGS"}));
    assert!(v1.to_string().contains("prod-east"), "GET_FLAGS too: {v1}");
    let state: Value = serde_json::from_str(&serve.request("GET", "/master/state", "").1).unwrap();
    assert_eq!(state["cluster"], "prod-east");
}

#[test]
fn the_log_goes_to_log_dir_and_its_level_is_raised_for_a_while() {
    let logs = dir("log");
    let work = dir("log-registry");
    let serve = start(&["--log_dir", logs.to_str().unwrap(), "--work_dir", work.to_str().unwrap()]);
    let log = || std::fs::read_to_string(logs.join("allocator-master.log")).unwrap_or_default();
    // A refusal is a warning: in the file.
    assert_eq!(serve.request("GET", "/nothing-here", "").0, 404);
    assert!(log().contains("/nothing-here"), "{}", log());
    let (_, level) = operator(&serve, json!({"type": "GET_LOGGING_LEVEL"}));
    assert_eq!(level["get_logging_level"]["level"], 0, "{level}");
    assert_eq!(serve.request("POST", "/weights", r#"{"weights": {"r1": 2}}"#).0, 200);
    assert!(!log().contains("registry written"), "debug lines wait for a raised level");
    let set = json!({"type": "SET_LOGGING_LEVEL",
                     "set_logging_level": {"level": 2, "duration": {"nanoseconds": 2_000_000_000i64}}});
    assert_eq!(operator(&serve, set).0, 200);
    let (_, level) = operator(&serve, json!({"type": "GET_LOGGING_LEVEL"}));
    assert_eq!(level["get_logging_level"]["level"], 2, "{level}");
    assert_eq!(serve.request("POST", "/weights", r#"{"weights": {"r1": 3}}"#).0, 200);
    assert!(log().contains("registry written"), "debug lines now: {}", log());
    std::thread::sleep(Duration::from_millis(2500));
    let (_, level) = operator(&serve, json!({"type": "GET_LOGGING_LEVEL"}));
    assert_eq!(level["get_logging_level"]["level"], 0, "back after its duration: {level}");
}

#[test]
fn get_operations_answers_that_none_is_pending() {
    let serve = start(&[]);
    let (status, answer) = operator(&serve, json!({"type": "GET_OPERATIONS"}));
    assert_eq!(status, 200);
    assert_eq!(answer, json!({"type": "GET_OPERATIONS", "get_operations": {"operations": []}}));
}

#[test]
fn zk_is_refused_saying_how_this_master_keeps_its_state() {
    let out = workspace_tests::run_master(&["serve", "--zk", "zk://zk1:2181/mesos"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--zk") && stderr.contains("--work_dir"), "{stderr}");
}
