//! A module built as a separate cdylib is loaded through the manifest and called through the ABI.

use allocator_api::{
    AgentCapabilities, AgentId, AgentInfo, AllocatorOptions, ClientId, FrameworkCapabilities,
    FrameworkId, FrameworkInfo, FrameworkOptions, OfferBatch, RVec, Resources, SorterConfig,
};
use allocator_host::ModuleRegistry;
use allocator_host::manifest;
use workspace_tests::manifest_for;

fn registry_with(library: &str, modules: &[&str]) -> ModuleRegistry {
    let mut registry = ModuleRegistry::new();
    let text = manifest_for(library, modules);
    let (m, source) = manifest::from_flag(&text).unwrap();
    registry.load_manifest(&m, &source).unwrap_or_else(|e| panic!("{e}"));
    registry
}

#[test]
fn minimal_module_sorter_is_called_through_the_abi() {
    let registry = registry_with("minimal_module", &["fifo"]);
    let mut sorter =
        registry.create_sorter("fifo", "--role_sorter", &SorterConfig::default()).unwrap();
    for (id, path) in [(7, "b"), (3, "a"), (5, "c")] {
        sorter.add(ClientId(id), path).unwrap();
    }
    sorter.activate(ClientId(3)).unwrap();
    sorter.activate(ClientId(7)).unwrap();
    let mut out = RVec::new();
    sorter.sort(&mut out).unwrap();
    assert_eq!(out.as_slice(), &[ClientId(7), ClientId(3)]);
    assert_eq!(sorter.count(), 3);
    assert!(sorter.contains(ClientId(5)));
}

#[test]
fn minimal_module_allocator_offers_through_the_abi() {
    let registry = registry_with("minimal_module", &["first_fit"]);
    let mut allocator =
        registry.create_allocator_module("first_fit", &AllocatorOptions::default()).unwrap();
    let info = FrameworkInfo {
        id: FrameworkId(1),
        name: "f1".into(),
        roles: vec!["role1".into()].into(),
        capabilities: FrameworkCapabilities::MULTI_ROLE,
    };
    allocator.add_framework(&info, &[], true, &FrameworkOptions::default()).unwrap();
    let agent = AgentInfo {
        id: AgentId(0),
        name: "a1".into(),
        hostname: "a1".into(),
        attributes: RVec::new(),
        capabilities: AgentCapabilities::all(),
    };
    let total: Resources = "cpus:2;mem:1024".parse().unwrap();
    allocator.add_agent(&agent, None, &total, &[]).unwrap();
    let mut batch = OfferBatch::default();
    allocator.allocate(&[AgentId(0)], false, &mut batch).unwrap();
    assert_eq!(batch.offers.len(), 1);
    assert_eq!(batch.offers[0].framework, FrameworkId(1));
    assert_eq!(batch.offers[0].role.as_str(), "role1");
    assert_eq!(batch.offers[0].resources, total);
}

#[test]
fn module_list_reports_metadata() {
    let registry = registry_with("minimal_module", &["fifo", "first_fit"]);
    let names: Vec<(&str, &str, &str)> =
        registry.modules().map(|m| (m.name.as_str(), m.kind.name(), m.author.as_str())).collect();
    assert_eq!(names, [("fifo", "sorter", "Example"), ("first_fit", "allocator", "Example")]);
    assert!(registry.modules().all(|m| m.api_version == allocator_api::abi::API_VERSION));
}

#[test]
fn two_libraries_load_side_by_side() {
    // abi_stable's `load_from_file` would return the first library twice (its issue #92).
    let mut registry = registry_with("minimal_module", &["fifo"]);
    let (m, source) = manifest::from_flag(&manifest_for("drf_sorter", &["drf"])).unwrap();
    registry.load_manifest(&m, &source).unwrap();
    let fifo = registry.module("fifo").unwrap();
    let drf = registry.module("drf").unwrap();
    assert_ne!(fifo.library, drf.library);
    assert_eq!(drf.description, "Dominant Resource Fairness, as Mesos's DRFSorter");
}

#[test]
fn the_authoring_guide_module_sketch_is_the_tested_fixture() {
    let root = workspace_tests::workspace_root();
    let readme = std::fs::read_to_string(root.join("docs/authoring.md")).unwrap();
    let fixture =
        std::fs::read_to_string(root.join("tests/fixtures/minimal_module/src/lib.rs")).unwrap();
    let start =
        readme.find("```rust\nuse allocator_api::*;").expect("docs/authoring.md has the sketch")
            + "```rust\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let code = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.trim_start().starts_with("//") && !l.trim().is_empty())
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(code(&readme[start..end]), code(&fixture));
    assert!(code(&fixture).len() < 30, "the example must stay under 30 lines of code");
}
