//! The simulated workload belongs to the simulation: the driver plays frameworks added with
//! `tasks` and queues `submit_task`s itself, and the master's journal keeps both (as notes) in
//! their place, so that a plan's replay and a recording make the same offers.

use allocator_host::master::{ApplyError, Setup};
use allocator_host::registry::ModuleRegistry;
use allocator_sim::allocator_scenario::{AllocatorScenario, Op};
use allocator_sim::driver::Driver;
use allocator_sim::output::EventStream;
use allocator_sim::scenario::Document;
use serde_json::{Value, json};
use std::io::Write;
use std::sync::{Arc, Mutex};

fn scenario(events: Value) -> AllocatorScenario {
    let root = json!({ "events": events }).as_object().unwrap().clone();
    AllocatorScenario::parse(&Document { file: "<test>".into(), root }).unwrap()
}

/// A played framework with a fixed shape, a trace-driven one fed by `submit_task`, and time.
fn workload() -> AllocatorScenario {
    scenario(json!([
        {"op": "add_agent", "agent": "a1", "resources": "cpus:8;mem:8192"},
        {"op": "add_agent", "agent": "a2", "resources": "cpus:8;mem:8192"},
        {"op": "add_framework", "framework": "fixed", "roles": ["r1"],
         "tasks": {"resources": "cpus:1;mem:512", "count": 5, "duration": 2.5}},
        {"op": "add_framework", "framework": "trace", "roles": ["r2"], "tasks": {}},
        {"op": "advance", "seconds": 1.5},
        {"op": "submit_task", "framework": "trace", "resources": "cpus:3;mem:1024", "duration": 4},
        {"op": "advance", "seconds": 2},
        {"op": "submit_task", "framework": "trace", "resources": "cpus:2;mem:256"},
        {"op": "advance", "seconds": 3}
    ]))
}

/// Bytes written to a shared buffer.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The event stream of `ops` played from scratch.
fn stream_of(ops: &[Op]) -> String {
    let registry = ModuleRegistry::new();
    let mut driver = Driver::new(&registry, Setup::default(), "<replay>").unwrap();
    let buffer = Shared::default();
    let mut out = EventStream::writer(Box::new(buffer.clone()));
    for (index, op) in ops.iter().enumerate() {
        driver.apply(index, op, &mut out).unwrap();
    }
    out.flush();
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    assert!(text.contains("\"offer\""), "the workload gets offers:\n{text}");
    // Everything but how long each allocation run took.
    let lines = text.lines().map(|line| {
        let mut event: Value = serde_json::from_str(line).unwrap();
        event.as_object_mut().unwrap().remove("micros");
        event.to_string()
    });
    lines.collect::<Vec<_>>().join("\n")
}

#[test]
fn a_task_submitted_to_a_framework_that_is_not_simulated_is_refused() {
    let registry = ModuleRegistry::new();
    let mut driver = Driver::new(&registry, Setup::default(), "<test>").unwrap();
    let mut out = EventStream::sink();
    let add = scenario(json!([{"op": "add_framework", "framework": "f1", "roles": ["r"]}]));
    driver.apply(0, &add.events[0].1, &mut out).unwrap();
    let submit = scenario(json!([{"op": "submit_task", "framework": "f1", "resources": "cpus:1"}]));
    let Op::SubmitTask { framework, task } = &submit.events[0].1 else { panic!("a submit_task") };
    let err = driver.submit_task(framework, task, &mut out).unwrap_err();
    assert!(matches!(&err, ApplyError::Invalid(m) if m.contains("is not simulated")), "{err}");
}

#[test]
fn the_journal_keeps_played_frameworks_and_submitted_tasks_in_their_place() {
    let workload = workload();
    let registry = ModuleRegistry::new();
    let mut driver = Driver::new(&registry, Setup::default(), "<test>").unwrap();
    driver.keep_history();
    let mut out = EventStream::sink();
    for (index, (_, op)) in workload.events.iter().enumerate() {
        driver.apply(index, op, &mut out).unwrap();
    }
    let history = allocator_sim::plan::history(driver.master()).unwrap();
    let workload_ops: Vec<&Op> = workload
        .events
        .iter()
        .map(|(_, op)| op)
        .filter(|op| matches!(op, Op::Play { .. } | Op::SubmitTask { .. }))
        .collect();
    let replayed_ops: Vec<&Op> =
        history.iter().filter(|op| matches!(op, Op::Play { .. } | Op::SubmitTask { .. })).collect();
    assert_eq!(replayed_ops, workload_ops);
    let original: Vec<Op> = workload.events.iter().map(|(_, op)| op.clone()).collect();
    assert_eq!(stream_of(&history), stream_of(&original), "the replay makes the same offers");
}
