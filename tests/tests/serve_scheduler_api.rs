//! `allocator-master serve` with real frameworks: pymesos's `MesosSchedulerDriver`, unchanged,
//! against the binary, over the v1 scheduler API (SPEC 6.1). Each test starts the master on a
//! free port with a small cluster (`tests/python/cluster.json`, no simulated frameworks), runs
//! one check of `tests/python/scheduler_checks.py` and asserts on the JSON line it prints.
//!
//! The pymesos venv is `$ALLOCATOR_MASTER_PYTHON`, else `target/pyenv/bin/python`; without it
//! the tests skip with a printed reason, except in CI (`CI=true`), where that is a failure.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use workspace_tests::serve::{Serve, offers_in, pymesos_python as python_or_skip};
use workspace_tests::workspace_root as workspace;

/// `serve` on `scenario` with `flags`, for at most 90 s.
fn start(scenario: &str, flags: &[&str]) -> Serve {
    let mut args = vec!["--duration", "90", "--scenario", scenario];
    args.extend_from_slice(flags);
    Serve::start(&args)
}

/// Runs one check of scheduler_checks.py against a master.
trait Check {
    /// The JSON line the check prints.
    fn check(&self, python: &Path, check: &str, args: &[&str]) -> Value;
}

impl Check for Serve {
    fn check(&self, python: &Path, check: &str, args: &[&str]) -> Value {
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

const CLUSTER: &str = "tests/python/cluster.json";

#[test]
fn a_pymesos_task_goes_starting_running_finished_and_the_master_counts_it() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "finish", &[]);
    assert_eq!(seen["updates"], json!(["TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]));
    assert_eq!(seen["running_in_state"], 1);
}

#[test]
fn a_pymesos_task_finishes_with_an_allocator_module_loaded_by_flag() {
    let Some(python) = python_or_skip() else { return };
    let flags = ["--modules", "examples/custom-allocator/modules.json", "--allocator", "binpack"];
    let seen = start(CLUSTER, &flags).check(&python, "finish", &[]);
    assert_eq!(seen["updates"], json!(["TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]));
}

#[test]
fn a_pymesos_task_finishes_with_a_sorter_module_loaded_by_flag() {
    let Some(python) = python_or_skip() else { return };
    let flags = ["--modules", "examples/modules.json", "--role_sorter", "drf"];
    let seen = start(CLUSTER, &flags).check(&python, "finish", &[]);
    assert_eq!(seen["updates"], json!(["TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]));
}

#[test]
fn offers_declined_with_a_long_filter_are_not_offered_again() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "decline", &["3600"]);
    assert_eq!(seen["first"], 4, "one offer per agent: {seen}");
    assert_eq!(seen["later"], 0, "{seen}");
}

#[test]
fn offers_declined_without_a_filter_come_back() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "decline", &["0"]);
    assert!(seen["later"].as_u64().unwrap() >= 4, "{seen}");
}

#[test]
fn a_suppressed_framework_gets_no_offers_until_it_revives() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "suppress_revive", &[]);
    assert_eq!(seen["before"], 4, "{seen}");
    assert_eq!(seen["suppressed"], 0, "{seen}");
    assert!(seen["revived"].as_u64().unwrap() >= 4, "{seen}");
}

#[test]
fn a_killed_task_is_task_killed() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "kill", &[]);
    assert_eq!(seen["updates"], json!(["TASK_STARTING", "TASK_RUNNING", "TASK_KILLED"]));
}

#[test]
fn reconciliation_answers_known_tasks_with_their_state_and_unknown_ones_lost() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "reconcile", &[]);
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
    let seen = start(CLUSTER, &[]).check(&python, "teardown", &[]);
    assert_eq!((&seen["present_before"], &seen["tasks_before"]), (&json!(true), &json!(1)));
    assert_eq!(seen["present_after"], false);
}

#[test]
fn a_framework_failing_over_within_its_timeout_keeps_its_tasks() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "failover", &[]);
    assert_eq!(seen["active_while_away"], false, "{seen}");
    assert_eq!(seen["reregistered"], true, "{seen}");
    assert_eq!(seen["running_after"], 1, "{seen}");
    assert_eq!(seen["active_after"], true, "{seen}");
}

#[test]
fn bad_calls_are_refused_with_a_one_line_reason_and_change_nothing() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "bad_calls", &[]);
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
    let seen = start("tests/python/weighted.json", &[]).check(&python, "weights", &["8"]);
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
    let seen = start(CLUSTER, &[]).check(&python, "agent_gone", &[]);
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
    let seen = start(CLUSTER, &[]).check(&python, "invalid_launches", &[]);
    let updates = &seen["updates"];
    assert_eq!(updates["too-big"], json!([["TASK_ERROR", "REASON_TASK_INVALID"]]));
    assert_eq!(updates["elsewhere"], json!([["TASK_ERROR", "REASON_TASK_INVALID"]]));
    assert_eq!(updates["fine"], json!([["TASK_STARTING", null], ["TASK_RUNNING", null]]));
}

#[test]
fn tasks_on_an_offer_already_used_are_lost_with_reason_invalid_offers() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "invalid_launches", &[]);
    assert_eq!(seen["updates"]["stale"], json!([["TASK_LOST", "REASON_INVALID_OFFERS"]]));
}

#[test]
fn a_subscribed_stream_gets_heartbeats_at_the_interval_it_was_told() {
    let Some(python) = python_or_skip() else { return };
    let serve = start(CLUSTER, &["--heartbeat_interval", "0.5"]);
    let seen = serve.check(&python, "heartbeats", &["2.2"]);
    assert_eq!(seen["first"], "SUBSCRIBED");
    assert_eq!(seen["interval"], 0.5);
    assert!(seen["heartbeats"].as_u64().unwrap() >= 2, "{seen}");
}

/// POSTs `body` to `path`; the status and body.
fn post(serve: &Serve, path: &str, body: &Value) -> (u16, String) {
    serve.request("POST", path, &body.to_string())
}

fn operator(serve: &Serve, call: Value) -> Value {
    let (status, body) = post(serve, "/api/v1", &call);
    assert_eq!(status, 200, "{call}: {body}");
    serde_json::from_str(&body).unwrap_or(Value::Null)
}

#[test]
fn the_operator_api_answers_health_version_and_flags_in_mesos_json() {
    let serve = start(CLUSTER, &[]);
    let health = operator(&serve, json!({"type": "GET_HEALTH"}));
    assert_eq!(health, json!({"type": "GET_HEALTH", "get_health": {"healthy": true}}));
    let version = operator(&serve, json!({"type": "GET_VERSION"}));
    assert_eq!(version["get_version"]["version_info"]["version"], "1.12.0");
    let flags = operator(&serve, json!({"type": "GET_FLAGS"}));
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
    let serve = start(CLUSTER, &[]);
    let update = json!({"type": "UPDATE_WEIGHTS",
        "update_weights": {"weight_infos": [{"role": "r1", "weight": 2.5}]}});
    operator(&serve, update);
    let weights = operator(&serve, json!({"type": "GET_WEIGHTS"}));
    assert_eq!(weights["get_weights"]["weight_infos"], json!([{"weight": 2.5, "role": "r1"}]));
    let roles = operator(&serve, json!({"type": "GET_ROLES"}));
    assert_eq!(roles["get_roles"]["roles"][0]["name"], "r1");
    assert_eq!(roles["get_roles"]["roles"][0]["weight"], 2.5);
}

#[test]
fn operator_quota_updates_show_in_get_quota() {
    let serve = start(CLUSTER, &[]);
    operator(
        &serve,
        json!({"type": "UPDATE_QUOTA", "update_quota": {"quota_configs": [
            {"role": "r1", "guarantees": {"cpus": {"value": 2}}, "limits": {"cpus": {"value": 4}}}]}}),
    );
    let quota = operator(&serve, json!({"type": "GET_QUOTA"}));
    assert_eq!(
        quota["get_quota"]["status"]["configs"],
        json!([{"role": "r1", "guarantees": {"cpus": {"value": 2.0}}, "limits": {"cpus": {"value": 4.0}}}])
    );
}

#[test]
fn mark_agent_gone_removes_the_agent_from_get_agents() {
    let serve = start(CLUSTER, &[]);
    let gone = json!({"type": "MARK_AGENT_GONE", "mark_agent_gone": {"agent_id": {"value": "a1"}}});
    operator(&serve, gone.clone());
    let agents = operator(&serve, json!({"type": "GET_AGENTS"}));
    let ids: Vec<&str> = agents["get_agents"]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent_info"]["id"]["value"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a2", "a3", "a4"]);
    assert_eq!(post(&serve, "/api/v1", &gone).0, 404, "an agent already gone");
}

#[test]
fn a_maintenance_schedule_sets_unavailability_and_start_stop_take_agents_down_and_back() {
    let serve = start(CLUSTER, &[]);
    let machines = json!([{"hostname": "a2"}]);
    operator(
        &serve,
        json!({"type": "UPDATE_MAINTENANCE_SCHEDULE", "update_maintenance_schedule": {"schedule":
            {"windows": [{"machine_ids": machines, "unavailability": {"start": {"nanoseconds": 100000000000u64}}}]}}}),
    );
    let schedule = operator(&serve, json!({"type": "GET_MAINTENANCE_SCHEDULE"}));
    assert_eq!(
        schedule["get_maintenance_schedule"]["schedule"]["windows"][0]["machine_ids"],
        machines
    );
    let agent_ids = || -> Vec<String> {
        let agents = operator(&serve, json!({"type": "GET_AGENTS"}));
        agents["get_agents"]["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["agent_info"]["id"]["value"].as_str().unwrap().to_owned())
            .collect()
    };
    operator(
        &serve,
        json!({"type": "START_MAINTENANCE", "start_maintenance": {"machines": machines}}),
    );
    assert_eq!(agent_ids(), ["a1", "a3", "a4"]);
    operator(
        &serve,
        json!({"type": "STOP_MAINTENANCE", "stop_maintenance": {"machines": machines}}),
    );
    assert_eq!(agent_ids(), ["a1", "a2", "a3", "a4"]);
}

#[test]
fn operator_calls_outside_the_spec_are_refused_and_bad_ones_get_400() {
    let serve = start(CLUSTER, &[]);
    assert_eq!(post(&serve, "/api/v1", &json!({"type": "GET_EXECUTORS"})).0, 501);
    let (status, body) = post(&serve, "/api/v1", &json!({"type": "UPDATE_QUOTA"}));
    assert_eq!((status, body.as_str()), (400, "Expecting 'update_quota' to be present"));
    let bad_weight = json!({"type": "UPDATE_WEIGHTS",
        "update_weights": {"weight_infos": [{"role": "r1", "weight": -1}]}});
    assert_eq!(post(&serve, "/api/v1", &bad_weight).0, 400);
    let weights = operator(&serve, json!({"type": "GET_WEIGHTS"}));
    assert_eq!(weights["get_weights"]["weight_infos"], json!([]), "nothing changed");
}

#[test]
fn an_unacknowledged_update_is_resent_and_the_next_waits_for_its_acknowledgement() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "resend", &[]);
    let states: Vec<&str> =
        seen["updates"].as_array().unwrap().iter().map(|u| u[0].as_str().unwrap()).collect();
    assert_eq!(states, ["TASK_STARTING", "TASK_STARTING", "TASK_RUNNING"], "{seen}");
}

#[test]
fn update_framework_moves_the_framework_and_its_offers_to_its_new_roles() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "update_framework", &[]);
    assert_eq!(seen["state_roles"], json!(["r2"]));
    assert!(seen["roles_after"].as_array().unwrap().iter().all(|r| r == "r2"), "{seen}");
}

#[test]
fn maintenance_on_an_agent_sends_its_framework_an_inverse_offer_it_can_accept() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "inverse_offers", &[]);
    assert_eq!(seen["inverse"], json!([[seen["agent"], 3_600_000_000_000u64]]), "{seen}");
    assert_eq!(seen["accepted"], true);
}

#[test]
fn the_example_framework_runs_its_tasks_to_completion() {
    let Some(python) = python_or_skip() else { return };
    let serve = start(CLUSTER, &["--speed", "5"]);
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
    let seen = start(CLUSTER, &[]).check(&python, "removed_cannot_resubscribe", &[]);
    assert_eq!(seen["teardown"], 202);
    assert_eq!(seen["events"], json!(["ERROR"]), "{seen}");
    assert!(seen["message"].as_str().unwrap().ends_with("has been removed"), "{seen}");
    assert_eq!(seen["present"], false);
}

#[test]
fn a_recorded_session_with_real_frameworks_replays_to_the_same_offers() {
    let Some(python) = python_or_skip() else { return };
    let dir = std::env::temp_dir().join(format!("serve-record-fw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (record, live, replay) =
        (dir.join("rec.json"), dir.join("live.jsonl"), dir.join("replay.jsonl"));
    let (record_arg, live_arg) = (record.to_str().unwrap(), live.to_str().unwrap());
    let serve = start(CLUSTER, &["--record", record_arg, "--output", live_arg]);
    let seen = serve.check(&python, "record", &[]);
    assert_eq!(
        (&seen["finished"], &seen["reserved"], &seen["killed"]),
        (&json!(6), &json!(1), &json!(1))
    );
    let status = serve.stop();
    assert!(status.success(), "serve ended with {status}");

    let replayed = workspace_tests::run_master(&[
        "--scenario",
        record_arg,
        "--output",
        replay.to_str().unwrap(),
    ]);
    assert!(replayed.status.success(), "{}", String::from_utf8_lossy(&replayed.stderr));
    let recording = std::fs::read_to_string(&record).unwrap();
    for event in [
        "add_framework",
        "activate_framework",
        "update_allocation",
        "recover_resources",
        "suppress_offers",
        "revive_offers",
        "deactivate_framework",
    ] {
        assert!(
            recording.contains(&format!(r#""op":"{event}""#)),
            "{event} is recorded:\n{recording}"
        );
    }
    let (live, replay) = (offers_in(&live), offers_in(&replay));
    assert!(live.len() > 10, "the live session made {} offers", live.len());
    assert_eq!(live, replay, "the replay makes the live session's offers");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_accepted_reserve_is_offered_back_reserved_until_unreserved() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "reserve", &[]);
    assert_eq!(seen["steps"], json!([[], ["cpus:r1"], []]), "{seen}");
}

#[test]
fn accepted_create_and_destroy_make_and_remove_a_persistent_volume_on_reserved_disk() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "volume", &[]);
    let steps = json!([[], ["disk(r1):100"], ["disk(r1)[v1]:100"], ["disk(r1):100"], []]);
    assert_eq!(seen["steps"], steps, "{seen}");
}

#[test]
fn a_plan_forks_the_master_with_the_frameworks_connected_over_the_scheduler_api() {
    let Some(python) = python_or_skip() else { return };
    let seen = start(CLUSTER, &[]).check(&python, "plan", &[]);
    assert_eq!(seen["status"], 200, "{seen}");
    let agent = seen["agent"].as_str().unwrap();
    let others: Vec<Value> =
        ["a1", "a2", "a3", "a4"].iter().filter(|a| **a != agent).map(|a| json!(a)).collect();
    assert_eq!(seen["with_change"], json!(others), "offers on every agent left: {seen}");
    assert_eq!(seen["without"], json!(["a1", "a2", "a3", "a4"]), "offers on every agent: {seen}");
}

#[test]
fn a_pymesos_request_is_offered_the_placement_module_s_slice_and_launches_there() {
    let Some(python) = python_or_skip() else { return };
    let flags = ["--modules", "examples/modules.json", "--allocator", "BestFit"];
    let seen = start("tests/python/gpu_cluster.json", &flags).check(&python, "request", &[]);
    // BestFit: the smaller agent is left fullest; half a GPU goes to the tightest-fitting
    // device, so the second half lands on the device the first one started.
    assert_eq!(
        seen["placements"],
        json!(["small cpus:1;gpus[0]:0.5;mem:128", "small cpus:1;gpus[0]:0.5;mem:128"]),
        "{seen}"
    );
}
