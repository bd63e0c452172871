//! The embedding actor: a master on its own thread on the wall clock. Commands from many
//! threads keep each caller's order, offers come out as events and are answered with
//! commands, periodic runs follow the wall clock, shutdown processes what was queued, and a
//! refused command or a panicking query leaves the master running. No sleeps: every wait is on
//! a channel with a bound.

use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use allocator_api::{Allocation, Resources};
use allocator_host::ModuleRegistry;
use allocator_host::actor::{ActorError, ActorOptions, MasterActor};
use allocator_host::master::{Applied, ApplyError, Command, Event, Setup};

/// Long enough that a healthy test never waits this long for an event.
const PATIENCE: Duration = Duration::from_secs(20);

fn res(text: &str) -> Resources {
    text.parse().expect("valid resources")
}

fn agent(name: &str, resources: &str) -> Command {
    Command::add_agent(name, res(resources))
}

fn framework(name: &str, role: &str, active: bool) -> Command {
    let mut command = Command::add_framework(name, &[role]);
    if let Command::AddFramework { active: a, .. } = &mut command {
        *a = active;
    }
    command
}

/// The built-in allocator with an interval of `interval` seconds.
fn spawn(interval: f64) -> (MasterActor, Receiver<Event>) {
    let mut setup = Setup::default();
    setup.options.allocation_interval = interval;
    MasterActor::spawn(ModuleRegistry::new(), setup, ActorOptions::default())
        .expect("the built-in master starts")
}

/// The next offer among the events, skipping the rest.
fn next_offer(events: &Receiver<Event>) -> Arc<Allocation> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match events.recv_timeout(left).expect("an offer before the deadline") {
            Event::Offer(offer) => return offer,
            _ => continue,
        }
    }
}

#[test]
fn commands_from_many_threads_keep_each_callers_order_and_none_is_lost() {
    let (actor, _events) = spawn(3600.0);
    let senders: Vec<_> = (0..4)
        .map(|t| {
            let h = actor.handle();
            std::thread::spawn(move || {
                for i in 0..200 {
                    h.submit(framework(&format!("f{t}-{i:03}"), "r", false)).unwrap();
                }
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    // Handles are added in the order the master applied their commands.
    let applied: Vec<String> = actor
        .handle()
        .query(|m| m.framework_ids().map(|id| m.framework_name(id).to_owned()).collect())
        .unwrap();
    assert_eq!(applied.len(), 800);
    for t in 0..4 {
        let mine: Vec<&String> =
            applied.iter().filter(|n| n.starts_with(&format!("f{t}-"))).collect();
        let mut sorted = mine.clone();
        sorted.sort();
        assert_eq!(mine, sorted, "thread {t}'s commands were applied out of order");
    }
    actor.shutdown().unwrap();
}

#[test]
fn an_offer_comes_out_as_an_event_and_its_answer_launches_a_task() {
    let (actor, events) = spawn(3600.0);
    let h = actor.handle();
    assert!(matches!(h.apply(framework("f1", "web", true)), Ok(Applied::Framework(_))));
    assert!(matches!(h.apply(agent("a1", "cpus:4;mem:1024")), Ok(Applied::Agent(_))));
    let offer = next_offer(&events);
    assert_eq!(offer.role.as_str(), "web");
    assert_eq!(offer.resources, res("cpus:4;mem:1024"));
    let answer = Command::AnswerOffer {
        offer: offer.clone(),
        tasks: vec![(res("cpus:1;mem:256"), None)],
        refuse_seconds: 5.0,
    };
    let Ok(Applied::Launched(tasks)) = h.apply(answer) else { panic!("the task launches") };
    assert_eq!(tasks.len(), 1);
    let running = h.query(|m| m.running_tasks("f1")).unwrap();
    assert_eq!(running, Some(1));
    actor.shutdown().unwrap();
}

#[test]
fn periodic_runs_follow_the_wall_clock() {
    let (actor, events) = spawn(0.02);
    let started = Instant::now();
    let mut periodic = 0;
    while periodic < 5 {
        let left = PATIENCE.saturating_sub(started.elapsed());
        if let Event::AllocationRun { periodic: true, .. } =
            events.recv_timeout(left).expect("periodic runs before the deadline")
        {
            periodic += 1;
        }
    }
    let now = actor.handle().query(|m| m.now()).unwrap();
    assert!(now >= 0.1, "five runs at 0.02 s take at least 0.1 s of virtual time, not {now}");
    actor.shutdown().unwrap();
}

#[test]
fn shutdown_processes_every_command_queued_before_it() {
    let (actor, events) = spawn(3600.0);
    let h = actor.handle();
    h.submit(framework("f1", "r", true)).unwrap();
    for i in 0..300 {
        h.submit(agent(&format!("a{i:03}"), "cpus:1")).unwrap();
    }
    actor.shutdown().unwrap();
    let offered: Vec<Arc<Allocation>> = events
        .try_iter()
        .filter_map(|e| match e {
            Event::Offer(o) => Some(o),
            _ => None,
        })
        .collect();
    assert_eq!(offered.len(), 300, "every agent added before the shutdown was offered");
    assert_eq!(h.apply(agent("late", "cpus:1")), Err(ActorError::Stopped));
}

#[test]
fn a_refused_command_is_an_error_that_names_what_and_changes_nothing() {
    let (actor, _events) = spawn(3600.0);
    let h = actor.handle();
    let Err(ActorError::Refused(ApplyError::Invalid(message))) =
        h.apply(Command::RemoveAgent("ghost".into()))
    else {
        panic!("removing an unknown agent is refused as invalid")
    };
    assert!(message.contains("ghost"), "{message}");
    h.submit(Command::RemoveAgent("ghost".into())).unwrap();
    let metrics = h.metrics().unwrap();
    assert_eq!(metrics["master/commands_refused"], serde_json::json!(2));
    assert_eq!(metrics["master/commands_applied"], serde_json::json!(0));
    assert_eq!(h.query(|m| m.all_agents().len()).unwrap(), 0);
    actor.shutdown().unwrap();
}

#[test]
fn a_panicking_query_leaves_the_master_running() {
    let (actor, _events) = spawn(3600.0);
    let h = actor.handle();
    let panicked = h.query(|_| -> u32 { panic!("the embedder's bug") });
    assert_eq!(panicked, Err(ActorError::Stopped));
    assert!(matches!(h.apply(agent("a1", "cpus:1")), Ok(Applied::Agent(_))));
    actor.shutdown().unwrap();
}

#[test]
fn metrics_report_role_shares_from_the_masters_ledger() {
    let (actor, events) = spawn(3600.0);
    let h = actor.handle();
    h.apply(framework("f1", "web", true)).unwrap();
    h.apply(agent("a1", "cpus:4;mem:1024")).unwrap();
    h.apply(agent("a2", "cpus:4;mem:1024")).unwrap();
    next_offer(&events);
    next_offer(&events);
    let m = h.metrics().unwrap();
    assert_eq!(m["allocator/mesos/roles/web/shares/dominant"], serde_json::json!(1.0));
    assert_eq!(m["allocator/mesos/resources/cpus/total"], serde_json::json!(8.0));
    let runs = h.query(|m| m.runs()).unwrap();
    assert_eq!(m["allocator/mesos/allocation_runs"], serde_json::json!(runs));
    assert_eq!(m["allocator/mesos/allocation_run_ms/count"], serde_json::json!(runs));
    actor.shutdown().unwrap();
}

#[test]
fn a_master_that_cannot_be_created_is_an_error_from_spawn() {
    let setup = Setup::new("no-such-allocator", "drf", "drf");
    let Err(message) = MasterActor::spawn(ModuleRegistry::new(), setup, ActorOptions::default())
    else {
        panic!("an unknown allocator is refused")
    };
    assert!(message.contains("no-such-allocator"), "{message}");
}
