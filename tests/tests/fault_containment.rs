//! Faulty modules never take the master down or lose an allocation (issue 10): fallback to the
//! built-in rebuilt from the host's records, the offer guard, and the `stop` policy.

use std::process::Output;

use workspace_tests::{library, run_master, target_dir};

fn manifest(module: &str, params: &[(&str, &str)]) -> String {
    let ps: Vec<String> =
        params.iter().map(|(k, v)| format!(r#"{{"key": "{k}", "value": "{v}"}}"#)).collect();
    format!(
        r#"{{"libraries": [{{"file": {}, "modules": [{{"name": "{module}", "parameters": [{}]}}]}}]}}"#,
        serde_json::to_string(&library("faulty_modules").display().to_string()).unwrap(),
        ps.join(", ")
    )
}

fn summary(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().expect("summary line")).expect("summary JSON")
}

fn run(scenario: &str, extra: &[&str]) -> Output {
    let mut args = vec!["--scenario", scenario, "--output", "-"];
    args.extend_from_slice(extra);
    run_master(&args)
}

#[test]
fn a_failing_allocator_module_falls_back_to_the_builtin_without_losing_allocations() {
    for param in ["fail_on_allocate", "panic_on_allocate"] {
        let m = manifest("faulty_allocator", &[(param, "3")]);
        let out = run(
            "tests/scenarios/faults/allocator_fails_mid_run.json",
            &["--modules", &m, "--allocator", "faulty_allocator"],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{param}: {err}");
        assert!(err.contains("allocator module 'faulty_allocator' failed in allocate"), "{err}");
        assert!(err.contains("continuing with the built-in hierarchical allocator"), "{err}");
        let s = summary(&out);
        assert_eq!(s["metrics"]["allocator/module_fallbacks"], 1);
        assert_eq!(s["allocator"], "hierarchical");
    }
}

#[test]
fn the_stop_policy_stops_cleanly_naming_the_module_and_call() {
    let m = manifest("faulty_allocator", &[("fail_on_allocate", "2")]);
    let out = run(
        "tests/scenarios/faults/allocator_fails_mid_run.json",
        &["--modules", &m, "--allocator", "faulty_allocator", "--on_module_failure", "stop"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.trim_end().lines().last().unwrap();
    assert!(last.contains("allocator 'faulty_allocator' failed in allocate"), "{err}");
    assert!(last.contains("allocation run 2 fails on purpose"), "{err}");
}

#[test]
fn the_offer_guard_drops_what_an_allocator_module_over_offers() {
    let m = manifest("faulty_allocator", &[("overallocate", "true")]);
    let out = run(
        "tests/scenarios/faults/allocator_overallocates.json",
        &["--modules", &m, "--allocator", "faulty_allocator"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let s = summary(&out);
    assert!(s["metrics"]["allocator/guard/dropped_offers"].as_u64().unwrap() >= 3, "{s}");
    assert_eq!(s["utilisation"]["cpus"]["final"], 1.0, "never more than the agent has: {s}");
}

#[test]
fn a_panicking_sorter_module_is_replaced_by_the_builtin_drf() {
    let m = manifest("panicky", &[("panic_on_sort", "3")]);
    let out = run(
        "tests/scenarios/faults/sorter_panics.json",
        &["--modules", &m, "--role_sorter", "panicky"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("a sorter module failed in allocate"), "{err}");
    assert!(err.contains("sort number 3 panics on purpose"), "{err}");
    let s = summary(&out);
    assert_eq!(s["role_sorter"], "drf");
    assert_eq!(s["metrics"]["allocator/module_fallbacks"], 1);
    let _ = target_dir();
}

#[test]
fn a_module_call_that_never_returns_stops_the_master_with_the_reason() {
    let m = manifest("faulty_allocator", &[("hang_on_allocate", "2")]);
    let start = std::time::Instant::now();
    let out = run(
        "tests/scenarios/faults/allocator_fails_mid_run.json",
        &["--modules", &m, "--allocator", "faulty_allocator", "--module_call_timeout_ms", "300"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a module call has not returned for"), "{err}");
    assert!(err.contains("allocate, allocator 'faulty_allocator'"), "{err}");
    assert!(start.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn slow_module_calls_are_counted_against_the_budget() {
    let m = manifest("faulty_allocator", &[]);
    let out = run(
        "tests/scenarios/faults/allocator_fails_mid_run.json",
        &[
            "--modules",
            &m,
            "--allocator",
            "faulty_allocator",
            "--module_call_budget_ms",
            "0.000001",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let s = summary(&out);
    assert!(s["metrics"]["allocator/module_calls_over_budget"].as_u64().unwrap() > 0, "{s}");
}
