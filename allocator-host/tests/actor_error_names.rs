//! A refusal the embedding actor logs names the framework and agent: module messages name
//! handles (`framework#0`), the master knows the names it was given. A test binary of its
//! own, because it installs the process's logger.

use std::sync::Mutex;

use allocator_api::FrameworkCapabilities;
use allocator_host::ModuleRegistry;
use allocator_host::actor::{ActorOptions, MasterActor};
use allocator_host::master::{Command, Setup};

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
    let (actor, _events) =
        MasterActor::spawn(ModuleRegistry::new(), Setup::default(), ActorOptions::default())
            .unwrap();
    let h = actor.handle();
    h.submit(Command::AddAgent {
        agent: "a1".into(),
        resources: "cpus:1;mem:64".parse().unwrap(),
        hostname: None,
        capabilities: None,
        attributes: vec![],
        used: vec![],
        unavailability: None,
    })
    .unwrap();
    // It claims more than the agent has free: the built-in refuses, naming handles.
    h.submit(Command::AddFramework {
        framework: "f1".into(),
        roles: vec!["r1".into()],
        capabilities: FrameworkCapabilities::MULTI_ROLE,
        active: true,
        used: vec![("a1".into(), "cpus:2".parse().unwrap())],
        suppressed_roles: vec![],
        min_allocatable: vec![],
    })
    .unwrap();
    h.query(|_| ()).expect("the actor answers after the commands queued before");
    actor.shutdown().unwrap();
    let lines = LINES.lock().unwrap().clone();
    let refusal = lines
        .iter()
        .find(|l| l.starts_with("master refused add_framework"))
        .unwrap_or_else(|| panic!("no refusal logged: {lines:?}"));
    assert!(refusal.contains("'f1'") && refusal.contains("'a1'"), "{refusal}");
}
