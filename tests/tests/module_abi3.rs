//! Module ABI 3 (issue 45): requests, the sorters' clock and explanations cross the boundary;
//! ABI 2 and ABI 1 libraries still load and are never asked the calls their ABI lacks.

use allocator_api::{FrameworkId, Request, Resources, SorterConfig};
use allocator_host::ModuleRegistry;
use allocator_host::manifest;
use workspace_tests::{manifest_for, run_master};

fn registry_with(library: &str, modules: &[&str]) -> ModuleRegistry {
    let mut registry = ModuleRegistry::new();
    let (m, source) = manifest::from_flag(&manifest_for(library, modules)).unwrap();
    registry.load_manifest(&m, &source).unwrap_or_else(|e| panic!("{e}"));
    registry
}

#[test]
fn an_abi2_allocator_gets_requests_flattened_into_request_resources() {
    let registry = registry_with("abi2_module", &["echo_requests"]);
    let mut a = registry
        .create_allocator_module("echo_requests", &allocator_api::AllocatorOptions::default())
        .unwrap();
    let one: Resources = "cpus:1".parse().unwrap();
    let two: Resources = "cpus:2".parse().unwrap();
    let requests = [Request::gang("r", 3, one), Request::task("r", two)];
    // The fixture answers with what reached it, as an error; `request` would panic in it.
    let e = a.request(FrameworkId(4), &requests).unwrap_err();
    assert_eq!(
        e.message.as_str(),
        "framework#4 stated 4 tasks: cpus:1 | cpus:1 | cpus:1 | cpus:2",
        "one Resources per task, in order"
    );
    let mut out = allocator_api::RVec::new();
    a.explain(&allocator_api::ExplainSubject::role("r"), &mut out).unwrap();
    assert!(out.is_empty(), "the default: ABI 2 cannot carry explain");
}

#[test]
fn an_abi2_sorter_module_drives_the_built_in_allocator_without_hearing_the_time() {
    let registry = registry_with("abi2_module", &["tripwire2"]);
    let mut sorter =
        registry.create_sorter("tripwire2", "--role_sorter", &SorterConfig::default()).unwrap();
    sorter.set_time(5.0).unwrap(); // the plain trait's default: never reaches the module
    let m = manifest_for("abi2_module", &["tripwire2"]);
    let out = run_master(&[
        "--modules",
        &m,
        "--role_sorter",
        "tripwire2",
        "--framework_sorter",
        "tripwire2",
        "--on_module_failure",
        "stop",
        "--scenario",
        "tests/scenarios/hostile/two_roles.json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn an_abi1_sorter_module_never_hears_the_time_either() {
    let m = manifest_for("abi1_module", &["tripwire"]);
    let out = run_master(&[
        "--modules",
        &m,
        "--role_sorter",
        "tripwire",
        "--on_module_failure",
        "stop",
        "--scenario",
        "tests/scenarios/hostile/two_roles.json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn an_abi3_placement_module_gets_the_whole_request_across_the_boundary() {
    let registry = registry_with("bestfit_placement", &["BestFit"]);
    let mut a = registry
        .create_allocator_module("BestFit", &allocator_api::AllocatorOptions::default())
        .unwrap();
    let info = allocator_api::FrameworkInfo {
        id: FrameworkId(0),
        name: "f".into(),
        roles: vec!["r".into()].into(),
        capabilities: allocator_api::FrameworkCapabilities::MULTI_ROLE,
    };
    a.add_framework(&info, &[], true, &allocator_api::FrameworkOptions::default()).unwrap();
    let e = a.request(FrameworkId(0), &[Request::task("other", "cpus:1".parse().unwrap())]);
    let e = e.unwrap_err();
    assert!(e.message.contains("role 'other'"), "the role crossed: {e}");
    let mut out = allocator_api::RVec::new();
    a.request(FrameworkId(0), &[Request::gang("r", 2, "cpus:1;mem:1".parse().unwrap())]).unwrap();
    a.explain(&allocator_api::ExplainSubject::framework(FrameworkId(0)), &mut out).unwrap();
    assert_eq!(out.len(), 1, "the gang waits (no agents) and the module says so");
    assert_eq!(out[0].code.as_str(), "gang_waiting");
}
