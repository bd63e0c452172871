//! The master's registry (`serve --work_dir`, SPEC 6; issue 35): quota, weights, the sorters,
//! the maintenance schedule, agents marked gone and subscribed frameworks survive a restart,
//! whether the master was stopped (SIGTERM) or killed (SIGKILL), and a master killed at any
//! instant leaves a registry that loads, with every acknowledged change in it.

use std::io::BufRead;
use std::path::PathBuf;

use serde_json::{Value, json};
use workspace_tests::serve::{Serve, pymesos_python};

const CLUSTER: &str = "tests/python/cluster.json";

fn work_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("serve-registry-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn start(dir: &std::path::Path) -> Serve {
    let dir = dir.to_str().unwrap();
    Serve::start(&[
        "--work_dir",
        dir,
        "--scenario",
        CLUSTER,
        "--modules",
        "examples/modules.json",
        "--duration",
        "90",
    ])
}

fn post(serve: &Serve, path: &str, body: Value) -> Value {
    let (status, answer) = serve.request("POST", path, &body.to_string());
    assert_eq!(status, 200, "POST {path} {body}: {answer}");
    serde_json::from_str(&answer).unwrap_or(Value::Null)
}

fn state(serve: &Serve) -> Value {
    let (status, answer) = serve.request("GET", "/state", "");
    assert_eq!(status, 200);
    serde_json::from_str(&answer).unwrap()
}

/// Subscribes a framework over the scheduler API (failover timeout 10 minutes) and returns
/// its id, read from `SUBSCRIBED`; its stream stays open until `serve` ends.
fn subscribe(serve: &Serve) -> (String, std::io::BufReader<std::net::TcpStream>) {
    let body = json!({"type": "SUBSCRIBE", "subscribe": {"framework_info": {"user": "",
        "name": "returning", "roles": ["r1"], "failover_timeout": 600,
        "capabilities": [{"type": "MULTI_ROLE"}]}}});
    let (status, _, mut stream) = serve.open_stream(
        "/api/v1/scheduler",
        &["Content-Type: application/json"],
        &body.to_string(),
    );
    assert_eq!(status, 200);
    // RecordIO: a length line, then the record (chunked framing lines in between).
    let mut line = String::new();
    loop {
        line.clear();
        stream.read_line(&mut line).unwrap();
        if let Some(start) = line.find("{\"type\":\"SUBSCRIBED\"") {
            let record: Value = serde_json::Deserializer::from_str(&line[start..])
                .into_iter()
                .next()
                .unwrap()
                .unwrap();
            let id = record["subscribed"]["framework_id"]["value"].as_str().unwrap().to_owned();
            return (id, stream);
        }
    }
}

/// Makes every kind of change the registry keeps; returns the framework's id. The
/// subscription comes first: the master writes it just after `SUBSCRIBED`, so the answers to
/// the requests after it prove it written.
fn change_everything(serve: &Serve) -> String {
    let (id, stream) = subscribe(serve);
    drop(stream);
    post(serve, "/weights", json!({"weights": {"r1": 3}}));
    post(serve, "/quota", json!({"role": "r1", "guarantees": "cpus:1"}));
    post(serve, "/sorters", json!({"role_sorter": "random"}));
    let window = json!({"machine_ids": [{"hostname": "a2"}],
        "unavailability": {"start": {"nanoseconds": 3_600_000_000_000_i64}}});
    post(
        serve,
        "/api/v1",
        json!({"type": "UPDATE_MAINTENANCE_SCHEDULE",
        "update_maintenance_schedule": {"schedule": {"windows": [window]}}}),
    );
    post(
        serve,
        "/api/v1",
        json!({"type": "MARK_AGENT_GONE",
        "mark_agent_gone": {"agent_id": {"value": "a4"}}}),
    );
    id
}

fn assert_restored(serve: &Serve, framework: &str) {
    let weights = post(serve, "/api/v1", json!({"type": "GET_WEIGHTS"}));
    assert_eq!(weights["get_weights"]["weight_infos"], json!([{"weight": 3.0, "role": "r1"}]));
    let quota = post(serve, "/api/v1", json!({"type": "GET_QUOTA"}));
    let configs = &quota["get_quota"]["status"]["configs"];
    assert_eq!(configs[0]["role"], "r1", "{quota}");
    assert_eq!(configs[0]["guarantees"]["cpus"]["value"], 1.0, "{quota}");
    let schedule = post(serve, "/api/v1", json!({"type": "GET_MAINTENANCE_SCHEDULE"}));
    let windows = &schedule["get_maintenance_schedule"]["schedule"]["windows"];
    assert_eq!(windows[0]["machine_ids"], json!([{"hostname": "a2"}]), "{schedule}");
    let state = state(serve);
    assert_eq!(state["role_sorter"], "random", "{state}");
    let agents: Vec<&str> =
        state["agents"].as_array().unwrap().iter().filter_map(|a| a["agent"].as_str()).collect();
    assert!(!agents.contains(&"a4") && agents.contains(&"a1"), "a4 was marked gone: {agents:?}");
    let frameworks = state["frameworks"].as_array().unwrap();
    assert!(
        frameworks.iter().any(|f| f["framework"] == framework),
        "{framework} is waiting to subscribe again: {frameworks:?}"
    );
}

#[test]
fn a_restart_after_sigterm_restores_the_registry() {
    let dir = work_dir("sigterm");
    let serve = start(&dir);
    let id = change_everything(&serve);
    assert_eq!(serve.stop().code(), Some(0));
    assert_restored(&start(&dir), &id);
}

#[test]
fn a_restart_after_sigkill_restores_the_registry() {
    let dir = work_dir("sigkill");
    let serve = start(&dir);
    let id = change_everything(&serve);
    drop(serve); // SIGKILL
    assert_restored(&start(&dir), &id);
}

/// SIGKILL while changes pour in, five times: the registry always loads, and the last weight
/// the master acknowledged before it died is never lost.
#[test]
fn a_master_killed_at_any_instant_loses_no_acknowledged_change() {
    let dir = work_dir("kill-loop");
    let mut acknowledged = 0u64;
    for round in 0..5u64 {
        let serve = start(&dir);
        let weights = post(&serve, "/api/v1", json!({"type": "GET_WEIGHTS"}));
        let restored = weights["get_weights"]["weight_infos"][0]["weight"].as_f64().unwrap_or(0.0);
        assert!(
            restored as u64 >= acknowledged,
            "round {round}: weight {restored} restored, {acknowledged} was acknowledged"
        );
        let addr = serve.addr.clone();
        let writer = std::thread::spawn(move || {
            let mut last = 0;
            for w in 1..=400u64 {
                let body = json!({"weights": {"r1": restored as u64 + w}}).to_string();
                let request = format!(
                    "POST /weights HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let answer = (|| -> std::io::Result<String> {
                    use std::io::{Read, Write};
                    let mut s = std::net::TcpStream::connect(&addr)?;
                    s.write_all(request.as_bytes())?;
                    let mut text = String::new();
                    s.read_to_string(&mut text)?;
                    Ok(text)
                })();
                match answer {
                    Ok(text) if text.starts_with("HTTP/1.1 200") => last = restored as u64 + w,
                    _ => break,
                }
            }
            last
        });
        std::thread::sleep(std::time::Duration::from_millis(150 + 70 * round));
        drop(serve); // SIGKILL, in the middle of the writes
        acknowledged = acknowledged.max(writer.join().unwrap());
    }
    let serve = start(&dir);
    let weights = post(&serve, "/api/v1", json!({"type": "GET_WEIGHTS"}));
    let restored = weights["get_weights"]["weight_infos"][0]["weight"].as_f64().unwrap();
    assert!(restored as u64 >= acknowledged, "{restored} < {acknowledged}");
    assert!(acknowledged > 0, "some writes were acknowledged");
}

#[test]
fn a_pymesos_framework_resubscribes_with_its_id_after_a_restart() {
    let Some(python) = pymesos_python() else { return };
    let dir = work_dir("pymesos");
    let check = |serve: &Serve, name: &str, args: &[&str]| -> Value {
        let out = std::process::Command::new(&python)
            .current_dir(workspace_tests::workspace_root())
            .arg("tests/python/scheduler_checks.py")
            .args([serve.addr.as_str(), name])
            .args(args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str(stdout.trim()).unwrap()
    };
    let serve = start(&dir);
    let first = check(&serve, "subscribe_and_leave", &[]);
    let id = first["id"].as_str().expect("an id").to_owned();
    drop(serve); // SIGKILL
    let serve = start(&dir);
    let again = check(&serve, "resubscribe", &[&id]);
    assert_eq!(again["ids"], json!([id]), "{again}");
    assert_eq!(again["active"], true, "{again}");
}

#[test]
fn without_a_work_dir_nothing_survives_a_restart() {
    let serve = Serve::start(&["--scenario", CLUSTER, "--duration", "90"]);
    post(&serve, "/weights", json!({"weights": {"r1": 3}}));
    drop(serve);
    let serve = Serve::start(&["--scenario", CLUSTER, "--duration", "90"]);
    let weights = post(&serve, "/api/v1", json!({"type": "GET_WEIGHTS"}));
    assert_eq!(weights["get_weights"]["weight_infos"], json!([]), "{weights}");
}

/// A registry write that fails (here: past a file-size limit set on the running master; out of
/// descriptors or a full disk in life) answers the change `503` and the master goes on; once
/// writes work again the registry holds the master's state, and a restart restores it.
#[test]
fn a_failed_registry_write_answers_503_and_the_master_goes_on() {
    let dir = work_dir("write-fails");
    let serve = start(&dir);
    post(&serve, "/weights", json!({"weights": {"a": 2}}));
    let fsize = |limit: &str| {
        let pid = serve.pid().to_string();
        let set = std::process::Command::new("prlimit")
            .args(["--pid", &pid, &format!("--fsize={limit}")])
            .status()
            .expect("run prlimit");
        assert!(set.success(), "prlimit --fsize={limit}");
    };
    // No file may grow past what the registry holds now.
    let log = std::fs::metadata(dir.join("registry.log")).map_or(0, |m| m.len());
    fsize(&format!("{log}:unlimited"));
    let (status, answer) =
        serve.request("POST", "/weights", &json!({"weights": {"a": 3}}).to_string());
    assert_eq!(status, 503, "{answer}");
    assert!(answer.contains("cannot write the registry"), "{answer}");
    assert!(state(&serve)["roles"].is_array(), "the master still serves");
    fsize("unlimited:unlimited");
    post(&serve, "/weights", json!({"weights": {"a": 4}}));
    assert!(serve.stop().success());
    let again = start(&dir);
    let roles = state(&again)["roles"].clone();
    let a = roles.as_array().unwrap().iter().find(|r| r["role"] == "a").unwrap().clone();
    assert_eq!(a["weight"], 4.0, "{roles}");
}

/// A new work_dir says nothing was restored (not "0 frameworks"); a kept one says what was.
#[test]
fn the_start_says_what_the_registry_restored() {
    let dir = work_dir("restored-line");
    let d = dir.to_str().unwrap();
    let args = ["--work_dir", d, "--scenario", CLUSTER, "--duration", "60"];
    let patience = std::time::Duration::from_secs(30);
    let (serve, lines) = Serve::start_with_stderr(&args);
    let seen = workspace_tests::wait_for_line(&lines, "registry", patience);
    let line = seen.last().unwrap();
    assert!(line.contains("is empty: nothing restored"), "{seen:?}");
    post(&serve, "/weights", json!({"weights": {"r1": 3, "r2": 2}}));
    assert!(serve.stop().success());
    let (_again, lines) = Serve::start_with_stderr(&args);
    let seen = workspace_tests::wait_for_line(&lines, "registry", patience);
    let line = seen.last().unwrap();
    assert!(line.contains("restored the registry: 2 weights"), "{seen:?}");
    assert!(!line.contains("framework"), "no framework was kept: {line}");
}
