//! The sorter conformance suite: every scenario under `tests/scenarios/sorters/` runs through
//! `allocator-master`, each folder against the sorter it is named after, loaded from its `.so`
//! (and DRF's also against the built-in); the behaviours common to every sorter are the
//! conformance suite's sorter checks (`allocator-conformance`), run here against the built-in DRF
//! (`tests/authoring.rs` runs them against the modules).

use std::path::{Path, PathBuf};

use workspace_tests::run_master;

fn scenarios(folder: &str) -> Vec<PathBuf> {
    workspace_tests::json_files(&format!("tests/scenarios/sorters/{folder}"))
}

/// Runs a scenario; with `modules`, through `examples/modules.json` (the `.so` files).
fn assert_passes(scenario: &Path, modules: bool) {
    let path = scenario.display().to_string();
    let mut args = vec!["--scenario", path.as_str(), "--output", "/dev/null"];
    if modules {
        args.extend(["--modules", "examples/modules.json"]);
    }
    let out = run_master(&args);
    assert!(
        out.status.success(),
        "{} (modules: {modules}) exited {:?}\n{}",
        scenario.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `allocator-master conformance --sorter NAME`; asserts every check passes, none skipped.
fn assert_conforms(sorter: &str) {
    let out = run_master(&["conformance", "--sorter", sorter]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{sorter}:\n{stdout}");
    assert!(stdout.contains("\n7 passed, 0 failed\n"), "{sorter}: every check applies\n{stdout}");
}

#[test]
fn common_behaviour_holds_for_the_builtin_drf() {
    assert_conforms("drf");
}

#[test]
fn drf_rules_hold_for_the_module_and_the_builtin() {
    for scenario in scenarios("drf") {
        assert_passes(&scenario, true);
        assert_passes(&scenario, false);
    }
}

#[test]
fn weighted_priority_rules_hold_for_its_module() {
    for scenario in scenarios("weighted_priority") {
        assert_passes(&scenario, true);
    }
}

#[test]
fn drf_decay_rules_hold_for_its_module() {
    for scenario in scenarios("drf_decay") {
        assert_passes(&scenario, true);
    }
}

#[test]
fn random_distributions_hold_for_its_module() {
    for scenario in scenarios("random") {
        assert_passes(&scenario, true);
    }
}

#[test]
fn a_wrong_expectation_exits_1_with_a_readable_diff() {
    let dir = workspace_tests::target_dir().join("conformance-scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("wrong-expectation.json");
    std::fs::write(
        &file,
        r#"{"sorter": "drf", "events": [
            {"op": "add", "client": "a"}, {"op": "activate", "client": "a"},
            {"op": "add", "client": "b"}, {"op": "activate", "client": "b"},
            {"op": "expect_sort", "order": ["b", "a"]}]}"#,
    )
    .unwrap();
    let out = run_master(&["--scenario", file.to_str().unwrap(), "--output", "-"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("event 4 (expect_sort): expectation failed"), "{stderr}");
    assert!(stderr.contains(r#"expected: ["b","a"]"#), "{stderr}");
    assert!(stderr.contains(r#"actual:   ["a","b"]"#), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.contains(r#""event":"expectation""#) && l.contains(r#""ok":false"#)),
        "{stdout}"
    );
}

#[test]
fn a_malformed_scenario_exits_2_naming_the_event_and_field() {
    let dir = workspace_tests::target_dir().join("conformance-scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("malformed.json");
    std::fs::write(
        &file,
        r#"{"sorter": "drf", "events": [{"op": "add", "client": "a"},
            {"op": "allocated", "client": "a", "agent": "s1", "resources": "cpus:x"}]}"#,
    )
    .unwrap();
    let out = run_master(&["--scenario", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("event 1 (allocated), field 'resources': invalid resources \"cpus:x\""),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
}
