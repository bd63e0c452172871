//! The embedding actor names frameworks and agents when it logs a module's refusal: module
//! messages name handles (`framework#0`), the actor knows the names it was given. A test binary
//! of its own, because it installs the process's logger.

use std::sync::Mutex;
use std::time::Duration;

use allocator_api::{
    AgentCapabilities, AgentId, AgentInfo, Allocation, AllocatorOptions, FrameworkCapabilities,
    FrameworkId, FrameworkInfo, FrameworkOptions, RString, RVec, Sorter, SorterConfig,
};
use allocator_host::actor::AllocatorActor;
use allocator_host::hierarchical::HierarchicalAllocator;

static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        LINES.lock().unwrap().push(record.args().to_string());
    }
    fn flush(&self) {}
}

#[test]
fn a_refusal_logged_by_the_actor_names_the_framework_and_agent() {
    log::set_logger(&Capture).unwrap();
    log::set_max_level(log::LevelFilter::Warn);
    let drf = || -> allocator_host::hierarchical::SorterFactory {
        Box::new(|c: &SorterConfig| Ok(Box::new(drf_sorter::create(c)) as Box<dyn Sorter>))
    };
    let builtin = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
    let (actor, _offers) = AllocatorActor::spawn(Box::new(builtin), Duration::from_secs(3600));
    let h = actor.handle();
    let agent = AgentInfo {
        id: AgentId(0),
        name: "a1".into(),
        hostname: "a1".into(),
        attributes: RVec::new(),
        capabilities: AgentCapabilities::all(),
    };
    h.add_agent(agent, None, "cpus:1;mem:64".parse().unwrap(), vec![]);
    let framework = FrameworkInfo {
        id: FrameworkId(0),
        name: "f1".into(),
        roles: vec![RString::from("r1")].into(),
        capabilities: FrameworkCapabilities::MULTI_ROLE,
    };
    // It claims more than the agent has free: the built-in refuses, naming handles.
    let used = Allocation::new(FrameworkId(0), AgentId(0), "r1", "cpus:2".parse().unwrap());
    h.add_framework(framework, vec![used], true, FrameworkOptions::default());
    h.query(|_| ()).expect("the actor answers after the calls queued before");
    actor.shutdown();
    let lines = LINES.lock().unwrap().clone();
    let refusal = lines
        .iter()
        .find(|l| l.starts_with("allocator refused add_framework"))
        .unwrap_or_else(|| panic!("no refusal logged: {lines:?}"));
    assert!(refusal.contains("framework 'f1' (#0) uses cpus:2 on agent 'a1' (#0)"), "{refusal}");
}
