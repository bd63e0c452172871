//! The embedding actor (issue 12): FIFO per caller from many threads, batching of triggered
//! runs, real-time periodic runs, queries, and shutdown under load. No sleeps: every wait is
//! on a channel or a bounded receive.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use allocator_api::{
    AgentCapabilities, AgentId, AgentInfo, Allocation, Allocator, AllocatorOptions,
    FrameworkCapabilities, FrameworkId, FrameworkInfo, FrameworkOptions, OfferBatch, RString, RVec,
    Resources, Result, Sorter, SorterConfig, Unavailability,
};
use allocator_host::actor::AllocatorActor;
use allocator_host::hierarchical::HierarchicalAllocator;

const GATE: u32 = 999_999;

/// Records calls; blocks in `add_framework(GATE)` until the gate opens; offers every known
/// agent whole to the first framework in every run.
struct Recorder {
    log: Arc<Mutex<Vec<u32>>>,
    gate: Option<Receiver<()>>,
    agents: Vec<(AgentId, Resources)>,
    first: Option<FrameworkId>,
}

impl Allocator for Recorder {
    fn add_framework(
        &mut self,
        f: &FrameworkInfo,
        _: &[Allocation],
        _: bool,
        _: &FrameworkOptions,
    ) -> Result<()> {
        if f.id.0 == GATE {
            if let Some(g) = self.gate.take() {
                let _ = g.recv();
            }
            return Ok(());
        }
        self.first.get_or_insert(f.id);
        self.log.lock().unwrap().push(f.id.0);
        Ok(())
    }
    fn remove_framework(&mut self, _: FrameworkId) -> Result<()> {
        Ok(())
    }
    fn add_agent(
        &mut self,
        a: &AgentInfo,
        _: Option<&Unavailability>,
        total: &Resources,
        _: &[Allocation],
    ) -> Result<()> {
        self.agents.push((a.id, total.clone()));
        Ok(())
    }
    fn remove_agent(&mut self, _: AgentId) -> Result<()> {
        Ok(())
    }
    fn recover_resources(
        &mut self,
        _: FrameworkId,
        _: AgentId,
        _: &str,
        _: &Resources,
        _: Option<f64>,
    ) -> Result<()> {
        Ok(())
    }
    fn allocate(&mut self, agents: &[AgentId], _: bool, out: &mut OfferBatch) -> Result<()> {
        let Some(fw) = self.first else { return Ok(()) };
        for (id, total) in self.agents.iter().filter(|a| agents.contains(&a.0)) {
            out.offers.push(Allocation {
                framework: fw,
                agent: *id,
                role: "r".into(),
                resources: total.clone(),
            });
        }
        Ok(())
    }
}

fn recorder(gate: Option<Receiver<()>>) -> (Box<dyn Allocator>, Arc<Mutex<Vec<u32>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    (Box::new(Recorder { log: log.clone(), gate, agents: vec![], first: None }), log)
}

fn framework(id: u32) -> FrameworkInfo {
    FrameworkInfo {
        id: FrameworkId(id),
        name: format!("f{id}").as_str().into(),
        roles: vec![RString::from("r")].into(),
        capabilities: FrameworkCapabilities::MULTI_ROLE,
    }
}

fn agent(id: u32) -> AgentInfo {
    AgentInfo {
        id: AgentId(id),
        name: format!("a{id}").as_str().into(),
        hostname: format!("a{id}").as_str().into(),
        attributes: RVec::new(),
        capabilities: AgentCapabilities::all(),
    }
}

const HOUR: Duration = Duration::from_secs(3600);

/// From `threads` threads at once, each adds `per_thread` inactive frameworks with ids
/// `thread * 1000 + i`, in order; returns when every thread is done sending.
fn add_frameworks_concurrently(actor: &AllocatorActor, threads: u32, per_thread: u32) {
    let senders: Vec<_> = (0..threads)
        .map(|t| {
            let h = actor.handle();
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    h.add_framework(
                        framework(t * 1000 + i),
                        vec![],
                        false,
                        FrameworkOptions::default(),
                    );
                }
            })
        })
        .collect();
    for t in senders {
        t.join().unwrap();
    }
}

#[test]
fn calls_from_many_threads_keep_each_callers_order_and_none_is_lost() {
    let (alloc, log) = recorder(None);
    let (actor, _offers) = AllocatorActor::spawn(alloc, HOUR);
    add_frameworks_concurrently(&actor, 8, 250);
    actor.handle().query(|_| ()).unwrap(); // everything queued before it is processed
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 2000);
    for t in 0..8 {
        let mine: Vec<u32> = log.iter().copied().filter(|id| id / 1000 == t).collect();
        assert_eq!(
            mine,
            (0..250).map(|i| t * 1000 + i).collect::<Vec<_>>(),
            "thread {t}'s calls out of order"
        );
    }
    actor.shutdown();
}

#[test]
fn a_burst_of_triggers_gives_one_run_over_the_union_of_agents() {
    let (gate_tx, gate_rx): (Sender<()>, Receiver<()>) = mpsc::channel();
    let (alloc, _log) = recorder(Some(gate_rx));
    let (actor, offers) = AllocatorActor::spawn(alloc, HOUR);
    let h = actor.handle();
    // The actor blocks inside this call until the gate opens; everything after queues up.
    h.add_framework(framework(GATE), vec![], false, FrameworkOptions::default());
    h.add_framework(framework(1), vec![], true, FrameworkOptions::default());
    for a in 0..50 {
        h.add_agent(agent(a), None, "cpus:1;mem:64".parse().unwrap(), vec![]);
    }
    for _ in 0..500 {
        h.revive_offers(FrameworkId(1), vec![]);
    }
    gate_tx.send(()).unwrap();
    h.query(|_| ()).unwrap();
    assert_eq!(h.metrics().allocation_runs(), 1, "551 triggers, one run");
    let batch = offers.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(batch.offers.len(), 50, "the run covered every triggering agent");
    actor.shutdown();
}

#[test]
fn periodic_runs_happen_in_real_time() {
    let (alloc, _log) = recorder(None);
    let (actor, offers) = AllocatorActor::spawn(alloc, Duration::from_millis(20));
    let h = actor.handle();
    h.add_framework(framework(1), vec![], false, FrameworkOptions::default());
    h.add_agent(agent(0), None, "cpus:1;mem:64".parse().unwrap(), vec![]);
    for _ in 0..4 {
        let batch = offers.recv_timeout(Duration::from_secs(10)).expect("a run within 10 s");
        assert_eq!(batch.offers.len(), 1);
    }
    assert!(h.metrics().allocation_runs() >= 4);
    let snapshot = h.metrics().snapshot();
    let runs = snapshot.iter().find(|(k, _)| k == "allocator/mesos/allocation_runs").unwrap().1;
    assert!(runs >= 4.0);
    assert!(snapshot.iter().any(|(k, _)| k == "allocator/mesos/allocation_run_ms/p99"));
    assert!(snapshot.iter().any(|(k, _)| k == "allocator/mesos/allocation_run_latency_ms/p50"));
    actor.shutdown();
}

#[test]
fn shutdown_under_load_processes_every_queued_call() {
    let (alloc, log) = recorder(None);
    let (actor, _offers) = AllocatorActor::spawn(alloc, HOUR);
    add_frameworks_concurrently(&actor, 4, 500);
    actor.shutdown();
    assert_eq!(log.lock().unwrap().len(), 2000, "no acknowledged call lost at shutdown");
}

#[test]
fn the_builtin_allocator_offers_through_the_actor_and_answers_queries() {
    let drf = || -> allocator_host::hierarchical::SorterFactory {
        Box::new(|c: &SorterConfig| Ok(Box::new(drf_sorter::create(c)) as Box<dyn Sorter>))
    };
    let builtin = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
    let (actor, offers) = AllocatorActor::spawn(Box::new(builtin), HOUR);
    let h = actor.handle();
    h.add_framework(framework(1), vec![], true, FrameworkOptions::default());
    h.add_agent(agent(0), None, "cpus:2;mem:1024".parse().unwrap(), vec![]);
    let batch = offers.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(batch.offers[0].framework, FrameworkId(1));
    assert_eq!(batch.offers[0].resources, "cpus:2;mem:1024".parse::<Resources>().unwrap());
    h.update_unavailability(
        AgentId(0),
        Some(Unavailability { start: 60.0, duration: None.into() }),
    );
    let inverse = offers.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(inverse.inverse_offers.len(), 1);
    h.update_inverse_offer(
        AgentId(0),
        FrameworkId(1),
        Some(allocator_api::InverseOfferStatus::ACCEPT),
        None,
    );
    let statuses = h
        .query(|a| {
            let mut out = RVec::new();
            a.inverse_offer_statuses(&mut out).unwrap();
            out.len()
        })
        .unwrap();
    assert_eq!(statuses, 1);
    actor.shutdown();
}

/// The value of one metric in a snapshot.
fn metric(actor: &AllocatorActor, name: &str) -> Option<f64> {
    actor.handle().metrics().snapshot().into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

#[test]
fn metrics_report_role_shares_and_quota_from_offers_and_releases() {
    let drf = || -> allocator_host::hierarchical::SorterFactory {
        Box::new(|c: &SorterConfig| Ok(Box::new(drf_sorter::create(c)) as Box<dyn Sorter>))
    };
    let builtin = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
    let (actor, offers) = AllocatorActor::spawn(Box::new(builtin), HOUR);
    let h = actor.handle();
    let quota = allocator_api::Quota {
        guarantees: "cpus:1".parse().unwrap(),
        limits: "cpus:8".parse().unwrap(),
    };
    h.update_quota("r".into(), quota);
    h.add_agent(agent(0), None, "cpus:2;mem:1024".parse().unwrap(), vec![]);
    h.add_agent(agent(1), None, "cpus:2;mem:1024".parse().unwrap(), vec![]);
    h.add_framework(framework(1), vec![], true, FrameworkOptions::default());
    let batch = offers.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(batch.offers.len(), 2, "{batch:?}");
    // A query waits behind the calls and runs before it: the snapshot now includes them.
    h.query(|_| ()).unwrap();
    assert_eq!(metric(&actor, "allocator/mesos/roles/r/shares/dominant"), Some(1.0));
    let cpus = "allocator/mesos/quota/roles/r/resources/cpus";
    assert_eq!(metric(&actor, &format!("{cpus}/guarantee")), Some(1.0));
    assert_eq!(metric(&actor, &format!("{cpus}/limit")), Some(8.0));
    assert_eq!(metric(&actor, &format!("{cpus}/offered_or_allocated")), Some(4.0));
    let o = &batch.offers[0];
    h.recover_resources(
        o.framework,
        o.agent,
        o.role.to_string(),
        o.resources.clone(),
        Some(3600.0),
    );
    h.query(|_| ()).unwrap();
    assert_eq!(metric(&actor, "allocator/mesos/roles/r/shares/dominant"), Some(0.5));
    assert_eq!(metric(&actor, "allocator/mesos/resources/cpus/total"), Some(4.0));
    actor.shutdown();
}
