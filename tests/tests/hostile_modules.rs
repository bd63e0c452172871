//! The trust boundary holds against hostile modules (issue 16): the offer guard checks everything
//! an offer claims, sort output is validated, faults stay inside the module boundary, and every
//! module call in every mode runs under the watchdog.

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

use workspace_tests::{library, run_master};

fn manifest(module: &str, params: &[(&str, &str)]) -> String {
    let ps: Vec<String> =
        params.iter().map(|(k, v)| format!(r#"{{"key": "{k}", "value": "{v}"}}"#)).collect();
    format!(
        r#"{{"libraries": [{{"file": {}, "modules": [{{"name": "{module}", "parameters": [{}]}}]}}]}}"#,
        serde_json::to_string(&library("hostile_modules").display().to_string()).unwrap(),
        ps.join(", ")
    )
}

/// A fresh file for `--output` in the test's temporary folder.
fn output_file(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hostile-modules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{tag}.jsonl"))
}

/// Runs a scenario with `--output FILE`; returns the process output and the event stream.
fn run_scenario(tag: &str, scenario: &str, extra: &[&str]) -> (Output, Vec<serde_json::Value>) {
    let file = output_file(tag);
    let file_arg = file.display().to_string();
    let mut args = vec!["--scenario", scenario, "--output", &file_arg];
    args.extend_from_slice(extra);
    let out = run_master(&args);
    let events = std::fs::read_to_string(&file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON event per line"))
        .collect();
    (out, events)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn of_kind<'a>(events: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

fn dropped(events: &[serde_json::Value]) -> u64 {
    let summary = of_kind(events, "summary");
    summary.last().expect("a summary event")["metrics"]["allocator/guard/dropped_offers"]
        .as_u64()
        .expect("dropped_offers")
}

fn allocator(mode: &str) -> String {
    manifest("hostile_allocator", &[("mode", mode)])
}

#[test]
fn the_guard_refuses_an_offer_under_a_role_the_framework_does_not_have() {
    let m = allocator("wrong_role");
    let (out, events) = run_scenario(
        "wrong_role",
        "tests/scenarios/hostile/wrong_role.json",
        &["--modules", &m, "--allocator", "hostile_allocator"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(of_kind(&events, "offer").is_empty(), "{events:?}");
    assert!(dropped(&events) >= 1);
}

#[test]
fn the_guard_refuses_hand_built_negative_and_duplicate_entries_before_any_arithmetic() {
    let m = allocator("raw_entries");
    let (out, events) = run_scenario(
        "raw_entries",
        "tests/scenarios/hostile/raw_entries.json",
        &["--modules", &m, "--allocator", "hostile_allocator"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(of_kind(&events, "offer").is_empty(), "995 cpus on a 4-cpu agent: {events:?}");
    assert!(dropped(&events) >= 1);
}

#[test]
fn the_guard_refuses_offers_to_suppressed_roles_and_inactive_frameworks() {
    let m = allocator("first_fit");
    let (out, events) = run_scenario(
        "suppressed",
        "tests/scenarios/hostile/suppressed.json",
        &["--modules", &m, "--allocator", "hostile_allocator"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(of_kind(&events, "offer").len(), 1, "{events:?}");
    assert!(dropped(&events) >= 2);
}

#[test]
fn the_guard_drops_inverse_offers_to_unknown_frameworks_and_agents() {
    let m = allocator("inverse_unknown");
    let (out, events) = run_scenario(
        "inverse_unknown",
        "tests/scenarios/hostile/inverse_unknown.json",
        &["--modules", &m, "--allocator", "hostile_allocator"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(of_kind(&events, "inverse_offer").is_empty(), "{events:?}");
    assert!(dropped(&events) >= 1);
}

#[test]
fn a_sorter_flooding_its_sort_output_is_a_module_fault_and_falls_back() {
    let m = manifest("hostile_sorter", &[("mode", "flood")]);
    workspace_tests::ensure_built();
    let start = Instant::now();
    let (out, events) = run_scenario(
        "flood",
        "tests/scenarios/hostile/two_roles.json",
        &[
            "--modules",
            &m,
            "--role_sorter",
            "hostile_sorter",
            "--framework_sorter",
            "hostile_sorter",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("a sorter module failed"), "{err}");
    assert!(err.contains("5000000 clients, but only"), "{err}");
    assert!(!of_kind(&events, "offer").is_empty(), "the built-in drf goes on offering");
    assert!(start.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_sorter_flooding_its_sort_output_stops_the_master_under_the_stop_policy() {
    let m = manifest("hostile_sorter", &[("mode", "flood")]);
    let (out, _) = run_scenario(
        "flood_stop",
        "tests/scenarios/hostile/two_roles.json",
        &["--modules", &m, "--role_sorter", "hostile_sorter", "--on_module_failure", "stop"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("more than once") || stderr(&out).contains("clients, but only"));
}

#[test]
fn a_panic_in_a_module_instances_drop_after_fallback_never_exits_with_1() {
    for mode in ["drop_panics", "payload_panics"] {
        let m = allocator(mode);
        let (out, events) = run_scenario(
            mode,
            "tests/scenarios/hostile/two_roles.json",
            &["--modules", &m, "--allocator", "hostile_allocator"],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{mode}: {err}");
        assert!(err.contains("continuing with the built-in hierarchical allocator"), "{err}");
        assert!(!of_kind(&events, "summary").is_empty(), "{mode}: the run finished");
    }
}

fn assert_stopped_by_the_watchdog(out: &Output, start: Instant, what: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("a module call has not returned for"), "{err}");
    assert!(err.contains(what), "{err}");
    assert!(start.elapsed() < Duration::from_secs(20), "took {:?}", start.elapsed());
}

#[test]
fn a_slow_allocator_factory_is_stopped_by_the_watchdog() {
    let m = manifest("hostile_allocator", &[("factory_sleep_ms", "30000")]);
    workspace_tests::ensure_built();
    let start = Instant::now();
    let (out, _) = run_scenario(
        "slow_factory",
        "tests/scenarios/hostile/two_roles.json",
        &["--modules", &m, "--allocator", "hostile_allocator", "--module_call_timeout_ms", "500"],
    );
    assert_stopped_by_the_watchdog(&out, start, "create, allocator 'hostile_allocator'");
}

#[test]
fn a_slow_sorter_factory_is_stopped_by_the_watchdog() {
    let m = manifest("hostile_sorter", &[("factory_sleep_ms", "30000")]);
    workspace_tests::ensure_built();
    let start = Instant::now();
    let (out, _) = run_scenario(
        "slow_sorter_factory",
        "tests/scenarios/hostile/two_roles.json",
        &["--modules", &m, "--role_sorter", "hostile_sorter", "--module_call_timeout_ms", "500"],
    );
    assert_stopped_by_the_watchdog(&out, start, "create, sorter 'hostile_sorter'");
}

#[test]
fn a_hanging_sort_in_a_sorter_scenario_is_stopped_by_the_watchdog() {
    let m = manifest("hostile_sorter", &[("mode", "hang")]);
    workspace_tests::ensure_built();
    let start = Instant::now();
    let (out, _) = run_scenario(
        "sorter_hang",
        "tests/scenarios/hostile/sorter_hang.json",
        &["--modules", &m, "--module_call_timeout_ms", "500"],
    );
    assert_stopped_by_the_watchdog(&out, start, "sort, sorter 'hostile_sorter'");
}

#[test]
fn a_hanging_sort_in_the_conformance_suite_is_stopped_by_the_watchdog() {
    let m = manifest("hostile_sorter", &[("mode", "hang")]);
    workspace_tests::ensure_built();
    let start = Instant::now();
    let out = run_master(&[
        "--modules",
        &m,
        "--module_call_timeout_ms",
        "500",
        "conformance",
        "--sorter",
        "hostile_sorter",
    ]);
    assert_stopped_by_the_watchdog(&out, start, "sort, sorter 'hostile_sorter'");
}

#[test]
fn a_module_that_ends_the_process_is_named_and_never_leaves_exit_code_0_or_1() {
    // In-process modules can end the process; the master names the module and the call, and
    // exits 3 instead of the module's 0 (success) or 1 (a failed expectation). Process
    // isolation (issue 22) is what lets the master survive it.
    for mode in ["exit_0", "exit_1"] {
        let m = allocator(mode);
        let (out, _) = run_scenario(
            mode,
            "tests/scenarios/hostile/two_roles.json",
            &["--modules", &m, "--allocator", "hostile_allocator"],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{mode}: {err}");
        assert!(
            err.contains("allocator 'hostile_allocator' ended the process from inside allocate"),
            "{mode}: {err}"
        );
    }
}
