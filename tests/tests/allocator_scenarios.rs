//! Every allocator scenario (`examples/scenarios/`, `tests/scenarios/allocator/`) passes through
//! `allocator-master`, with the built-in DRF sorters and with the DRF module loaded from its
//! `.so`; the embedded default workload runs and is deterministic under a seed.

use std::path::{Path, PathBuf};

use workspace_tests::run_master;

fn scenarios(folder: &str) -> Vec<PathBuf> {
    workspace_tests::json_files(folder)
}

fn check(file: &Path, extra: &[&str]) {
    let path = file.display().to_string();
    let mut args = vec!["--scenario", path.as_str(), "--output", "/dev/null"];
    args.extend_from_slice(extra);
    let out = run_master(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{path} {extra:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn rule_scenarios_pass_with_the_builtin_sorters() {
    for f in scenarios("tests/scenarios/allocator") {
        check(&f, &[]);
    }
}

#[test]
fn rule_scenarios_pass_with_the_drf_module() {
    for f in scenarios("tests/scenarios/allocator") {
        check(&f, &["--modules", "examples/modules.json"]);
    }
}

#[test]
fn example_scenarios_pass() {
    for f in scenarios("examples/scenarios") {
        check(&f, &["--modules", "examples/modules.json"]);
        // Scenarios that name no sorter module also pass with the built-ins alone.
        let text = std::fs::read_to_string(&f).unwrap();
        if !text.contains("--modules") {
            check(&f, &[]);
        }
    }
}

#[test]
fn the_drf_paper_example_gives_both_frameworks_two_thirds() {
    let out = run_master(&["--scenario", "examples/scenarios/drf_paper.json", "--output", "-"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    for role in ["roleA", "roleB"] {
        let share = summary["roles"][role]["dominant_share"].as_f64().unwrap();
        assert!((share - 2.0 / 3.0).abs() < 1e-9, "{role}: {share}");
        let metric = summary["metrics"][format!("allocator/mesos/roles/{role}/shares/dominant")]
            .as_f64()
            .unwrap();
        assert!((metric - 2.0 / 3.0).abs() < 1e-9);
    }
    assert_eq!(summary["roles"]["roleA"]["tasks_launched"], 3);
    assert_eq!(summary["roles"]["roleB"]["tasks_launched"], 2);
}

#[test]
fn a_failed_allocator_expectation_exits_1_with_both_sides() {
    let dir = workspace_tests::target_dir().join("allocator-scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("wrong.json");
    std::fs::write(
        &file,
        r#"{"events": [{"op": "add_framework", "framework": "f1", "roles": ["r1"]},
            {"op": "add_agent", "agent": "a1", "resources": "cpus:2;mem:1024"},
            {"op": "expect_offers", "offers": [{"framework": "f1", "role": "r1", "agent": "a1", "resources": "cpus:1;mem:1024"}]}]}"#,
    )
    .unwrap();
    let out = run_master(&["--scenario", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("event 2: expectation failed"), "{err}");
    assert!(
        err.contains("offers made since the previous expect_offers"),
        "the message says what was compared: {err}"
    );
    assert!(
        err.contains(r#"expected: "#) && err.contains(r#""resources":"cpus:1;mem:1024""#),
        "{err}"
    );
    assert!(
        err.contains(r#"actual:   "#) && err.contains(r#""resources":"cpus:2;mem:1024""#),
        "{err}"
    );
}

#[test]
fn a_malformed_allocator_scenario_exits_2_naming_event_and_field() {
    let dir = workspace_tests::target_dir().join("allocator-scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    for (text, fragment) in [
        (
            r#"{"events": [{"op": "add_agent", "agent": "a1"}]}"#,
            "event 0 (add_agent), field 'resources': missing",
        ),
        (
            r#"{"events": [{"op": "add_agent", "agent": "a1", "resources": "cpus:1"}, {"op": "fly"}]}"#,
            "event 1 (fly), field 'op': unknown op 'fly'",
        ),
        (r#"{"config": {"seed": -1}, "events": []}"#, "config, field 'seed'"),
        (r#"{"events": [], "extra": 1}"#, "top level, field 'extra': unknown key"),
        (
            r#"{"events": [{"op": "remove_agent", "agent": "ghost"}]}"#,
            "event 0 (remove_agent): unknown agent 'ghost'",
        ),
    ] {
        let file = dir.join("malformed.json");
        std::fs::write(&file, text).unwrap();
        let out = run_master(&["--scenario", file.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(fragment), "{text}: {err}");
    }
}

const SUMMARY_FRAGMENTS: [&str; 6] =
    ["services", "batch", "analytics", "ml", "utilisation: cpus", "allocation run latency: p50"];

#[test]
fn the_embedded_default_workload_prints_only_the_human_summary_by_default() {
    let out = run_master(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for fragment in SUMMARY_FRAGMENTS {
        assert!(stdout.contains(fragment), "{fragment}: {stdout}");
    }
    assert!(!stdout.contains(r#""event""#), "no event stream without --output: {stdout}");
    assert!(stdout.len() < 10_000, "a summary, not a stream: {} bytes", stdout.len());
}

#[test]
fn output_dash_writes_the_event_stream_to_stdout_and_the_summary_to_stderr() {
    let out = run_master(&["--scenario", "examples/scenarios/drf_paper.json", "--output", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines() {
        let event: serde_json::Value = serde_json::from_str(line).expect("one JSON event a line");
        assert!(event["event"].is_string(), "{line}");
    }
    assert!(stdout.lines().last().unwrap().contains(r#""event":"summary""#));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("roleA") && stderr.contains("allocation run latency"), "{stderr}");
}

#[test]
fn output_file_gets_the_event_stream_and_stdout_the_summary() {
    let dir = workspace_tests::target_dir().join("allocator-scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("drf_paper.jsonl");
    let out = run_master(&[
        "--scenario",
        "examples/scenarios/drf_paper.json",
        "--output",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stream = std::fs::read_to_string(&file).unwrap();
    assert!(stream.lines().any(|l| l.contains(r#""event":"offer""#)), "{stream}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("roleA") && !stdout.contains(r#""event""#), "{stdout}");
}

#[test]
fn the_same_seed_gives_the_same_event_stream() {
    let run = |seed: &str| {
        let out = run_master(&["--seed", seed, "--output", "-"]);
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.contains("\"allocation_run\"") && !l.contains("\"summary\""))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let (a, b, c) = (run("7"), run("7"), run("8"));
    assert!(a.len() > 1000);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn report_draws_shares_and_utilisation_over_time() {
    let dir = workspace_tests::target_dir().join("allocator-scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("drf_paper.svg");
    let out = run_master(&[
        "--scenario",
        "examples/scenarios/drf_paper.json",
        "--output",
        "/dev/null",
        "--report",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"));
    assert!(text.contains("Dominant share per role") && text.contains("Cluster utilisation"));
    // Legend rows: the name, then its final value and its average over time.
    let row = |name: &str| {
        let at = text.find(&format!(">\n{name}\n</text>")).unwrap_or_else(|| panic!("{name}"));
        text[at..]
            .split("</text>")
            .skip(1)
            .take(2)
            .map(|t| t.rsplit('>').next().unwrap().trim().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(row("roleA")[0], "67%", "legend shows final shares");
    assert_eq!(row("roleB")[0], "67%");
    assert_eq!(row("cpus")[0], "100%");
}

#[test]
fn quotas_given_at_recovery_are_the_hosts_record_too() {
    let dir = workspace_tests::target_dir().join("allocator-scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("recovered-quota.json");
    std::fs::write(
        &file,
        r#"{"events": [
            {"op": "recover", "expected_agents": 0,
             "quotas": {"a": {"guarantees": "cpus:1", "limits": "cpus:4"}}},
            {"op": "add_framework", "framework": "f1", "roles": ["a"]},
            {"op": "add_agent", "agent": "a1", "resources": "cpus:8;mem:1024"}]}"#,
    )
    .unwrap();
    let out = run_master(&["--scenario", file.to_str().unwrap(), "--output", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let metrics = &summary["metrics"];
    let base = "allocator/mesos/quota/roles/a/resources/cpus";
    assert_eq!(metrics[format!("{base}/guarantee")], 1.0, "{metrics}");
    assert_eq!(metrics[format!("{base}/limit")], 4.0, "{metrics}");
}
