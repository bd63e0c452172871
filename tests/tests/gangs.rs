//! Gangs (ABI 3's all-or-nothing requests, issue 45): simulated frameworks state a gang as one
//! group, every shipped placement module places it whole or not at all, and a gang framework
//! never launches part of a gang, whatever the allocator.

use workspace_tests::run_master;

const MODULES: &str = "examples/modules.json";
const PLACEMENT: [&str; 6] = ["Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"];

/// Runs scenario `file` with `extra` arguments; asserts it ran and every expectation held.
fn passes(file: &str, extra: &[&str], expectations: usize) {
    let mut args = vec!["--modules", MODULES, "--scenario", file];
    args.extend_from_slice(extra);
    let out = run_master(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{file} {extra:?}: {stdout}{stderr}");
    assert!(
        stdout.contains(&format!("expectations: {expectations} passed, 0 failed")),
        "{file} {extra:?}: {stdout}{stderr}"
    );
}

#[test]
fn a_four_task_gang_with_two_gpus_free_waits_then_arrives_as_one_offer_of_four() {
    passes("tests/fixtures/gangs/gang_waits_for_room.json", &[], 9);
}

#[test]
fn every_placement_module_places_a_gang_whole_or_not_at_all() {
    for allocator in PLACEMENT {
        passes("tests/fixtures/gangs/gang_waits_for_room.json", &["--allocator", allocator], 9);
    }
}

#[test]
fn under_the_built_in_allocator_a_gang_framework_launches_all_of_its_gang_or_none() {
    passes("tests/fixtures/gangs/gang_under_builtin.json", &[], 5);
}

#[test]
fn a_trace_gang_is_stated_and_placed_only_once_all_its_tasks_are_submitted() {
    passes("tests/fixtures/gangs/trace_gang.json", &[], 5);
}

#[test]
fn the_worked_gang_policy_keeps_a_gang_on_the_agent_with_room_for_all_of_it() {
    let out = run_master(&[
        "--modules",
        "examples/gang-policy/modules.json",
        "--scenario",
        "tests/fixtures/gangs/trace_gang_together.json",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("expectations: 5 passed, 0 failed"), "{stdout}");
}

#[test]
fn explain_says_how_many_members_of_a_waiting_gang_are_missing_where() {
    let dir = std::env::temp_dir().join(format!("gangs-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stream = dir.join("explain.jsonl");
    let out = run_master(&[
        "--modules",
        MODULES,
        "--scenario",
        "tests/fixtures/gangs/gang_waits_for_room.json",
        "--explain",
        "gang",
        "--output",
        stream.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&stream).unwrap();
    let waiting = text
        .lines()
        .filter(|l| l.contains(r#""event":"explanation""#))
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .flat_map(|e| e["reasons"].as_array().cloned().unwrap_or_default())
        .find(|r| r["reason"] == "gang_waiting")
        .expect("the allocator's reason is in the explanation");
    assert_eq!(waiting["source"], "allocator");
    assert_eq!(waiting["wanted_at_once"], 4.0);
    assert_eq!(waiting["fit_now"], 2.0);
    let text = waiting["text"].as_str().unwrap();
    assert!(text.contains("2 fit now on 1 agent(s), 2 missing"), "{text}");
}
