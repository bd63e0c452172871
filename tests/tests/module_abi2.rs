//! Module ABI 2 (issue 21, item 3): sorter modules carry `sort_prefix` and `keep_scalars_only`
//! across the boundary; ABI 1 libraries still load and are never asked either; a library of an
//! unknown ABI is refused; the guard checks prefix answers as it checks sort answers.

use allocator_api::{AgentId, ClientId, ErrorKind, RVec, Resources, Sorter, SorterConfig};
use allocator_host::ModuleRegistry;
use allocator_host::isolation::{Isolation, IsolationSettings};
use allocator_host::manifest;
use workspace_tests::{manifest_for, master, run_master};

/// Runs the two-role scenario with `extra` arguments; returns the process output and the number
/// of offers in its event stream.
fn two_roles(tag: &str, extra: &[&str]) -> (std::process::Output, usize) {
    let dir = std::env::temp_dir().join(format!("module-abi2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{tag}.jsonl")).display().to_string();
    let mut args = vec!["--scenario", "tests/scenarios/hostile/two_roles.json", "--output", &file];
    args.extend_from_slice(extra);
    let out = run_master(&args);
    let stream = std::fs::read_to_string(&file).unwrap_or_default();
    let offers = stream.lines().filter(|l| l.contains(r#""event":"offer""#)).count();
    (out, offers)
}

fn registry_with(library: &str, modules: &[&str]) -> ModuleRegistry {
    let mut registry = ModuleRegistry::new();
    let (m, source) = manifest::from_flag(&manifest_for(library, modules)).unwrap();
    registry.load_manifest(&m, &source).unwrap_or_else(|e| panic!("{e}"));
    registry
}

/// A sorter with clients 0, 1 and 2 added (paths `a`, `b`, `c`) and active.
fn with_three_active_clients(sorter: &mut dyn Sorter) {
    for (c, path) in [(0, "a"), (1, "b"), (2, "c")] {
        sorter.add(ClientId(c), path).unwrap();
        sorter.activate(ClientId(c)).unwrap();
    }
}

#[test]
fn the_drf_module_keeps_scalars_only_when_asked_through_the_boundary() {
    let registry = registry_with("drf_sorter", &["drf"]);
    let mut drf = registry.create_sorter("drf", "--role_sorter", &SorterConfig::default()).unwrap();
    assert!(drf.keep_scalars_only(), "the module's answer crosses the boundary");
    let total: Resources = "cpus:4;mem:4096".parse().unwrap();
    drf.add_agent(AgentId(0), &total.scalar_quantities()).unwrap();
    drf.add(ClientId(0), "a").unwrap();
    drf.allocated(ClientId(0), AgentId(0), &"cpus:1".parse().unwrap()).unwrap();
    let mut held = Resources::default();
    let e = drf.allocation_on(ClientId(0), AgentId(0), &mut held).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UNSUPPORTED, "it keeps scalar totals only now: {e}");
}

#[test]
fn the_drf_module_answers_a_prefix_of_its_order_through_the_boundary() {
    let registry = registry_with("drf_sorter", &["drf"]);
    let mut drf = registry.create_sorter("drf", "--role_sorter", &SorterConfig::default()).unwrap();
    with_three_active_clients(&mut *drf);
    let mut whole = RVec::new();
    drf.sort(&mut whole).unwrap();
    assert_eq!(whole.len(), 3);
    let mut prefix = RVec::new();
    assert!(!drf.sort_prefix(1, &mut prefix).unwrap(), "two more follow");
    assert_eq!(prefix.as_slice(), &whole[..1]);
    assert!(drf.sort_prefix(8, &mut prefix).unwrap(), "the whole order");
    assert_eq!(prefix, whole);
}

#[test]
fn an_abi1_library_loads_sorts_and_its_sorters_keep_the_trait_defaults() {
    let registry = registry_with("abi1_module", &["tripwire"]);
    let mut sorter =
        registry.create_sorter("tripwire", "--role_sorter", &SorterConfig::default()).unwrap();
    // The fixture panics (and its instance is poisoned) if either call reaches it.
    assert!(!sorter.keep_scalars_only(), "the default: ABI 1 cannot carry the call");
    with_three_active_clients(&mut *sorter);
    let mut out = RVec::new();
    assert!(sorter.sort_prefix(1, &mut out).unwrap(), "the default: one whole sort");
    assert_eq!(out.as_slice(), &[ClientId(0), ClientId(1), ClientId(2)]);
    sorter.deactivate(ClientId(1)).unwrap();
    sorter.sort(&mut out).unwrap();
    assert_eq!(out.as_slice(), &[ClientId(0), ClientId(2)], "not poisoned");
}

#[test]
fn an_abi1_sorter_module_drives_the_built_in_allocator() {
    let m = manifest_for("abi1_module", &["tripwire"]);
    let (out, offers) = two_roles(
        "abi1",
        &[
            "--modules",
            &m,
            "--role_sorter",
            "tripwire",
            "--framework_sorter",
            "tripwire",
            "--on_module_failure",
            "stop",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(offers, 2, "each agent offered to the first role's framework: {err}");
}

#[test]
fn a_library_of_an_unknown_abi_major_is_refused_in_one_line_naming_the_versions() {
    let out = run_master(&["--modules", &manifest_for("future_abi", &["x"]), "--list-modules"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let line = err.lines().find(|l| l.contains("libfuture_abi")).unwrap_or_default();
    assert!(
        line.contains("was built against module interface ABI 4.0.0, but this host supports ABI 1.0.0, ABI 2.0.0 or ABI 3.0.0"),
        "{err}"
    );
}

#[test]
fn a_prefix_answer_that_overruns_its_length_is_a_module_fault_and_falls_back() {
    let library = workspace_tests::library("hostile_modules");
    let m = format!(
        r#"{{"libraries": [{{"file": {}, "modules": [{{"name": "hostile_sorter", "parameters": [{{"key": "mode", "value": "prefix_overrun"}}]}}]}}]}}"#,
        serde_json::to_string(&library.display().to_string()).unwrap()
    );
    let (out, offers) =
        two_roles("prefix_overrun", &["--modules", &m, "--framework_sorter", "hostile_sorter"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("a sorter module failed"), "{err}");
    assert!(
        err.contains("answered sort_prefix(1) with all 1 active clients and more to follow"),
        "{err}"
    );
    assert_eq!(offers, 2, "the built-in drf goes on offering: {err}");
}

#[test]
fn an_isolated_drf_module_answers_both_calls_over_the_wire() {
    let mut registry = ModuleRegistry::new();
    registry.set_isolation(IsolationSettings {
        default: Isolation::Process,
        memory_limit_mb: None,
        worker_exe: Some(master()),
        ..IsolationSettings::default()
    });
    let (m, source) = manifest::from_flag(&manifest_for("drf_sorter", &["drf"])).unwrap();
    registry.load_manifest(&m, &source).unwrap_or_else(|e| panic!("{e}"));
    let mut drf = registry.create_sorter("drf", "--role_sorter", &SorterConfig::default()).unwrap();
    assert!(drf.keep_scalars_only());
    with_three_active_clients(&mut *drf);
    let mut whole = RVec::new();
    drf.sort(&mut whole).unwrap();
    let mut prefix = RVec::new();
    assert!(!drf.sort_prefix(2, &mut prefix).unwrap());
    assert_eq!(prefix.as_slice(), &whole[..2]);
}
