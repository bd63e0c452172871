//! `cargo test` runs the host's conformance suite (`allocator-master conformance`) against
//! this crate's modules, loaded from the built library exactly as the host loads them.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use allocator_host::ModuleRegistry;
use allocator_master::conformance::{Check, report, run_allocator_checks, run_sorter_checks};

/// The module names `export_modules!` gives in `src/lib.rs`.
const ALLOCATOR: &str = "template_first_fit";
const SORTER: &str = "template_fifo";

/// Longest acceptable periodic allocation run on the suite's 1,000-agent cluster (the
/// `--time-bound-ms` of `allocator-master conformance`).
const TIME_BOUND_MS: f64 = 1000.0;

/// This crate's `cdylib`. `cargo test` builds it but does not copy it to `target/<profile>/`,
/// so it is built here once (a no-op when it is fresh).
fn library() -> &'static PathBuf {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary's path");
        // target/<profile>/deps/<test binary>
        let profile_dir = exe.parent().and_then(|d| d.parent()).expect("target/<profile>");
        let mut build = Command::new(env!("CARGO"));
        build.args(["build", "--lib", "--quiet", "--manifest-path"]);
        build.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"));
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        assert!(build.status().expect("run cargo build").success(), "cargo build --lib failed");
        let lib_name = env!("CARGO_PKG_NAME").replace('-', "_");
        let file =
            format!("{}{lib_name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
        profile_dir.join(file)
    })
}

fn registry() -> ModuleRegistry {
    let manifest = manifest(library(), &[ALLOCATOR, SORTER]);
    let mut registry = ModuleRegistry::new();
    registry
        .load_flags(Some(&manifest), None)
        .unwrap_or_else(|e| panic!("loading {}: {e}", library().display()));
    registry
}

/// A manifest (SPEC section 2) loading `modules` from the library at `path`.
fn manifest(path: &std::path::Path, modules: &[&str]) -> String {
    let file = format!("{:?}", path.display().to_string());
    let modules: Vec<String> = modules.iter().map(|m| format!(r#"{{"name": "{m}"}}"#)).collect();
    format!(r#"{{"libraries": [{{"file": {file}, "modules": [{}]}}]}}"#, modules.join(", "))
}

fn assert_all_pass(subject: &str, checks: &[Check]) {
    // `report` prints PASS / FAIL / SKIP per check, as the command does (`cargo test -- --nocapture`).
    let passed = report(subject, checks);
    let failures: Vec<String> = checks
        .iter()
        .filter_map(|c| c.failure.as_ref().map(|why| format!("{}: {why}", c.name)))
        .collect();
    assert!(passed, "{subject} fails conformance:\n{}", failures.join("\n"));
}

#[test]
fn the_allocator_passes_conformance() {
    let checks = run_allocator_checks(&registry(), ALLOCATOR, TIME_BOUND_MS);
    assert_all_pass(&format!("allocator '{ALLOCATOR}'"), &checks);
}

#[test]
fn the_sorter_passes_conformance() {
    let checks = run_sorter_checks(&registry(), SORTER);
    assert!(checks.iter().all(|c| c.skipped.is_none()), "every sorter check applies: {checks:?}");
    assert_all_pass(&format!("sorter '{SORTER}'"), &checks);
}
