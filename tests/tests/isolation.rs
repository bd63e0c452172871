//! Process isolation (issue 22): with `--module_isolation process` no fault of a module ends
//! the master — it falls back to the built-in rebuilt from its records (the scenario's
//! expectations after the fault hold, so nothing was lost or duplicated) or, under
//! `--on_module_failure stop`, stops cleanly; without isolation the same faults are fatal.

use std::process::Output;

use workspace_tests::{library, run_master};

const SCENARIO: &str = "tests/scenarios/faults/allocator_fails_mid_run.json";
const SORTER_SCENARIO: &str = "tests/scenarios/faults/sorter_panics.json";

fn manifest(library_name: &str, module: &str, params: &[(&str, &str)]) -> String {
    serde_json::json!({"libraries": [{
        "file": library(library_name).display().to_string(),
        "modules": [{"name": module, "parameters": params.iter()
            .map(|(k, v)| serde_json::json!({"key": k, "value": v}))
            .collect::<Vec<_>>()}]
    }]})
    .to_string()
}

fn run(scenario: &str, extra: &[&str]) -> Output {
    let mut args = vec!["--scenario", scenario, "--output", "-"];
    args.extend_from_slice(extra);
    run_master(&args)
}

/// [`run`] with the modules of manifest `modules` isolated in worker processes
/// (`--modules M --module_isolation process`), then `extra`.
fn run_isolated(scenario: &str, modules: &str, extra: &[&str]) -> Output {
    let mut args = vec!["--modules", modules, "--module_isolation", "process"];
    args.extend_from_slice(extra);
    run(scenario, &args)
}

fn summary(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().expect("summary line")).expect("summary JSON")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs the fallback scenario with `fatal_allocator` committing `fault` in its third run,
/// isolated, and checks that the master fell back and met every expectation.
fn survives_isolated(fault: &str, cause: &str) {
    let m = manifest("fatal_modules", "fatal_allocator", &[("fault", fault)]);
    let out = run_isolated(
        SCENARIO,
        &m,
        &["--allocator", "fatal_allocator", "--module_memory_limit_mb", "512"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{fault}: {err}");
    let line = format!("worker for module 'fatal_allocator' {cause}");
    assert!(err.contains(&line), "{fault}: expected '{line}' in: {err}");
    assert!(err.contains("during allocate"), "{err}");
    assert!(err.contains("continuing with the built-in hierarchical allocator"), "{err}");
    let s = summary(&out);
    assert_eq!(s["metrics"]["allocator/module_fallbacks"], 1, "{s}");
    assert_eq!(s["allocator"], "hierarchical", "{s}");
}

#[test]
fn an_isolated_allocator_that_aborts_falls_back_to_the_builtin() {
    survives_isolated("abort", "killed by SIGABRT");
}

#[test]
fn an_isolated_allocator_that_dereferences_null_falls_back_to_the_builtin() {
    survives_isolated("null", "killed by SIGSEGV");
}

#[test]
fn an_isolated_allocator_that_calls_exit_0_falls_back_to_the_builtin() {
    survives_isolated("exit0", "exited with code 0");
}

#[test]
fn an_isolated_allocator_that_calls_exit_3_falls_back_to_the_builtin() {
    survives_isolated("exit3", "exited with code 3");
}

#[test]
fn an_isolated_allocator_that_panics_while_panicking_falls_back_to_the_builtin() {
    survives_isolated("double_panic", "killed by SIGABRT");
}

#[test]
fn an_isolated_allocator_that_allocates_without_bound_hits_the_memory_limit_and_falls_back() {
    survives_isolated("unbounded", "killed by SIGABRT (perhaps out of memory");
}

#[test]
fn an_isolated_allocator_that_never_returns_is_killed_after_the_timeout_and_falls_back() {
    let m = manifest("faulty_modules", "faulty_allocator", &[("hang_on_allocate", "2")]);
    let out = run_isolated(
        SCENARIO,
        &m,
        &["--allocator", "faulty_allocator", "--module_call_timeout_ms", "300"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("worker for module 'faulty_allocator' did not answer within 300 ms"),
        "{err}"
    );
    assert_eq!(summary(&out)["metrics"]["allocator/module_fallbacks"], 1);
}

#[test]
fn the_stop_policy_stops_cleanly_when_an_isolated_worker_dies() {
    let m = manifest("fatal_modules", "fatal_allocator", &[("fault", "null")]);
    let out = run_isolated(
        SCENARIO,
        &m,
        &["--allocator", "fatal_allocator", "--on_module_failure", "stop"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let last = err.trim_end().lines().last().unwrap();
    assert!(last.contains("allocator 'fatal_allocator' failed in allocate"), "{err}");
    assert!(last.contains("killed by SIGSEGV during allocate"), "{err}");
}

#[test]
fn an_isolated_factory_that_aborts_is_a_clean_creation_error() {
    let m = manifest("fatal_modules", "fatal_factory", &[("fault", "abort")]);
    let out = run_isolated(SCENARIO, &m, &["--allocator", "fatal_factory"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("failed to create allocator 'fatal_factory'")
            && err.contains("worker for module 'fatal_factory' killed by SIGABRT during create"),
        "{err}"
    );
}

#[test]
fn an_isolated_sorter_that_segfaults_is_replaced_by_the_builtin_drf() {
    let m = manifest("fatal_modules", "fatal_sorter", &[("fault", "null")]);
    let out = run_isolated(SORTER_SCENARIO, &m, &["--role_sorter", "fatal_sorter"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // The built-in allocator runs in the sorter's worker, so the host sees the worker die
    // during the allocator call (`allocate`), not during the sorter's `sort` inside it.
    assert!(
        err.contains(
            "worker for the built-in allocator with sorter module 'fatal_sorter' killed by SIGSEGV during allocate"
        ),
        "{err}"
    );
    assert!(err.contains("continuing with the built-in drf sorters"), "{err}");
    let s = summary(&out);
    assert_eq!(s["role_sorter"], "drf");
    assert_eq!(s["metrics"]["allocator/module_fallbacks"], 1);
}

/// A sorter that never returns, isolated, takes only its worker with it: the worker is killed
/// after the timeout (in-process, a hung call stops the master) and the built-in drf sorters
/// take over.
#[test]
fn an_isolated_sorter_that_never_returns_is_killed_after_the_timeout_and_falls_back() {
    let m = manifest("fatal_modules", "fatal_sorter", &[("fault", "hang")]);
    let out = run_isolated(
        SORTER_SCENARIO,
        &m,
        &["--role_sorter", "fatal_sorter", "--module_call_timeout_ms", "300"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "worker for the built-in allocator with sorter module 'fatal_sorter' did not answer within 300 ms"
        ),
        "{err}"
    );
    let s = summary(&out);
    assert_eq!(s["role_sorter"], "drf", "{s}");
    assert_eq!(s["metrics"]["allocator/module_fallbacks"], 1, "{s}");
}

/// A panic in an isolated sorter is caught in its worker by the same wrappers as in the
/// master's process: the same message, the same fallback, the same offers.
#[test]
fn an_isolated_sorter_that_panics_falls_back_as_in_process() {
    let m = manifest("faulty_modules", "panicky", &[("panic_on_sort", "3")]);
    let stream = |isolation: &str| {
        let out = run(
            SORTER_SCENARIO,
            &["--modules", &m, "--role_sorter", "panicky", "--module_isolation", isolation],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{isolation}: {err}");
        assert!(err.contains("a sorter module failed in allocate"), "{isolation}: {err}");
        assert!(err.contains("sort number 3 panics on purpose"), "{isolation}: {err}");
        let s = summary(&out);
        assert_eq!(s["role_sorter"], "drf", "{isolation}: {s}");
        assert_eq!(s["metrics"]["allocator/module_fallbacks"], 1, "{isolation}: {s}");
        offers(&out)
    };
    assert_eq!(stream("process"), stream("none"));
}

/// The offer events of a run, in order.
fn offers(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "offer")
        .collect()
}

/// The built-in allocator in the worker of its isolated sorter modules cannot switch sorters
/// in place (its records are in the worker): `set_sorters` is refused, as for an allocator
/// module, with one line that says why.
#[test]
fn set_sorters_is_refused_while_the_builtin_allocator_runs_in_the_sorter_worker() {
    let out = run_isolated(
        "tests/scenarios/allocator/set_sorters_keeps_allocations.json",
        "examples/modules.json",
        &["--role_sorter", "drf"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("set_sorters needs the built-in allocator in the master's process"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_manifest_parameter_isolates_one_module_without_the_flag() {
    let m = manifest(
        "fatal_modules",
        "fatal_allocator",
        &[("fault", "abort"), ("isolation", "process")],
    );
    let out = run(SCENARIO, &["--modules", &m, "--allocator", "fatal_allocator"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("worker for module 'fatal_allocator' killed by SIGABRT"), "{err}");
}

#[test]
fn an_unknown_isolation_parameter_is_a_load_error() {
    let m = manifest("fatal_modules", "fatal_allocator", &[("isolation", "thread")]);
    let out = run(SCENARIO, &["--modules", &m, "--allocator", "fatal_allocator"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "module 'fatal_allocator': parameter 'isolation': unknown isolation 'thread'"
        ),
        "{}",
        stderr(&out)
    );
}

/// Documents why isolation exists: in the master's process these faults end the master — by a
/// signal, or with exit code 3 from the exit hook — never with 0 or 1, which would read as
/// success or a failed expectation. (Unbounded allocation is left out: in-process it would
/// take the machine's memory, not a limit's.)
#[test]
fn without_isolation_a_fatal_module_fault_ends_the_master() {
    use std::os::unix::process::ExitStatusExt;
    for fault in ["abort", "null", "exit0", "exit3", "double_panic"] {
        let m = manifest("fatal_modules", "fatal_allocator", &[("fault", fault)]);
        let out = run(SCENARIO, &["--modules", &m, "--allocator", "fatal_allocator"]);
        let ended = match (out.status.signal(), out.status.code()) {
            (Some(signal), _) => signal == 6 || signal == 11,
            (None, Some(code)) => code == 3,
            (None, None) => false,
        };
        assert!(ended, "{fault}: {:?}: {}", out.status, stderr(&out));
    }
}

/// Isolation changes where a module runs, not what it decides: the default workload with the
/// DRF sorter modules gives the same event stream isolated and in-process.
#[test]
fn isolated_sorter_modules_make_the_same_offers_as_in_process() {
    let stream = |isolation: &str| {
        let out = run_master(&[
            "--modules",
            "examples/modules.json",
            "--role_sorter",
            "drf",
            "--framework_sorter",
            "drf",
            "--module_isolation",
            isolation,
            "--output",
            "-",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // Offers and everything else but timings and the closing summary.
        text.lines()
            .filter(|l| !l.contains("\"summary\""))
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).expect("event JSON");
                v.as_object_mut().map(|o| o.remove("micros"));
                v
            })
            .collect::<Vec<_>>()
    };
    let in_process = stream("none");
    let isolated = stream("process");
    assert!(in_process.len() > 1000, "the workload ran");
    assert!(in_process == isolated, "the streams differ");
}

#[test]
fn isolated_sorter_and_allocator_modules_pass_conformance() {
    for (modules, flag, subject) in [
        ("examples/modules.json", "--sorter", "drf"),
        ("examples/custom-allocator/modules.json", "--allocator", "binpack"),
    ] {
        let out = run_master(&[
            "conformance",
            "--modules",
            modules,
            flag,
            subject,
            "--module_isolation",
            "process",
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{subject}: {text}{}", stderr(&out));
        assert!(text.contains(" passed, 0 failed"), "{text}");
    }
}

/// A FIFO, unique to this test process and `name`, that holds one byte (the fixtures'
/// `once_marker`: the first module to take the byte commits its fault; a sandboxed worker
/// cannot create a marker file), and the open end that keeps it so until it is dropped.
fn marker(name: &str) -> (String, std::fs::File) {
    use std::io::Write;
    let path = std::env::temp_dir().join(format!("iso-once-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let made = std::process::Command::new("mkfifo")
        .args(["-m", "644"])
        .arg(&path)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
    // Opened to read and write, a FIFO does not wait for a reader.
    let mut fifo =
        std::fs::OpenOptions::new().read(true).write(true).open(&path).expect("open the FIFO");
    fifo.write_all(&[1]).expect("write the token");
    (path.display().to_string(), fifo)
}

/// The restart line for `module` and restart `n` of `limit`, with the fault's cause in it.
fn assert_restarted(err: &str, module_line: &str, cause: &str, n: u32, limit: u32) {
    let restart = format!("restarting it (restart {n} of {limit})");
    let line = err.lines().find(|l| l.contains(&restart)).unwrap_or_else(|| {
        panic!("expected a line with '{restart}' in: {err}");
    });
    assert!(line.contains(&format!("] {module_line} failed in ")), "{line}");
    assert!(line.contains(cause), "expected '{cause}' in: {line}");
}

#[test]
fn an_isolated_allocator_killed_once_is_restarted_and_the_run_goes_on_with_it() {
    let (once, _token) = marker("allocator");
    let m =
        manifest("fatal_modules", "fatal_allocator", &[("fault", "abort"), ("once_marker", &once)]);
    let out = run_isolated(
        SCENARIO,
        &m,
        &["--allocator", "fatal_allocator", "--on_module_failure", "restart"],
    );
    let _ = std::fs::remove_file(&once);
    let err = stderr(&out);
    // Exit 0: every expectation after the restart held — the repeated run offered nothing
    // (the fresh module was told what the ledger holds) and the recovered agent was offered
    // again (nothing lost).
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_restarted(
        &err,
        "allocator module 'fatal_allocator'",
        "worker for module 'fatal_allocator' killed by SIGABRT during allocate",
        1,
        3,
    );
    assert!(!err.contains("continuing with the built-in"), "{err}");
    let s = summary(&out);
    assert_eq!(s["allocator"], "fatal_allocator", "{s}");
    assert_eq!(s["metrics"]["allocator/module_restarts"], 1, "{s}");
    assert_eq!(s["metrics"]["allocator/module_fallbacks"], 0, "{s}");
    assert_eq!(s["metrics"]["allocator/guard/dropped_offers"], 0, "{s}");
}

#[test]
fn an_isolated_allocator_that_keeps_dying_falls_back_past_the_restart_limit() {
    let m =
        manifest("fatal_modules", "fatal_allocator", &[("fault", "null"), ("on_allocate", "1")]);
    let out = run_isolated(
        SCENARIO,
        &m,
        &[
            "--allocator",
            "fatal_allocator",
            "--on_module_failure",
            "restart",
            "--module_restart_limit",
            "2",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let cause = "killed by SIGSEGV during allocate";
    assert_restarted(&err, "allocator module 'fatal_allocator'", cause, 1, 2);
    assert_restarted(&err, "allocator module 'fatal_allocator'", cause, 2, 2);
    assert!(!err.contains("restart 3"), "{err}");
    assert!(err.contains("continuing with the built-in hierarchical allocator"), "{err}");
    let s = summary(&out);
    assert_eq!(s["allocator"], "hierarchical", "{s}");
    assert_eq!(s["metrics"]["allocator/module_restarts"], 2, "{s}");
    assert_eq!(s["metrics"]["allocator/module_fallbacks"], 1, "{s}");
    assert_eq!(s["metrics"]["allocator/guard/dropped_offers"], 0, "{s}");
}

#[test]
fn a_restart_limit_of_zero_falls_back_at_the_first_fault() {
    let m = manifest("fatal_modules", "fatal_allocator", &[("fault", "exit0")]);
    let out = run_isolated(
        SCENARIO,
        &m,
        &[
            "--allocator",
            "fatal_allocator",
            "--on_module_failure",
            "restart",
            "--module_restart_limit",
            "0",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("restarting it"), "{err}");
    let s = summary(&out);
    assert_eq!(s["metrics"]["allocator/module_restarts"], 0, "{s}");
    assert_eq!(s["metrics"]["allocator/module_fallbacks"], 1, "{s}");
}

#[test]
fn the_restart_limit_without_the_restart_policy_is_refused() {
    let m = manifest("fatal_modules", "fatal_allocator", &[]);
    let out = run(
        SCENARIO,
        &["--modules", &m, "--allocator", "fatal_allocator", "--module_restart_limit", "2"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .contains("--module_restart_limit applies only with --on_module_failure restart"),
        "{}",
        stderr(&out)
    );
}

/// Without isolation a contained fault (a panic) restarts the module too: a fresh instance from
/// the same library, given the host's records.
#[test]
fn an_in_process_allocator_that_panics_is_restarted_from_its_library() {
    let m = manifest("faulty_modules", "faulty_allocator", &[("panic_on_allocate", "3")]);
    let out = run(
        SCENARIO,
        &["--modules", &m, "--allocator", "faulty_allocator", "--on_module_failure", "restart"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // Each fresh instance panics in its own third run: the scenario's third run (restart 1),
    // then the fresh instance's third (the repeated run, the recovery's and the last tick's).
    assert_restarted(&err, "allocator module 'faulty_allocator'", "panicked", 1, 3);
    assert_restarted(&err, "allocator module 'faulty_allocator'", "panicked", 2, 3);
    let s = summary(&out);
    assert_eq!(s["allocator"], "faulty_allocator", "{s}");
    assert_eq!(s["metrics"]["allocator/module_restarts"], 2, "{s}");
    assert_eq!(s["metrics"]["allocator/module_fallbacks"], 0, "{s}");
    assert_eq!(s["metrics"]["allocator/guard/dropped_offers"], 0, "{s}");
}

#[test]
fn an_isolated_sorter_killed_once_is_restarted_and_stays_in_use() {
    let (once, _token) = marker("sorter");
    let m = manifest("fatal_modules", "fatal_sorter", &[("fault", "null"), ("once_marker", &once)]);
    let scenario = std::env::temp_dir().join(format!("iso-sorter-{}.json", std::process::id()));
    // The fatal sorter answers every sort with nobody: no offers, before or after its restart.
    let events = serde_json::json!({"events": [
        {"op": "add_framework", "framework": "f1", "roles": ["r1"]},
        {"op": "add_agent", "agent": "a1", "resources": "cpus:1"},
        {"op": "add_agent", "agent": "a2", "resources": "cpus:1"},
        {"op": "add_agent", "agent": "a3", "resources": "cpus:1"},
        {"op": "tick"},
        {"op": "expect_offers", "offers": []},
    ]});
    std::fs::write(&scenario, events.to_string()).unwrap();
    let out = run_isolated(
        &scenario.display().to_string(),
        &m,
        &["--role_sorter", "fatal_sorter", "--on_module_failure", "restart"],
    );
    let _ = std::fs::remove_file(&once);
    let _ = std::fs::remove_file(&scenario);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // Killed during the allocator call: the built-in allocator runs in the sorter's worker.
    assert_restarted(
        &err,
        "sorter module 'fatal_sorter'",
        "worker for the built-in allocator with sorter module 'fatal_sorter' killed by SIGSEGV during allocate",
        1,
        3,
    );
    let s = summary(&out);
    assert_eq!(s["role_sorter"], "fatal_sorter", "{s}");
    assert_eq!(s["metrics"]["allocator/module_restarts"], 1, "{s}");
    assert_eq!(s["metrics"]["allocator/module_fallbacks"], 0, "{s}");
}

#[test]
fn the_stop_policy_stops_cleanly_when_an_isolated_sorter_worker_dies() {
    let m = manifest("fatal_modules", "fatal_sorter", &[("fault", "abort")]);
    let out = run_isolated(
        SORTER_SCENARIO,
        &m,
        &["--role_sorter", "fatal_sorter", "--on_module_failure", "stop"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    let last = err.trim_end().lines().last().unwrap();
    assert!(
        last.contains("sorter module 'fatal_sorter' killed by SIGABRT during allocate"),
        "{err}"
    );
}

/// Runs the master with `FATAL_MODULES_ABORT_ON_LOAD` set: the fatal fixture library aborts
/// while it is loaded.
fn run_with_aborting_constructor(extra: &[&str]) -> Output {
    let m = manifest("fatal_modules", "fatal_allocator", &[]);
    let mut args = vec!["--scenario", SCENARIO, "--output", "-", "--modules", &m];
    args.extend_from_slice(&["--allocator", "fatal_allocator"]);
    args.extend_from_slice(extra);
    std::process::Command::new(workspace_tests::master())
        .args(&args)
        .current_dir(workspace_tests::workspace_root())
        .env_remove("RUST_LOG")
        .env("FATAL_MODULES_ABORT_ON_LOAD", "1")
        .output()
        .expect("run allocator-master")
}

#[test]
fn an_isolated_library_whose_constructor_aborts_is_a_clean_load_error() {
    let out = run_with_aborting_constructor(&["--module_isolation", "process"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let expected = format!(
        "allocator-master: error loading modules: manifest inline JSON (--modules): library '{}' could not be checked in a worker: worker for module 'fatal_allocator' killed by SIGABRT during load",
        library("fatal_modules").display()
    );
    assert_eq!(stderr(&out).trim_end(), expected);
}

/// Why the master does not open isolated libraries: one that aborts while loading ends the
/// process that loads it.
#[test]
fn without_isolation_a_library_whose_constructor_aborts_ends_the_master() {
    use std::os::unix::process::ExitStatusExt;
    let out = run_with_aborting_constructor(&[]);
    assert_eq!(out.status.signal(), Some(6), "{:?}: {}", out.status, stderr(&out));
}

/// The loading checks run in a worker for isolated modules, with the same one-line messages
/// and exit code as in the master's process.
#[test]
fn load_failures_checked_in_a_worker_read_as_in_the_master() {
    for (library_name, module) in
        [("faulty_modules", "nope"), ("future_api", "future"), ("faulty_modules", "incompatible")]
    {
        let m = workspace_tests::manifest_for(library_name, &[module]);
        let in_master = run_master(&["--modules", &m, "--list-modules"]);
        let in_worker =
            run_master(&["--modules", &m, "--list-modules", "--module_isolation", "process"]);
        assert_eq!(in_master.status.code(), Some(2), "{module}: {}", stderr(&in_master));
        assert_eq!(in_worker.status.code(), Some(2), "{module}: {}", stderr(&in_worker));
        assert_eq!(stderr(&in_worker), stderr(&in_master), "{module}");
    }
}

#[test]
fn isolated_modules_are_listed_from_the_worker_that_checked_their_library() {
    let m = workspace_tests::manifest_for("fatal_modules", &["fatal_allocator", "fatal_sorter"]);
    let listed = |isolation: &str| {
        let out = run_master(&["--modules", &m, "--list-modules", "--module_isolation", isolation]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let in_worker = listed("process");
    assert!(in_worker.contains("fatal_sorter") && in_worker.contains("allocator"), "{in_worker}");
    assert_eq!(in_worker, listed("none"));
}
