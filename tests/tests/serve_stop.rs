//! Stopping: SIGINT/SIGTERM end `serve` with frameworks connected (the master closes their
//! streams, prints the summary, exits 0), a recording is valid JSON even when a second signal
//! ends the process at once, and a run in the middle of one huge offer stops promptly. The
//! bounds below only catch a hang (a generous multiple of what a stop takes); they are not a
//! measurement of it (BENCHMARKS.md has none).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use workspace_tests::serve::Serve;
use workspace_tests::{master, workspace_root};

/// Far more than a stop takes; only a hang reaches it.
const HANG: Duration = Duration::from_secs(20);

fn temp(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("serve-stop-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn subscribe(serve: &Serve) -> std::io::BufReader<std::net::TcpStream> {
    let body = json!({"type": "SUBSCRIBE", "subscribe": {"framework_info":
        {"user": "", "name": "f", "roles": ["r1"], "capabilities": [{"type": "MULTI_ROLE"}]}}});
    let (status, _, stream) = serve.open_stream(
        "/api/v1/scheduler",
        &["Content-Type: application/json"],
        &body.to_string(),
    );
    assert_eq!(status, 200);
    stream
}

fn signal(pid: u32, name: &str) {
    let sent = Command::new("kill").args([&format!("-{name}"), &pid.to_string()]).status();
    assert!(sent.expect("run kill").success());
}

#[test]
fn sigterm_with_a_framework_connected_ends_its_stream_and_exits_zero() {
    let serve = Serve::start(&["--scenario", "tests/python/cluster.json", "--duration", "120"]);
    let mut stream = subscribe(&serve);
    let start = Instant::now();
    let status = serve.stop();
    assert!(start.elapsed() < HANG, "took {:?}", start.elapsed());
    assert_eq!(status.code(), Some(0));
    // The client sees its stream end (the final chunk, then the connection closes).
    stream.get_mut().set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut rest = Vec::new();
    let read = stream.read_to_end(&mut rest);
    assert!(read.is_ok(), "the stream ended: {read:?}");
}

#[test]
fn a_second_sigterm_still_leaves_a_valid_recording() {
    let dir = temp("record");
    let record = dir.join("rec.json");
    let mut child = Command::new(master())
        .args(["serve", "--listen", "127.0.0.1:0", "--duration", "120", "--speed", "20"])
        .args(["--scenario", "examples/scenarios/drf_paper.json", "--record"])
        .arg(&record)
        .current_dir(workspace_root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    // Wait until it serves (its address line), then let it record a little.
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("http://") {
        let n = stderr.read(&mut buf).unwrap();
        assert!(n > 0, "serve ended early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    std::thread::sleep(Duration::from_millis(500));
    signal(child.id(), "TERM");
    signal(child.id(), "TERM");
    let start = Instant::now();
    let status = child.wait().unwrap();
    assert!(start.elapsed() < HANG);
    assert!(status.code().is_some(), "exits, not killed: {status:?}");
    let text = std::fs::read_to_string(&record).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert!(!v["events"].as_array().unwrap().is_empty(), "{text}");
}

#[test]
fn sigint_in_the_middle_of_one_huge_offer_stops_the_run() {
    let dir = temp("huge");
    let scenario = dir.join("huge.json");
    let events = json!({"config": {"allocation_interval": 1}, "events": [
        {"op": "add_agent", "agent": "big", "resources": "cpus:100000;mem:100000000"},
        {"op": "add_framework", "framework": "tiny", "roles": ["r"],
         "tasks": {"resources": "cpus:0.001;mem:1", "refuse_seconds": 0}},
        {"op": "advance", "seconds": 5}]});
    std::fs::write(&scenario, events.to_string()).unwrap();
    let mut child = Command::new(master())
        .arg("--scenario")
        .arg(&scenario)
        .current_dir(workspace_root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its progress line says it is launching; then interrupt it mid-offer.
    std::thread::sleep(Duration::from_millis(1500));
    signal(child.id(), "INT");
    let start = Instant::now();
    let status = child.wait().unwrap();
    assert!(start.elapsed() < HANG, "took {:?}", start.elapsed());
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(err.contains("stopped by SIGINT"), "{err}");
    assert_eq!(status.code(), Some(130), "{err}");
}
