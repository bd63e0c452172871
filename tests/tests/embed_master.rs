//! `examples/embed-master`, a third-party master that embeds `allocator-host`, gets the same
//! trust boundary as `allocator-master`: a hostile allocator module that panics, or one that
//! aborts its (isolated) process, is contained, and the embedder falls back to the built-in
//! allocator and goes on offering.

use std::process::{Command, Output};

use workspace_tests::{ensure_built, library, workspace_root};

fn embed_master(args: &[&str]) -> Output {
    let exe = ensure_built().join(format!("embed-master{}", std::env::consts::EXE_SUFFIX));
    Command::new(exe)
        .args(args)
        .current_dir(workspace_root())
        .env_remove("RUST_LOG")
        .output()
        .expect("run embed-master")
}

/// A manifest with one module of `library_name` and its parameters.
fn manifest(library_name: &str, module: &str, params: &[(&str, &str)]) -> String {
    let ps: Vec<String> =
        params.iter().map(|(k, v)| format!(r#"{{"key": "{k}", "value": "{v}"}}"#)).collect();
    format!(
        r#"{{"libraries": [{{"file": {}, "modules": [{{"name": "{module}", "parameters": [{}]}}]}}]}}"#,
        serde_json::to_string(&library(library_name).display().to_string()).unwrap(),
        ps.join(", ")
    )
}

/// The number after `label ` in the totals line.
fn total(stdout: &str, label: &str) -> f64 {
    let rest = stdout.split(&format!("{label} ")).nth(1).unwrap_or_else(|| panic!("{stdout}"));
    rest.split(|c: char| c == ',' || c.is_whitespace()).next().unwrap().parse().unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_embedder_runs_the_builtin_allocator_and_launches_tasks() {
    let out = embed_master(&["--seconds", "1"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(total(&stdout, "tasks launched") > 0.0, "{stdout}");
    assert_eq!(total(&stdout, "module fallbacks"), 0.0, "{stdout}");
}

#[test]
fn an_embedder_survives_a_panicking_allocator_module_and_falls_back() {
    let m = manifest("hostile_modules", "hostile_allocator", &[("mode", "payload_panics")]);
    let out =
        embed_master(&["--modules", &m, "--allocator", "hostile_allocator", "--seconds", "1"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(total(&stdout, "module fallbacks"), 1.0, "{stdout}");
    assert!(total(&stdout, "tasks launched") > 0.0, "the built-in took over: {stdout}");
    assert!(stdout.contains("allocator now 'hierarchical'"), "{stdout}");
}

#[test]
fn an_embedder_survives_an_isolated_module_that_aborts_its_process() {
    let m = manifest(
        "fatal_modules",
        "fatal_allocator",
        &[("fault", "abort"), ("isolation", "process")],
    );
    let out = embed_master(&["--modules", &m, "--allocator", "fatal_allocator", "--seconds", "1"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("killed by SIGABRT"), "{stderr}");
    assert_eq!(total(&stdout, "module fallbacks"), 1.0, "{stdout}");
    assert!(total(&stdout, "tasks launched") > 0.0, "{stdout}");
}

#[test]
fn under_the_stop_policy_a_module_fault_stops_the_embedder_with_the_reason() {
    let m = manifest("hostile_modules", "hostile_allocator", &[("mode", "payload_panics")]);
    let out = embed_master(&[
        "--modules",
        &m,
        "--allocator",
        "hostile_allocator",
        "--on_module_failure",
        "stop",
        "--seconds",
        "1",
    ]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("hostile_allocator"), "{stderr}");
}
