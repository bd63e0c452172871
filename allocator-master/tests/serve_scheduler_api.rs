//! `allocator-master serve` with real frameworks: pymesos's `MesosSchedulerDriver`, unchanged,
//! against the binary, over the v1 scheduler API (SPEC 6.1). Each test starts the master on a
//! free port with a small cluster (`tests/python/cluster.json`, no simulated frameworks), runs
//! one check of `tests/python/scheduler_checks.py` and asserts on the JSON line it prints.
//!
//! The pymesos venv is `$ALLOCATOR_MASTER_PYTHON`, else `target/pyenv/bin/python`; without it
//! the tests skip with a printed reason, except in CI (`CI=true`), where that is a failure.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The venv's python; `None` (after printing why) when the test is to be skipped.
fn python_or_skip() -> Option<PathBuf> {
    let found = match std::env::var_os("ALLOCATOR_MASTER_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => Some(PathBuf::from(p)).filter(|p| p.exists()),
        None => Some(workspace().join("target/pyenv/bin/python")).filter(|p| p.exists()),
    };
    let ci = std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    match found {
        Some(p) => Some(p),
        None if ci => panic!("no pymesos venv (ALLOCATOR_MASTER_PYTHON or target/pyenv)"),
        None => {
            eprintln!("skipped: no pymesos venv (make it with `bash tests/python/setup-venv.sh`)");
            None
        }
    }
}

/// A running `serve`; killed when dropped.
struct Serve {
    child: Child,
    addr: String,
}

impl Serve {
    fn start(scenario: &str, flags: &[&str]) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_allocator-master"))
            .current_dir(workspace())
            .args(["serve", "--listen", "127.0.0.1:0", "--duration", "90", "--scenario", scenario])
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines.next().expect("serve prints its address").unwrap();
            if let Some(rest) = line.split("http://").nth(1) {
                break rest.trim().to_owned();
            }
        };
        // Keep reading stderr so the master never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Serve { child, addr }
    }

    /// Runs `check` of scheduler_checks.py against this master; its JSON line.
    fn check(&self, python: &PathBuf, check: &str, args: &[&str]) -> Value {
        let out = Command::new(python)
            .current_dir(workspace())
            .arg("tests/python/scheduler_checks.py")
            .args([self.addr.as_str(), check])
            .args(args)
            .output()
            .expect("python runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "check {check} failed: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const CLUSTER: &str = "tests/python/cluster.json";

#[test]
fn a_pymesos_task_goes_starting_running_finished_and_the_master_counts_it() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "finish", &[]);
    assert_eq!(seen["updates"], json!(["TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]));
    assert_eq!(seen["running_in_state"], 1);
}

#[test]
fn a_pymesos_task_finishes_with_an_allocator_module_loaded_by_flag() {
    let Some(python) = python_or_skip() else { return };
    let flags = ["--modules", "examples/custom-allocator/modules.json", "--allocator", "binpack"];
    let seen = Serve::start(CLUSTER, &flags).check(&python, "finish", &[]);
    assert_eq!(seen["updates"], json!(["TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]));
}

#[test]
fn a_pymesos_task_finishes_with_a_sorter_module_loaded_by_flag() {
    let Some(python) = python_or_skip() else { return };
    let flags = ["--modules", "examples/modules.json", "--role_sorter", "drf"];
    let seen = Serve::start(CLUSTER, &flags).check(&python, "finish", &[]);
    assert_eq!(seen["updates"], json!(["TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]));
}

#[test]
fn offers_declined_with_a_long_filter_are_not_offered_again() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "decline", &["3600"]);
    assert_eq!(seen["first"], 4, "one offer per agent: {seen}");
    assert_eq!(seen["later"], 0, "{seen}");
}

#[test]
fn offers_declined_without_a_filter_come_back() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "decline", &["0"]);
    assert!(seen["later"].as_u64().unwrap() >= 4, "{seen}");
}

#[test]
fn a_suppressed_framework_gets_no_offers_until_it_revives() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "suppress_revive", &[]);
    assert_eq!(seen["before"], 4, "{seen}");
    assert_eq!(seen["suppressed"], 0, "{seen}");
    assert!(seen["revived"].as_u64().unwrap() >= 4, "{seen}");
}

#[test]
fn a_killed_task_is_task_killed() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "kill", &[]);
    assert_eq!(seen["updates"], json!(["TASK_STARTING", "TASK_RUNNING", "TASK_KILLED"]));
}

#[test]
fn reconciliation_answers_known_tasks_with_their_state_and_unknown_ones_lost() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "reconcile", &[]);
    assert_eq!(
        seen["explicit"],
        json!([
            ["r-1", "TASK_RUNNING", "REASON_RECONCILIATION"],
            ["nope", "TASK_LOST", "REASON_RECONCILIATION"]
        ])
    );
    assert_eq!(seen["implicit"], json!([["r-1", "TASK_RUNNING", "REASON_RECONCILIATION"]]));
}

#[test]
fn teardown_removes_the_framework_and_its_tasks() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "teardown", &[]);
    assert_eq!((&seen["present_before"], &seen["tasks_before"]), (&json!(true), &json!(1)));
    assert_eq!(seen["present_after"], false);
}

#[test]
fn a_framework_failing_over_within_its_timeout_keeps_its_tasks() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "failover", &[]);
    assert_eq!(seen["active_while_away"], false, "{seen}");
    assert_eq!(seen["reregistered"], true, "{seen}");
    assert_eq!(seen["running_after"], 1, "{seen}");
    assert_eq!(seen["active_after"], true, "{seen}");
}

#[test]
fn bad_calls_are_refused_with_a_one_line_reason_and_change_nothing() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "bad_calls", &[]);
    let calls = &seen["calls"];
    for (call, status) in [
        ("malformed", 400),
        ("unknown_type", 400),
        ("no_framework_id", 400),
        ("unknown_framework", 403),
        ("accept_without_accept", 400),
        ("wrong_stream_id", 400),
        ("bad_role", 400),
        ("good", 202),
    ] {
        assert_eq!(calls[call][0], status, "{call}: {}", calls[call]);
        assert!(!calls[call][1].as_str().unwrap().contains('\n'), "{call}: one line");
    }
    assert_eq!(seen["unchanged"], true);
}

#[test]
fn two_frameworks_with_weights_1_and_3_settle_near_1_to_3_running_tasks() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start("tests/python/weighted.json", &[]).check(&python, "weights", &["5"]);
    let (mut w1, mut w3) = (0.0, 0.0);
    for s in seen["samples"].as_array().unwrap() {
        w1 += s["w1"].as_f64().unwrap();
        w3 += s["w3"].as_f64().unwrap();
    }
    assert!(w1 > 0.0 && w3 > 0.0, "{seen}");
    let ratio = w1 / w3;
    assert!(
        (ratio - 1.0 / 3.0).abs() <= 0.2 / 3.0,
        "w1:w3 = {ratio:.3}, not within 20 % of 1:3: {seen}"
    );
}

#[test]
fn removing_an_agent_rescinds_its_offers_and_loses_its_tasks() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "agent_gone", &[]);
    assert_eq!(seen["rescinded"], json!([seen["kept"]]), "{seen}");
    assert_eq!(
        seen["updates"],
        json!([
            ["TASK_STARTING", null],
            ["TASK_RUNNING", null],
            ["TASK_LOST", "REASON_AGENT_REMOVED"]
        ])
    );
}

#[test]
fn tasks_that_do_not_fit_or_name_another_agent_get_task_error() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "invalid_launches", &[]);
    let updates = &seen["updates"];
    assert_eq!(updates["too-big"], json!([["TASK_ERROR", "REASON_TASK_INVALID"]]));
    assert_eq!(updates["elsewhere"], json!([["TASK_ERROR", "REASON_TASK_INVALID"]]));
    assert_eq!(updates["fine"], json!([["TASK_STARTING", null], ["TASK_RUNNING", null]]));
}

#[test]
fn tasks_on_an_offer_already_used_are_lost_with_reason_invalid_offers() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "invalid_launches", &[]);
    assert_eq!(seen["updates"]["stale"], json!([["TASK_LOST", "REASON_INVALID_OFFERS"]]));
}

#[test]
fn a_subscribed_stream_gets_heartbeats_at_the_interval_it_was_told() {
    let Some(python) = python_or_skip() else { return };
    let serve = Serve::start(CLUSTER, &["--heartbeat_interval", "0.5"]);
    let seen = serve.check(&python, "heartbeats", &["2.2"]);
    assert_eq!(seen["first"], "SUBSCRIBED");
    assert_eq!(seen["interval"], 0.5);
    assert!(seen["heartbeats"].as_u64().unwrap() >= 2, "{seen}");
}

/// POSTs `body` to `path` of the master at `addr`; the status and body.
fn post(addr: &str, path: &str, body: &Value) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let body = body.to_string();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_owned();
    (status, body)
}

fn operator(addr: &str, call: Value) -> Value {
    let (status, body) = post(addr, "/api/v1", &call);
    assert_eq!(status, 200, "{call}: {body}");
    serde_json::from_str(&body).unwrap_or(Value::Null)
}

#[test]
fn the_operator_api_answers_health_version_and_flags_in_mesos_json() {
    let serve = Serve::start(CLUSTER, &[]);
    let health = operator(&serve.addr, json!({"type": "GET_HEALTH"}));
    assert_eq!(health, json!({"type": "GET_HEALTH", "get_health": {"healthy": true}}));
    let version = operator(&serve.addr, json!({"type": "GET_VERSION"}));
    assert_eq!(version["get_version"]["version_info"]["version"], "1.12.0");
    let flags = operator(&serve.addr, json!({"type": "GET_FLAGS"}));
    let role_sorter = flags["get_flags"]["flags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "role_sorter")
        .cloned();
    assert_eq!(role_sorter, Some(json!({"name": "role_sorter", "value": "drf"})));
}

#[test]
fn operator_weight_updates_show_in_get_weights_and_get_roles() {
    let serve = Serve::start(CLUSTER, &[]);
    let update = json!({"type": "UPDATE_WEIGHTS",
        "update_weights": {"weight_infos": [{"role": "r1", "weight": 2.5}]}});
    operator(&serve.addr, update);
    let weights = operator(&serve.addr, json!({"type": "GET_WEIGHTS"}));
    assert_eq!(weights["get_weights"]["weight_infos"], json!([{"weight": 2.5, "role": "r1"}]));
    let roles = operator(&serve.addr, json!({"type": "GET_ROLES"}));
    assert_eq!(roles["get_roles"]["roles"][0]["name"], "r1");
    assert_eq!(roles["get_roles"]["roles"][0]["weight"], 2.5);
}

#[test]
fn operator_quota_updates_show_in_get_quota() {
    let serve = Serve::start(CLUSTER, &[]);
    operator(
        &serve.addr,
        json!({"type": "UPDATE_QUOTA", "update_quota": {"quota_configs": [
            {"role": "r1", "guarantees": {"cpus": {"value": 2}}, "limits": {"cpus": {"value": 4}}}]}}),
    );
    let quota = operator(&serve.addr, json!({"type": "GET_QUOTA"}));
    assert_eq!(
        quota["get_quota"]["status"]["configs"],
        json!([{"role": "r1", "guarantees": {"cpus": {"value": 2.0}}, "limits": {"cpus": {"value": 4.0}}}])
    );
}

#[test]
fn mark_agent_gone_removes_the_agent_from_get_agents() {
    let serve = Serve::start(CLUSTER, &[]);
    let gone = json!({"type": "MARK_AGENT_GONE", "mark_agent_gone": {"agent_id": {"value": "a1"}}});
    operator(&serve.addr, gone.clone());
    let agents = operator(&serve.addr, json!({"type": "GET_AGENTS"}));
    let ids: Vec<&str> = agents["get_agents"]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent_info"]["id"]["value"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a2", "a3", "a4"]);
    assert_eq!(post(&serve.addr, "/api/v1", &gone).0, 404, "an agent already gone");
}

#[test]
fn a_maintenance_schedule_sets_unavailability_and_start_stop_take_agents_down_and_back() {
    let serve = Serve::start(CLUSTER, &[]);
    let machines = json!([{"hostname": "a2"}]);
    operator(
        &serve.addr,
        json!({"type": "UPDATE_MAINTENANCE_SCHEDULE", "update_maintenance_schedule": {"schedule":
            {"windows": [{"machine_ids": machines, "unavailability": {"start": {"nanoseconds": 100000000000u64}}}]}}}),
    );
    let schedule = operator(&serve.addr, json!({"type": "GET_MAINTENANCE_SCHEDULE"}));
    assert_eq!(
        schedule["get_maintenance_schedule"]["schedule"]["windows"][0]["machine_ids"],
        machines
    );
    let agent_ids = || -> Vec<String> {
        let agents = operator(&serve.addr, json!({"type": "GET_AGENTS"}));
        agents["get_agents"]["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["agent_info"]["id"]["value"].as_str().unwrap().to_owned())
            .collect()
    };
    operator(
        &serve.addr,
        json!({"type": "START_MAINTENANCE", "start_maintenance": {"machines": machines}}),
    );
    assert_eq!(agent_ids(), ["a1", "a3", "a4"]);
    operator(
        &serve.addr,
        json!({"type": "STOP_MAINTENANCE", "stop_maintenance": {"machines": machines}}),
    );
    assert_eq!(agent_ids(), ["a1", "a2", "a3", "a4"]);
}

#[test]
fn operator_calls_outside_the_spec_are_refused_and_bad_ones_get_400() {
    let serve = Serve::start(CLUSTER, &[]);
    assert_eq!(post(&serve.addr, "/api/v1", &json!({"type": "GET_EXECUTORS"})).0, 501);
    let (status, body) = post(&serve.addr, "/api/v1", &json!({"type": "UPDATE_QUOTA"}));
    assert_eq!((status, body.as_str()), (400, "Expecting 'update_quota' to be present"));
    let bad_weight = json!({"type": "UPDATE_WEIGHTS",
        "update_weights": {"weight_infos": [{"role": "r1", "weight": -1}]}});
    assert_eq!(post(&serve.addr, "/api/v1", &bad_weight).0, 400);
    let weights = operator(&serve.addr, json!({"type": "GET_WEIGHTS"}));
    assert_eq!(weights["get_weights"]["weight_infos"], json!([]), "nothing changed");
}

#[test]
fn an_unacknowledged_update_is_resent_and_the_next_waits_for_its_acknowledgement() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "resend", &[]);
    let states: Vec<&str> =
        seen["updates"].as_array().unwrap().iter().map(|u| u[0].as_str().unwrap()).collect();
    assert_eq!(states, ["TASK_STARTING", "TASK_STARTING", "TASK_RUNNING"], "{seen}");
}

#[test]
fn update_framework_moves_the_framework_and_its_offers_to_its_new_roles() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "update_framework", &[]);
    assert_eq!(seen["state_roles"], json!(["r2"]));
    assert!(seen["roles_after"].as_array().unwrap().iter().all(|r| r == "r2"), "{seen}");
}

#[test]
fn maintenance_on_an_agent_sends_its_framework_an_inverse_offer_it_can_accept() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "inverse_offers", &[]);
    assert_eq!(seen["inverse"], json!([[seen["agent"], 3_600_000_000_000u64]]), "{seen}");
    assert_eq!(seen["accepted"], true);
}

#[test]
fn the_example_framework_runs_its_tasks_to_completion() {
    let Some(python) = python_or_skip() else { return };
    let serve = Serve::start(CLUSTER, &["--speed", "5"]);
    let mut child = Command::new(&python)
        .current_dir(workspace())
        .args(["examples/frameworks/sleeper.py", serve.addr.as_str(), "6"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python runs");
    // The example has no time limit of its own: give up after a minute.
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("all 6 tasks finished"), "{stdout}");
}

#[test]
fn a_framework_torn_down_cannot_subscribe_again_with_its_id() {
    let Some(python) = python_or_skip() else { return };
    let seen = Serve::start(CLUSTER, &[]).check(&python, "removed_cannot_resubscribe", &[]);
    assert_eq!(seen["teardown"], 202);
    assert_eq!(seen["events"], json!(["ERROR"]), "{seen}");
    assert!(seen["message"].as_str().unwrap().ends_with("has been removed"), "{seen}");
    assert_eq!(seen["present"], false);
}
