//! Embedding an allocator in a live master: an actor that owns one allocator (built-in or
//! module) on its own thread, as Mesos's `MesosAllocator` wraps its allocator process.
//!
//! * [`AllocatorActor::spawn`] starts the thread and returns the actor and a receiver of
//!   [`OfferBatch`]es.
//! * [`AllocatorHandle`] is cloneable and `Send`; every method mirrors the [`Allocator`]
//!   interface, puts the call on the actor's queue and returns at once. Calls are processed in
//!   FIFO order (so each caller's calls keep their order).
//! * The actor runs an allocation every `allocation_interval` of real time over all agents, and
//!   after the calls that trigger one in Mesos (adding an agent or an active framework,
//!   activating or reviving a framework, updating an agent or its maintenance). Triggers that
//!   arrive while earlier calls are still queued are batched into one run over the union of
//!   their agents (MESOS-6904).
//! * [`AllocatorHandle::query`] runs a closure on the actor thread and waits for its answer (for
//!   inverse-offer statuses, say); it waits behind the calls queued before it and the runs they
//!   triggered.
//! * [`AllocatorActor::shutdown`] processes every call queued before it (no acknowledged call is
//!   lost), delivers the offers they produce, and joins the thread. Dropping every handle and
//!   the actor has the same effect.
//!
//! Calls that the allocator refuses are logged and counted in the metrics; they cannot be
//! reported to the caller, who has already moved on (use `query` when an answer is needed).
//!
//! A complete example, compiled and run by the test suite, is
//! `allocator-host/tests/embedding_example.rs`.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::metrics::{self, RoleLedger};
use allocator_api::{
    AgentId, AgentInfo, Allocation, Allocator, FrameworkId, FrameworkInfo, FrameworkOptions,
    InverseOfferStatus, OfferBatch, Quota, RString, Resources, RoleWeight, Unavailability,
};

type Call = Box<dyn FnOnce(&mut dyn Allocator) -> allocator_api::Result<()> + Send>;
type Query = Box<dyn FnOnce(&mut dyn Allocator) + Send>;
/// What an accepted call changes in the per-role metrics' ledger.
type Record = Box<dyn FnOnce(&mut RoleLedger) + Send>;

enum Trigger {
    None,
    Agent(AgentId),
    All,
}

enum Message {
    Call {
        what: &'static str,
        call: Call,
        record: Option<Record>,
        trigger: Trigger,
        agents: AgentChange,
        sent: Instant,
    },
    Query(Query),
    Pause,
    Resume,
    Shutdown(Sender<()>),
}

enum AgentChange {
    None,
    Added(AgentId),
    Removed(AgentId),
}

/// Counters and timings, named as Mesos names its allocator metrics.
#[derive(Default)]
pub struct Metrics {
    sent: AtomicU64,
    processed: AtomicU64,
    runs: AtomicU64,
    refused: AtomicU64,
    timings: Mutex<Timings>,
    ledger: Mutex<RoleLedger>,
}

#[derive(Default)]
struct Timings {
    run_ms: Vec<f64>,
    latency_ms: Vec<f64>,
}

impl Metrics {
    /// A snapshot as flat Mesos-style metric names (`allocator/mesos/allocation_runs`, …).
    /// Timings cover the last 1,000 runs. Per-role figures (`roles/<role>/shares/dominant`,
    /// `quota/roles/<role>/resources/<name>/…`, `resources/<name>/…`) come from the actor's
    /// record of the offers it delivered and the calls the allocator accepted (see
    /// [`RoleLedger`]); refuse filters live inside the allocator and are not counted here.
    pub fn snapshot(&self) -> Vec<(String, f64)> {
        let t = self.timings.lock().expect("metrics lock");
        let queued =
            self.sent.load(Ordering::SeqCst).saturating_sub(self.processed.load(Ordering::SeqCst));
        let mut out = vec![
            ("allocator/mesos/event_queue_dispatches".to_owned(), queued as f64),
            ("allocator/mesos/allocation_runs".to_owned(), self.runs.load(Ordering::SeqCst) as f64),
            (
                "allocator/mesos/refused_calls".to_owned(),
                self.refused.load(Ordering::SeqCst) as f64,
            ),
        ];
        let mut m = metrics::MetricMap::new();
        metrics::write_timing(&mut m, "allocator/mesos/allocation_run_ms", &t.run_ms);
        metrics::write_timing(&mut m, "allocator/mesos/allocation_run_latency_ms", &t.latency_ms);
        self.ledger.lock().expect("ledger lock").write_metrics(&mut m);
        out.extend(m.into_iter().filter_map(|(k, v)| v.as_f64().map(|x| (k, x))));
        out
    }

    /// The number of allocation runs so far.
    pub fn allocation_runs(&self) -> u64 {
        self.runs.load(Ordering::SeqCst)
    }
}

/// The names of the frameworks and agents the handle was given, by handle, so that the actor
/// can name them when it logs a module's refusal (module messages name handles).
#[derive(Default)]
struct Names {
    frameworks: HashMap<u32, String>,
    agents: HashMap<u32, String>,
}

impl Names {
    fn annotate(names: &Mutex<Names>, e: &allocator_api::ModuleError) -> String {
        let Ok(names) = names.lock() else { return e.to_string() };
        crate::names::name_handles(&e.to_string(), |kind, n| {
            let map = if kind == "framework" { &names.frameworks } else { &names.agents };
            map.get(&n).cloned()
        })
    }
}

/// A cloneable, thread-safe handle whose methods mirror [`Allocator`] and return at once.
#[derive(Clone)]
pub struct AllocatorHandle {
    tx: Sender<Message>,
    metrics: Arc<Metrics>,
    names: Arc<Mutex<Names>>,
}

/// The actor: owns the allocator thread.
pub struct AllocatorActor {
    handle: AllocatorHandle,
    thread: Option<JoinHandle<()>>,
}

impl AllocatorActor {
    /// Starts the actor thread around `allocator`, running periodically every `interval`.
    /// Offers (and inverse offers) of every run arrive on the returned receiver.
    pub fn spawn(
        allocator: Box<dyn Allocator>,
        interval: Duration,
    ) -> (AllocatorActor, Receiver<OfferBatch>) {
        let (tx, rx) = mpsc::channel();
        let (offers_tx, offers_rx) = mpsc::channel();
        let metrics = Arc::new(Metrics::default());
        let names = Arc::new(Mutex::new(Names::default()));
        let (m, n) = (metrics.clone(), names.clone());
        let thread = std::thread::Builder::new()
            .name("allocator".into())
            .spawn(move || run(allocator, interval, rx, offers_tx, m, n))
            .expect("spawn the allocator thread");
        (
            AllocatorActor { handle: AllocatorHandle { tx, metrics, names }, thread: Some(thread) },
            offers_rx,
        )
    }

    /// A handle for callers (clone it freely).
    pub fn handle(&self) -> AllocatorHandle {
        self.handle.clone()
    }

    /// Processes every call queued before this one, then stops and joins the thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let (ack_tx, ack_rx) = mpsc::channel();
        if self.handle.tx.send(Message::Shutdown(ack_tx)).is_ok() {
            let _ = ack_rx.recv();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for AllocatorActor {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The actor's loop: FIFO calls, batched triggers, periodic runs, shutdown.
fn run(
    mut allocator: Box<dyn Allocator>,
    interval: Duration,
    rx: Receiver<Message>,
    offers: Sender<OfferBatch>,
    metrics: Arc<Metrics>,
    names: Arc<Mutex<Names>>,
) {
    let start = Instant::now();
    let mut next_periodic = start + interval;
    let mut agents: BTreeSet<AgentId> = BTreeSet::new();
    let mut pending: Option<(BTreeSet<AgentId>, Instant)> = None;
    let mut paused = false;
    let mut batch = OfferBatch::default();
    let mut shutdown: Option<Sender<()>> = None;
    let mut allocate = |allocator: &mut Box<dyn Allocator>,
                        candidates: Vec<AgentId>,
                        periodic: bool,
                        since: Instant| {
        let _ = allocator.set_time(start.elapsed().as_secs_f64());
        batch.clear();
        let began = Instant::now();
        if let Err(e) = allocator.allocate(&candidates, periodic, &mut batch) {
            log::error!("allocation run failed: {}", Names::annotate(&names, &e));
        }
        let run_ms = began.elapsed().as_secs_f64() * 1e3;
        metrics.runs.fetch_add(1, Ordering::SeqCst);
        {
            let mut t = metrics.timings.lock().expect("metrics lock");
            metrics::push_sample(&mut t.run_ms, run_ms);
            metrics::push_sample(
                &mut t.latency_ms,
                began.duration_since(since).as_secs_f64() * 1e3,
            );
        }
        if !batch.offers.is_empty() {
            let mut ledger = metrics.ledger.lock().expect("ledger lock");
            for o in batch.offers.iter() {
                ledger.allocate(o.framework, o.agent, &o.role, &o.resources);
            }
        }
        if !batch.offers.is_empty() || !batch.inverse_offers.is_empty() {
            let _ = offers.send(std::mem::take(&mut batch));
        }
    };
    loop {
        let timeout = next_periodic.saturating_duration_since(Instant::now());
        let first = match rx.recv_timeout(timeout) {
            Ok(m) => Some(m),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        // Take the message and everything already queued behind it, in order: triggers among
        // them are merged into one run.
        let mut next = first;
        while let Some(message) = next.take() {
            metrics.processed.fetch_add(1, Ordering::SeqCst);
            match message {
                Message::Call { what, call, record, trigger, agents: change, sent } => {
                    let _ = allocator.set_time(start.elapsed().as_secs_f64());
                    match call(allocator.as_mut()) {
                        Ok(()) => {
                            if let Some(record) = record {
                                record(&mut metrics.ledger.lock().expect("ledger lock"));
                            }
                            match change {
                                AgentChange::Added(a) => {
                                    agents.insert(a);
                                }
                                AgentChange::Removed(a) => {
                                    agents.remove(&a);
                                }
                                AgentChange::None => {}
                            }
                            let targets: Vec<AgentId> = match trigger {
                                Trigger::None => Vec::new(),
                                Trigger::Agent(a) => vec![a],
                                Trigger::All => agents.iter().copied().collect(),
                            };
                            if !matches!(trigger, Trigger::None) {
                                let p = pending.get_or_insert_with(|| (BTreeSet::new(), sent));
                                p.0.extend(targets);
                            }
                        }
                        Err(e) => {
                            metrics.refused.fetch_add(1, Ordering::SeqCst);
                            log::warn!("allocator refused {what}: {}", Names::annotate(&names, &e));
                        }
                    }
                }
                Message::Query(q) => {
                    // A query sees the runs triggered before it: flush them first.
                    if let Some((targets, since)) = pending.take()
                        && !paused
                        && !targets.is_empty()
                    {
                        allocate(&mut allocator, targets.into_iter().collect(), false, since);
                    }
                    q(allocator.as_mut())
                }
                Message::Pause => paused = true,
                Message::Resume => paused = false,
                Message::Shutdown(ack) => shutdown = Some(ack),
            }
            if shutdown.is_some() {
                break;
            }
            next = rx.try_recv().ok();
        }
        if let Some((targets, since)) = pending.take()
            && !paused
            && !targets.is_empty()
        {
            allocate(&mut allocator, targets.into_iter().collect(), false, since);
        }
        if let Some(ack) = shutdown.take() {
            let _ = ack.send(());
            break;
        }
        if Instant::now() >= next_periodic {
            if !paused {
                allocate(&mut allocator, agents.iter().copied().collect(), true, next_periodic);
            }
            while next_periodic <= Instant::now() {
                next_periodic += interval;
            }
        }
    }
}

impl AllocatorHandle {
    fn send(&self, what: &'static str, trigger: Trigger, agents: AgentChange, call: Call) {
        self.send_recorded(what, trigger, agents, call, None);
    }

    fn remember_framework(&self, info: &FrameworkInfo) {
        if let Ok(mut names) = self.names.lock() {
            names.frameworks.insert(info.id.0, info.name.to_string());
        }
    }

    fn remember_agent(&self, info: &AgentInfo) {
        if let Ok(mut names) = self.names.lock() {
            names.agents.insert(info.id.0, info.name.to_string());
        }
    }

    /// Like `send`, with what the call changes in the metrics' ledger once accepted.
    fn send_recorded(
        &self,
        what: &'static str,
        trigger: Trigger,
        agents: AgentChange,
        call: Call,
        record: Option<Record>,
    ) {
        self.metrics.sent.fetch_add(1, Ordering::SeqCst);
        let message = Message::Call { what, call, record, trigger, agents, sent: Instant::now() };
        if self.tx.send(message).is_err() {
            log::warn!("{what} after the allocator actor stopped: ignored");
        }
    }

    /// The actor's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Runs `f` on the actor thread after every call queued before it and returns its answer
    /// (`None` when the actor has stopped).
    pub fn query<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut dyn Allocator) -> T + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = mpsc::channel();
        self.metrics.sent.fetch_add(1, Ordering::SeqCst);
        self.tx
            .send(Message::Query(Box::new(move |a| {
                let _ = tx.send(f(a));
            })))
            .ok()?;
        rx.recv().ok()
    }

    /// See [`Allocator::add_framework`]; an active framework triggers a run over all agents.
    pub fn add_framework(
        &self,
        info: FrameworkInfo,
        used: Vec<Allocation>,
        active: bool,
        options: FrameworkOptions,
    ) {
        let trigger = if active { Trigger::All } else { Trigger::None };
        let held = used.clone();
        self.remember_framework(&info);
        self.send_recorded(
            "add_framework",
            trigger,
            AgentChange::None,
            Box::new(move |a| a.add_framework(&info, &used, active, &options)),
            Some(Box::new(move |l: &mut RoleLedger| {
                for u in &held {
                    l.allocate(u.framework, u.agent, &u.role, &u.resources);
                }
            })),
        );
    }

    /// See [`Allocator::remove_framework`].
    pub fn remove_framework(&self, framework: FrameworkId) {
        self.send_recorded(
            "remove_framework",
            Trigger::None,
            AgentChange::None,
            Box::new(move |a| a.remove_framework(framework)),
            Some(Box::new(move |l: &mut RoleLedger| l.remove_framework(framework))),
        );
    }

    /// See [`Allocator::activate_framework`]; triggers a run over all agents.
    pub fn activate_framework(&self, framework: FrameworkId) {
        self.send(
            "activate_framework",
            Trigger::All,
            AgentChange::None,
            Box::new(move |a| a.activate_framework(framework)),
        );
    }

    /// See [`Allocator::deactivate_framework`].
    pub fn deactivate_framework(&self, framework: FrameworkId) {
        self.send(
            "deactivate_framework",
            Trigger::None,
            AgentChange::None,
            Box::new(move |a| a.deactivate_framework(framework)),
        );
    }

    /// See [`Allocator::update_framework`].
    pub fn update_framework(&self, info: FrameworkInfo, options: FrameworkOptions) {
        self.remember_framework(&info);
        self.send(
            "update_framework",
            Trigger::None,
            AgentChange::None,
            Box::new(move |a| a.update_framework(&info, &options)),
        );
    }

    /// See [`Allocator::add_agent`]; triggers a run on that agent.
    pub fn add_agent(
        &self,
        info: AgentInfo,
        unavailability: Option<Unavailability>,
        total: Resources,
        used: Vec<Allocation>,
    ) {
        let id = info.id;
        let (t, held) = (total.clone(), used.clone());
        self.remember_agent(&info);
        self.send_recorded(
            "add_agent",
            Trigger::Agent(id),
            AgentChange::Added(id),
            Box::new(move |a| a.add_agent(&info, unavailability.as_ref(), &total, &used)),
            Some(Box::new(move |l: &mut RoleLedger| {
                l.set_agent(id, &t);
                for u in &held {
                    l.allocate(u.framework, u.agent, &u.role, &u.resources);
                }
            })),
        );
    }

    /// See [`Allocator::remove_agent`].
    pub fn remove_agent(&self, agent: AgentId) {
        self.send_recorded(
            "remove_agent",
            Trigger::None,
            AgentChange::Removed(agent),
            Box::new(move |a| a.remove_agent(agent)),
            Some(Box::new(move |l: &mut RoleLedger| l.remove_agent(agent))),
        );
    }

    /// See [`Allocator::update_agent`]; triggers a run on that agent.
    pub fn update_agent(&self, info: AgentInfo, total: Option<Resources>) {
        self.remember_agent(&info);
        let id = info.id;
        let new_total = total.clone();
        self.send_recorded(
            "update_agent",
            Trigger::Agent(id),
            AgentChange::None,
            Box::new(move |a| a.update_agent(&info, total.as_ref())),
            Some(Box::new(move |l: &mut RoleLedger| {
                if let Some(t) = &new_total {
                    l.set_agent(id, t);
                }
            })),
        );
    }

    /// See [`Allocator::activate_agent`].
    pub fn activate_agent(&self, agent: AgentId) {
        self.send(
            "activate_agent",
            Trigger::None,
            AgentChange::None,
            Box::new(move |a| a.activate_agent(agent)),
        );
    }

    /// See [`Allocator::deactivate_agent`].
    pub fn deactivate_agent(&self, agent: AgentId) {
        self.send(
            "deactivate_agent",
            Trigger::None,
            AgentChange::None,
            Box::new(move |a| a.deactivate_agent(agent)),
        );
    }

    /// See [`Allocator::update_whitelist`].
    pub fn update_whitelist(&self, hostnames: Option<Vec<RString>>) {
        self.send(
            "update_whitelist",
            Trigger::None,
            AgentChange::None,
            Box::new(move |a| a.update_whitelist(hostnames.as_deref())),
        );
    }

    /// See [`Allocator::update_unavailability`]; triggers a run on that agent.
    pub fn update_unavailability(&self, agent: AgentId, unavailability: Option<Unavailability>) {
        self.send(
            "update_unavailability",
            Trigger::Agent(agent),
            AgentChange::None,
            Box::new(move |a| a.update_unavailability(agent, unavailability.as_ref())),
        );
    }

    /// See [`Allocator::update_inverse_offer`].
    pub fn update_inverse_offer(
        &self,
        agent: AgentId,
        framework: FrameworkId,
        status: Option<InverseOfferStatus>,
        refuse_seconds: Option<f64>,
    ) {
        self.send(
            "update_inverse_offer",
            Trigger::None,
            AgentChange::None,
            Box::new(move |a| a.update_inverse_offer(agent, framework, status, refuse_seconds)),
        );
    }

    /// See [`Allocator::recover_resources`] (never triggers a run, as in Mesos).
    pub fn recover_resources(
        &self,
        framework: FrameworkId,
        agent: AgentId,
        role: String,
        resources: Resources,
        refuse_seconds: Option<f64>,
    ) {
        let (r, given_back) = (role.clone(), resources.clone());
        self.send_recorded(
            "recover_resources",
            Trigger::None,
            AgentChange::None,
            Box::new(move |a| {
                a.recover_resources(framework, agent, &role, &resources, refuse_seconds)
            }),
            Some(Box::new(move |l: &mut RoleLedger| l.release(framework, agent, &r, &given_back))),
        );
    }

    /// See [`Allocator::suppress_offers`].
    pub fn suppress_offers(&self, framework: FrameworkId, roles: Vec<RString>) {
        self.send(
            "suppress_offers",
            Trigger::None,
            AgentChange::None,
            Box::new(move |a| a.suppress_offers(framework, &roles)),
        );
    }

    /// See [`Allocator::revive_offers`]; triggers a run over all agents.
    pub fn revive_offers(&self, framework: FrameworkId, roles: Vec<RString>) {
        self.send(
            "revive_offers",
            Trigger::All,
            AgentChange::None,
            Box::new(move |a| a.revive_offers(framework, &roles)),
        );
    }

    /// See [`Allocator::update_quota`].
    pub fn update_quota(&self, role: String, quota: Quota) {
        let (r, q) = (role.clone(), quota.clone());
        self.send_recorded(
            "update_quota",
            Trigger::None,
            AgentChange::None,
            Box::new(move |a| a.update_quota(&role, &quota)),
            Some(Box::new(move |l: &mut RoleLedger| l.set_quota(&r, &q))),
        );
    }

    /// See [`Allocator::update_weights`].
    pub fn update_weights(&self, weights: Vec<RoleWeight>) {
        self.send(
            "update_weights",
            Trigger::None,
            AgentChange::None,
            Box::new(move |a| a.update_weights(&weights)),
        );
    }

    /// Stops allocation runs (periodic and triggered) until [`resume`](Self::resume).
    pub fn pause(&self) {
        self.metrics.sent.fetch_add(1, Ordering::SeqCst);
        let _ = self.tx.send(Message::Pause);
    }

    /// Resumes allocation runs.
    pub fn resume(&self) {
        self.metrics.sent.fetch_add(1, Ordering::SeqCst);
        let _ = self.tx.send(Message::Resume);
    }
}
