//! The master core's commands and events, one behaviour per test.

use std::sync::Arc;

use crate::registry::ModuleRegistry;
use allocator_api::{Allocation, Resources};

use super::{
    Applied, ApplyError, Command, Entry, Event, FailurePolicy, Master, Origin, Setup, TaskEnd,
};

fn setup() -> Setup {
    Setup { on_module_failure: FailurePolicy::Stop, ..Setup::default() }
}

fn res(text: &str) -> Resources {
    text.parse().expect("valid resources")
}

fn agent(name: &str, resources: &str) -> Command {
    Command::add_agent(name, res(resources))
}

fn framework(name: &str, role: &str) -> Command {
    Command::add_framework(name, &[role])
}

fn answer(offer: &Arc<Allocation>, tasks: &[(&str, Option<f64>)], refuse_seconds: f64) -> Command {
    Command::AnswerOffer {
        offer: offer.clone(),
        tasks: tasks.iter().map(|(r, d)| (res(r), *d)).collect(),
        refuse_seconds,
    }
}

fn launched(applied: Applied) -> Vec<u64> {
    match applied {
        Applied::Launched(ids) => ids,
        other => panic!("expected launched tasks, got {other:?}"),
    }
}

/// A master with one agent `a1` (`cpus:4;mem:1024`) and one framework `f1` in role `r`, and
/// the offer it got; with `journal`, the master keeps its journal from the start.
fn offered_with(registry: &ModuleRegistry, journal: bool) -> (Master<'_>, Arc<Allocation>) {
    let mut m = Master::new(registry, setup()).expect("built-in allocator");
    if journal {
        m.keep_journal(100);
    }
    m.apply(&agent("a1", "cpus:4;mem:1024")).expect("agent added");
    m.apply(&framework("f1", "r")).expect("framework added");
    let offer = m
        .take_events()
        .into_iter()
        .find_map(|e| if let Event::Offer(o) = e { Some(o) } else { None })
        .expect("an offer");
    (m, offer)
}

fn offered(registry: &ModuleRegistry) -> (Master<'_>, Arc<Allocation>) {
    offered_with(registry, false)
}

/// The commands of the journal, without the clock.
fn journaled(m: &Master<'_>) -> Vec<Command> {
    m.journal_entries()
        .expect("kept")
        .into_iter()
        .filter_map(|e| if let Entry::Command(c) = e { Some(*c) } else { None })
        .collect()
}

#[test]
fn an_active_framework_added_gets_an_offer_recorded_in_the_ledger() {
    let registry = ModuleRegistry::new();
    let (m, offer) = offered(&registry);
    assert_eq!(offer.resources, res("cpus:4;mem:1024"));
    assert_eq!(m.ledger(), vec![(*offer).clone()]);
}

#[test]
fn a_task_that_does_not_fit_its_offer_is_refused_and_changes_nothing() {
    let registry = ModuleRegistry::new();
    let (mut m, offer) = offered(&registry);
    let err = m.apply(&answer(&offer, &[("cpus:5", None)], 5.0)).unwrap_err();
    assert!(matches!(&err, ApplyError::Invalid(m) if m.contains("do not fit")), "{err}");
    assert_eq!(m.ledger(), vec![(*offer).clone()]);
    assert!(m.take_events().is_empty());
}

#[test]
fn declining_the_rest_of_an_offer_keeps_only_what_tasks_use() {
    let registry = ModuleRegistry::new();
    let (mut m, offer) = offered(&registry);
    let ids = launched(m.apply(&answer(&offer, &[("cpus:1;mem:128", None)], 5.0)).unwrap());
    assert_eq!(ids.len(), 1);
    let held: Vec<Resources> = m.ledger().into_iter().map(|a| a.resources).collect();
    assert_eq!(held, vec![res("cpus:1;mem:128")]);
    assert!(matches!(m.take_events()[..], [Event::TaskLaunched { .. }]));
}

#[test]
fn a_killed_task_gives_its_resources_back() {
    let registry = ModuleRegistry::new();
    let (mut m, offer) = offered(&registry);
    let ids = launched(m.apply(&answer(&offer, &[("cpus:4;mem:1024", None)], 5.0)).unwrap());
    m.take_events();
    let kill = Command::KillTask { framework: offer.framework, task: ids[0] };
    assert_eq!(m.apply(&kill).unwrap(), Applied::Killed(true));
    assert!(m.ledger().is_empty());
    assert_eq!(m.tasks_of(offer.framework).count(), 0);
    let ended = m.take_events();
    assert!(matches!(ended[..], [Event::TaskEnded { end: TaskEnd::Killed, .. }]));
    assert_eq!(m.apply(&kill).unwrap(), Applied::Killed(false), "a second kill finds no task");
}

#[test]
fn removing_an_agent_ends_its_tasks_and_says_so() {
    let registry = ModuleRegistry::new();
    let (mut m, offer) = offered(&registry);
    m.apply(&answer(&offer, &[("cpus:1", None)], 5.0)).unwrap();
    m.take_events();
    m.apply(&Command::RemoveAgent("a1".into())).unwrap();
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
    m.apply(&answer(&offer, &[("cpus:4;mem:1024", Some(0.5))], 5.0)).unwrap();
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

#[test]
fn every_command_a_client_applies_is_journaled_in_order() {
    let registry = ModuleRegistry::new();
    let (mut m, _) = offered_with(&registry, true);
    m.apply(&Command::Pause).unwrap();
    assert_eq!(
        journaled(&m),
        vec![agent("a1", "cpus:4;mem:1024"), framework("f1", "r"), Command::Pause]
    );
}

#[test]
fn a_refused_command_is_not_journaled() {
    let registry = ModuleRegistry::new();
    let (mut m, _) = offered_with(&registry, true);
    assert!(m.apply(&Command::RemoveAgent("nowhere".into())).is_err());
    assert_eq!(journaled(&m).len(), 2);
}

#[test]
fn an_answer_is_journaled_as_the_recover_of_what_it_declined_with_its_filter() {
    let registry = ModuleRegistry::new();
    let (mut m, offer) = offered_with(&registry, true);
    m.apply(&answer(&offer, &[("cpus:1;mem:128", None)], 5.0)).unwrap();
    assert_eq!(
        journaled(&m).last(),
        Some(&Command::RecoverResources {
            framework: "f1".into(),
            agent: "a1".into(),
            resources: Some(res("cpus:3;mem:896")),
            role: Some("r".into()),
            refuse_seconds: Some(5.0),
        })
    );
}

#[test]
fn an_answer_that_launches_on_the_whole_offer_journals_nothing() {
    let registry = ModuleRegistry::new();
    let (mut m, offer) = offered_with(&registry, true);
    m.apply(&answer(&offer, &[("cpus:4;mem:1024", None)], 5.0)).unwrap();
    assert_eq!(journaled(&m).len(), 2, "what is launched stays allocated, in a replay too");
}

#[test]
fn a_derived_answer_is_not_journaled_nor_its_tasks_end() {
    let registry = ModuleRegistry::new();
    let (mut m, offer) = offered_with(&registry, true);
    m.apply_from(Origin::Derived, &answer(&offer, &[("cpus:1", Some(0.5))], 5.0)).unwrap();
    m.advance(1.0, &mut |m: &mut Master<'_>| {
        m.take_events();
        Ok(())
    })
    .unwrap();
    assert_eq!(journaled(&m).len(), 2, "neither the answer nor its task's end");
}

#[test]
fn a_killed_task_is_journaled_as_the_recover_of_its_resources_without_a_filter() {
    let registry = ModuleRegistry::new();
    let (mut m, offer) = offered_with(&registry, true);
    let ids = launched(m.apply(&answer(&offer, &[("cpus:4;mem:1024", None)], 5.0)).unwrap());
    m.apply(&Command::KillTask { framework: offer.framework, task: ids[0] }).unwrap();
    assert_eq!(
        journaled(&m).last(),
        Some(&Command::RecoverResources {
            framework: "f1".into(),
            agent: "a1".into(),
            resources: Some(res("cpus:4;mem:1024")),
            role: Some("r".into()),
            refuse_seconds: None,
        })
    );
}

#[test]
fn a_task_that_finishes_at_a_periodic_run_is_journaled_just_before_it() {
    let registry = ModuleRegistry::new();
    let (mut m, offer) = offered_with(&registry, true);
    m.apply(&answer(&offer, &[("cpus:4;mem:1024", Some(1.0))], 5.0)).unwrap();
    m.advance(1.0, &mut |m: &mut Master<'_>| {
        m.take_events();
        Ok(())
    })
    .unwrap();
    let entries = m.journal_entries().unwrap();
    let last = entries.iter().rposition(|e| matches!(e, Entry::Command(_))).unwrap();
    let at: f64 =
        entries[..last].iter().map(|e| if let Entry::Advance(s) = e { *s } else { 0.0 }).sum();
    assert!((at - (1.0 - super::journal::BEFORE_RUN)).abs() < 1e-12, "journaled at {at}");
    assert!(matches!(
        &entries[last],
        Entry::Command(c) if matches!(**c, Command::RecoverResources { refuse_seconds: None, .. })
    ));
}

#[test]
fn a_noted_command_is_journaled_as_its_note_and_a_refused_one_not_at_all() {
    let registry = ModuleRegistry::new();
    let mut m = Master::new(&registry, Setup::default()).unwrap();
    m.keep_journal(100);
    let note = super::Note::new("the client's own record");
    m.apply_noted(&Command::add_framework("f1", &["r"]), note.clone()).unwrap();
    let again = m.apply_noted(&Command::add_framework("f1", &["r"]), super::Note::new(1u8));
    assert!(matches!(again, Err(ApplyError::Invalid(_))), "{again:?}");
    assert_eq!(m.journal_entries().unwrap(), vec![Entry::Note(note)]);
}

#[test]
fn a_command_naming_a_role_mesos_refuses_is_refused_and_changes_nothing() {
    let registry = ModuleRegistry::new();
    let mut m = Master::new(&registry, setup()).expect("built-in allocator");
    for bad in ["a/../b", "-x", "a b", "a/*"] {
        let err = m.apply(&Command::UpdateWeights(vec![(bad.into(), 2.0)])).unwrap_err();
        assert!(
            matches!(&err, ApplyError::Invalid(m) if m.starts_with("invalid role")),
            "{bad}: {err}"
        );
        assert!(m.apply(&framework("f", bad)).is_err(), "{bad}");
    }
    assert_eq!(m.framework_ids().count(), 0);
}

#[test]
fn a_framework_without_roles_is_refused_even_with_resources_in_use() {
    let registry = ModuleRegistry::new();
    let mut m = Master::new(&registry, setup()).expect("built-in allocator");
    m.apply(&agent("a1", "cpus:4;mem:1024")).expect("agent added");
    let mut add = Command::add_framework("f1", &[]);
    if let Command::AddFramework { used, .. } = &mut add {
        used.push(("a1".to_owned(), res("cpus:1")));
    }
    let err = m.apply(&add).unwrap_err();
    assert_eq!(err, ApplyError::Invalid("a framework needs at least one role".into()));
    assert!(m.framework_id("f1").is_err());
    assert!(m.ledger().is_empty());
}
