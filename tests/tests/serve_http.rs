//! `allocator-master serve`: real HTTP requests on loopback against a live master (#12).
//!
//! Each test starts the binary on port 0 (the address comes back on stderr), so tests never
//! race for a port; each master stops by itself after `--duration` and is killed when the test
//! ends. Nothing waits by sleeping: a request is answered after the events due before it, so
//! the state at time 0 is settled by the first answer.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use workspace_tests::serve::Serve;
use workspace_tests::{manifest_for, master, workspace_root};

/// Two agents, quota for role `a`, two frameworks that each launch one task and refuse the
/// rest for 1,000 s: after time 0 nothing changes, so states taken apart can be compared.
const SCENARIO: &str = r#"{"description": "serve test", "events": [
  {"op": "add_agent", "agent": "a1", "resources": "cpus:8;mem:800"},
  {"op": "add_agent", "agent": "a2", "resources": "cpus:8;mem:800"},
  {"op": "update_quota", "role": "a", "guarantees": "cpus:2", "limits": "cpus:6"},
  {"op": "add_framework", "framework": "fa", "roles": ["a"],
   "tasks": {"resources": "cpus:1;mem:100", "count": 1, "refuse_seconds": 1000}},
  {"op": "add_framework", "framework": "fb", "roles": ["b"],
   "tasks": {"resources": "cpus:2;mem:100", "count": 1, "refuse_seconds": 1000}}
]}"#;

fn scenario_file(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("serve-http-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, SCENARIO).unwrap();
    path
}

/// Starts `allocator-master serve` on a free loopback port with `extra` flags.
fn start(test: &str, extra: &[&str]) -> Serve {
    let scenario = scenario_file(test);
    let mut args = vec!["--duration", "120", "--scenario", scenario.to_str().unwrap()];
    args.extend_from_slice(extra);
    Serve::start(&args)
}

/// One HTTP/1.1 request; the status and the JSON body.
fn request(live: &Serve, method: &str, path: &str, body: &str) -> (u16, Value) {
    let (status, payload) = live.request(method, path, body);
    (status, serde_json::from_str(&payload).expect("a JSON body"))
}

fn get(live: &Serve, path: &str) -> Value {
    let (status, v) = request(live, "GET", path, "");
    assert_eq!(status, 200, "GET {path}: {v}");
    v
}

/// What an operator request may change: sorters, roles (weights, quotas) and allocations.
fn operator_view(state: &Value) -> Value {
    json!({"role_sorter": state["role_sorter"], "framework_sorter": state["framework_sorter"],
           "roles": state["roles"], "allocations": state["allocations"]})
}

fn modules() -> String {
    let _ = workspace_tests::ensure_built();
    let random = manifest_for("random_sorter", &["random"]);
    let binpack = manifest_for("binpack_allocator", &["binpack"]);
    let lib =
        |m: &str| -> Value { serde_json::from_str::<Value>(m).unwrap()["libraries"][0].clone() };
    json!({"libraries": [lib(&random), lib(&binpack)]}).to_string()
}

#[test]
fn metrics_snapshot_uses_mesos_names() {
    let live = start("metrics", &[]);
    let m = get(&live, "/metrics/snapshot");
    for key in [
        "allocator/mesos/event_queue_dispatches",
        "allocator/mesos/allocation_runs",
        "allocator/mesos/allocation_run_ms",
        "allocator/mesos/allocation_run_ms/p99",
        "allocator/mesos/allocation_run_latency_ms",
        "allocator/mesos/roles/a/shares/dominant",
        "allocator/mesos/roles/b/shares/dominant",
    ] {
        assert!(m[key].is_number(), "{key} missing from {m}");
    }
    assert!(m["allocator/mesos/allocation_runs"].as_f64().unwrap() >= 1.0, "{m}");
    // fb holds cpus:2 of 16 cpus: its dominant share is 1/8.
    assert_eq!(m["allocator/mesos/roles/b/shares/dominant"], json!(0.125), "{m}");
}

#[test]
fn metrics_snapshot_reports_offer_filters_per_role() {
    let live = start("filters", &[]);
    let m = get(&live, "/metrics/snapshot");
    // Each framework refused the rest of its offer for 1,000 s.
    for role in ["a", "b"] {
        let key = format!("allocator/mesos/offer_filters/roles/{role}/active");
        assert!(m[&key].as_f64().is_some_and(|n| n >= 1.0), "{key} in {m}");
    }
}

#[test]
fn metrics_snapshot_reports_quota_guarantee_limit_and_allocation() {
    let live = start("quota-metrics", &[]);
    let m = get(&live, "/metrics/snapshot");
    let base = "allocator/mesos/quota/roles/a/resources/cpus";
    assert_eq!(m[format!("{base}/guarantee")], json!(2.0), "{m}");
    assert_eq!(m[format!("{base}/limit")], json!(6.0), "{m}");
    assert_eq!(m[format!("{base}/offered_or_allocated")], json!(1.0), "{m}");
}

#[test]
fn state_lists_agents_frameworks_roles_and_allocations() {
    let live = start("state", &[]);
    let s = get(&live, "/state");
    assert_eq!(s["allocator"], "hierarchical");
    assert_eq!(s["agents"].as_array().unwrap().len(), 2, "{s}");
    assert_eq!(s["frameworks"].as_array().unwrap().len(), 2, "{s}");
    let allocations = s["allocations"].as_array().unwrap();
    let held: Vec<(&str, &str)> = allocations
        .iter()
        .map(|a| (a["framework"].as_str().unwrap(), a["resources"].as_str().unwrap()))
        .collect();
    assert!(held.contains(&("fa", "cpus:1;mem:100")), "{s}");
    assert!(held.contains(&("fb", "cpus:2;mem:100")), "{s}");
    let a = s["roles"].as_array().unwrap().iter().find(|r| r["role"] == "a").expect("role a");
    assert_eq!(a["quota"]["guarantees"], "cpus:2", "{s}");
}

#[test]
fn post_quota_updates_the_role_quota() {
    let live = start("post-quota", &[]);
    let (status, v) =
        request(&live, "POST", "/quota", r#"{"role": "b", "guarantees": "cpus:3;mem:10"}"#);
    assert_eq!(status, 200, "{v}");
    let m = get(&live, "/metrics/snapshot");
    assert_eq!(m["allocator/mesos/quota/roles/b/resources/cpus/guarantee"], json!(3.0), "{m}");
    let s = get(&live, "/state");
    let b = s["roles"].as_array().unwrap().iter().find(|r| r["role"] == "b").expect("role b");
    assert_eq!(b["quota"]["guarantees"], "cpus:3;mem:10", "{s}");
}

#[test]
fn post_weights_updates_role_weights() {
    let live = start("post-weights", &[]);
    let (status, v) = request(&live, "POST", "/weights", r#"{"weights": {"a": 2.5}}"#);
    assert_eq!(status, 200, "{v}");
    let s = get(&live, "/state");
    let a = s["roles"].as_array().unwrap().iter().find(|r| r["role"] == "a").expect("role a");
    assert_eq!(a["weight"], json!(2.5), "{s}");
}

#[test]
fn bad_operator_requests_get_400_and_change_nothing() {
    let live = start("bad-requests", &["--modules", &modules()]);
    let before = operator_view(&get(&live, "/state"));
    for (path, body) in [
        ("/quota", "{"),
        ("/quota", "[]"),
        ("/quota", r#"{"guarantees": "cpus:1"}"#),
        ("/quota", r#"{"role": "a", "guarantees": "cpus:-1"}"#),
        ("/quota", r#"{"role": "a", "guarantees": "cpus:NaN"}"#),
        ("/quota", r#"{"role": "a", "guarantees": "cpus:4", "limits": "cpus:1"}"#),
        ("/quota", r#"{"role": "a/x", "limits": "cpus:1"}"#),
        ("/quota", r#"{"role": "a", "guarantees": "cpus:1", "colour": "red"}"#),
        ("/quota", r#"{"op": "remove_agent", "agent": "a1"}"#),
        ("/weights", r#"{"weights": {"a": 0}}"#),
        ("/weights", r#"{"weights": {"a": "heavy"}}"#),
        ("/weights", r#"{"weights": [1]}"#),
        ("/sorters", r#"{"role_sorter": "no_such_sorter"}"#),
        ("/sorters", r#"{"framework_sorter": 7}"#),
    ] {
        let (status, v) = request(&live, "POST", path, body);
        assert_eq!(status, 400, "POST {path} {body}: {v}");
        assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "POST {path} {body}: {v}");
    }
    assert_eq!(operator_view(&get(&live, "/state")), before);
}

#[test]
fn unknown_endpoints_and_methods_are_refused() {
    let live = start("routes", &[]);
    assert_eq!(request(&live, "GET", "/nothing", "").0, 404);
    assert_eq!(request(&live, "PUT", "/quota", "{}").0, 405);
    // GET /quota is Mesos's: the quotas.
    assert_eq!(request(&live, "GET", "/quota", "").0, 200);
    assert_eq!(request(&live, "POST", "/state", "{}").0, 405);
}

#[test]
fn post_sorters_swaps_sorters_at_run_time_keeping_allocations() {
    let live = start("swap", &["--modules", &modules()]);
    let before = get(&live, "/state");
    let (status, v) = request(
        &live,
        "POST",
        "/sorters",
        r#"{"role_sorter": "random", "framework_sorter": "random"}"#,
    );
    assert_eq!(status, 200, "{v}");
    let after = get(&live, "/state");
    assert_eq!(after["role_sorter"], "random");
    assert_eq!(after["framework_sorter"], "random");
    assert_eq!(after["allocations"], before["allocations"]);
}

#[test]
fn post_sorters_is_refused_for_an_allocator_module() {
    let live = start("swap-module", &["--modules", &modules(), "--allocator", "binpack"]);
    let (status, v) = request(&live, "POST", "/sorters", r#"{"role_sorter": "random"}"#);
    assert_eq!(status, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("built-in allocator"), "{v}");
}

#[test]
fn requests_from_many_threads_are_all_answered() {
    let live = start("many", &[]);
    std::thread::scope(|scope| {
        for t in 0..8 {
            let live = &live;
            scope.spawn(move || {
                for i in 0..10 {
                    let path = if (t + i) % 2 == 0 { "/state" } else { "/metrics/snapshot" };
                    assert_eq!(request(live, "GET", path, "").0, 200);
                }
            });
        }
    });
}

#[test]
fn serve_stops_by_itself_after_duration_with_a_summary() {
    let scenario = scenario_file("duration");
    let out = Command::new(master())
        .args(["serve", "--listen", "127.0.0.1:0", "--duration", "0.5", "--scenario"])
        .arg(&scenario)
        .current_dir(workspace_root())
        .output()
        .expect("run serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("serving on http://127.0.0.1:"), "{stderr}");
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("allocation runs"), "the summary is on stdout: {summary}");
}

#[test]
fn serve_refuses_an_address_it_cannot_bind() {
    let out = Command::new(master())
        .args(["serve", "--listen", "256.0.0.1:1", "--duration", "1"])
        .current_dir(workspace_root())
        .output()
        .expect("run serve");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot listen on '256.0.0.1:1'"), "{stderr}");
}

/// Issue 16: a client that announces a body and then stalls (or sends one without end) holds
/// only its own connection; every other request is answered meanwhile.
#[test]
fn a_slow_client_does_not_block_other_requests() {
    let live = start("slow-client", &[]);
    let mut slow = TcpStream::connect(&live.addr).expect("connect");
    write!(
        slow,
        "POST /weights HTTP/1.1\r\nHost: {}\r\nContent-Length: 100000\r\n\r\n{{",
        live.addr
    )
    .unwrap();
    slow.flush().unwrap();
    let mut endless = TcpStream::connect(&live.addr).expect("connect");
    write!(
        endless,
        "POST /quota HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{{\r\n"
    )
    .unwrap();
    endless.flush().unwrap();
    let start = std::time::Instant::now();
    for _ in 0..3 {
        let m = get(&live, "/metrics/snapshot");
        assert!(m["allocator/mesos/allocation_runs"].is_number(), "{m}");
        let s = get(&live, "/state");
        assert_eq!(s["agents"].as_array().unwrap().len(), 2, "{s}");
    }
    assert!(start.elapsed() < Duration::from_secs(5), "answered in {:?}", start.elapsed());
    drop(slow);
    drop(endless);
}

#[test]
fn a_body_over_one_mebibyte_is_answered_413() {
    let live = start("too-large", &[]);
    let mut s = TcpStream::connect(&live.addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(s, "POST /weights HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n", 2 << 20)
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("read the answer");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
}

/// Issue 43: a client that sends its 2 MiB body whole before reading (as curl does) reads its
/// `413`, not `Broken pipe` or a reset: the master drains what it refused before closing.
#[test]
fn a_body_over_one_mebibyte_sent_whole_still_gets_its_413() {
    let live = start("too-large-whole", &[]);
    for _ in 0..3 {
        let mut s = TcpStream::connect(&live.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let body = vec![b'{'; 2 << 20];
        write!(
            s,
            "POST /weights HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .unwrap();
        s.write_all(&body).expect("the body is drained, not refused with a reset");
        let mut answer = String::new();
        s.read_to_string(&mut answer).expect("the answer, not a reset");
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    }
}

/// Issue 43: a request followed, in the same write, by the start of a next head that never
/// ends is closed at the header timeout (1 s here) after the answer, not held for the idle
/// timeout (30 s here) as before.
#[test]
fn a_pipelined_partial_head_is_closed_at_the_header_timeout() {
    let live = start("pipelined", &["--http_header_timeout", "1", "--http_idle_timeout", "30"]);
    let mut s = TcpStream::connect(&live.addr).expect("connect");
    s.write_all(b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\nGET /version HTTP/1.1\r\nHo")
        .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let start = std::time::Instant::now();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let held = start.elapsed();
    assert!(held < Duration::from_secs(5), "held for {held:?}, not the 1 s header timeout");
}

/// Issue 31: with `--ssl_cert_file` and `--ssl_key_file` the master serves HTTPS (a
/// self-signed certificate made here, trusted by a rustls client); plain HTTP gets no answer.
#[test]
fn serve_speaks_https_with_the_ssl_flags() {
    use std::sync::Arc;
    let dir = std::env::temp_dir().join(format!("serve-http-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (cert_file, key_file) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let live = start(
        "tls",
        &[
            "--ssl_cert_file",
            cert_file.to_str().unwrap(),
            "--ssl_key_file",
            key_file.to_str().unwrap(),
        ],
    );
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let client = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(&live.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut tls = rustls::StreamOwned::new(client, tcp);
    tls.write_all(b"GET /version HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.ends_with(r#"{"version":"1.12.0"}"#), "{answer}");
    // Plain HTTP on the HTTPS port is not answered as HTTP.
    let mut plain = TcpStream::connect(&live.addr).unwrap();
    plain.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    plain.write_all(b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));
}

/// Issue 31: the TLS flags go together, and unreadable files are refused; each is a one-line
/// usage error (exit 2).
#[test]
fn tls_flags_alone_or_unreadable_are_usage_errors() {
    let missing = workspace_root().join("no-such-cert.pem");
    let missing = missing.to_str().unwrap();
    for (flags, says) in [
        (vec!["--ssl_cert_file", missing], "--ssl_key_file"),
        (vec!["--ssl_key_file", missing], "--ssl_cert_file"),
        (vec!["--ssl_cert_file", missing, "--ssl_key_file", missing], "no-such-cert.pem"),
    ] {
        let out = Command::new(master())
            .args(["serve", "--listen", "127.0.0.1:0", "--duration", "1"])
            .args(&flags)
            .current_dir(workspace_root())
            .output()
            .expect("run serve");
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{flags:?}: {stderr}");
    }
}
