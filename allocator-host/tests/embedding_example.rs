//! The embedding example from the README and the `actor` module docs, compiled and run.

#[test]
fn embedding_the_allocator_in_a_master() {
    use allocator_api::*;
    use allocator_host::{ModuleRegistry, actor::AllocatorActor};
    use std::time::Duration;

    let registry = ModuleRegistry::new(); // registry.load_flags(Some("modules.json"), None) for modules
    let role = registry.sorter_factory("drf", "--role_sorter").unwrap();
    let fws = registry.sorter_factory("drf", "--framework_sorter").unwrap();
    let options = AllocatorOptions::default();
    let allocator =
        allocator_host::hierarchical::HierarchicalAllocator::new(&options, role, fws).unwrap();
    // or: registry.create_allocator_module("binpack", &options)
    let (actor, offers) = AllocatorActor::spawn(Box::new(allocator), Duration::from_secs(1));
    let master = actor.handle(); // clone it into every thread that talks to the allocator
    let info = FrameworkInfo {
        id: FrameworkId(1),
        name: "f1".into(),
        roles: vec!["web".into()].into(),
        capabilities: FrameworkCapabilities::MULTI_ROLE,
    };
    master.add_framework(info, vec![], true, FrameworkOptions::default());
    let agent = AgentInfo {
        id: AgentId(7),
        name: "a7".into(),
        hostname: "a7".into(),
        attributes: RVec::new(),
        capabilities: AgentCapabilities::all(),
    };
    master.add_agent(agent, None, "cpus:4;mem:8192".parse().unwrap(), vec![]);
    let batch = offers.recv().unwrap(); // offers arrive as runs happen
    assert_eq!(batch.offers[0].agent, AgentId(7));
    master.recover_resources(
        FrameworkId(1),
        AgentId(7),
        "web".into(),
        batch.offers[0].resources.clone(),
        Some(5.0),
    );
    actor.shutdown(); // processes everything queued, joins the thread
}
