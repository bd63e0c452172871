//! Loading the module crate under test the way a host loads it: its `cdylib`, built by cargo,
//! named in a manifest (SPEC section 2), through [`ModuleRegistry::load_flags`].

use std::path::{Path, PathBuf};
use std::process::Command;

use allocator_host::ModuleRegistry;

/// Builds the `cdylib` of the package at `manifest_dir` (a no-op when it is fresh) in the same
/// profile as the running test binary, and returns its path.
///
/// `cargo test` builds a package's `cdylib` but does not copy it to `target/<profile>/`, which
/// is why it is built again here. Call it from an integration test with
/// `env!("CARGO_MANIFEST_DIR")` and `env!("CARGO_PKG_NAME")`.
///
/// # Panics
/// When the test binary is not under `target/<profile>/deps/`, or the build fails: a test
/// cannot go on without the library.
pub fn build_cdylib(manifest_dir: &str, package: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test binary>
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>");
    let mut build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    build.args(["build", "--lib", "--quiet", "--manifest-path"]);
    build.arg(Path::new(manifest_dir).join("Cargo.toml"));
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let status = build.status().expect("run cargo build");
    assert!(status.success(), "cargo build --lib of {manifest_dir} failed");
    let lib_name = package.replace('-', "_");
    let file =
        format!("{}{lib_name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    profile_dir.join(file)
}

/// A manifest (SPEC section 2) loading `modules` from the library at `path`.
pub fn manifest(path: &Path, modules: &[&str]) -> String {
    let file = serde_json::Value::String(path.display().to_string());
    let modules: Vec<String> = modules.iter().map(|m| format!(r#"{{"name": "{m}"}}"#)).collect();
    format!(r#"{{"libraries": [{{"file": {file}, "modules": [{}]}}]}}"#, modules.join(", "))
}

/// A registry with `modules` loaded from the library at `path`, checked as the host checks
/// every library.
///
/// # Panics
/// When loading fails, with the host's reason.
pub fn load(path: &Path, modules: &[&str]) -> ModuleRegistry {
    let mut registry = ModuleRegistry::new();
    registry
        .load_flags(Some(&manifest(path, modules)), None)
        .unwrap_or_else(|e| panic!("loading {}: {e}", path.display()));
    registry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_quotes_the_path_as_json() {
        let text = manifest(Path::new("/tmp/a \"b\".so"), &["x", "y"]);
        let doc: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(doc["libraries"][0]["file"], "/tmp/a \"b\".so");
        assert_eq!(doc["libraries"][0]["modules"][1]["name"], "y");
    }
}
