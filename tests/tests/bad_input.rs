//! Bad input never panics the master: hostile manifests and scenarios are refused with one line
//! on stderr and exit code 2 (issue 10).

use workspace_tests::{run_master, target_dir};

fn write(name: &str, text: &str) -> String {
    let dir = target_dir().join("bad-input");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn assert_refused(args: &[&str], fragment: &str) {
    let out = run_master(args);
    let err = String::from_utf8_lossy(&out.stderr);
    let shown: Vec<String> = args.iter().map(|a| a.chars().take(60).collect()).collect();
    assert_eq!(out.status.code(), Some(2), "{shown:?}: {err}");
    assert!(err.contains(fragment), "{shown:?}: missing {fragment:?} in {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
}

fn scenario_refused(name: &str, text: &str, fragment: &str) {
    let path = write(name, text);
    assert_refused(&["--scenario", &path, "--output", "/dev/null"], fragment);
}

#[test]
fn deeply_nested_json_is_refused() {
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    scenario_refused("deep.json", &format!(r#"{{"events": {deep}}}"#), "recursion limit exceeded");
    let deep_object = format!("{}{}", "{\"a\":".repeat(5000), "}".repeat(5000));
    assert_refused(&["--modules", &deep_object, "--list-modules"], "malformed module manifest");
}

#[test]
fn huge_and_invalid_numbers_are_refused() {
    scenario_refused(
        "huge.json",
        r#"{"events": [{"op": "advance", "seconds": 1e400}]}"#,
        "number out of range",
    );
    scenario_refused(
        "many-runs.json",
        r#"{"events": [{"op": "advance", "seconds": 1e12}]}"#,
        "periodic allocation runs",
    );
    scenario_refused(
        "overflow.json",
        r#"{"events": [{"op": "add_agent", "agent": "a", "resources": "cpus:99999999999999999999"}]}"#,
        "number too large",
    );
    scenario_refused(
        "nan.json",
        r#"{"events": [{"op": "add_agent", "agent": "a", "resources": "cpus:NaN"}]}"#,
        "expected a decimal number",
    );
    scenario_refused(
        "negative.json",
        r#"{"events": [{"op": "add_agent", "agent": "a", "resources": "cpus:-4"}]}"#,
        "negative scalars are not allowed",
    );
    scenario_refused(
        "back.json",
        r#"{"events": [{"op": "advance", "seconds": -1}]}"#,
        "the clock cannot go back",
    );
    scenario_refused(
        "weight.json",
        r#"{"events": [{"op": "update_weights", "weights": {"r": -2}}]}"#,
        "weight must be a positive number",
    );
    scenario_refused(
        "interval.json",
        r#"{"config": {"allocation_interval": 0}, "events": []}"#,
        "must be positive",
    );
}

#[test]
fn unknown_ops_duplicates_and_missing_ids_are_refused() {
    scenario_refused("op.json", r#"{"events": [{"op": "explode"}]}"#, "unknown op 'explode'");
    scenario_refused(
        "dup-agent.json",
        r#"{"events": [{"op": "add_agent", "agent": "a", "resources": "cpus:1"}, {"op": "add_agent", "agent": "a", "resources": "cpus:1"}]}"#,
        "agent 'a' is already added",
    );
    scenario_refused(
        "dup-framework.json",
        r#"{"events": [{"op": "add_framework", "framework": "f", "roles": ["r"]}, {"op": "add_framework", "framework": "f", "roles": ["r"]}]}"#,
        "framework 'f' is already added",
    );
    scenario_refused(
        "ghost.json",
        r#"{"events": [{"op": "suppress_offers", "framework": "ghost"}]}"#,
        "unknown framework 'ghost'",
    );
    scenario_refused(
        "unknown-field.json",
        r#"{"events": [{"op": "add_agent", "agent": "a", "resources": "cpus:1", "colour": "blue"}]}"#,
        "field 'colour': unknown field",
    );
}

#[test]
fn recovering_more_than_was_allocated_is_refused() {
    scenario_refused(
        "over-recover.json",
        r#"{"events": [
            {"op": "add_agent", "agent": "a", "resources": "cpus:2;mem:100"},
            {"op": "add_framework", "framework": "f", "roles": ["r"]},
            {"op": "recover_resources", "framework": "f", "agent": "a", "resources": "cpus:3"}]}"#,
        "framework 'f' does not hold cpus:3 on agent 'a'",
    );
}

#[test]
fn quota_on_a_nested_role_is_refused() {
    let message = "quota on nested role 'a/x' is not supported: only top-level roles take quota";
    scenario_refused(
        "nested-quota.json",
        r#"{"events": [{"op": "update_quota", "role": "a/x", "limits": "cpus:1"}]}"#,
        &format!("event 0 (update_quota), field 'role': {message}"),
    );
    scenario_refused(
        "nested-recover-quota.json",
        r#"{"events": [{"op": "recover", "expected_agents": 1, "quotas": {"a/x": {"guarantees": "cpus:1"}}}]}"#,
        &format!("event 0 (recover), field 'quotas': {message}"),
    );
}

#[test]
fn hostile_manifests_are_refused() {
    assert_refused(
        &["--modules", r#"{"libraries": [{"file": 42}]}"#, "--list-modules"],
        "malformed module manifest",
    );
    assert_refused(
        &["--modules", r#"{"libraries": "x"}"#, "--list-modules"],
        "malformed module manifest",
    );
    assert_refused(
        &["--modules", "/no/such/manifest.json", "--list-modules"],
        "cannot read module manifest",
    );
    let binary = write("garbage.so", "\u{7f}ELF not really");
    let m = format!(r#"{{"libraries": [{{"file": {binary:?}, "modules": [{{"name": "x"}}]}}]}}"#);
    assert_refused(&["--modules", &m, "--list-modules"], "cannot open library");
}

#[test]
fn an_allocator_refusal_names_frameworks_and_agents_by_name() {
    scenario_refused(
        "used_beyond_free.json",
        r#"{"events": [
            {"op": "add_agent", "agent": "a1", "resources": "cpus:1;mem:64"},
            {"op": "add_framework", "framework": "f1", "roles": ["r1"], "used": {"a1": "cpus:2"}}
        ]}"#,
        "add_framework: framework 'f1' (#0) uses cpus:2 on agent 'a1' (#0), more than is free",
    );
}
