//! `serve`'s identity, authentication and authorization, Mesos's way: HTTP Basic in the
//! realms the `--authenticate_http_*` flags switch on, `--acls` as Mesos's local authorizer
//! applies them, unguessable stream ids, failover that keeps a framework's principal, Mesos's
//! role rules on `SUBSCRIBE`, and Mesos's `415`/`406` for protobuf. Every request goes to a
//! master on 127.0.0.1 that stops by itself.

use std::path::PathBuf;

use allocator_mesos::base64_encode;
use serde_json::{Value, json};
use workspace_tests::serve::{Serve, header, pymesos_python};

const CLUSTER: &str = "tests/python/cluster.json";

/// A file in the test's own temporary folder.
fn file(test: &str, name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("serve-auth-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn credentials(test: &str) -> String {
    let text = r#"{"credentials": [{"principal": "ops", "secret": "ops-secret"},
                                   {"principal": "dev", "secret": "dev-secret"}]}"#;
    file(test, "credentials.json", text).display().to_string()
}

fn start(flags: &[&str]) -> Serve {
    let mut args = vec!["--duration", "60", "--scenario", CLUSTER];
    args.extend_from_slice(flags);
    Serve::start(&args)
}

fn basic(principal: &str, secret: &str) -> String {
    format!("Authorization: Basic {}", base64_encode(format!("{principal}:{secret}").as_bytes()))
}

const JSON: &str = "Content-Type: application/json";

fn weights(serve: &Serve, auth: Option<&str>) -> (u16, Vec<(String, String)>) {
    let mut headers = vec![JSON];
    headers.extend(auth);
    let (status, h, _) =
        serve.request_with("POST", "/weights", &headers, r#"{"weights": {"r1": 2}}"#);
    (status, h)
}

fn subscribe_body(roles: &[&str], id: Option<&str>, principal: Option<&str>) -> String {
    let mut info = json!({"user": "", "name": "f", "roles": roles,
                          "capabilities": [{"type": "MULTI_ROLE"}]});
    if let Some(id) = id {
        info["id"] = json!({"value": id});
    }
    if let Some(p) = principal {
        info["principal"] = json!(p);
    }
    json!({"type": "SUBSCRIBE", "subscribe": {"framework_info": info}}).to_string()
}

/// The first event of a stream (RecordIO in chunks): its JSON.
fn first_event(reader: &mut std::io::BufReader<std::net::TcpStream>) -> Value {
    use std::io::{BufRead, Read};
    let mut line = String::new();
    reader.read_line(&mut line).unwrap(); // chunk size
    let mut record = String::new();
    reader.read_line(&mut record).unwrap(); // record length
    let len: usize = record.trim().parse().unwrap();
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).unwrap();
    serde_json::from_slice(&body).unwrap()
}

#[test]
fn readwrite_authentication_answers_401_with_the_realm_until_the_credentials_are_right() {
    let creds = credentials("rw");
    let serve = start(&["--credentials", &creds, "--authenticate_http_readwrite"]);
    for auth in [None, Some(basic("ops", "wrong")), Some(basic("nobody", "ops-secret"))] {
        let (status, headers) = weights(&serve, auth.as_deref());
        assert_eq!(status, 401, "{auth:?}");
        assert_eq!(
            header(&headers, "WWW-Authenticate"),
            Some("Basic realm=\"mesos-master-readwrite\"")
        );
    }
    assert_eq!(weights(&serve, Some(&basic("ops", "ops-secret"))).0, 200);
    // Reads are another realm, off here.
    assert_eq!(serve.request("GET", "/state", "").0, 200);
}

#[test]
fn acls_allow_the_listed_principal_and_refuse_others_with_403() {
    let creds = credentials("acl");
    let acls = r#"{"permissive": false,
        "update_weights": [{"principals": {"values": ["ops"]}, "roles": {"type": "ANY"}}],
        "update_quotas": [{"principals": {"values": ["ops"]}, "roles": {"values": ["r1"]}}],
        "view_frameworks": [{"principals": {"type": "ANY"}, "users": {"type": "ANY"}}],
        "view_roles": [{"principals": {"type": "ANY"}, "roles": {"type": "ANY"}}]}"#;
    let acls = file("acl", "acls.json", acls).display().to_string();
    let serve = start(&["--credentials", &creds, "--authenticate_http_readwrite", "--acls", &acls]);
    assert_eq!(weights(&serve, Some(&basic("ops", "ops-secret"))).0, 200);
    assert_eq!(weights(&serve, Some(&basic("dev", "dev-secret"))).0, 403);
    let quota = |role: &str, who: &str, secret: &str| {
        let call = json!({"type": "UPDATE_QUOTA", "update_quota": {"quota_configs": [
            {"role": role, "guarantees": {"cpus": {"value": 1}}}]}});
        let auth = basic(who, secret);
        serve.request_with("POST", "/api/v1", &[JSON, &auth], &call.to_string()).0
    };
    assert_eq!(quota("r1", "ops", "ops-secret"), 200);
    assert_eq!(quota("r2", "ops", "ops-secret"), 403, "ops may set r1's quota only");
    assert_eq!(quota("r1", "dev", "dev-secret"), 403);
    let state: Value = serde_json::from_str(&serve.request("GET", "/state", "").1).unwrap();
    assert!(state.to_string().contains("\"r1\""), "{state}");
    // Marking an agent gone is not listed: permissive false refuses it.
    let gone = json!({"type": "MARK_AGENT_GONE", "mark_agent_gone": {"agent_id": {"value": "a1"}}});
    let auth = basic("ops", "ops-secret");
    assert_eq!(serve.request_with("POST", "/api/v1", &[JSON, &auth], &gone.to_string()).0, 403);
}

#[test]
fn a_framework_subscribes_only_with_valid_credentials_when_frameworks_authenticate() {
    let creds = credentials("fw");
    let serve = start(&["--credentials", &creds, "--authenticate_http_frameworks"]);
    let body = subscribe_body(&["r1"], None, None);
    let (status, headers, _) = serve.open_stream("/api/v1/scheduler", &[JSON], &body);
    assert_eq!(status, 401);
    assert_eq!(
        header(&headers, "WWW-Authenticate"),
        Some("Basic realm=\"mesos-master-scheduler\"")
    );
    let auth = basic("dev", "dev-secret");
    let (status, _, mut stream) = serve.open_stream("/api/v1/scheduler", &[JSON, &auth], &body);
    assert_eq!(status, 200);
    assert_eq!(first_event(&mut stream)["type"], "SUBSCRIBED");
    // A FrameworkInfo naming another principal than the authenticated one is refused.
    let other = subscribe_body(&["r1"], None, Some("ops"));
    let (status, _, _) = serve.open_stream("/api/v1/scheduler", &[JSON, &auth], &other);
    assert_eq!(status, 400);
}

#[test]
fn stream_ids_are_random_uuids_and_a_forged_one_tears_nothing_down() {
    let serve = start(&[]);
    let body = subscribe_body(&["r1"], None, None);
    let (_, headers, mut stream) = serve.open_stream("/api/v1/scheduler", &[JSON], &body);
    let stream_id = header(&headers, "Mesos-Stream-Id").unwrap().to_owned();
    let (_, headers2, _) = serve.open_stream("/api/v1/scheduler", &[JSON], &body);
    let other = header(&headers2, "Mesos-Stream-Id").unwrap();
    assert_eq!(stream_id.len(), 36, "{stream_id}");
    assert_eq!(&stream_id[14..15], "4", "a version-4 uuid: {stream_id}");
    assert_ne!(stream_id, other);
    let id = first_event(&mut stream)["subscribed"]["framework_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!stream_id.contains(&id), "the stream id is not derived from the framework id");
    let teardown = json!({"type": "TEARDOWN", "framework_id": {"value": id}}).to_string();
    let forged = format!("Mesos-Stream-Id: {id}-stream-0001");
    let (status, _, _) =
        serve.request_with("POST", "/api/v1/scheduler", &[JSON, &forged], &teardown);
    assert_eq!(status, 400);
    let state: Value = serde_json::from_str(&serve.request("GET", "/state", "").1).unwrap();
    assert!(state.to_string().contains(&id), "the framework is still there: {state}");
}

#[test]
fn a_failover_by_another_principal_is_refused_and_keeps_the_framework() {
    let serve = start(&[]);
    let body = subscribe_body(&["r1"], None, Some("dev"));
    let (_, headers, mut stream) = serve.open_stream("/api/v1/scheduler", &[JSON], &body);
    let id = first_event(&mut stream)["subscribed"]["framework_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    let hijack = subscribe_body(&["r1"], Some(&id), Some("mallory"));
    let (status, _, _) = serve.open_stream("/api/v1/scheduler", &[JSON], &hijack);
    assert_eq!(status, 403);
    // The framework's own stream is still the current one: its calls are accepted.
    let stream_id = header(&headers, "Mesos-Stream-Id").unwrap();
    let revive = json!({"type": "REVIVE", "framework_id": {"value": id}}).to_string();
    let sid = format!("Mesos-Stream-Id: {stream_id}");
    assert_eq!(serve.request_with("POST", "/api/v1/scheduler", &[JSON, &sid], &revive).0, 202);
    // The same principal may fail over.
    let failover = subscribe_body(&["r1"], Some(&id), Some("dev"));
    assert_eq!(serve.open_stream("/api/v1/scheduler", &[JSON], &failover).0, 200);
}

#[test]
fn roles_mesos_refuses_are_refused_on_subscribe_with_the_reason() {
    let serve = start(&[]);
    for role in ["a/../b", "-x", "a b", "a\u{0}b", "a\nb", "a/*", "a/-b"] {
        let body = subscribe_body(&[role], None, None);
        let (status, _, text) = serve.request_with("POST", "/api/v1/scheduler", &[JSON], &body);
        assert_eq!(status, 400, "{role:?}");
        assert!(text.starts_with("Role '"), "{role:?}: {text}");
        assert!(text.contains("is invalid"), "{role:?}: {text}");
    }
    let state: Value = serde_json::from_str(&serve.request("GET", "/state", "").1).unwrap();
    assert_eq!(state["frameworks"].as_array().map(Vec::len), Some(0), "{state}");
}

#[test]
fn register_frameworks_acls_limit_a_principal_to_its_roles() {
    let acls = r#"{"register_frameworks": [
        {"principals": {"values": ["dev"]}, "roles": {"values": ["dev"]}},
        {"principals": {"values": ["dev"]}, "roles": {"type": "NONE"}}]}"#;
    let serve = start(&["--acls", acls]);
    let ok = subscribe_body(&["dev"], None, Some("dev"));
    assert_eq!(serve.open_stream("/api/v1/scheduler", &[JSON], &ok).0, 200);
    let prod = subscribe_body(&["prod"], None, Some("dev"));
    let (status, _, _) = serve.open_stream("/api/v1/scheduler", &[JSON], &prod);
    assert_eq!(status, 403);
}

#[test]
fn protobuf_bodies_get_415_and_a_protobuf_only_accept_gets_406() {
    let serve = start(&[]);
    let body = json!({"type": "GET_HEALTH"}).to_string();
    let (status, _, text) =
        serve.request_with("POST", "/api/v1", &["Content-Type: application/x-protobuf"], &body);
    assert_eq!(status, 415, "{text}");
    assert!(text.contains("application/json"), "{text}");
    let (status, _, _) = serve.request_with(
        "POST",
        "/api/v1/scheduler",
        &[JSON, "Accept: application/x-protobuf"],
        &subscribe_body(&["r1"], None, None),
    );
    assert_eq!(status, 406);
    let (status, _, _) =
        serve.request_with("POST", "/api/v1", &[JSON, "Accept: application/json"], &body);
    assert_eq!(status, 200);
}

#[test]
fn authentication_without_credentials_is_a_usage_error() {
    let out = workspace_tests::run_master(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--duration",
        "1",
        "--authenticate_http_readonly",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--authenticate_http_readonly needs --credentials"), "{err}");
}

#[test]
fn a_pymesos_framework_with_credentials_runs_a_task_when_frameworks_authenticate() {
    let Some(python) = pymesos_python() else { return };
    let creds = credentials("pymesos");
    let serve = start(&["--credentials", &creds, "--authenticate_http_frameworks"]);
    let out = std::process::Command::new(python)
        .current_dir(workspace_tests::workspace_root())
        .arg("tests/python/scheduler_checks.py")
        .args([serve.addr.as_str(), "finish_with_credentials", "dev", "dev-secret"])
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(seen["updates"], json!(["TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]));
}

#[test]
fn an_operator_teardown_needs_teardown_frameworks_for_the_frameworks_principal() {
    let creds = credentials("teardown");
    let acls = r#"{"teardown_frameworks": [
        {"principals": {"values": ["ops"]}, "framework_principals": {"type": "ANY"}},
        {"principals": {"type": "ANY"}, "framework_principals": {"type": "NONE"}}]}"#;
    let serve = start(&["--credentials", &creds, "--authenticate_http_readwrite", "--acls", acls]);
    let body = subscribe_body(&["r1"], None, Some("dev"));
    let (_, _, mut stream) = serve.open_stream("/api/v1/scheduler", &[JSON], &body);
    let id = first_event(&mut stream)["subscribed"]["framework_id"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    let teardown =
        json!({"type": "TEARDOWN", "teardown": {"framework_id": {"value": id}}}).to_string();
    let as_dev = basic("dev", "dev-secret");
    assert_eq!(serve.request_with("POST", "/api/v1", &[JSON, &as_dev], &teardown).0, 403);
    let as_ops = basic("ops", "ops-secret");
    assert_eq!(serve.request_with("POST", "/api/v1", &[JSON, &as_ops], &teardown).0, 200);
    let state: Value = serde_json::from_str(&serve.request("GET", "/state", "").1).unwrap();
    assert_eq!(state["frameworks"].as_array().map(Vec::len), Some(0), "{state}");
    assert_eq!(serve.request_with("POST", "/api/v1", &[JSON, &as_ops], &teardown).0, 400);
}
