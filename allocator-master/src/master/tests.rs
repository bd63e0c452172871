//! The master core's commands and events, one behaviour per test.

use allocator_api::{AllocatorOptions, FrameworkCapabilities, Resources};
use allocator_host::registry::ModuleRegistry;

use super::agents::NewAgent;
use super::frameworks::NewFramework;
use super::{Event, FailurePolicy, Master, Setup, TaskEnd};

fn setup() -> Setup {
    Setup {
        allocator: "hierarchical".into(),
        role_sorter: "drf".into(),
        framework_sorter: "drf".into(),
        options: AllocatorOptions::default(),
        on_module_failure: FailurePolicy::Stop,
        call_budget_ms: None,
        call_timeout_ms: None,
    }
}

fn res(text: &str) -> Resources {
    text.parse().expect("valid resources")
}

fn agent<'a>(name: &'a str, resources: &'a Resources) -> NewAgent<'a> {
    NewAgent {
        name,
        resources,
        hostname: None,
        capabilities: None,
        attributes: &[],
        used: &[],
        unavailability: None,
    }
}

fn framework<'a>(name: &'a str, roles: &'a [String]) -> NewFramework<'a> {
    NewFramework {
        name,
        roles,
        capabilities: FrameworkCapabilities::MULTI_ROLE,
        active: true,
        used: &[],
        suppressed_roles: &[],
        min_allocatable: &[],
    }
}

/// A master with one agent `a1` (`cpus:4;mem:1024`) and one framework `f1` in role `r`, and
/// the offer it got.
fn offered(registry: &ModuleRegistry) -> (Master<'_>, allocator_api::Allocation) {
    let mut m = Master::new(registry, setup()).expect("built-in allocator");
    let total = res("cpus:4;mem:1024");
    m.add_agent(agent("a1", &total)).expect("agent added");
    m.add_framework(framework("f1", &["r".to_owned()])).expect("framework added");
    let offer = m
        .take_events()
        .into_iter()
        .find_map(|e| if let Event::Offer(o) = e { Some(o) } else { None })
        .expect("an offer");
    (m, offer)
}

#[test]
fn an_active_framework_added_gets_an_offer_recorded_in_the_ledger() {
    let registry = ModuleRegistry::new();
    let (m, offer) = offered(&registry);
    assert_eq!(offer.resources, res("cpus:4;mem:1024"));
    assert_eq!(m.ledger(), vec![offer]);
}

#[test]
fn a_task_that_does_not_fit_its_offer_is_refused_and_changes_nothing() {
    let registry = ModuleRegistry::new();
    let (mut m, offer) = offered(&registry);
    let err = m.answer_offer(&offer, &[(res("cpus:5"), None)], 5.0).unwrap_err();
    assert!(err.contains("do not fit"), "{err}");
    assert_eq!(m.ledger(), vec![offer]);
    assert!(m.take_events().is_empty());
}

#[test]
fn declining_the_rest_of_an_offer_keeps_only_what_tasks_use() {
    let registry = ModuleRegistry::new();
    let (mut m, offer) = offered(&registry);
    let ids = m.answer_offer(&offer, &[(res("cpus:1;mem:128"), None)], 5.0).unwrap();
    assert_eq!(ids.len(), 1);
    let held: Vec<Resources> = m.ledger().into_iter().map(|a| a.resources).collect();
    assert_eq!(held, vec![res("cpus:1;mem:128")]);
    assert!(matches!(m.take_events()[..], [Event::TaskLaunched { .. }]));
}

#[test]
fn a_killed_task_gives_its_resources_back() {
    let registry = ModuleRegistry::new();
    let (mut m, offer) = offered(&registry);
    let ids = m.answer_offer(&offer, &[(res("cpus:4;mem:1024"), None)], 5.0).unwrap();
    m.take_events();
    assert!(m.kill_task(offer.framework, ids[0]).unwrap());
    assert!(m.ledger().is_empty());
    assert_eq!(m.tasks_of(offer.framework).count(), 0);
    let ended = m.take_events();
    assert!(matches!(ended[..], [Event::TaskEnded { end: TaskEnd::Killed, .. }]));
    assert!(!m.kill_task(offer.framework, ids[0]).unwrap(), "a second kill finds no task");
}

#[test]
fn removing_an_agent_ends_its_tasks_and_says_so() {
    let registry = ModuleRegistry::new();
    let (mut m, offer) = offered(&registry);
    m.answer_offer(&offer, &[(res("cpus:1"), None)], 5.0).unwrap();
    m.take_events();
    m.remove_agent(offer.agent).unwrap();
    let events = m.take_events();
    assert!(matches!(
        events[..],
        [Event::TaskEnded { end: TaskEnd::AgentRemoved, .. }, Event::AgentRemoved(a)] if a == offer.agent
    ));
    assert!(m.ledger().is_empty());
}

#[test]
fn a_task_finishes_after_its_duration_and_the_clock_is_delivered_first() {
    let registry = ModuleRegistry::new();
    let (mut m, offer) = offered(&registry);
    m.answer_offer(&offer, &[(res("cpus:4;mem:1024"), Some(0.5))], 5.0).unwrap();
    m.take_events();
    let mut seen = Vec::new();
    m.advance(0.75, &mut |m: &mut Master<'_>| {
        seen.extend(m.take_events());
        Ok(())
    })
    .unwrap();
    assert!(matches!(seen[0], Event::Clock { from, to } if from == 0.0 && to == 0.5));
    assert!(matches!(seen[1], Event::TaskEnded { end: TaskEnd::Finished, .. }));
    assert!(m.ledger().is_empty());
    assert_eq!(m.now(), 0.75);
}
