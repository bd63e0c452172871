//! Helpers for the workspace tests: build the module libraries and the binary once, then find
//! them in the target folder.
//!
//! `cargo test` does not place `cdylib`s in `target/<profile>/`, so the first helper call runs
//! `cargo build --workspace` for the current profile (a no-op when everything is fresh). Set
//! `ALLOCATOR_MODULE_DIR` to load libraries from another folder.
#![deny(missing_docs)]

pub mod kube;
pub mod serve;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::sync::{OnceLock, mpsc};
use std::time::Duration;

/// The target folder of the running test's profile (`target/debug` or `target/release`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test binary>
    exe.parent().and_then(Path::parent).expect("target dir").to_owned()
}

/// Builds the whole workspace (libraries, modules, fixtures and the binary) once per process.
pub fn ensure_built() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        if let Ok(dir) = std::env::var("ALLOCATOR_MODULE_DIR") {
            return PathBuf::from(dir);
        }
        let dir = target_dir();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "--workspace", "--quiet"]);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        cmd.current_dir(workspace_root());
        let status = cmd.status().expect("run cargo build");
        assert!(status.success(), "cargo build --workspace failed");
        dir
    })
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_owned()
}

/// The path of module library `name` (`drf_sorter` → `…/libdrf_sorter.so`), after building.
pub fn library(name: &str) -> PathBuf {
    let dir = ensure_built();
    let file = format!("{}{}{}", std::env::consts::DLL_PREFIX, name, std::env::consts::DLL_SUFFIX);
    dir.join(file)
}

/// The `allocator-master` binary, after building.
pub fn master() -> PathBuf {
    ensure_built().join(format!("allocator-master{}", std::env::consts::EXE_SUFFIX))
}

/// Runs `allocator-master` with `args` in the workspace root.
pub fn run_master(args: &[&str]) -> Output {
    Command::new(master())
        .args(args)
        .current_dir(workspace_root())
        .env_remove("RUST_LOG")
        .output()
        .expect("run allocator-master")
}

/// A manifest with one library given by absolute `file` and the listed modules.
pub fn manifest_for(library_name: &str, modules: &[&str]) -> String {
    let mods: Vec<String> = modules.iter().map(|m| format!(r#"{{"name": "{m}"}}"#)).collect();
    format!(
        r#"{{"libraries": [{{"file": {}, "modules": [{}]}}]}}"#,
        serde_json::to_string(&library(library_name).display().to_string()).unwrap(),
        mods.join(", ")
    )
}

/// The `*.json` files of a workspace folder, sorted (panics if there are none).
pub fn json_files(folder: &str) -> Vec<PathBuf> {
    let dir = workspace_root().join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no scenarios in {}", dir.display());
    files
}

/// Reads `child`'s piped stderr on a thread of its own (so the child never blocks on a full
/// pipe); its lines arrive on the channel. Panics when stderr was not piped.
pub fn stderr_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().expect("stderr piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
}

/// Waits (up to `patience` for each line) for a line containing `fragment`; every line seen,
/// that one last. Panics, with the lines seen, when none comes.
pub fn wait_for_line(
    rx: &mpsc::Receiver<String>,
    fragment: &str,
    patience: Duration,
) -> Vec<String> {
    let mut seen = Vec::new();
    while let Ok(line) = rx.recv_timeout(patience) {
        let found = line.contains(fragment);
        seen.push(line);
        if found {
            return seen;
        }
    }
    panic!("no stderr line with '{fragment}' in {seen:?}");
}
