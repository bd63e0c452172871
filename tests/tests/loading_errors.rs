//! Every module-loading failure is one clear line on stderr and exit code 2, naming the
//! manifest, the library, the module and the reason (issue 3, SPEC section 2).

use std::path::PathBuf;
use std::process::Output;

use workspace_tests::{library, manifest_for, run_master, target_dir};

fn lib(name: &str) -> String {
    serde_json::to_string(&library(name).display().to_string()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts exit code 2 and a single stderr line containing every fragment.
fn assert_fails(out: &Output, fragments: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "exit code; stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line expected: {err}");
    assert!(err.starts_with("allocator-master: "), "{err}");
    for f in fragments {
        assert!(err.contains(f), "missing {f:?} in: {err}");
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = target_dir().join("loading-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn malformed_json_names_line_and_column() {
    let out = run_master(&["--modules", "{\"libraries\": [\n  {\"name\": }]}", "--list-modules"]);
    assert_fails(
        &out,
        &[
            "error loading modules: malformed module manifest inline JSON (--modules)",
            "line 2 column",
        ],
    );
}

#[test]
fn library_without_file_or_name_is_rejected() {
    let out = run_master(&[
        "--modules",
        r#"{"libraries": [{"modules": [{"name": "drf"}]}]}"#,
        "--list-modules",
    ]);
    assert_fails(&out, &["library entry #0: library name or path not provided"]);
}

#[test]
fn missing_library_lists_the_places_searched() {
    let dir = temp_dir("missing");
    let manifest = dir.join("m.json");
    std::fs::write(
        &manifest,
        r#"{"libraries": [{"name": "no_such_lib", "modules": [{"name": "x"}]}]}"#,
    )
    .unwrap();
    let out = run_master(&["--modules", manifest.to_str().unwrap(), "--list-modules"]);
    let in_manifest_dir = dir.join("libno_such_lib.so").display().to_string();
    let next_to_exe = target_dir().join("libno_such_lib.so").display().to_string();
    assert_fails(
        &out,
        &[
            "library 'no_such_lib' not found",
            &in_manifest_dir,
            &next_to_exe,
            "platform library search path",
        ],
    );
}

#[test]
fn a_plain_shared_library_is_not_a_module_library() {
    let m = format!(
        r#"{{"libraries": [{{"file": {}, "modules": [{{"name": "x"}}]}}]}}"#,
        lib("not_a_module")
    );
    let out = run_master(&["--modules", &m, "--list-modules"]);
    assert_fails(&out, &["libnot_a_module", "is not a module library of this system"]);
}

#[test]
fn a_module_built_against_another_api_version_is_refused_with_both_versions() {
    let out =
        run_master(&["--modules", &manifest_for("future_api", &["future"]), "--list-modules"]);
    assert_fails(
        &out,
        &["module 'future'", "built against module API 2.0.0, but this host supports 1.x"],
    );
}

#[test]
fn an_unknown_module_lists_the_names_the_library_has() {
    let out =
        run_master(&["--modules", &manifest_for("faulty_modules", &["nope"]), "--list-modules"]);
    assert_fails(
        &out,
        &[
            "module 'nope' not found in library",
            "libfaulty_modules",
            "(it has: faulty_allocator, HierarchicalDRF, drf, create_fails, create_panics, incompatible, panicky)",
        ],
    );
}

#[test]
fn a_module_entry_without_a_name_is_rejected() {
    let m =
        format!(r#"{{"libraries": [{{"file": {}, "modules": [{{}}]}}]}}"#, lib("faulty_modules"));
    let out = run_master(&["--modules", &m, "--list-modules"]);
    assert_fails(&out, &["module name not provided with library", "libfaulty_modules"]);
}

#[test]
fn a_sorter_module_cannot_be_the_allocator() {
    let out = run_master(&[
        "--modules",
        &manifest_for("minimal_module", &["fifo"]),
        "--allocator",
        "fifo",
    ]);
    assert_fails(
        &out,
        &[
            "module 'fifo'",
            "is of kind 'sorter', but --allocator needs a module of kind 'allocator'",
        ],
    );
}

#[test]
fn an_allocator_module_cannot_be_a_sorter() {
    let out = run_master(&[
        "--modules",
        &manifest_for("minimal_module", &["first_fit"]),
        "--role_sorter",
        "first_fit",
    ]);
    assert_fails(
        &out,
        &[
            "module 'first_fit'",
            "is of kind 'allocator', but --role_sorter needs a module of kind 'sorter'",
        ],
    );
}

#[test]
fn an_unknown_sorter_name_lists_what_is_available() {
    let out = run_master(&["--framework_sorter", "fair"]);
    assert_fails(&out, &["sorter 'fair' is neither built in nor a loaded module", "built in: drf"]);
}

#[test]
fn an_unknown_sorter_name_lists_only_the_loaded_sorter_modules() {
    let out = run_master(&[
        "--modules",
        &manifest_for("minimal_module", &["first_fit"]),
        "--role_sorter",
        "fair",
    ]);
    assert_fails(&out, &["built in: drf; loaded sorter modules: none)"]);
    assert!(
        !stderr(&out).contains("first_fit"),
        "an allocator module listed as a sorter: {}",
        stderr(&out)
    );
}

#[test]
fn an_allocator_module_with_the_builtin_allocators_name_is_refused() {
    let m = manifest_for("faulty_modules", &["HierarchicalDRF"]);
    let out = run_master(&["--modules", &m, "--list-modules"]);
    assert_fails(
        &out,
        &[
            "allocator module 'HierarchicalDRF'",
            "has the built-in allocator's name",
            "rename the module",
        ],
    );
}

#[test]
fn the_same_module_with_different_parameters_is_rejected() {
    let m = format!(
        r#"{{"libraries": [{{"file": {l}, "modules": [{{"name": "panicky", "parameters": [{{"key": "panic_on_sort", "value": "1"}}]}}]}},
                         {{"file": {l}, "modules": [{{"name": "panicky", "parameters": [{{"key": "panic_on_sort", "value": "2"}}]}}]}}]}}"#,
        l = lib("faulty_modules")
    );
    let out = run_master(&["--modules", &m, "--list-modules"]);
    assert_fails(&out, &["module 'panicky' is already loaded with different parameters"]);
}

#[test]
fn one_name_in_two_libraries_is_rejected() {
    let m = format!(
        r#"{{"libraries": [{{"file": {}, "modules": [{{"name": "drf"}}]}}, {{"file": {}, "modules": [{{"name": "drf"}}]}}]}}"#,
        lib("drf_sorter"),
        lib("faulty_modules")
    );
    let out = run_master(&["--modules", &m, "--list-modules"]);
    assert_fails(
        &out,
        &[
            "module 'drf' appears in two different module libraries",
            "libdrf_sorter",
            "libfaulty_modules",
        ],
    );
}

#[test]
fn loading_the_identical_module_twice_is_a_no_op() {
    let one = manifest_for("drf_sorter", &["drf"]);
    let m = one.replace(r#"{"libraries": ["#, "").replace("]}", "");
    let twice = format!(r#"{{"libraries": [{m}]}}, {m}]}}]}}"#);
    let out = run_master(&["--modules", &twice, "--list-modules"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = String::from_utf8_lossy(&out.stdout);
    assert_eq!(listing.lines().filter(|l| l.starts_with("drf ")).count(), 1, "{listing}");
}

#[test]
fn a_factory_error_is_shown_as_is() {
    let m = format!(
        r#"{{"libraries": [{{"file": {}, "modules": [{{"name": "create_fails", "parameters": [{{"key": "threshold", "value": "0"}}]}}]}}]}}"#,
        lib("faulty_modules")
    );
    let out = run_master(&["--modules", &m, "--role_sorter", "create_fails"]);
    assert_fails(
        &out,
        &["failed to create sorter 'create_fails'", "threshold must be positive, got '0'"],
    );
}

#[test]
fn a_panicking_factory_is_caught_and_reported() {
    let out = run_master(&[
        "--modules",
        &manifest_for("faulty_modules", &["create_panics"]),
        "--role_sorter",
        "create_panics",
    ]);
    // The module's panic message is printed by its panic hook; the host's own report is the
    // last line, and the process exits 2 rather than aborting.
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let last = err.trim_end().lines().last().unwrap_or_default();
    assert!(last.contains("failed to create sorter 'create_panics'"), "{err}");
    assert!(last.contains("the module panicked: factory exploded"), "{err}");
}

#[test]
fn a_module_that_declares_itself_incompatible_is_refused() {
    let out = run_master(&[
        "--modules",
        &manifest_for("faulty_modules", &["incompatible"]),
        "--list-modules",
    ]);
    assert_fails(
        &out,
        &["module 'incompatible'", "has determined it is incompatible with this host"],
    );
}

#[test]
fn modules_and_modules_dir_together_are_an_error() {
    let dir = temp_dir("both");
    let out =
        run_master(&["--modules", "{\"libraries\": []}", "--modules_dir", dir.to_str().unwrap()]);
    assert_fails(&out, &["only one of --modules or --modules_dir should be specified"]);
}

#[test]
fn modules_dir_loads_in_alphabetical_order_and_stops_at_the_first_error() {
    let dir = temp_dir("dir");
    std::fs::write(dir.join("a.json"), manifest_for("drf_sorter", &["drf"])).unwrap();
    std::fs::write(dir.join("b.json"), "{ not json").unwrap();
    std::fs::write(dir.join("c.json"), manifest_for("random_sorter", &["random"])).unwrap();
    let out = run_master(&["--modules_dir", dir.to_str().unwrap(), "--list-modules"]);
    assert_fails(&out, &["b.json", "malformed module manifest"]);
    std::fs::remove_file(dir.join("b.json")).unwrap();
    let out = run_master(&["--modules_dir", dir.to_str().unwrap(), "--list-modules"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("drf ") && listing.contains("random "), "{listing}");
}

#[test]
fn file_paths_are_relative_to_the_manifest_folder() {
    let dir = temp_dir("relative");
    std::fs::copy(library("random_sorter"), dir.join("librandom_sorter.so")).unwrap();
    std::fs::write(
        dir.join("m.json"),
        r#"{"libraries": [{"file": "librandom_sorter.so", "modules": [{"name": "random"}]}]}"#,
    )
    .unwrap();
    let out = run_master(&[
        "--modules",
        &format!("file://{}", dir.join("m.json").display()),
        "--list-modules",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&dir.join("librandom_sorter.so").display().to_string())
    );
}

#[test]
fn names_resolve_next_to_the_executable_and_list_every_shipped_sorter() {
    let out = run_master(&["--modules", "examples/modules.json", "--list-modules"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = String::from_utf8_lossy(&out.stdout);
    let header = listing.lines().next().unwrap();
    for column in ["NAME", "KIND", "API", "AUTHOR", "LIBRARY", "DESCRIPTION"] {
        assert!(header.contains(column), "{header}");
    }
    for (name, file) in [
        ("drf", "libdrf_sorter"),
        ("random", "librandom_sorter"),
        ("weighted_priority", "libweighted_priority_sorter"),
        ("drf_decay", "libdrf_decay_sorter"),
    ] {
        let line = listing
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{listing}"));
        let api = allocator_api::abi::API_VERSION;
        assert!(line.contains("sorter") && line.contains(api) && line.contains(file), "{line}");
        assert!(line.contains(&target_dir().display().to_string()), "{line}");
    }
}

#[test]
fn every_sorter_combination_runs_a_scenario() {
    for role in ["drf", "weighted_priority", "random", "drf_decay"] {
        for framework in ["drf", "weighted_priority", "random", "drf_decay"] {
            let out = run_master(&[
                "--modules",
                "examples/modules.json",
                "--role_sorter",
                role,
                "--framework_sorter",
                framework,
                "--scenario",
                "examples/scenarios/drf_paper.json",
                "--output",
                "/dev/null",
            ]);
            assert!(
                out.status.code().is_some_and(|c| c <= 1),
                "{role}/{framework}: {}",
                stderr(&out)
            );
            let summary = String::from_utf8_lossy(&out.stdout);
            assert!(
                summary.contains(&format!("role sorter {role}, framework sorter {framework}")),
                "the summary names the sorters in use: {summary}"
            );
        }
    }
}
