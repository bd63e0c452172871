//! The module worker's sandbox (issue 31): an isolated module that signals or traces its
//! parent (the master), runs a program, opens a network connection or creates a file is
//! contained — the worker is killed by `SIGSYS`, or the call fails with `EPERM` and the module
//! panics — and the master goes on with the built-in. Where the master runs as root, the
//! worker runs as `nobody`. Linux only (elsewhere the sandbox is the memory limit and the
//! switch of user).
#![cfg(target_os = "linux")]

use std::process::Output;

use workspace_tests::{library, run_master};

const SCENARIO: &str = "tests/scenarios/faults/allocator_fails_mid_run.json";
const SORTER_SCENARIO: &str = "tests/scenarios/faults/sorter_panics.json";

fn manifest(module: &str, params: &[(&str, &str)]) -> String {
    serde_json::json!({"libraries": [{
        "file": library("fatal_modules").display().to_string(),
        "modules": [{"name": module, "parameters": params.iter()
            .map(|(k, v)| serde_json::json!({"key": k, "value": v}))
            .collect::<Vec<_>>()}]
    }]})
    .to_string()
}

/// The fallback scenario with `fatal_allocator` committing `params`' fault in its third run,
/// isolated, then `extra`.
fn run_allocator(params: &[(&str, &str)], extra: &[&str]) -> Output {
    let m = manifest("fatal_allocator", params);
    let mut args = vec!["--scenario", SCENARIO, "--output", "-", "--modules", &m];
    args.extend_from_slice(&["--module_isolation", "process", "--allocator", "fatal_allocator"]);
    args.extend_from_slice(extra);
    run_master(&args)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn summary(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().expect("summary line")).expect("summary JSON")
}

/// The master ran the scenario to its end (exit 0: every expectation held) with the built-in
/// allocator after one fallback, and said `cause` about the module's worker.
fn assert_contained(out: &Output, cause: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(cause), "expected '{cause}' in: {err}");
    assert!(err.contains("continuing with the built-in hierarchical allocator"), "{err}");
    let s = summary(out);
    assert_eq!(s["allocator"], "hierarchical", "{s}");
    assert_eq!(s["metrics"]["allocator/module_fallbacks"], 1, "{s}");
}

const KILLED: &str = "worker for module 'fatal_allocator' killed by SIGSYS (a system call the worker's sandbox forbids) during allocate";

#[test]
fn a_worker_that_kills_its_parent_is_killed_and_the_master_goes_on() {
    assert_contained(&run_allocator(&[("fault", "kill_parent")], &[]), KILLED);
}

#[test]
fn a_worker_that_traces_its_parent_is_killed_and_the_master_goes_on() {
    assert_contained(&run_allocator(&[("fault", "ptrace_parent")], &[]), KILLED);
}

#[test]
fn a_worker_that_runs_a_program_is_killed() {
    assert_contained(&run_allocator(&[("fault", "exec")], &[]), KILLED);
    // std::process::Command: the new process is refused before any exec.
    assert_contained(&run_allocator(&[("fault", "spawn")], &[]), KILLED);
}

#[test]
fn a_worker_cannot_open_a_network_connection() {
    let out = run_allocator(&[("fault", "socket")], &[]);
    assert_contained(&out, "socket: Operation not permitted");
}

#[test]
fn a_worker_cannot_create_a_file() {
    let path = std::env::temp_dir().join(format!("sandbox-write-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let path_text = path.display().to_string();
    let out = run_allocator(&[("fault", "write_file"), ("path", &path_text)], &[]);
    let exists = path.exists();
    let _ = std::fs::remove_file(&path);
    assert_contained(
        &out,
        &format!("write_file: cannot create {path_text}: Operation not permitted"),
    );
    assert!(!exists, "the module created {path_text}");
}

/// The built-in allocator that runs in its sorter modules' worker runs in the same sandbox.
#[test]
fn a_sorter_that_kills_its_parent_takes_only_its_worker() {
    let m = manifest("fatal_sorter", &[("fault", "kill_parent")]);
    let out = run_master(&[
        "--scenario",
        SORTER_SCENARIO,
        "--output",
        "-",
        "--modules",
        &m,
        "--module_isolation",
        "process",
        "--role_sorter",
        "fatal_sorter",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "worker for the built-in allocator with sorter module 'fatal_sorter' killed by SIGSYS"
        ),
        "{err}"
    );
    assert!(err.contains("continuing with the built-in drf sorters"), "{err}");
    assert_eq!(summary(&out)["role_sorter"], "drf");
}

/// The sandbox is in place before the library is mapped: a load-time constructor that kills
/// the parent kills only the worker that checks the library.
#[test]
fn a_library_that_kills_its_parent_while_it_loads_is_a_clean_load_error() {
    let m = manifest("fatal_allocator", &[]);
    let out = std::process::Command::new(workspace_tests::master())
        .args(["--scenario", SCENARIO, "--output", "-", "--modules", &m])
        .args(["--allocator", "fatal_allocator", "--module_isolation", "process"])
        .current_dir(workspace_tests::workspace_root())
        .env_remove("RUST_LOG")
        .env("FATAL_MODULES_KILL_PARENT_ON_LOAD", "1")
        .output()
        .expect("run allocator-master");
    assert_eq!(out.status.code(), Some(2), "{:?}: {}", out.status, stderr(&out));
    assert!(
        stderr(&out).contains(
            "could not be checked in a worker: worker for module 'fatal_allocator' killed by SIGSYS"
        ),
        "{}",
        stderr(&out)
    );
}

fn master_is_root() -> bool {
    let id = std::process::Command::new("id").arg("-u").output().expect("run id -u");
    String::from_utf8_lossy(&id.stdout).trim() == "0"
}

/// A master that runs as root runs its workers as `nobody` (or as `--module_worker_user`
/// says); one that does not keeps its own user.
#[test]
fn workers_run_as_nobody_when_the_master_is_root() {
    let whoami = |extra: &[&str]| stderr(&run_allocator(&[("fault", "whoami")], extra));
    if master_is_root() {
        let err = whoami(&[]);
        assert!(err.contains("whoami: uid 65534 gid 65534"), "{err}");
        let err = whoami(&["--module_worker_user", "master"]);
        assert!(err.contains("whoami: uid 0 gid 0"), "{err}");
        let err = whoami(&["--module_worker_user", "1234:4321"]);
        assert!(err.contains("whoami: uid 1234 gid 4321"), "{err}");
    } else {
        let id = std::process::Command::new("id").arg("-u").output().expect("run id -u");
        let uid = String::from_utf8_lossy(&id.stdout).trim().to_owned();
        let err = whoami(&[]);
        assert!(err.contains(&format!("whoami: uid {uid} ")), "{err}");
    }
}

/// A library that the worker's user cannot read is a load error that says so.
#[test]
fn a_library_the_worker_user_cannot_read_is_a_clear_load_error() {
    use std::os::unix::fs::PermissionsExt;
    if !master_is_root() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("sandbox-unreadable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("libfatal_modules.so");
    std::fs::copy(library("fatal_modules"), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o600)).unwrap();
    let m = serde_json::json!({"libraries": [{
        "file": copy.display().to_string(),
        "modules": [{"name": "fatal_allocator"}]
    }]})
    .to_string();
    let out = run_master(&["--modules", &m, "--list-modules", "--module_isolation", "process"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "library '{}' cannot be read by the module worker's user (uid 65534, gid 65534",
            copy.display()
        )),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_bad_worker_user_is_refused() {
    let out = run_allocator(&[], &["--module_worker_user", "root"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--module_worker_user: 'root' is not auto, master or UID:GID"),
        "{}",
        stderr(&out)
    );
}
