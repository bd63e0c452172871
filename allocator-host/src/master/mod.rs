//! The master core, the embedding API: one type, [`Master`], that owns the allocator engine
//! (the built-in or a module), the host's [ledger](ledger::Ledger) of offers and allocations,
//! the virtual clock and the periodic allocation runs, the agents with their tasks, the offer
//! guard and fault containment (fallback to the built-in, restart, stop).
//!
//! Every change to the cluster is one [`Command`] through [`Master::apply`], the only write
//! path; the master keeps the [journal] of the commands applied, which recordings and plans
//! read. The clock moves with [`Master::advance`]. What happened comes out as typed [`Event`]s
//! in an outbox ([`Master::take_events`]), which whoever drives the master hands to its
//! observers and clients after each command; a client's answers are commands again. The rest
//! is queries.
//!
//! A master embedded in another program drives it the same way: create it from a
//! [`ModuleRegistry`] and a [`Setup`] (the allocator and sorters named by flags), apply
//! commands, advance the clock on the wall clock, answer offers. `examples/embed-master` is a
//! complete one.
//!
//! Files, one concept each: [`command`] (the commands and `apply`), [`journal`],
//! [`containment`] (calls, fallback, restart, stop), [`ledger`], [`run`] (one allocation run
//! and the offer guard), [`agents`], [`frameworks`], [`operator`] (quota, weights, whitelist,
//! maintenance, pause, sorters), [`tasks`] (answering offers, the task timeline, the clock),
//! [`state`] (the `GET /state` view), [`events`], [`metrics`] (every metric name of the
//! allocation side).
//!
//! What the core never knows: simulated frameworks and their workload (task shapes, trace
//! tasks), scenario files, HTTP and Mesos's JSON. A client that keeps more than the commands
//! it applies (the simulation's played frameworks and submitted tasks) puts its own record in
//! the journal as an opaque [note](journal::Note).

pub mod agents;
pub mod allocator_reasons;
pub mod apply_error;
pub mod command;
pub mod containment;
pub mod events;
// Public only for the workspace's own crates and tests; not promised.
#[doc(hidden)]
pub mod fallback;
pub mod frameworks;
pub mod journal;
pub mod ledger;
pub mod metrics;
pub mod note;
pub mod operator;
pub mod queries;
pub mod records;
pub mod run;
pub mod state;
pub mod tasks;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::guard::GuardLog;
use crate::hierarchical::HierarchicalAllocator;
use crate::registry::{BUILTIN_ALLOCATOR, BUILTIN_ALLOCATOR_ALIAS, ModuleRegistry};
use allocator_api::{
    AgentId, AgentInfo, Allocation, AllocatorOptions, FrameworkId, FrameworkInfo, OfferBatch,
    Quantities, RString, Resources,
};

pub use apply_error::ApplyError;
pub use command::{Applied, Apply, Command, Origin};
pub use containment::{DEFAULT_RESTART_LIMIT, Engine, FailurePolicy};
pub use events::{Event, TaskEnd};
pub use journal::{Entry, Journal, Note};
use ledger::Ledger;
pub use records::{AgentRecord, FrameworkRecord};
use tasks::Task;

/// What the master was asked to run with (after scenario config and flags are merged).
#[derive(Clone, Debug)]
pub struct Setup {
    /// `--allocator`.
    pub allocator: String,
    /// `--role_sorter`.
    pub role_sorter: String,
    /// `--framework_sorter`.
    pub framework_sorter: String,
    /// Options passed to the allocator.
    pub options: AllocatorOptions,
    /// What to do when a module fails (panics, returns a failure, or is poisoned).
    pub on_module_failure: FailurePolicy,
    /// Module calls slower than this are reported (a warning and the
    /// `allocator/module_calls_over_budget` metric); `None` turns the check off.
    pub call_budget_ms: Option<f64>,
    /// A module call still running after this long is taken as hung: the master stops with
    /// the reason (exit code 2), since a blocked call cannot be interrupted. `None`: no limit.
    pub call_timeout_ms: Option<f64>,
    /// Parameters given to an allocator module after its manifest's, overriding keys it also
    /// has ([`ModuleRegistry::create_allocator_module_with`]); empty by default.
    pub allocator_parameters: Vec<allocator_api::abi::Parameter>,
}

impl Setup {
    /// The allocator and sorters named (built-in or module names, as the `--allocator`,
    /// `--role_sorter` and `--framework_sorter` flags name them), with default allocator
    /// options, fallback on a module failure ([`FailurePolicy::Fallback`]) and no call budget
    /// or timeout. Set the fields to change the rest.
    pub fn new(allocator: &str, role_sorter: &str, framework_sorter: &str) -> Setup {
        let options = AllocatorOptions {
            role_sorter: role_sorter.into(),
            framework_sorter: framework_sorter.into(),
            ..AllocatorOptions::default()
        };
        Setup {
            allocator: allocator.to_owned(),
            role_sorter: role_sorter.to_owned(),
            framework_sorter: framework_sorter.to_owned(),
            options,
            on_module_failure: FailurePolicy::Fallback,
            call_budget_ms: None,
            call_timeout_ms: None,
            allocator_parameters: Vec::new(),
        }
    }
}

impl Default for Setup {
    /// The built-in allocator with the built-in DRF sorters.
    fn default() -> Setup {
        Setup::new(
            BUILTIN_ALLOCATOR,
            crate::registry::BUILTIN_SORTER,
            crate::registry::BUILTIN_SORTER,
        )
    }
}

/// Two instants closer than this are the same instant.
pub(crate) const EPSILON: f64 = 1e-9;

/// A virtual time as an integer key (microseconds) for the task timeline.
pub(crate) fn time_key(t: f64) -> u64 {
    (t.max(0.0) * 1e6).round() as u64
}

/// The master core. See the [module documentation](self).
pub struct Master<'r> {
    registry: &'r ModuleRegistry,
    setup: Setup,
    engine: Engine,
    interval: f64,
    now: f64,
    next_periodic: f64,
    runs: u64,
    agent_ids: BTreeMap<String, AgentId>,
    agents: Vec<AgentRecord>,
    /// [`all_agents`](Self::all_agents), kept until an agent is added or removed (a periodic
    /// run would otherwise walk `agent_ids` once per run).
    present_agents: std::sync::OnceLock<Vec<AgentId>>,
    framework_ids: BTreeMap<String, FrameworkId>,
    frameworks: Vec<Option<FrameworkRecord>>,
    framework_names: Vec<String>,
    ledger: Ledger,
    /// Running tasks by (framework, task id): per framework in launch order.
    tasks: BTreeMap<(FrameworkId, u64), Task>,
    /// When tasks with a duration finish: (time key, task id) → framework.
    finishes: BTreeMap<(u64, u64), FrameworkId>,
    next_task: u64,
    cluster: Quantities,
    excluded: Vec<String>,
    weights: BTreeMap<String, f64>,
    quotas: BTreeMap<String, allocator_api::Quota>,
    whitelist: Option<Vec<RString>>,
    paused: bool,
    fallbacks: u64,
    /// Modules restarted (`--on_module_failure restart`).
    restarts: u64,
    guard: GuardLog,
    batch: OfferBatch,
    /// The registry watchdog's over-budget count when this master started.
    over_budget_base: u64,
    stopped: Option<String>,
    /// Whether an allocator call failed while the current command was carried out (tells
    /// [`ApplyError::Refused`] from [`ApplyError::Invalid`]).
    allocator_failed: bool,
    /// Whether a call failed because the module does not implement it (tells
    /// [`ApplyError::Unsupported`] apart).
    allocator_unsupported: bool,
    /// Set (to a signal number) when the clock should stop at its next step.
    interrupt: Option<Arc<AtomicUsize>>,
    outbox: Vec<Event>,
    /// The commands clients applied, when kept or recorded.
    journal: Journal,
}

impl<'r> Master<'r> {
    /// Creates the allocator named in `setup` (built-in or module) and an empty cluster, and
    /// applies the setup's call budget and timeout to the registry's watchdog.
    pub fn new(registry: &'r ModuleRegistry, setup: Setup) -> Result<Master<'r>, String> {
        let engine = create_engine(registry, &setup)?;
        if setup.call_budget_ms.is_some() || setup.call_timeout_ms.is_some() {
            registry.watchdog().set_limits(setup.call_budget_ms, setup.call_timeout_ms);
        }
        let interval = setup.options.allocation_interval;
        let excluded =
            setup.options.fairness_excluded_resource_names.iter().map(|s| s.to_string()).collect();
        Ok(Master {
            registry,
            setup,
            engine,
            interval,
            now: 0.0,
            next_periodic: interval,
            runs: 0,
            agent_ids: BTreeMap::new(),
            agents: Vec::new(),
            present_agents: std::sync::OnceLock::new(),
            framework_ids: BTreeMap::new(),
            frameworks: Vec::new(),
            framework_names: Vec::new(),
            ledger: Ledger::default(),
            tasks: BTreeMap::new(),
            finishes: BTreeMap::new(),
            next_task: 0,
            cluster: Quantities::new(),
            excluded,
            weights: BTreeMap::new(),
            quotas: BTreeMap::new(),
            whitelist: None,
            paused: false,
            fallbacks: 0,
            restarts: 0,
            guard: GuardLog::default(),
            batch: OfferBatch::default(),
            over_budget_base: registry.watchdog().over_budget(),
            stopped: None,
            allocator_failed: false,
            allocator_unsupported: false,
            interrupt: None,
            outbox: Vec::new(),
            journal: Journal::default(),
        })
    }

    /// Stops [`advance`](Self::advance) at its next step once `flag` is non-zero.
    pub fn set_interrupt(&mut self, flag: Arc<AtomicUsize>) {
        self.interrupt = Some(flag);
    }

    /// Whether the interrupt flag asks the master to stop.
    pub fn interrupted(&self) -> bool {
        self.interrupt.as_ref().is_some_and(|f| f.load(Ordering::Relaxed) != 0)
    }

    /// Keeps the journal of every command applied from now on (call it before the first), up
    /// to `limit` entries, for [`journal_entries`](Self::journal_entries).
    pub fn keep_journal(&mut self, limit: usize) {
        self.journal.keep(limit);
    }

    /// Writes the journal of every command applied from now on to `sink` as it goes.
    pub fn record_journal_to(&mut self, sink: Box<dyn journal::Sink>) {
        self.journal.record_to(sink);
    }

    /// Whether the journal is kept or recorded.
    pub fn journal_is_on(&self) -> bool {
        self.journal.is_on()
    }

    /// The journal kept so far, with the clock advanced to now; `Err` says why there is none.
    pub fn journal_entries(&self) -> Result<Vec<Entry>, String> {
        self.journal.entries(self.now)
    }

    /// Ends the journal's recording (if any) at the current virtual time.
    pub fn finish_recording(&mut self) -> std::io::Result<()> {
        self.journal.finish_recording(self.now)
    }

    /// The events since the last call, oldest first.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.outbox)
    }

    /// Whether events are waiting in the outbox.
    pub fn has_events(&self) -> bool {
        !self.outbox.is_empty()
    }

    // ----- queries -----

    /// The allocator and sorters in use (after any fallback).
    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    /// The registry modules come from.
    pub fn registry(&self) -> &'r ModuleRegistry {
        self.registry
    }

    /// The current virtual time.
    pub fn now(&self) -> f64 {
        self.now
    }

    /// The number of allocation runs so far.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// The batch allocation interval, seconds.
    pub fn allocation_interval(&self) -> f64 {
        self.interval
    }

    /// The virtual time of the next periodic allocation run.
    pub fn next_periodic(&self) -> f64 {
        self.next_periodic
    }

    /// Whether a module fault under `--on_module_failure stop` has stopped the master: every
    /// later command fails with the reason.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// How many times a failed module was replaced by the built-in.
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks
    }

    /// How many times a failed module was restarted (`--on_module_failure restart`).
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// Offers (and parts of offers) the guard dropped.
    pub fn dropped_offers(&self) -> u64 {
        self.guard.dropped()
    }

    /// Module calls over the call budget since this master started.
    pub fn calls_over_budget(&self) -> u64 {
        self.registry.watchdog().over_budget().saturating_sub(self.over_budget_base)
    }

    /// The engine (for the built-in allocator's own figures, such as its refuse filters).
    // Public only for the workspace's own crates and tests; not promised.
    #[doc(hidden)]
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The id of a present agent.
    pub fn agent_id(&self, name: &str) -> Result<AgentId, String> {
        match self.agent_ids.get(name) {
            Some(id) if self.agents[id.index()].present => Ok(*id),
            _ => Err(format!("unknown agent '{name}'")),
        }
    }

    /// The id of a present framework.
    pub fn framework_id(&self, name: &str) -> Result<FrameworkId, String> {
        match self.framework_ids.get(name) {
            Some(id) if self.frameworks[id.index()].as_ref().is_some_and(|f| f.present) => Ok(*id),
            _ => Err(format!("unknown framework '{name}'")),
        }
    }

    /// The name of a framework the master has heard of (`?` for an unknown handle).
    pub fn framework_name(&self, id: FrameworkId) -> &str {
        self.framework_names.get(id.index()).map_or("?", String::as_str)
    }

    /// The name of an agent the master has heard of (`?` for an unknown handle).
    pub fn agent_name(&self, id: AgentId) -> &str {
        self.agents.get(id.index()).map_or("?", |a| a.info.name.as_str())
    }

    /// A present agent's description.
    pub fn agent_info(&self, id: AgentId) -> Option<&AgentInfo> {
        self.agents.get(id.index()).filter(|a| a.present).map(|a| &a.info)
    }

    /// A present framework's description.
    pub fn framework_info(&self, id: FrameworkId) -> Option<&FrameworkInfo> {
        self.framework(id).map(|f| &f.info)
    }

    /// Present frameworks, in id order.
    pub fn framework_ids(&self) -> impl Iterator<Item = FrameworkId> + '_ {
        self.frameworks.iter().flatten().filter(|f| f.present).map(|f| f.info.id)
    }

    /// The first role of a framework the master has heard of, present or removed.
    pub fn first_role(&self, id: FrameworkId) -> Option<&str> {
        self.frameworks.get(id.index())?.as_ref()?.info.roles.first().map(RString::as_str)
    }

    /// A present framework as the master records it.
    pub fn framework(&self, id: FrameworkId) -> Option<&FrameworkRecord> {
        self.frameworks.get(id.index()).and_then(Option::as_ref).filter(|f| f.present)
    }

    /// Present agents, in name order.
    pub fn all_agents(&self) -> Vec<AgentId> {
        self.present_agents
            .get_or_init(|| {
                let present = |id: &AgentId| self.agents[id.index()].present;
                self.agent_ids.values().copied().filter(present).collect()
            })
            .clone()
    }

    /// Present agents as the host records them.
    pub fn agent_records(&self) -> impl Iterator<Item = &AgentRecord> + '_ {
        self.agents.iter().filter(|a| a.present)
    }

    /// The whitelist of hostnames, if any.
    pub fn whitelist(&self) -> Option<&[RString]> {
        self.whitelist.as_deref()
    }

    /// The total of a present agent.
    pub fn agent_total(&self, agent: AgentId) -> Option<&Resources> {
        self.agents.get(agent.index()).filter(|a| a.present).map(|a| &a.total)
    }

    /// What the host's ledger records on `agent` (non-shared resources), kept incrementally as
    /// offers are recorded and resources come back.
    pub fn agent_used(&self, agent: AgentId) -> Resources {
        self.ledger.used(agent)
    }

    /// The scalar totals of present agents.
    pub fn cluster(&self) -> &Quantities {
        &self.cluster
    }

    /// Resource names left out of fair shares (`fairness_excluded_resource_names`).
    pub fn excluded(&self) -> &[String] {
        &self.excluded
    }

    /// Scalar quantities held under each role (the ledger's).
    pub fn role_alloc(&self) -> &BTreeMap<String, Quantities> {
        self.ledger.role_alloc()
    }

    /// Quotas set so far, by role.
    pub fn quotas(&self) -> &BTreeMap<String, allocator_api::Quota> {
        &self.quotas
    }

    /// The unweighted dominant share of a role from the host's ledger.
    pub fn role_share(&self, role: &str) -> f64 {
        self.ledger
            .role_alloc()
            .get(role)
            .map_or(0.0, |q| metrics::dominant_share(q, &self.cluster, &self.excluded))
    }

    /// Agents whose allocations (the ledger's, kept per agent) exceed their total. Only a
    /// shrinking `update_agent` can make one (Mesos rule R14); allocation runs never do.
    pub fn overcommitted_agents(&self) -> Vec<AgentId> {
        self.agents
            .iter()
            .filter(|a| a.present && self.ledger.exceeds(a.info.id, &a.total))
            .map(|a| a.info.id)
            .collect()
    }

    /// Checks the host's ledger against every agent's total: nothing over-committed.
    pub fn check_conservation(&self) -> Result<(), String> {
        match self.overcommitted_agents().first() {
            None => Ok(()),
            Some(agent) => Err(format!(
                "agent '{}' is over-committed: {} allocated of {}",
                self.agent_name(*agent),
                self.agent_used(*agent),
                self.agents[agent.index()].total
            )),
        }
    }

    /// The allocations the built-in allocator records (empty for modules).
    pub fn allocator_records(&self) -> Vec<Allocation> {
        match &self.engine {
            Engine::Builtin(a) => a.allocations(),
            Engine::Module(_) | Engine::Hosted(_) => Vec::new(),
        }
    }

    /// The host ledger as allocations.
    pub fn ledger(&self) -> Vec<Allocation> {
        self.ledger.allocations()
    }
}

/// The allocator named by `setup`: the built-in with the named sorters, or a module.
fn create_engine(registry: &ModuleRegistry, setup: &Setup) -> Result<Engine, String> {
    if setup.allocator == BUILTIN_ALLOCATOR || setup.allocator == BUILTIN_ALLOCATOR_ALIAS {
        // Isolated sorter modules: the built-in allocator runs in their worker.
        if let Some(hosted) =
            registry.create_builtin_in_worker(&setup.options).map_err(|e| e.to_string())?
        {
            log::info!(
                "allocator: built-in hierarchical in a worker process; role sorter: {}; framework sorter: {}",
                registry.describe_sorter(&setup.role_sorter),
                registry.describe_sorter(&setup.framework_sorter)
            );
            return Ok(Engine::Hosted(hosted));
        }
        let role = registry
            .sorter_factory(&setup.role_sorter, "--role_sorter")
            .map_err(|e| e.to_string())?;
        let fw = registry
            .sorter_factory(&setup.framework_sorter, "--framework_sorter")
            .map_err(|e| e.to_string())?;
        log::info!(
            "allocator: built-in hierarchical; role sorter: {}; framework sorter: {}",
            registry.describe_sorter(&setup.role_sorter),
            registry.describe_sorter(&setup.framework_sorter)
        );
        Ok(Engine::Builtin(Box::new(HierarchicalAllocator::new(&setup.options, role, fw)?)))
    } else {
        log::info!("allocator: module '{}'", setup.allocator);
        Ok(Engine::Module(
            registry
                .create_allocator_module_with(
                    &setup.allocator,
                    &setup.options,
                    &setup.allocator_parameters,
                )
                .map_err(|e| e.to_string())?,
        ))
    }
}
