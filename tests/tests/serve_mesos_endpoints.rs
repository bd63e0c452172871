//! Mesos's master endpoints on `serve` (issue 35): `/master/state` and friends in Mesos's JSON,
//! `GET /` listing them, `GET_FLAGS` with every flag, Mesos's duration format and default port.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use workspace_tests::serve::Serve;
use workspace_tests::{master, workspace_root};

const CLUSTER: &str = "tests/python/cluster.json";

fn get(serve: &Serve, path: &str) -> Value {
    let (status, body) = serve.request("GET", path, "");
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or(Value::Null)
}

#[test]
fn the_index_lists_the_endpoints() {
    let serve = Serve::start(&["--scenario", CLUSTER, "--duration", "60"]);
    let index = get(&serve, "/");
    let listed: Vec<&str> = index["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["endpoint"].as_str())
        .collect();
    for e in
        ["GET /master/state, /master/state.json", "POST /api/v1/scheduler", "GET /metrics/snapshot"]
    {
        assert!(listed.contains(&e), "{e} in {listed:?}");
    }
}

#[test]
fn master_state_has_mesoss_shape() {
    let serve = Serve::start(&["--scenario", CLUSTER, "--duration", "60"]);
    for path in ["/master/state", "/master/state.json", "/state.json"] {
        let state = get(&serve, path);
        assert_eq!(state["activated_slaves"], 4, "{path}: {state}");
        let slave = &state["slaves"][0];
        assert_eq!(slave["id"], "a1");
        assert_eq!(slave["resources"]["cpus"], 4.0);
        assert_eq!(slave["resources"]["mem"], 4096.0);
        assert!(state["pid"].as_str().unwrap().starts_with("master@127.0.0.1:"), "{state}");
        assert!(state["version"].as_str().unwrap().starts_with("1."));
        assert!(state["frameworks"].is_array() && state["completed_frameworks"].is_array());
        assert!(state["flags"]["allocation_interval"].is_string());
    }
    assert_eq!(get(&serve, "/master/slaves")["slaves"].as_array().unwrap().len(), 4);
    assert_eq!(get(&serve, "/slaves")["slaves"].as_array().unwrap().len(), 4);
    assert!(get(&serve, "/master/tasks")["tasks"].is_array());
    assert!(get(&serve, "/tasks")["tasks"].is_array());
    let (status, _) = serve.request("GET", "/master/health", "");
    assert_eq!(status, 200);
    let (status, _) = serve.request("GET", "/health", "");
    assert_eq!(status, 200);
    // Our own /state keeps its shape.
    assert!(get(&serve, "/state")["role_sorter"].is_string());
}

#[test]
fn weights_are_read_and_put_as_mesos_does() {
    let serve = Serve::start(&["--scenario", CLUSTER, "--duration", "60"]);
    let (status, body) =
        serve.request("PUT", "/master/weights", r#"[{"role": "ml", "weight": 2.5}]"#);
    assert_eq!(status, 200, "{body}");
    assert_eq!(get(&serve, "/master/weights"), json!([{"role": "ml", "weight": 2.5}]));
    let roles = get(&serve, "/master/roles");
    let ml = roles["roles"].as_array().unwrap().iter().find(|r| r["name"] == "ml").cloned();
    assert_eq!(ml.expect("role ml")["weight"], 2.5);
    let (status, body) =
        serve.request("PUT", "/master/weights", r#"[{"role": "ml", "weight": 0}]"#);
    assert_eq!(status, 400, "{body}");
    let quota = get(&serve, "/master/quota");
    assert_eq!(quota, json!({"configs": []}));
}

#[test]
fn a_torn_down_framework_is_among_the_completed_ones() {
    let serve = Serve::start(&["--scenario", CLUSTER, "--duration", "60"]);
    let body = json!({"type": "SUBSCRIBE", "subscribe": {"framework_info": {"user": "",
        "name": "short-lived", "roles": ["r1"], "capabilities": [{"type": "MULTI_ROLE"}]}}});
    let (status, headers, mut stream) = serve.open_stream(
        "/api/v1/scheduler",
        &["Content-Type: application/json"],
        &body.to_string(),
    );
    assert_eq!(status, 200);
    let stream_id = workspace_tests::serve::header(&headers, "Mesos-Stream-Id").unwrap().to_owned();
    let mut line = String::new();
    let id = loop {
        line.clear();
        stream.read_line(&mut line).unwrap();
        if let Some(at) = line.find("\"framework_id\":{\"value\":\"") {
            let rest = &line[at + 25..];
            break rest[..rest.find('"').unwrap()].to_owned();
        }
    };
    let teardown = json!({"type": "TEARDOWN", "framework_id": {"value": id}});
    let (status, _, _) = serve.request_with(
        "POST",
        "/api/v1/scheduler",
        &["Content-Type: application/json", &format!("Mesos-Stream-Id: {stream_id}")],
        &teardown.to_string(),
    );
    assert_eq!(status, 202);
    let frameworks = get(&serve, "/master/frameworks");
    let completed = frameworks["completed_frameworks"].as_array().unwrap();
    assert_eq!(completed.len(), 1, "{frameworks}");
    assert_eq!(completed[0]["id"], id.as_str());
    assert_eq!(completed[0]["name"], "short-lived");
    assert_eq!(completed[0]["active"], false);
    assert!(frameworks["frameworks"].as_array().unwrap().is_empty());
}

#[test]
fn get_flags_lists_every_flag_with_mesos_durations() {
    let serve = Serve::start(&[
        "--scenario",
        CLUSTER,
        "--duration",
        "60",
        "--allocation_interval=1secs",
        "--heartbeat_interval",
        "500ms",
    ]);
    let (status, body) = serve.request("POST", "/api/v1", r#"{"type": "GET_FLAGS"}"#);
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let flags: std::collections::BTreeMap<String, String> = answer["get_flags"]["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (f["name"].as_str().unwrap().to_owned(), f["value"].as_str().unwrap_or("").to_owned())
        })
        .collect();
    assert_eq!(flags["allocation_interval"], "1secs", "{flags:?}");
    assert_eq!(flags["heartbeat_interval"], "500ms");
    assert_eq!(flags["registry"], "in_memory");
    for name in ["allocator", "role_sorter", "framework_sorter", "scenario", "port", "ip", "seed"] {
        assert!(flags.contains_key(name), "{name} in {flags:?}");
    }
    assert_eq!(get(&serve, "/master/flags")["flags"]["heartbeat_interval"], "500ms");
}

/// `serve --port 0 --allocation_interval=1secs` (Mesos's flags) serves; without `--listen` it
/// binds the loopback address, as Mesos does.
#[test]
fn serve_takes_mesoss_port_and_duration_flags() {
    let mut child = Command::new(master())
        .args(["serve", "--port", "0", "--allocation_interval=1secs", "--duration", "20secs"])
        .args(["--scenario", CLUSTER])
        .current_dir(workspace_root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let line = BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.contains("http://"))
        .expect("the address");
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("http://127.0.0.1:"), "{line}");
}

#[test]
fn metrics_have_mesoss_master_system_and_timer_names() {
    let serve = Serve::start(&["--scenario", CLUSTER, "--duration", "60"]);
    let m = get(&serve, "/metrics/snapshot");
    assert_eq!(m["master/cpus_total"], 16.0, "{m}");
    assert_eq!(m["master/slaves_active"], 4.0);
    assert_eq!(m["master/elected"], 1.0);
    assert!(m["master/cpus_percent"].is_number() && m["master/tasks_running"].is_number());
    assert!(m["system/cpus_total"].as_u64().unwrap() >= 1);
    for timer in ["min", "p50", "p90", "p95", "p99", "p999", "p9999", "max", "count"] {
        let name = format!("allocator/mesos/allocation_run_ms/{timer}");
        assert!(m[&name].is_number(), "{name} in {m}");
    }
}

#[test]
fn get_master_and_get_maintenance_status_answer_in_mesoss_shape() {
    let serve = Serve::start(&["--scenario", CLUSTER, "--duration", "60"]);
    let (status, body) = serve.request("POST", "/api/v1", r#"{"type": "GET_MASTER"}"#);
    assert_eq!(status, 200, "{body}");
    let master: Value = serde_json::from_str(&body).unwrap();
    let info = &master["get_master"]["master_info"];
    assert_eq!(info["hostname"], "127.0.0.1", "{master}");
    assert!(info["version"].as_str().unwrap().starts_with("1."));
    assert!(master["get_master"]["start_time"].as_f64().unwrap() > 1.0e9);
    let window = json!({"machine_ids": [{"hostname": "a2"}],
        "unavailability": {"start": {"nanoseconds": 3_600_000_000_000_i64}}});
    let (status, _) = serve.request(
        "POST",
        "/api/v1",
        &json!({"type": "UPDATE_MAINTENANCE_SCHEDULE",
            "update_maintenance_schedule": {"schedule": {"windows": [window]}}})
        .to_string(),
    );
    assert_eq!(status, 200);
    let (status, body) = serve.request("POST", "/api/v1", r#"{"type": "GET_MAINTENANCE_STATUS"}"#);
    assert_eq!(status, 200, "{body}");
    let st: Value = serde_json::from_str(&body).unwrap();
    let status = &st["get_maintenance_status"]["status"];
    assert_eq!(status["draining_machines"][0]["id"], json!({"hostname": "a2"}), "{st}");
    assert_eq!(status["down_machines"], json!([]));
}

#[test]
fn the_operator_event_stream_starts_with_the_state_and_tells_changes() {
    let serve = Serve::start(&["--scenario", CLUSTER, "--duration", "60"]);
    let (status, _, mut stream) = serve.open_stream(
        "/api/v1",
        &["Content-Type: application/json", "Accept: application/json"],
        r#"{"type": "SUBSCRIBE"}"#,
    );
    assert_eq!(status, 200);
    let mut next = |want: &str| -> Value {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(stream.read_line(&mut line).unwrap() > 0, "the stream ended before {want}");
            // RecordIO and chunk framing are lines of their own; a record is one JSON line.
            if let Ok(event) = serde_json::from_str::<Value>(line.trim())
                && event["type"] == want
            {
                return event;
            }
        }
    };
    let subscribed = next("SUBSCRIBED");
    let agents = &subscribed["subscribed"]["get_state"]["get_agents"]["agents"];
    assert_eq!(agents.as_array().unwrap().len(), 4, "{subscribed}");
    let (status, _) = serve.request(
        "POST",
        "/api/v1",
        r#"{"type": "MARK_AGENT_GONE", "mark_agent_gone": {"agent_id": {"value": "a4"}}}"#,
    );
    assert_eq!(status, 200);
    let removed = next("AGENT_REMOVED");
    assert_eq!(removed["agent_removed"]["agent_id"]["value"], "a4");
}

/// A Mesos CLI from PyPI that no one here wrote (avmesos-cli, in the tests' venv) lists the
/// agents (`/slaves`), frameworks (`/master/frameworks/`) and tasks of the default workload.
#[test]
fn a_mesos_cli_written_by_others_reads_the_state_endpoints() {
    let Some(python) = workspace_tests::serve::pymesos_python() else { return };
    let serve = Serve::start(&["--duration", "60"]);
    let dir = std::env::temp_dir().join(format!("mesos-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(&config, format!("[master]\naddress = \"{}\"\n", serve.addr)).unwrap();
    let cli = |args: &[&str]| -> String {
        let out = Command::new(&python)
            .args(["-m", "avmesos.cli.mesos-cli"])
            .args(args)
            .env("MESOS_CLI_CONFIG", &config)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "mesos {args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let agents = cli(&["agent", "list"]);
    assert!(agents.starts_with("Agent ID") && agents.lines().count() > 10, "{agents}");
    let frameworks = cli(&["framework", "list"]);
    assert!(frameworks.contains("service-0"), "{frameworks}");
    let tasks = cli(&["task", "list"]);
    assert!(tasks.contains("TASK_RUNNING"), "{tasks}");
}
