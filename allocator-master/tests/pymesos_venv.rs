//! The Python harness for the scheduler API tests: the virtualenv made by
//! `tests/python/setup-venv.sh` (pymesos 0.3.15 on a pure-Python http-parser) must import
//! pymesos.
//!
//! The venv's python is `$ALLOCATOR_MASTER_PYTHON`, else `target/pyenv/bin/python` in the
//! workspace. Without either the test skips with a printed reason, except in CI (`CI=true`),
//! where a missing venv is a failure.

use std::path::PathBuf;
use std::process::Command;

/// The venv's python, or why there is none.
fn venv_python() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("ALLOCATOR_MASTER_PYTHON").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.exists() {
            Ok(p)
        } else {
            Err(format!("ALLOCATOR_MASTER_PYTHON names {}, which does not exist", p.display()))
        };
    }
    let default = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/pyenv/bin/python");
    if default.exists() {
        Ok(default)
    } else {
        Err(format!(
            "no pymesos venv: ALLOCATOR_MASTER_PYTHON is unset and {} does not exist \
             (make it with `bash tests/python/setup-venv.sh`)",
            default.display()
        ))
    }
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

#[test]
fn the_venv_python_imports_pymesos_on_the_pure_python_http_parser() {
    let python = match venv_python() {
        Ok(p) => p,
        Err(reason) if in_ci() => panic!("{reason}"),
        Err(reason) => {
            eprintln!("skipped: {reason}");
            return;
        }
    };
    let out = Command::new(&python)
        .args([
            "-c",
            "import pymesos, http_parser.http, http_parser.pyparser\n\
             from pymesos import MesosSchedulerDriver, Scheduler\n\
             print('ok')",
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        out.status.success(),
        "{} cannot import pymesos: {}",
        python.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
}
