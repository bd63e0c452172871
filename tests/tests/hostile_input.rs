//! Hostile input (issue 16): the loader maps only what the operator named, and only module
//! libraries; role and resource names follow Mesos's rules.

use std::path::PathBuf;
use std::process::{Command, Output};

use workspace_tests::{library, master, run_master, workspace_root};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hostile-input-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn assert_one_line_error(out: &Output, fragments: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    for f in fragments {
        assert!(err.contains(f), "missing {f:?} in: {err}");
    }
}

#[test]
fn a_library_name_with_a_path_separator_or_dotdot_is_refused() {
    for name in ["/../../tmp/x/libevil", "sub/drf_sorter", "..", "a..b"] {
        let m = format!(r#"{{"libraries": [{{"name": "{name}", "modules": [{{"name": "x"}}]}}]}}"#);
        let out = run_master(&["--modules", &m, "--list-modules"]);
        assert_one_line_error(&out, &[name, "is not a bare library name"]);
    }
}

#[test]
fn a_non_module_librarys_code_never_runs() {
    let dir = temp_dir("constructor");
    let marker = dir.join("marker");
    let m = format!(
        r#"{{"libraries": [{{"file": {}, "modules": [{{"name": "x"}}]}}]}}"#,
        serde_json::to_string(&library("not_a_module").display().to_string()).unwrap()
    );
    let out = Command::new(master())
        .args(["--modules", &m, "--list-modules"])
        .current_dir(workspace_root())
        .env("NOT_A_MODULE_MARKER", &marker)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert_one_line_error(&out, &["is not a module library of this system"]);
    assert!(
        !marker.exists(),
        "the library's constructor ran: {:?}",
        std::fs::read_to_string(&marker)
    );
}

#[cfg(unix)]
#[test]
fn a_fifo_as_the_library_file_is_refused_without_hanging() {
    let dir = temp_dir("fifo");
    let fifo = dir.join("libfifo.so");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let m = format!(
        r#"{{"libraries": [{{"file": {}, "modules": [{{"name": "x"}}]}}]}}"#,
        serde_json::to_string(&fifo.display().to_string()).unwrap()
    );
    workspace_tests::ensure_built();
    let start = std::time::Instant::now();
    let out = run_master(&["--modules", &m, "--list-modules"]);
    assert_one_line_error(&out, &["is not a regular file (a FIFO)"]);
    assert!(start.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn a_directory_as_the_library_file_is_refused() {
    let dir = temp_dir("dir");
    let m = format!(
        r#"{{"libraries": [{{"file": {}, "modules": [{{"name": "x"}}]}}]}}"#,
        serde_json::to_string(&dir.display().to_string()).unwrap()
    );
    let out = run_master(&["--modules", &m, "--list-modules"]);
    assert_one_line_error(&out, &["is not a regular file (a directory)"]);
}

fn scenario_with(dir: &std::path::Path, events: &str) -> String {
    let path = dir.join("s.json");
    std::fs::write(&path, format!(r#"{{"events": [{events}]}}"#)).unwrap();
    path.display().to_string()
}

#[test]
fn role_names_with_nul_dotdot_or_control_characters_are_refused() {
    let dir = temp_dir("roles");
    for role in ["r\\u0000x", "a/../b", "..", "r\\u0007", "-r", "a b", "a//b"] {
        let s = scenario_with(
            &dir,
            &format!(r#"{{"op": "add_framework", "framework": "f1", "roles": ["{role}"]}}"#),
        );
        let out = run_master(&["--scenario", &s, "--output", "/dev/null"]);
        assert_one_line_error(&out, &["invalid role"]);
    }
}

#[test]
fn every_place_that_takes_a_role_applies_the_rules() {
    let dir = temp_dir("role-places");
    for event in [
        r#"{"op": "update_weights", "weights": {"a/../b": 2}}"#,
        r#"{"op": "update_quota", "role": "a/./b", "guarantees": "cpus:1"}"#,
        r#"{"op": "add_framework", "framework": "f1", "roles": ["r1"], "suppressed_roles": ["r\u0001"]}"#,
    ] {
        let s = scenario_with(&dir, event);
        let out = run_master(&["--scenario", &s, "--output", "/dev/null"]);
        assert_one_line_error(&out, &["invalid role"]);
    }
}

#[test]
fn sorter_clients_follow_the_role_name_rules() {
    let dir = temp_dir("clients");
    let path = dir.join("s.json");
    std::fs::write(&path, r#"{"sorter": "drf", "events": [{"op": "add", "client": "a/../b"}]}"#)
        .unwrap();
    let out = run_master(&["--scenario", &path.display().to_string()]);
    assert_one_line_error(&out, &["invalid role"]);
}

#[test]
fn resource_names_with_control_characters_or_delimiters_are_refused() {
    let dir = temp_dir("resource-names");
    for resources in ["cp\\u0001us:1", "cpus\\u0000:1", "cp,us:1", "c}pus:1"] {
        let s = scenario_with(
            &dir,
            &format!(r#"{{"op": "add_agent", "agent": "a1", "resources": "{resources}"}}"#),
        );
        let out = run_master(&["--scenario", &s, "--output", "/dev/null"]);
        assert_one_line_error(&out, &["invalid resources"]);
    }
}
