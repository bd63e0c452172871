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
