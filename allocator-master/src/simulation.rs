//! The simulated master: drives an allocator (built-in or module) with scenario events on a
//! virtual clock, keeps the host's own ledger of offers and allocations, plays simulated
//! frameworks, checks expectations and collects the summary.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Instant;

use allocator_api::{
    AgentCapabilities, AgentId, AgentInfo, Allocation, Allocator, AllocatorOptions, FrameworkId,
    FrameworkInfo, FrameworkOptions, ModuleError, OfferBatch, Quantities, RString, Resources,
    RoleWeight,
};
use serde_json::{Value, json};

use crate::allocator_scenario::{AllocatorScenario, ExpectedOffer, Op, TaskSpec};
use crate::output::EventStream;
use allocator_host::guard::{
    AgentView, FrameworkView, GuardLog, OfferVerdict, check_inverse_offer, check_offer,
};
use allocator_host::hierarchical::HierarchicalAllocator;
use allocator_host::registry::{BUILTIN_ALLOCATOR, BUILTIN_ALLOCATOR_ALIAS, ModuleRegistry};

const EPSILON: f64 = 1e-9;

/// The allocator being driven.
pub enum Engine {
    /// The built-in `hierarchical` allocator (supports `set_sorters`).
    Builtin(Box<HierarchicalAllocator>),
    /// An allocator module.
    Module(Box<dyn Allocator>),
}

impl Engine {
    fn get(&mut self) -> &mut dyn Allocator {
        match self {
            Engine::Builtin(a) => a.as_mut(),
            Engine::Module(a) => a.as_mut(),
        }
    }
}

/// What the simulation was asked to run with (after scenario config and flags are merged).
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
}

/// What the host does when a module call fails (`--on_module_failure`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Stop using the module and continue with the built-in (`hierarchical` for an allocator,
    /// `drf` for a sorter), rebuilt from the host's records. The default.
    #[default]
    Fallback,
    /// Stop with the reason (exit code 2).
    Stop,
}

/// A run that could not go on: bad input the parser could not see (an unknown name), a call the
/// allocator refused, or a module fault. One line, naming the event.
#[derive(Debug, thiserror::Error)]
#[error("scenario '{file}': {location}: {message}")]
pub struct SimulationError {
    /// The scenario file.
    pub file: String,
    /// The event (`event 4 (remove_agent)`).
    pub location: String,
    /// What went wrong.
    pub message: String,
}

#[derive(Debug)]
struct AgentRecord {
    info: AgentInfo,
    total: Resources,
    present: bool,
    activated: bool,
    unavailability: Option<allocator_api::Unavailability>,
    /// What the ledger holds on this agent (non-shared), kept incrementally.
    used: Resources,
}

#[derive(Debug, Clone)]
struct QueuedTask {
    resources: Resources,
    duration: Option<f64>,
    constraints: Vec<(String, Vec<String>)>,
    submitted: f64,
}

#[derive(Debug, Clone)]
struct RunningTask {
    id: u64,
    agent: AgentId,
    role: String,
    resources: Resources,
}

#[derive(Debug)]
struct SimFramework {
    spec: TaskSpec,
    launched: u64,
    running: Vec<RunningTask>,
    queue: VecDeque<QueuedTask>,
    submitted: u64,
    waits: Vec<f64>,
    /// The framework suppressed its offers because it had nothing to launch.
    suppressed: bool,
}

impl SimFramework {
    /// Whether the framework still has tasks to launch.
    fn has_pending(&self) -> bool {
        !self.queue.is_empty()
            || (self.spec.resources.is_some() && self.spec.count.is_none_or(|c| self.launched < c))
    }
}

#[derive(Debug)]
struct FrameworkRecord {
    info: FrameworkInfo,
    options: FrameworkOptions,
    present: bool,
    active: bool,
    sim: Option<SimFramework>,
}

/// Per-role statistics.
#[derive(Debug, Default, Clone)]
struct RoleStats {
    offers: u64,
    tasks: u64,
    share_time: f64,
}

/// The outcome of a simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Expectations that held.
    pub passed: usize,
    /// Failed expectations, each as a readable diff.
    pub failures: Vec<String>,
    /// The human summary.
    pub summary: String,
    /// The JSON summary event.
    pub summary_json: Value,
}

/// The simulated master. See the [module documentation](self).
pub struct Simulation<'r> {
    registry: &'r ModuleRegistry,
    setup: Setup,
    file: String,
    engine: Engine,
    interval: f64,
    now: f64,
    next_periodic: f64,
    runs: u64,
    agent_ids: BTreeMap<String, AgentId>,
    agents: Vec<AgentRecord>,
    framework_ids: BTreeMap<String, FrameworkId>,
    frameworks: Vec<Option<FrameworkRecord>>,
    framework_names: Vec<String>,
    ledger: BTreeMap<(FrameworkId, AgentId, String), Resources>,
    finishes: BTreeMap<(u64, u64), (FrameworkId, u64)>,
    next_task: u64,
    pending_offers: BTreeMap<(String, String, String), Resources>,
    pending_inverse: BTreeSet<(String, String)>,
    role_stats: BTreeMap<String, RoleStats>,
    role_alloc: BTreeMap<String, Quantities>,
    cluster: Quantities,
    util_time: BTreeMap<String, f64>,
    run_micros: Vec<u64>,
    passed: usize,
    failures: Vec<String>,
    batch: OfferBatch,
    excluded: Vec<String>,
    series: crate::report::Series,
    /// Seconds during which a GPU task was waiting, and the integral of the idle GPU fraction
    /// over those seconds (fragmentation).
    gpu_wait: (f64, f64),
    weights: BTreeMap<String, f64>,
    quotas: BTreeMap<String, allocator_api::Quota>,
    whitelist: Option<Vec<RString>>,
    paused: bool,
    fallbacks: u64,
    guard: GuardLog,
    /// Whether offers are kept for `expect_offers` (off for scenarios without one).
    track_offers: bool,
    /// The registry watchdog's over-budget count when this simulation started.
    over_budget_base: u64,
    stopped: Option<String>,
    /// Set (to a signal number) when the run should stop at its next step.
    interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
    /// Where a long run reports how far it got.
    progress: Option<std::sync::Arc<crate::progress::Counters>>,
}

fn time_key(t: f64) -> u64 {
    (t.max(0.0) * 1e6).round() as u64
}

impl<'r> Simulation<'r> {
    /// Creates the allocator named in `setup` (built-in or module) and an empty cluster.
    pub fn new(
        registry: &'r ModuleRegistry,
        setup: Setup,
        file: &str,
    ) -> Result<Simulation<'r>, String> {
        let engine =
            if setup.allocator == BUILTIN_ALLOCATOR || setup.allocator == BUILTIN_ALLOCATOR_ALIAS {
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
                Engine::Builtin(Box::new(HierarchicalAllocator::new(&setup.options, role, fw)?))
            } else {
                log::info!("allocator: module '{}'", setup.allocator);
                Engine::Module(
                    registry
                        .create_allocator_module(&setup.allocator, &setup.options)
                        .map_err(|e| e.to_string())?,
                )
            };
        if setup.call_budget_ms.is_some() || setup.call_timeout_ms.is_some() {
            registry.watchdog().set_limits(setup.call_budget_ms, setup.call_timeout_ms);
        }
        let interval = setup.options.allocation_interval;
        let excluded =
            setup.options.fairness_excluded_resource_names.iter().map(|s| s.to_string()).collect();
        Ok(Simulation {
            registry,
            setup,
            file: file.to_owned(),
            engine,
            interval,
            now: 0.0,
            next_periodic: interval,
            runs: 0,
            agent_ids: BTreeMap::new(),
            agents: Vec::new(),
            framework_ids: BTreeMap::new(),
            frameworks: Vec::new(),
            framework_names: Vec::new(),
            ledger: BTreeMap::new(),
            finishes: BTreeMap::new(),
            next_task: 0,
            pending_offers: BTreeMap::new(),
            pending_inverse: BTreeSet::new(),
            role_stats: BTreeMap::new(),
            role_alloc: BTreeMap::new(),
            cluster: Quantities::new(),
            util_time: BTreeMap::new(),
            run_micros: Vec::new(),
            passed: 0,
            failures: Vec::new(),
            batch: OfferBatch::default(),
            excluded,
            series: crate::report::Series::default(),
            gpu_wait: (0.0, 0.0),
            weights: BTreeMap::new(),
            quotas: BTreeMap::new(),
            whitelist: None,
            paused: false,
            fallbacks: 0,
            guard: GuardLog::default(),
            track_offers: false,
            over_budget_base: registry.watchdog().over_budget(),
            stopped: None,
            interrupt: None,
            progress: None,
        })
    }

    /// Applies the setup's call budget and timeout to the registry's watchdog, which every
    /// module call (allocator and sorters, in every mode) runs under. Either left `None` keeps
    /// what the registry has.
    pub fn start_watchdog(&mut self) {
        let (budget, timeout) = (self.setup.call_budget_ms, self.setup.call_timeout_ms);
        if budget.is_some() || timeout.is_some() {
            self.registry.watchdog().set_limits(budget, timeout);
        }
    }

    /// Stops the run at its next step (between events, or between the allocation runs of one
    /// `advance`) once `flag` is non-zero; the summary then covers what was done.
    pub fn set_interrupt(&mut self, flag: std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        self.interrupt = Some(flag);
    }

    /// Reports events done, the virtual clock and the run count into `counters` as it goes.
    pub fn set_progress(&mut self, counters: std::sync::Arc<crate::progress::Counters>) {
        self.progress = Some(counters);
    }

    /// Whether the interrupt flag asks the run to stop.
    pub fn interrupted(&self) -> bool {
        self.interrupt.as_ref().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed) != 0)
    }

    /// Runs every event of `scenario`, then writes the summary.
    pub fn run(
        &mut self,
        scenario: &AllocatorScenario,
        out: &mut EventStream,
    ) -> Result<Outcome, SimulationError> {
        self.run_with_progress(scenario, out, &mut |_, _| {})
    }

    /// Like [`run`](Self::run), calling `progress(done, total)` after each event.
    pub fn run_with_progress(
        &mut self,
        scenario: &AllocatorScenario,
        out: &mut EventStream,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Outcome, SimulationError> {
        let total = scenario.events.len();
        self.track_offers = scenario.events.iter().any(|(_, op)| matches!(op, Op::ExpectOffers(_)));
        for (index, (location, op)) in scenario.events.iter().enumerate() {
            if self.interrupted() {
                break;
            }
            self.apply(index, op, out).map_err(|message| SimulationError {
                file: self.file.clone(),
                location: location.clone(),
                message,
            })?;
            progress(index + 1, total);
            if let Some(p) = &self.progress {
                p.set_done(index as u64 + 1, total as u64);
            }
        }
        self.sample();
        let (summary, summary_json) = self.summary();
        out.emit(&summary_json);
        out.flush();
        Ok(Outcome { passed: self.passed, failures: self.failures.clone(), summary, summary_json })
    }

    /// Calls the allocator; on a module fault, applies the failure policy: falls back to the
    /// built-in (rebuilt from the host's records) and repeats the call there, or stops.
    fn engine_call(
        &mut self,
        what: &str,
        mut f: impl FnMut(&mut dyn Allocator) -> allocator_api::Result<()>,
    ) -> Result<(), String> {
        if let Some(reason) = &self.stopped {
            return Err(reason.clone());
        }
        // Module calls run under the registry's budget and watchdog (allocator_host::watchdog).
        let result = f(self.engine.get());
        let result = result.map_err(|mut e| {
            e.message = self.name_handles(&e.message).into();
            e
        });
        match result {
            Ok(()) => Ok(()),
            Err(e) if e.is_fault() && self.setup.on_module_failure == FailurePolicy::Fallback => {
                self.fall_back(what, &e)?;
                let r = f(self.engine.get());
                check_call(&self.setup.allocator, what, r)
            }
            Err(e) => {
                let message = check_call(&self.setup.allocator, what, Err(e.clone()));
                if e.is_fault() {
                    self.stopped = message.clone().err();
                }
                message
            }
        }
    }

    /// Replaces a failed module by the built-in: an allocator module by `hierarchical` with
    /// `drf` sorters, a sorter module inside the built-in allocator by `drf`. Rebuilt from the
    /// host's own records, so no allocation is lost or duplicated.
    fn fall_back(&mut self, what: &str, e: &ModuleError) -> Result<(), String> {
        let sorter_modules = [&self.setup.role_sorter, &self.setup.framework_sorter]
            .iter()
            .any(|n| self.registry.module(n).is_some());
        match &mut self.engine {
            Engine::Module(_) => {
                log::error!(
                    "allocator module '{}' failed in {what}: {e}; falling back to the built-in hierarchical allocator",
                    self.setup.allocator
                );
                eprintln!(
                    "allocator-master: allocator module '{}' failed in {what} ({e}); continuing with the built-in hierarchical allocator",
                    self.setup.allocator
                );
                self.rebuild_builtin()?;
            }
            Engine::Builtin(alloc) if sorter_modules => {
                log::error!(
                    "a sorter module failed in {what}: {e}; falling back to the built-in drf sorter"
                );
                eprintln!(
                    "allocator-master: a sorter module failed in {what} ({e}); continuing with the built-in drf sorters"
                );
                let drf = || -> allocator_host::hierarchical::SorterFactory {
                    Box::new(|c: &allocator_api::SorterConfig| {
                        Ok(Box::new(drf_sorter::create(c)) as Box<dyn allocator_api::Sorter>)
                    })
                };
                alloc.replace_sorters(drf(), drf())?;
                self.setup.role_sorter = allocator_host::registry::BUILTIN_SORTER.into();
                self.setup.framework_sorter = allocator_host::registry::BUILTIN_SORTER.into();
            }
            Engine::Builtin(_) => {
                return Err(format!("the built-in allocator failed in {what}: {e}"));
            }
        }
        self.fallbacks += 1;
        Ok(())
    }

    /// A fresh built-in allocator holding the host's record of agents, frameworks, weights,
    /// quotas, whitelist and allocations.
    fn rebuild_builtin(&mut self) -> Result<(), String> {
        let drf = || -> allocator_host::hierarchical::SorterFactory {
            Box::new(|c: &allocator_api::SorterConfig| {
                Ok(Box::new(drf_sorter::create(c)) as Box<dyn allocator_api::Sorter>)
            })
        };
        let mut options = self.setup.options.clone();
        options.role_sorter = "drf".into();
        options.framework_sorter = "drf".into();
        let mut b = HierarchicalAllocator::new(&options, drf(), drf())?;
        let fail = |e: ModuleError| format!("rebuilding the built-in allocator: {e}");
        b.set_time(self.now).map_err(fail)?;
        let weights: Vec<RoleWeight> = self
            .weights
            .iter()
            .map(|(r, w)| RoleWeight { role: r.as_str().into(), weight: *w })
            .collect();
        b.update_weights(&weights).map_err(fail)?;
        for (role, q) in &self.quotas {
            b.update_quota(role, q).map_err(fail)?;
        }
        b.update_whitelist(self.whitelist.as_deref()).map_err(fail)?;
        for rec in self.frameworks.iter().flatten().filter(|f| f.present) {
            b.add_framework(&rec.info, &[], rec.active, &rec.options).map_err(fail)?;
        }
        for rec in self.agents.iter().filter(|a| a.present) {
            let used: Vec<Allocation> = self
                .ledger
                .iter()
                .filter(|((_, a, _), _)| *a == rec.info.id)
                .map(|((f, a, r), res)| Allocation {
                    framework: *f,
                    agent: *a,
                    role: r.as_str().into(),
                    resources: res.clone(),
                })
                .collect();
            b.add_agent(&rec.info, rec.unavailability.as_ref(), &rec.total, &used).map_err(fail)?;
            if !rec.activated {
                b.deactivate_agent(rec.info.id).map_err(fail)?;
            }
        }
        if self.paused {
            b.pause().map_err(fail)?;
        }
        self.engine = Engine::Builtin(Box::new(b));
        self.setup.allocator = BUILTIN_ALLOCATOR.into();
        self.setup.role_sorter = "drf".into();
        self.setup.framework_sorter = "drf".into();
        Ok(())
    }

    /// A module's message with the names the host knows added to the handles it names
    /// (`unknown framework#1` → `unknown framework 'f1' (#1)`).
    fn name_handles(&self, message: &str) -> String {
        allocator_host::names::name_handles(message, |kind, n| match kind {
            "framework" => self.framework_names.get(n as usize).cloned(),
            _ => self.agent_ids.iter().find(|(_, id)| id.0 == n).map(|(name, _)| name.clone()),
        })
    }

    fn agent_id(&self, name: &str) -> Result<AgentId, String> {
        match self.agent_ids.get(name) {
            Some(id) if self.agents[id.index()].present => Ok(*id),
            _ => Err(format!("unknown agent '{name}'")),
        }
    }

    fn framework_id(&self, name: &str) -> Result<FrameworkId, String> {
        match self.framework_ids.get(name) {
            Some(id) if self.frameworks[id.index()].as_ref().is_some_and(|f| f.present) => Ok(*id),
            _ => Err(format!("unknown framework '{name}'")),
        }
    }

    /// The id of a framework name, assigned on first mention (a framework may be named in an
    /// agent's `used` before it is added).
    fn framework_id_or_new(&mut self, name: &str) -> FrameworkId {
        if let Some(id) = self.framework_ids.get(name) {
            return *id;
        }
        let id = FrameworkId(self.frameworks.len() as u32);
        self.frameworks.push(None);
        self.framework_names.push(name.to_owned());
        self.framework_ids.insert(name.to_owned(), id);
        id
    }

    fn all_agents(&self) -> Vec<AgentId> {
        self.agent_ids.values().copied().filter(|id| self.agents[id.index()].present).collect()
    }

    fn fw_name(&self, id: FrameworkId) -> &str {
        self.framework_names.get(id.index()).map_or("?", String::as_str)
    }

    fn agent_name(&self, id: AgentId) -> &str {
        self.agents.get(id.index()).map_or("?", |a| a.info.name.as_str())
    }

    fn ledger_add(&mut self, fw: FrameworkId, agent: AgentId, role: &str, r: &Resources) {
        if r.is_empty() {
            return;
        }
        self.ledger.entry((fw, agent, role.to_owned())).or_default().add(r);
        if let Some(a) = self.agents.get_mut(agent.index()) {
            a.used.add(&r.filter(|x| !x.is_shared()));
        }
        self.role_alloc.entry(role.to_owned()).or_default().add(&r.scalar_quantities());
    }

    fn ledger_remove(&mut self, fw: FrameworkId, agent: AgentId, role: &str, r: &Resources) {
        let key = (fw, agent, role.to_owned());
        if let Some(a) = self.agents.get_mut(agent.index()) {
            a.used.subtract(&r.filter(|x| !x.is_shared()));
        }
        if let Some(held) = self.ledger.get_mut(&key) {
            held.subtract(r);
            if held.is_empty() {
                self.ledger.remove(&key);
            }
        }
        if let Some(q) = self.role_alloc.get_mut(role) {
            q.subtract(&r.scalar_quantities());
        }
    }

    fn held(&self, fw: FrameworkId, agent: AgentId, role: &str) -> Resources {
        self.ledger.get(&(fw, agent, role.to_owned())).cloned().unwrap_or_default()
    }

    /// Records one point of the report's time series (shares and utilisation now).
    fn sample(&mut self) {
        let shares: BTreeMap<String, f64> = self
            .role_alloc
            .iter()
            .map(|(r, q)| (r.clone(), dominant_share(q, &self.cluster, &self.excluded)))
            .collect();
        let mut used = Quantities::new();
        for q in self.role_alloc.values() {
            used.add(q);
        }
        let util: BTreeMap<String, f64> = self
            .cluster
            .iter()
            .filter(|t| t.value.is_positive())
            .map(|t| (t.name.to_string(), used.get(&t.name).as_f64() / t.value.as_f64()))
            .collect();
        if self.series.times.last() == Some(&self.now) && !self.series.times.is_empty() {
            // Keep one point per instant: the latest state wins.
            self.series.times.pop();
            for v in self
                .series
                .shares
                .values_mut()
                .chain(self.series.utilisation.values_mut())
                .chain(self.series.waiting.values_mut())
            {
                v.pop();
            }
        }
        let mut waiting: BTreeMap<String, f64> = BTreeMap::new();
        for rec in self.frameworks.iter().flatten().filter(|f| f.present) {
            if let (Some(sim), Some(role)) = (&rec.sim, rec.info.roles.first())
                && sim.submitted > 0
            {
                *waiting.entry(role.to_string()).or_default() += sim.queue.len() as f64;
            }
        }
        self.series.push_with_waiting(self.now, &shares, &util, &waiting);
    }

    /// Renders the report of the run so far as SVG.
    pub fn report_svg(&self, title: &str) -> Result<String, crate::report::ReportError> {
        let subtitle = format!(
            "allocator {}, role sorter {}, framework sorter {}; {} allocation runs over {:.0} s",
            self.setup.allocator,
            self.setup.role_sorter,
            self.setup.framework_sorter,
            self.runs,
            self.now
        );
        crate::report::render_svg(title, &subtitle, &self.series)
    }

    fn set_framework_active(&mut self, fw: FrameworkId, active: bool) {
        if let Some(Some(rec)) = self.frameworks.get_mut(fw.index()) {
            rec.active = active;
        }
    }

    /// Keeps the host's record of suppressed roles (`roles` empty: all the framework's roles).
    fn record_suppression(&mut self, fw: FrameworkId, roles: &[RString], suppressed: bool) {
        let Some(Some(rec)) = self.frameworks.get_mut(fw.index()) else { return };
        let roles: Vec<RString> =
            if roles.is_empty() { rec.info.roles.to_vec() } else { roles.to_vec() };
        let list = &mut rec.options.suppressed_roles;
        for r in roles {
            let present = list.contains(&r);
            if suppressed && !present {
                list.push(r);
            } else if !suppressed && present {
                list.retain(|x| *x != r);
            }
        }
    }

    /// Records an agent's new total (after an operation).
    fn set_agent_total(&mut self, agent: AgentId, total: Resources) {
        let rec = &mut self.agents[agent.index()];
        let old = std::mem::replace(&mut rec.total, total);
        self.cluster.subtract(&old.scalar_quantities());
        self.cluster.add(&rec.total.scalar_quantities());
    }

    /// Moves the clock to `t`, integrating shares and utilisation over the elapsed time.
    fn set_clock(&mut self, t: f64) -> Result<(), String> {
        let dt = t - self.now;
        if dt > 0.0 {
            for (role, q) in &self.role_alloc {
                let share = dominant_share(q, &self.cluster, &self.excluded);
                self.role_stats.entry(role.clone()).or_default().share_time += share * dt;
            }
            let mut used = Quantities::new();
            for q in self.role_alloc.values() {
                used.add(q);
            }
            for total in self.cluster.iter() {
                if total.value.is_positive() {
                    let frac = used.get(&total.name).as_f64() / total.value.as_f64();
                    *self.util_time.entry(total.name.to_string()).or_default() += frac * dt;
                }
            }
            let gpus = self.cluster.get("gpus");
            let gpu_task_waits = self.frameworks.iter().flatten().any(|f| {
                f.present
                    && f.sim.as_ref().is_some_and(|s| {
                        s.queue.iter().any(|t| t.resources.scalar("gpus").is_positive())
                    })
            });
            if gpus.is_positive() && gpu_task_waits {
                let idle = 1.0 - used.get("gpus").as_f64() / gpus.as_f64();
                self.gpu_wait.0 += dt;
                self.gpu_wait.1 += idle * dt;
            }
        }
        self.now = t;
        self.engine_call("set_time", |a| a.set_time(t))
    }

    /// Advances the virtual clock, running task completions and the periodic runs that fall due.
    fn advance(&mut self, seconds: f64, out: &mut EventStream) -> Result<(), String> {
        const MAX_RUNS: f64 = 10_000_000.0;
        let target = self.now + seconds;
        let runs = (target / self.interval).floor() - (self.now / self.interval).floor();
        if !target.is_finite() || runs > MAX_RUNS {
            return Err(format!(
                "advancing {seconds} s would make {runs:.0} periodic allocation runs at an interval of {} s (at most {MAX_RUNS} per event)",
                self.interval
            ));
        }
        loop {
            let next_finish = self.finishes.keys().next().map(|(t, _)| *t as f64 / 1e6);
            let next = match next_finish {
                Some(f) if f < self.next_periodic - EPSILON => f,
                _ => self.next_periodic,
            };
            if next > target + EPSILON || self.interrupted() {
                break;
            }
            self.set_clock(next)?;
            if let Some(p) = &self.progress {
                p.set_clock(self.now, self.runs);
            }
            let due = time_key(self.now);
            while let Some((&key, _)) = self.finishes.iter().next() {
                if key.0 > due {
                    break;
                }
                let (fw, task) = self.finishes.remove(&key).expect("present");
                self.finish_task(fw, task)?;
            }
            if (self.now - self.next_periodic).abs() < EPSILON {
                let agents = self.all_agents();
                self.allocation_run(&agents, true, out)?;
                self.next_periodic += self.interval;
            }
        }
        if self.interrupted() {
            // Stopped part-way: the clock stays at the last step taken.
            return Ok(());
        }
        self.set_clock(target)
    }

    fn finish_task(&mut self, fw: FrameworkId, task: u64) -> Result<(), String> {
        let Some(Some(rec)) = self.frameworks.get_mut(fw.index()) else { return Ok(()) };
        let Some(sim) = rec.sim.as_mut() else { return Ok(()) };
        let Some(pos) = sim.running.iter().position(|t| t.id == task) else { return Ok(()) };
        let t = sim.running.remove(pos);
        if !self.agents[t.agent.index()].present {
            return Ok(());
        }
        self.engine_call("recover_resources (task finished)", |a| {
            a.recover_resources(fw, t.agent, &t.role, &t.resources, None)
        })?;
        self.ledger_remove(fw, t.agent, &t.role, &t.resources);
        Ok(())
    }

    /// After resources of a simulated framework were recovered by a scenario event, its tasks
    /// on that agent that no longer fit in what it holds are gone (killed with their resources).
    fn reconcile_tasks(&mut self, fw: FrameworkId, agent: AgentId) {
        let mut held: BTreeMap<String, Resources> = BTreeMap::new();
        for ((f, a, role), res) in &self.ledger {
            if *f == fw && *a == agent {
                held.insert(role.clone(), res.clone());
            }
        }
        let Some(Some(rec)) = self.frameworks.get_mut(fw.index()) else { return };
        let Some(sim) = rec.sim.as_mut() else { return };
        sim.running.retain(|t| {
            if t.agent != agent {
                return true;
            }
            match held.get_mut(&t.role) {
                Some(h) if h.contains(&t.resources) => {
                    h.subtract(&t.resources);
                    true
                }
                _ => false,
            }
        });
    }

    /// One allocation run: offers go into the ledger and the stream, then simulated frameworks
    /// answer theirs.
    fn allocation_run(
        &mut self,
        agents: &[AgentId],
        periodic: bool,
        out: &mut EventStream,
    ) -> Result<(), String> {
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        let start = Instant::now();
        let r = self.engine_call("allocate", |a| a.allocate(agents, periodic, &mut batch));
        let micros = start.elapsed().as_micros() as u64;
        r?;
        self.runs += 1;
        self.run_micros.push(micros);
        let mut accepted = Vec::new();
        let mut to_recover = Vec::new();
        for original in batch.offers.iter() {
            // The offer guard (allocator_host::guard): the bad part is dropped (and given back to the
            // allocator when it can be), logged and counted.
            let Some(offer) = self.guard(original, &mut to_recover) else { continue };
            let role = offer.role.to_string();
            self.ledger_add(offer.framework, offer.agent, &role, &offer.resources);
            self.role_stats.entry(role.clone()).or_default().offers += 1;
            let (fw, agent) = if out.is_enabled() || self.track_offers {
                (self.fw_name(offer.framework).to_owned(), self.agent_name(offer.agent).to_owned())
            } else {
                (String::new(), String::new())
            };
            if out.is_enabled() {
                out.emit(&json!({"event": "offer", "time": self.now, "run": self.runs, "framework": fw,
                                 "role": role, "agent": agent, "resources": offer.resources.to_string()}));
            }
            if self.track_offers {
                self.pending_offers.entry((fw, role, agent)).or_default().add(&offer.resources);
            }
            accepted.push(offer);
        }
        for dropped in to_recover {
            // Best effort: the allocator believes it offered these.
            let _ = self.engine.get().recover_resources(
                dropped.framework,
                dropped.agent,
                &dropped.role,
                &dropped.resources,
                None,
            );
        }
        for inv in batch.inverse_offers.iter() {
            let framework_active = self
                .frameworks
                .get(inv.framework.index())
                .and_then(Option::as_ref)
                .filter(|f| f.present)
                .map(|f| f.active);
            let unavailability =
                self.agents.get(inv.agent.index()).filter(|a| a.present).map(|a| a.unavailability);
            let holds = self
                .ledger
                .range((inv.framework, inv.agent, String::new())..)
                .take_while(|((f, a, _), _)| *f == inv.framework && *a == inv.agent)
                .any(|(_, r)| !r.is_empty());
            let u = match check_inverse_offer(framework_active, unavailability, holds) {
                Ok(u) => u,
                Err(reason) => {
                    let (fw, agent) = (inv.framework, inv.agent);
                    let module = &self.setup.allocator;
                    self.guard.drop_offer(|| {
                        format!("dropping an inverse offer from allocator '{module}' to {fw} for {agent}: {reason}")
                    });
                    continue;
                }
            };
            let (fw, agent) =
                (self.fw_name(inv.framework).to_owned(), self.agent_name(inv.agent).to_owned());
            let unavailability = match u.duration.into_option() {
                Some(d) => json!({"start": u.start, "duration": d}),
                None => json!({"start": u.start}),
            };
            out.emit(
                &json!({"event": "inverse_offer", "time": self.now, "framework": fw, "agent": agent,
                             "unavailability": unavailability}),
            );
            self.pending_inverse.insert((fw, agent));
        }
        out.emit(&json!({"event": "allocation_run", "time": self.now, "run": self.runs, "agents": agents.len(),
                         "offers": accepted.len(), "micros": micros}));
        self.batch = batch;
        for offer in accepted {
            self.answer_offer(&offer)?;
        }
        self.suppress_idle_frameworks()?;
        self.sample();
        Ok(())
    }

    /// Checks one offer against the host's records with the offer guard ([`allocator_host::guard`]);
    /// returns the acceptable part (if any) and queues the dropped part of offers to known
    /// frameworks and agents for recovery.
    fn guard(
        &mut self,
        offer: &Allocation,
        to_recover: &mut Vec<Allocation>,
    ) -> Option<Allocation> {
        let framework = self
            .frameworks
            .get(offer.framework.index())
            .and_then(Option::as_ref)
            .filter(|f| f.present)
            .map(|f| FrameworkView {
                active: f.active,
                roles: &f.info.roles,
                suppressed: &f.options.suppressed_roles,
            });
        let agent = self.agents.get(offer.agent.index()).filter(|a| a.present).map(|a| AgentView {
            activated: a.activated,
            total: &a.total,
            used: &a.used,
        });
        let module = &self.setup.allocator;
        match check_offer(offer, framework, agent) {
            OfferVerdict::Refuse { reason, give_back } => {
                let resources = &offer.resources;
                self.guard.drop_offer(|| {
                    format!("dropping an offer from allocator '{module}' of {resources}: {reason}")
                });
                if let Some(resources) = give_back {
                    to_recover.push(Allocation { resources, ..offer.clone() });
                }
                None
            }
            OfferVerdict::Accept { offer: ok, dropped } => {
                if let Some(dropped) = dropped {
                    let fw = self
                        .framework_names
                        .get(offer.framework.index())
                        .map_or("?", String::as_str);
                    let agent =
                        self.agents.get(offer.agent.index()).map_or("?", |a| a.info.name.as_str());
                    let role = offer.role.as_str();
                    self.guard.drop_offer(|| {
                        format!("dropping {dropped} from an offer of allocator '{module}' to {fw} under role '{role}' on {agent}: more than is free there or reserved to a role it may not receive")
                    });
                    to_recover.push(Allocation { resources: dropped, ..offer.clone() });
                }
                (!ok.is_empty()).then(|| Allocation { resources: ok, ..offer.clone() })
            }
        }
    }

    /// A simulated framework with nothing left to launch suppresses its offers, as a real
    /// framework does; `submit_task` revives it.
    fn suppress_idle_frameworks(&mut self) -> Result<(), String> {
        let idle: Vec<FrameworkId> = self
            .frameworks
            .iter()
            .flatten()
            .filter(|f| {
                f.present && f.sim.as_ref().is_some_and(|s| !s.suppressed && !s.has_pending())
            })
            .map(|f| f.info.id)
            .collect();
        for fw in idle {
            self.engine_call("suppress_offers (simulated framework is idle)", |a| {
                a.suppress_offers(fw, &[])
            })?;
            if let Some(Some(rec)) = self.frameworks.get_mut(fw.index())
                && let Some(sim) = rec.sim.as_mut()
            {
                sim.suppressed = true;
            }
            self.record_suppression(fw, &[], true);
        }
        Ok(())
    }

    /// A simulated framework answers an offer: launch what fits, decline the rest.
    fn answer_offer(&mut self, offer: &Allocation) -> Result<(), String> {
        let fw = offer.framework;
        let role = offer.role.to_string();
        let attrs = self.agents[offer.agent.index()].info.attributes.clone();
        let now = self.now;
        let interrupted = {
            let flag = self.interrupt.clone();
            move || flag.as_ref().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed) != 0)
        };
        let progress = self.progress.clone();
        let Some(Some(rec)) = self.frameworks.get_mut(fw.index()) else { return Ok(()) };
        let Some(sim) = rec.sim.as_mut() else { return Ok(()) };
        let mut remaining = offer.resources.clone();
        let mut launched: Vec<(Resources, Option<f64>)> = Vec::new();
        let limit = sim.spec.per_offer.unwrap_or(u64::MAX);
        // Trace-driven tasks first, first come first served (a task that does not fit is passed over).
        let mut i = 0;
        while i < sim.queue.len() && (launched.len() as u64) < limit {
            let t = &sim.queue[i];
            let ok = t.constraints.iter().all(|(k, values)| {
                attrs
                    .iter()
                    .any(|a| a.name.as_str() == k && values.iter().any(|v| v == a.value.as_str()))
            });
            if ok && let Some(piece) = take(&remaining, &t.resources) {
                remaining.subtract(&piece);
                let t = sim.queue.remove(i).expect("index checked");
                sim.waits.push(now - t.submitted);
                launched.push((piece, t.duration));
                continue;
            }
            i += 1;
        }
        if let Some(task) = sim.spec.resources.clone() {
            while (launched.len() as u64) < limit && sim.spec.count.is_none_or(|c| sim.launched < c)
            {
                let Some(piece) = take(&remaining, &task) else { break };
                remaining.subtract(&piece);
                sim.launched += 1;
                launched.push((piece, sim.spec.duration));
                // One offer can hold millions of small tasks: show it, and let SIGINT stop it.
                if launched.len().is_multiple_of(4096) {
                    if let Some(p) = &progress {
                        p.set_tasks(launched.len() as u64);
                    }
                    if interrupted() {
                        break;
                    }
                }
            }
        }
        let refuse = sim.spec.refuse_seconds;
        for (resources, duration) in &launched {
            let id = self.next_task;
            self.next_task += 1;
            sim.running.push(RunningTask {
                id,
                agent: offer.agent,
                role: role.clone(),
                resources: resources.clone(),
            });
            if let Some(d) = duration {
                self.finishes.insert((time_key(now + d), id), (fw, id));
            }
            self.role_stats.entry(role.clone()).or_default().tasks += 1;
        }
        for (resources, _) in &launched {
            self.engine_call("transition_offered_to_allocated", |a| {
                a.transition_offered_to_allocated(offer.agent, resources)
            })?;
        }
        if !remaining.is_empty() {
            self.ledger_remove(fw, offer.agent, &role, &remaining);
            self.engine_call("recover_resources (declined)", |a| {
                a.recover_resources(fw, offer.agent, &role, &remaining, Some(refuse))
            })?;
        }
        Ok(())
    }

    /// Applies one event (`index` is its position, for expectation events). On an error the
    /// host's records are unchanged (the allocator refused before anything was recorded).
    pub fn apply(&mut self, index: usize, op: &Op, out: &mut EventStream) -> Result<(), String> {
        match op {
            Op::AddAgent {
                agent,
                resources,
                hostname,
                capabilities,
                attributes,
                used,
                unavailability,
            } => {
                if self.agent_ids.get(agent).is_some_and(|id| self.agents[id.index()].present) {
                    return Err(format!("agent '{agent}' is already added"));
                }
                let id = *self
                    .agent_ids
                    .entry(agent.clone())
                    .or_insert(AgentId(self.agents.len() as u32));
                let info = AgentInfo {
                    id,
                    name: agent.as_str().into(),
                    hostname: hostname.as_deref().unwrap_or(agent).into(),
                    attributes: attributes.clone().into(),
                    capabilities: capabilities.unwrap_or_else(AgentCapabilities::all),
                };
                let mut allocations = Vec::new();
                for (fw_name, role, res) in used {
                    let fw = self.framework_id_or_new(fw_name);
                    let role = match role {
                        Some(r) => r.clone(),
                        None => self
                            .frameworks
                            .get(fw.index())
                            .and_then(Option::as_ref)
                            .and_then(|f| f.info.roles.first().map(|r| r.to_string()))
                            .ok_or_else(|| format!("framework '{fw_name}' is not known yet: give its used resources as {{role: resources}}"))?,
                    };
                    allocations.push(Allocation {
                        framework: fw,
                        agent: id,
                        role: role.as_str().into(),
                        resources: res.clone(),
                    });
                }
                self.engine_call("add_agent", |a| {
                    a.add_agent(&info, unavailability.as_ref(), resources, &allocations)
                })?;
                let record = AgentRecord {
                    info,
                    total: resources.clone(),
                    present: true,
                    activated: true,
                    unavailability: *unavailability,
                    used: Resources::new(),
                };
                if id.index() == self.agents.len() {
                    self.agents.push(record);
                } else {
                    self.agents[id.index()] = record;
                }
                self.cluster.add(&resources.scalar_quantities());
                for a in allocations {
                    self.ledger_add(a.framework, id, &a.role, &a.resources);
                }
                self.allocation_run(&[id], false, out)
            }
            Op::RemoveAgent(name) => {
                let id = self.agent_id(name)?;
                self.engine_call("remove_agent", |a| a.remove_agent(id))?;
                let keys: Vec<_> = self.ledger.keys().filter(|k| k.1 == id).cloned().collect();
                for (fw, a, role) in keys {
                    let held = self.held(fw, a, &role);
                    self.ledger_remove(fw, a, &role, &held);
                }
                for rec in self.frameworks.iter_mut().flatten() {
                    if let Some(sim) = rec.sim.as_mut() {
                        sim.running.retain(|t| t.agent != id);
                    }
                }
                let rec = &mut self.agents[id.index()];
                rec.present = false;
                self.cluster.subtract(&rec.total.scalar_quantities());
                Ok(())
            }
            Op::ActivateAgent(name) => {
                let id = self.agent_id(name)?;
                self.engine_call("activate_agent", |a| a.activate_agent(id))?;
                self.agents[id.index()].activated = true;
                Ok(())
            }
            Op::DeactivateAgent(name) => {
                let id = self.agent_id(name)?;
                self.engine_call("deactivate_agent", |a| a.deactivate_agent(id))?;
                self.agents[id.index()].activated = false;
                Ok(())
            }
            Op::UpdateAgent { agent, resources, capabilities, attributes } => {
                let id = self.agent_id(agent)?;
                let rec = &self.agents[id.index()];
                let mut info = rec.info.clone();
                if let Some(c) = capabilities {
                    info.capabilities = *c;
                }
                if let Some(a) = attributes {
                    info.attributes = a.clone().into();
                }
                let changed =
                    info != rec.info || resources.as_ref().is_some_and(|r| *r != rec.total);
                self.engine_call("update_agent", |a| a.update_agent(&info, resources.as_ref()))?;
                let rec = &mut self.agents[id.index()];
                rec.info = info;
                if let Some(t) = resources {
                    let old = std::mem::replace(&mut rec.total, t.clone());
                    self.cluster.subtract(&old.scalar_quantities());
                    self.cluster.add(&t.scalar_quantities());
                }
                if changed { self.allocation_run(&[id], false, out) } else { Ok(()) }
            }
            Op::AddResourceProvider { agent, resources, used } => {
                let id = self.agent_id(agent)?;
                let mut allocations = Vec::new();
                for (fw_name, role, res) in used {
                    let fw = self.framework_id(fw_name)?;
                    let role = role.clone().unwrap_or_else(|| {
                        self.frameworks[fw.index()]
                            .as_ref()
                            .and_then(|f| f.info.roles.first().map(|r| r.to_string()))
                            .unwrap_or_default()
                    });
                    allocations.push(Allocation {
                        framework: fw,
                        agent: id,
                        role: role.as_str().into(),
                        resources: res.clone(),
                    });
                }
                self.engine_call("add_resource_provider", |a| {
                    a.add_resource_provider(id, resources, &allocations)
                })?;
                let rec = &mut self.agents[id.index()];
                rec.total.add(resources);
                self.cluster.add(&resources.scalar_quantities());
                for a in allocations {
                    self.ledger_add(a.framework, id, &a.role, &a.resources);
                }
                Ok(())
            }
            Op::AddFramework {
                framework,
                roles,
                capabilities,
                active,
                used,
                suppressed_roles,
                min_allocatable,
                tasks,
            } => {
                if self.framework_id(framework).is_ok() {
                    return Err(format!("framework '{framework}' is already added"));
                }
                let id = self.framework_id_or_new(framework);
                let info = FrameworkInfo {
                    id,
                    name: framework.as_str().into(),
                    roles: roles.iter().map(|r| RString::from(r.as_str())).collect(),
                    capabilities: *capabilities,
                };
                let options = FrameworkOptions {
                    suppressed_roles: suppressed_roles
                        .iter()
                        .map(|r| RString::from(r.as_str()))
                        .collect(),
                    min_allocatable_resources: min_allocatable.clone().into(),
                };
                let mut allocations = Vec::new();
                for (agent, res) in used {
                    let agent_id = self.agent_id(agent)?;
                    allocations.push(Allocation {
                        framework: id,
                        agent: agent_id,
                        role: roles[0].as_str().into(),
                        resources: res.clone(),
                    });
                }
                self.engine_call("add_framework", |a| {
                    a.add_framework(&info, &allocations, *active, &options)
                })?;
                for a in &allocations {
                    let recorded = self.held(id, a.agent, &a.role);
                    let missing = a.resources.clone() - &recorded;
                    self.ledger_add(id, a.agent, &a.role, &missing);
                }
                let sim = tasks.clone().map(|spec| SimFramework {
                    spec,
                    launched: 0,
                    running: Vec::new(),
                    queue: VecDeque::new(),
                    submitted: 0,
                    waits: Vec::new(),
                    suppressed: false,
                });
                self.frameworks[id.index()] =
                    Some(FrameworkRecord { info, options, present: true, active: *active, sim });
                if *active {
                    let agents = self.all_agents();
                    self.allocation_run(&agents, false, out)?;
                }
                Ok(())
            }
            Op::RemoveFramework(name) => {
                let id = self.framework_id(name)?;
                self.engine_call("remove_framework", |a| a.remove_framework(id))?;
                let keys: Vec<_> = self.ledger.keys().filter(|k| k.0 == id).cloned().collect();
                for (fw, a, role) in keys {
                    let held = self.held(fw, a, &role);
                    self.ledger_remove(fw, a, &role, &held);
                }
                self.finishes.retain(|_, (f, _)| *f != id);
                if let Some(rec) = self.frameworks[id.index()].as_mut() {
                    rec.present = false;
                    if let Some(sim) = rec.sim.as_mut() {
                        sim.running.clear();
                    }
                }
                Ok(())
            }
            Op::ActivateFramework(name) => {
                let id = self.framework_id(name)?;
                self.engine_call("activate_framework", |a| a.activate_framework(id))?;
                self.set_framework_active(id, true);
                let agents = self.all_agents();
                self.allocation_run(&agents, false, out)
            }
            Op::DeactivateFramework(name) => {
                let id = self.framework_id(name)?;
                self.engine_call("deactivate_framework", |a| a.deactivate_framework(id))?;
                self.set_framework_active(id, false);
                Ok(())
            }
            Op::UpdateFramework {
                framework,
                roles,
                capabilities,
                suppressed_roles,
                min_allocatable,
            } => {
                let id = self.framework_id(framework)?;
                let rec = self.frameworks[id.index()].as_ref().expect("present");
                let mut info = rec.info.clone();
                let mut options = rec.options.clone();
                if let Some(r) = roles {
                    if r.is_empty() {
                        return Err("a framework needs at least one role".into());
                    }
                    info.roles = r.iter().map(|x| RString::from(x.as_str())).collect();
                }
                if let Some(c) = capabilities {
                    info.capabilities = *c;
                }
                if let Some(s) = suppressed_roles {
                    options.suppressed_roles =
                        s.iter().map(|x| RString::from(x.as_str())).collect();
                }
                if let Some(m) = min_allocatable {
                    options.min_allocatable_resources = m.clone().into();
                }
                self.engine_call("update_framework", |a| a.update_framework(&info, &options))?;
                let rec = self.frameworks[id.index()].as_mut().expect("present");
                rec.info = info;
                rec.options = options;
                Ok(())
            }
            Op::RecoverResources { framework, agent, resources, role, refuse_seconds } => {
                let fw = self.framework_id(framework)?;
                let agent_id = self.agent_id(agent)?;
                let roles: Vec<String> = match role {
                    Some(r) => vec![r.clone()],
                    None => self
                        .ledger
                        .keys()
                        .filter(|k| k.0 == fw && k.1 == agent_id)
                        .map(|k| k.2.clone())
                        .collect(),
                };
                let mut targets: Vec<(String, Resources)> = Vec::new();
                match resources {
                    None => {
                        for r in roles {
                            let held = self.held(fw, agent_id, &r);
                            if !held.is_empty() {
                                targets.push((r, held));
                            }
                        }
                    }
                    Some(res) => {
                        let r = roles.into_iter().find(|r| self.held(fw, agent_id, r).contains(res)).ok_or_else(|| {
                            format!("framework '{framework}' does not hold {res} on agent '{agent}'{}",
                                role.as_ref().map(|r| format!(" under role '{r}'")).unwrap_or_default())
                        })?;
                        targets.push((r, res.clone()));
                    }
                }
                for (r, res) in targets {
                    self.engine_call("recover_resources", |a| {
                        a.recover_resources(fw, agent_id, &r, &res, *refuse_seconds)
                    })?;
                    self.ledger_remove(fw, agent_id, &r, &res);
                }
                self.reconcile_tasks(fw, agent_id);
                Ok(())
            }
            Op::SuppressOffers(name, roles) => {
                let id = self.framework_id(name)?;
                let roles: Vec<RString> = roles.iter().map(|r| r.as_str().into()).collect();
                self.engine_call("suppress_offers", |a| a.suppress_offers(id, &roles))?;
                self.record_suppression(id, &roles, true);
                Ok(())
            }
            Op::ReviveOffers(name, roles) => {
                let id = self.framework_id(name)?;
                let roles: Vec<RString> = roles.iter().map(|r| r.as_str().into()).collect();
                self.engine_call("revive_offers", |a| a.revive_offers(id, &roles))?;
                self.record_suppression(id, &roles, false);
                let agents = self.all_agents();
                self.allocation_run(&agents, false, out)
            }
            Op::UpdateQuota(role, quota) => {
                self.engine_call("update_quota", |a| a.update_quota(role, quota))?;
                self.quotas.insert(role.clone(), quota.clone());
                Ok(())
            }
            Op::UpdateWeights(weights) => {
                let w: Vec<RoleWeight> = weights
                    .iter()
                    .map(|(r, w)| RoleWeight { role: r.as_str().into(), weight: *w })
                    .collect();
                self.engine_call("update_weights", |a| a.update_weights(&w))?;
                self.weights.extend(weights.iter().cloned());
                Ok(())
            }
            Op::UpdateWhitelist(hosts) => {
                let list: Option<Vec<RString>> =
                    hosts.as_ref().map(|h| h.iter().map(|x| x.as_str().into()).collect());
                self.engine_call("update_whitelist", |a| a.update_whitelist(list.as_deref()))?;
                self.whitelist = list;
                Ok(())
            }
            Op::UpdateUnavailability(agent, u) => {
                let id = self.agent_id(agent)?;
                self.engine_call("update_unavailability", |a| {
                    a.update_unavailability(id, u.as_ref())
                })?;
                self.agents[id.index()].unavailability = *u;
                self.allocation_run(&[id], false, out)
            }
            Op::UpdateInverseOffer { agent, framework, status, refuse_seconds } => {
                let (a, f) = (self.agent_id(agent)?, self.framework_id(framework)?);
                self.engine_call("update_inverse_offer", |al| {
                    al.update_inverse_offer(a, f, *status, *refuse_seconds)
                })
            }
            Op::UpdateAllocation { framework, agent, role, operations } => {
                let (f, a) = (self.framework_id(framework)?, self.agent_id(agent)?);
                let held = self.held(f, a, role);
                let mut new_held = held.clone();
                let mut total = self.agents[a.index()].total.clone();
                for op in operations {
                    let (consumed, converted) = op.conversion()?;
                    new_held = op.apply(&new_held)?;
                    total = total - &consumed + &converted;
                }
                self.engine_call("update_allocation", |al| {
                    al.update_allocation(f, a, role, operations)
                })?;
                self.ledger_remove(f, a, role, &held);
                self.ledger_add(f, a, role, &new_held);
                self.set_agent_total(a, total);
                Ok(())
            }
            Op::UpdateAvailable { agent, operations } => {
                let a = self.agent_id(agent)?;
                let mut total = self.agents[a.index()].total.clone();
                for op in operations {
                    let (consumed, converted) = op.conversion()?;
                    total = total - &consumed + &converted;
                }
                self.engine_call("update_available", |al| al.update_available(a, operations))?;
                self.set_agent_total(a, total);
                Ok(())
            }
            Op::Recover { expected_agents, quotas } => {
                self.engine_call("recover", |a| a.recover(*expected_agents, quotas))?;
                // The host's own record, as for update_quota: fallback rebuilds and the quota
                // metrics see recovered quotas too.
                for q in quotas {
                    self.quotas.insert(q.role.to_string(), q.quota.clone());
                }
                Ok(())
            }
            Op::Pause => {
                self.engine_call("pause", |a| a.pause())?;
                self.paused = true;
                Ok(())
            }
            Op::Resume => {
                self.engine_call("resume", |a| a.resume())?;
                self.paused = false;
                Ok(())
            }
            Op::SetSorters { role_sorter, framework_sorter } => {
                let Engine::Builtin(alloc) = &mut self.engine else {
                    return Err(format!(
                        "set_sorters needs the built-in allocator, not module '{}'",
                        self.setup.allocator
                    ));
                };
                let role = role_sorter.clone().unwrap_or_else(|| self.setup.role_sorter.clone());
                let fw =
                    framework_sorter.clone().unwrap_or_else(|| self.setup.framework_sorter.clone());
                let rf = self
                    .registry
                    .sorter_factory(&role, "role_sorter")
                    .map_err(|e| e.to_string())?;
                let ff = self
                    .registry
                    .sorter_factory(&fw, "framework_sorter")
                    .map_err(|e| e.to_string())?;
                alloc.replace_sorters(rf, ff)?;
                log::info!("sorters switched to role: {role}, framework: {fw}");
                self.setup.role_sorter = role;
                self.setup.framework_sorter = fw;
                Ok(())
            }
            Op::Advance(s) => self.advance(*s, out),
            Op::Tick => self.advance(self.interval, out),
            Op::SubmitTask { framework, resources, duration, constraints } => {
                let id = self.framework_id(framework)?;
                let now = self.now;
                let rec = self.frameworks[id.index()].as_mut().expect("present");
                let sim = rec.sim.as_mut().ok_or_else(|| {
                    format!("framework '{framework}' is not simulated (add it with \"tasks\")")
                })?;
                sim.submitted += 1;
                sim.queue.push_back(QueuedTask {
                    resources: resources.clone(),
                    duration: *duration,
                    constraints: constraints.clone(),
                    submitted: now,
                });
                if std::mem::take(&mut sim.suppressed) {
                    // Revived without an immediate run: the task waits for the next periodic one.
                    self.engine_call("revive_offers (simulated framework has work)", |a| {
                        a.revive_offers(id, &[])
                    })?;
                    self.record_suppression(id, &[], false);
                }
                Ok(())
            }
            Op::ExpectOffers(alternatives) => {
                let actual = std::mem::take(&mut self.pending_offers);
                let ok = alternatives.iter().any(|alt| offers_match(alt, &actual));
                let expected = if alternatives.len() == 1 {
                    offers_json(&alternatives[0])
                } else {
                    Value::Array(alternatives.iter().map(|a| offers_json(a)).collect())
                };
                let actual_json: Vec<Value> = actual
                    .iter()
                    .map(|((f, r, a), res)| json!({"framework": f, "role": r, "agent": a, "resources": res.to_string()}))
                    .collect();
                let what =
                    "offers made since the previous expect_offers (per framework, role and agent)";
                self.expectation(index, what, ok, expected, Value::Array(actual_json), out);
                Ok(())
            }
            Op::ExpectInverseOffers(alternatives) => {
                let actual = std::mem::take(&mut self.pending_inverse);
                let ok = alternatives
                    .iter()
                    .any(|alt| alt.iter().cloned().collect::<BTreeSet<_>>() == actual);
                let to_json = |l: &mut dyn Iterator<Item = &(String, String)>| -> Value {
                    Value::Array(l.map(|(f, a)| json!({"framework": f, "agent": a})).collect())
                };
                let expected = if alternatives.len() == 1 {
                    to_json(&mut alternatives[0].iter())
                } else {
                    Value::Array(alternatives.iter().map(|a| to_json(&mut a.iter())).collect())
                };
                let actual_json = to_json(&mut actual.iter());
                let what = "inverse offers made since the previous expect_inverse_offers";
                self.expectation(index, what, ok, expected, actual_json, out);
                Ok(())
            }
            Op::ExpectTasks { framework, running } => {
                let id = self.framework_id(framework)?;
                let rec = self.frameworks[id.index()].as_ref().expect("present");
                let count = rec.sim.as_ref().map_or(0, |s| s.running.len() as u64);
                let what = format!("tasks of framework '{framework}' running now");
                self.expectation(
                    index,
                    &what,
                    count == *running,
                    json!(running),
                    json!(count),
                    out,
                );
                Ok(())
            }
        }
    }

    fn expectation(
        &mut self,
        index: usize,
        what: &str,
        ok: bool,
        expected: Value,
        actual: Value,
        out: &mut EventStream,
    ) {
        out.emit(&json!({"event": "expectation", "index": index, "ok": ok, "expected": expected, "actual": actual}));
        if ok {
            self.passed += 1;
        } else {
            self.failures.push(format!(
                "scenario '{}': event {index}: expectation failed at time {}: {what}\n  expected: {}\n  actual:   {}",
                self.file,
                self.now,
                pretty(&expected),
                pretty(&actual)
            ));
        }
    }

    /// The human summary and the JSON summary event.
    /// Every run's time so far, in milliseconds.
    fn run_ms(&self) -> Vec<f64> {
        self.run_micros.iter().map(|&u| u as f64 / 1000.0).collect()
    }

    /// The metrics, flat and named as Mesos names them (`allocator/mesos/…`), plus the host's
    /// own (`allocator/guard/…`, `allocator/module_…`):
    ///
    /// * `allocator/mesos/allocation_runs`, `allocator/mesos/allocation_run_ms` (the last run)
    ///   with `/count`, `/p50`, `/p90`, `/p99`, `/max`;
    /// * `allocator/mesos/resources/<name>/total` and `/offered_or_allocated`;
    /// * `allocator/mesos/roles/<role>/shares/dominant`;
    /// * `allocator/mesos/offer_filters/roles/<role>/active` (the built-in allocator only: a
    ///   module's filters are its own);
    /// * `allocator/mesos/quota/roles/<role>/resources/<name>/guarantee`, `/limit` and
    ///   `/offered_or_allocated` (the role and its subroles) for every role with a quota.
    pub fn metrics(&self) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("allocator/mesos/allocation_runs".into(), json!(self.runs));
        allocator_host::metrics::write_timing(
            &mut m,
            "allocator/mesos/allocation_run_ms",
            &self.run_ms(),
        );
        m.insert("allocator/guard/dropped_offers".into(), json!(self.guard.dropped()));
        m.insert("allocator/module_fallbacks".into(), json!(self.fallbacks));
        m.insert(
            "allocator/module_calls_over_budget".into(),
            json!(self.registry.watchdog().over_budget().saturating_sub(self.over_budget_base)),
        );
        let mut roles: BTreeSet<&String> = self.role_stats.keys().collect();
        roles.extend(self.role_alloc.keys());
        allocator_host::metrics::write_role_metrics(
            &mut m,
            &self.cluster,
            &self.role_alloc,
            roles,
            &self.quotas,
            &self.excluded,
        );
        if let Engine::Builtin(alloc) = &self.engine {
            for (role, n) in alloc.active_offer_filters() {
                m.insert(format!("allocator/mesos/offer_filters/roles/{role}/active"), json!(n));
            }
        }
        m
    }

    /// The human summary of the run so far.
    pub fn summary_text(&self) -> String {
        self.summary().0
    }

    /// The JSON summary event (SPEC section 5) of the run so far.
    pub fn summary_event(&self) -> Value {
        self.summary().1
    }

    fn summary(&self) -> (String, Value) {
        let metrics = self.metrics();
        let [p50, p99, max] =
            allocator_host::metrics::percentiles(&self.run_ms(), [0.5, 0.99, 1.0]);
        let mut roles_json = serde_json::Map::new();
        let mut text = String::new();
        text.push_str(&format!(
            "allocator '{}' (role sorter {}, framework sorter {}), {:.1}s simulated, {} allocation runs\n",
            self.setup.allocator, self.setup.role_sorter, self.setup.framework_sorter, self.now, self.runs
        ));
        text.push_str(&format!(
            "{:<24} {:>10} {:>10} {:>8} {:>8} {:>9} {:>8} {:>8} {:>9} {:>9}\n",
            "ROLE",
            "SHARE",
            "AVG SHARE",
            "OFFERS",
            "TASKS",
            "SUBMITTED",
            "STARTED",
            "PENDING",
            "WAIT MEAN",
            "WAIT P99"
        ));
        let mut role_names: BTreeSet<&String> = self.role_stats.keys().collect();
        role_names.extend(self.role_alloc.keys());
        for role in role_names {
            let stats = self.role_stats.get(role).cloned().unwrap_or_default();
            let share = self
                .role_alloc
                .get(role)
                .map_or(0.0, |q| dominant_share(q, &self.cluster, &self.excluded));
            let avg = if self.now > 0.0 { stats.share_time / self.now } else { share };
            let (submitted, started, pending, waits) = self.trace_stats(role);
            let (mean, p99) = wait_stats(&waits);
            let mut r = json!({"dominant_share": share, "average_dominant_share": avg, "offers": stats.offers,
                               "tasks_launched": stats.tasks, "tasks_running": self.running_in_role(role)});
            if submitted > 0 {
                r["tasks_submitted"] = json!(submitted);
                r["tasks_started"] = json!(started);
                r["tasks_pending"] = json!(pending);
                r["wait_mean_seconds"] = json!(mean);
                r["wait_p99_seconds"] = json!(p99);
            }
            roles_json.insert(role.clone(), r);
            let trace = |x: u64| if submitted > 0 { x.to_string() } else { "-".into() };
            let secs = |x: f64| if submitted > 0 { format!("{x:.1}s") } else { "-".into() };
            text.push_str(&format!(
                "{:<24} {:>10.4} {:>10.4} {:>8} {:>8} {:>9} {:>8} {:>8} {:>9} {:>9}\n",
                role,
                share,
                avg,
                stats.offers,
                stats.tasks,
                trace(submitted),
                trace(started),
                trace(pending),
                secs(mean),
                secs(p99)
            ));
        }
        let mut used = Quantities::new();
        for q in self.role_alloc.values() {
            used.add(q);
        }
        let mut util = serde_json::Map::new();
        text.push_str("utilisation:");
        for total in self.cluster.iter().filter(|t| t.value.is_positive()) {
            let frac = used.get(&total.name).as_f64() / total.value.as_f64();
            let avg = if self.now > 0.0 {
                self.util_time.get(total.name.as_str()).copied().unwrap_or(0.0) / self.now
            } else {
                frac
            };
            util.insert(
                total.name.to_string(),
                json!({"allocated": used.get(&total.name).as_f64(), "total": total.value.as_f64(),
                                                         "final": frac, "average": avg}),
            );
            text.push_str(&format!(
                " {} {:.1}% (avg {:.1}%)",
                total.name,
                frac * 100.0,
                avg * 100.0
            ));
        }
        text.push('\n');
        text.push_str(&format!(
            "allocation run latency: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms\n",
            p50, p99, max
        ));
        let any_trace = self
            .frameworks
            .iter()
            .flatten()
            .any(|f| f.sim.as_ref().is_some_and(|s| s.submitted > 0));
        let fragmentation =
            if self.gpu_wait.0 > 0.0 { Some(self.gpu_wait.1 / self.gpu_wait.0) } else { None };
        if any_trace {
            match fragmentation {
                Some(f) => text.push_str(&format!(
                    "GPU fragmentation: GPU tasks waited during {:.1}s; meanwhile {:.1}% of GPUs were unallocated on average\n",
                    self.gpu_wait.0,
                    f * 100.0
                )),
                None => text.push_str("GPU fragmentation: no GPU task ever waited\n"),
            }
        }
        text.push_str(&format!(
            "expectations: {} passed, {} failed\n",
            self.passed,
            self.failures.len()
        ));
        let json = json!({"event": "summary", "time": self.now, "allocator": self.setup.allocator,
                          "role_sorter": self.setup.role_sorter, "framework_sorter": self.setup.framework_sorter,
                          "metrics": metrics, "roles": roles_json, "utilisation": util,
                          "gpu_fragmentation": {"gpu_task_wait_seconds": self.gpu_wait.0,
                                                "unallocated_gpu_share_while_waiting": fragmentation},
                          "expectations": {"passed": self.passed, "failed": self.failures.len()}});
        (text, json)
    }

    fn running_in_role(&self, role: &str) -> usize {
        self.frameworks
            .iter()
            .flatten()
            .filter_map(|f| f.sim.as_ref())
            .flat_map(|s| s.running.iter())
            .filter(|t| t.role == role)
            .count()
    }

    fn trace_stats(&self, role: &str) -> (u64, u64, u64, Vec<f64>) {
        let (mut submitted, mut pending) = (0, 0);
        let mut waits = Vec::new();
        for rec in self.frameworks.iter().flatten() {
            if rec.info.roles.first().map(RString::as_str) != Some(role) {
                continue;
            }
            if let Some(sim) = &rec.sim {
                submitted += sim.submitted;
                pending += sim.queue.len() as u64;
                waits.extend(sim.waits.iter().copied());
            }
        }
        (submitted, waits.len() as u64, pending, waits)
    }

    /// Keeps offers for `expect_offers` when events are applied one by one with
    /// [`apply`](Self::apply) (`run` decides by itself from the scenario).
    pub fn set_offer_tracking(&mut self, on: bool) {
        self.track_offers = on;
    }

    /// Agents whose allocations (the ledger's, kept per agent) exceed their total. Only a shrinking
    /// `update_agent` can make one (Mesos rule R14); allocation runs never do.
    pub fn overcommitted_agents(&self) -> Vec<AgentId> {
        self.agents
            .iter()
            .filter(|a| a.present && !a.total.contains(&a.used))
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

    /// The total of a present agent.
    pub fn agent_total(&self, agent: AgentId) -> Option<&Resources> {
        self.agents.get(agent.index()).filter(|a| a.present).map(|a| &a.total)
    }

    /// What the host's ledger records on `agent` (non-shared resources), kept incrementally as
    /// offers are recorded and resources come back.
    pub fn agent_used(&self, agent: AgentId) -> Resources {
        self.agents.get(agent.index()).map(|a| a.used.clone()).unwrap_or_default()
    }

    /// The cluster as the host records it (`GET /state` of `serve`): the allocator and sorters in
    /// use, agents, frameworks, roles (weight, quota, allocation, dominant share) and every
    /// allocation of the ledger.
    pub fn state(&self) -> Value {
        let agents: Vec<Value> = self
            .agents
            .iter()
            .filter(|a| a.present)
            .map(|a| {
                json!({"agent": a.info.name.as_str(), "hostname": a.info.hostname.as_str(),
                       "resources": a.total.to_string(), "allocated": a.used.to_string(),
                       "activated": a.activated,
                       "unavailability": a.unavailability.as_ref().map(|u| json!({"start": u.start, "duration": u.duration}))})
            })
            .collect();
        let frameworks: Vec<Value> = self
            .frameworks
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.as_ref().filter(|f| f.present).map(|f| (i, f)))
            .map(|(i, f)| {
                let roles: Vec<&str> = f.info.roles.iter().map(RString::as_str).collect();
                let mut v = json!({"framework": self.framework_names[i], "roles": roles,
                                   "active": f.active});
                if let Some(sim) = &f.sim {
                    v["tasks_running"] = json!(sim.running.len());
                    v["tasks_queued"] = json!(sim.queue.len());
                    v["suppressed"] = json!(sim.suppressed);
                }
                v
            })
            .collect();
        let mut role_names: BTreeSet<&String> = self.role_alloc.keys().collect();
        role_names.extend(self.weights.keys());
        role_names.extend(self.quotas.keys());
        let roles: Vec<Value> = role_names
            .into_iter()
            .map(|role| {
                let alloc = self.role_alloc.get(role).cloned().unwrap_or_default();
                let mut v = json!({"role": role, "weight": self.weights.get(role).copied().unwrap_or(1.0),
                                   "allocated": alloc.to_string(),
                                   "dominant_share": dominant_share(&alloc, &self.cluster, &self.excluded)});
                if let Some(q) = self.quotas.get(role) {
                    v["quota"] = json!({"guarantees": q.guarantees.to_string(), "limits": q.limits.to_string()});
                }
                v
            })
            .collect();
        let allocations: Vec<Value> = self
            .ledger
            .iter()
            .map(|((f, a, role), r)| {
                json!({"framework": self.fw_name(*f), "agent": self.agent_name(*a), "role": role,
                       "resources": r.to_string()})
            })
            .collect();
        json!({"time": self.now, "allocator": self.setup.allocator,
               "role_sorter": self.setup.role_sorter, "framework_sorter": self.setup.framework_sorter,
               "paused": self.paused, "allocation_runs": self.runs,
               "agents": agents, "frameworks": frameworks, "roles": roles, "allocations": allocations})
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
    /// later call fails with the reason.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// The current virtual time.
    pub fn now(&self) -> f64 {
        self.now
    }

    /// The number of allocation runs so far.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// Running tasks of a simulated framework.
    pub fn running_tasks(&self, framework: &str) -> Option<usize> {
        let id = self.framework_ids.get(framework)?;
        self.frameworks[id.index()].as_ref()?.sim.as_ref().map(|s| s.running.len())
    }

    /// The unweighted dominant share of a role from the host's ledger.
    pub fn role_share(&self, role: &str) -> f64 {
        self.role_alloc.get(role).map_or(0.0, |q| dominant_share(q, &self.cluster, &self.excluded))
    }

    /// The allocations the built-in allocator records (empty for modules).
    pub fn allocator_records(&self) -> Vec<Allocation> {
        match &self.engine {
            Engine::Builtin(a) => a.allocations(),
            Engine::Module(_) => Vec::new(),
        }
    }

    /// The host ledger as allocations.
    pub fn ledger(&self) -> Vec<Allocation> {
        self.ledger
            .iter()
            .map(|((f, a, r), res)| Allocation {
                framework: *f,
                agent: *a,
                role: r.as_str().into(),
                resources: res.clone(),
            })
            .collect()
    }
}

fn check_call(allocator: &str, what: &str, r: allocator_api::Result<()>) -> Result<(), String> {
    r.map_err(|e: ModuleError| {
        // Allocators often start their messages with the call's name; say it once.
        let call = what.split(' ').next().unwrap_or(what);
        let text = e.to_string();
        let reason = text.strip_prefix(call).and_then(|t| t.strip_prefix(": ")).unwrap_or(&text);
        if e.is_fault() {
            format!("allocator '{allocator}' failed in {what}: {reason}")
        } else {
            format!("the allocator refused {what}: {reason}")
        }
    })
}

/// Takes a task's resources from an offer: scalars by quantity (unreserved first, then
/// reservations, in canonical order), other resources exactly. `None` when they do not fit.
fn take(offer: &Resources, task: &Resources) -> Option<Resources> {
    let want = task.scalar_quantities();
    if !offer.scalar_quantities().contains(&want) {
        return None;
    }
    let others = task.filter(|r| !r.is_scalar());
    if !offer.contains(&others) {
        return None;
    }
    let mut piece = offer.filter(|r| !r.is_shared()).shrink(&want, false);
    if piece.scalar_quantities() != want {
        return None;
    }
    piece.add(&others);
    Some(piece)
}

pub use allocator_host::metrics::dominant_share;

fn wait_stats(waits: &[f64]) -> (f64, f64) {
    if waits.is_empty() {
        return (0.0, 0.0);
    }
    let mut w = waits.to_vec();
    w.sort_by(f64::total_cmp);
    let mean = w.iter().sum::<f64>() / w.len() as f64;
    let p99 = w[((w.len() as f64 - 1.0) * 0.99).round() as usize];
    (mean, p99)
}

fn offers_match(
    expected: &[ExpectedOffer],
    actual: &BTreeMap<(String, String, String), Resources>,
) -> bool {
    let mut want: BTreeMap<(String, String, String), Resources> = BTreeMap::new();
    for e in expected {
        want.entry((e.framework.clone(), e.role.clone(), e.agent.clone()))
            .or_default()
            .add(&e.resources);
    }
    want == *actual
}

fn offers_json(list: &[ExpectedOffer]) -> Value {
    Value::Array(
        list.iter()
            .map(|o| json!({"framework": o.framework, "role": o.role, "agent": o.agent, "resources": o.resources.to_string()}))
            .collect(),
    )
}

fn pretty(v: &Value) -> String {
    match v {
        Value::Array(items) if items.iter().all(Value::is_object) && !items.is_empty() => {
            let lines: Vec<String> = items.iter().map(|i| format!("\n    {i}")).collect();
            lines.concat()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::check_call;
    use allocator_api::ModuleError;

    #[test]
    fn a_refusal_names_the_call_once() {
        let refused = Err(ModuleError::rejected("update_quota: quota on nested role 'a/x'"));
        assert_eq!(
            check_call("hierarchical", "update_quota", refused).unwrap_err(),
            "the allocator refused update_quota: quota on nested role 'a/x'"
        );
    }

    #[test]
    fn a_refusal_without_the_call_name_is_kept_whole() {
        let refused = Err(ModuleError::rejected("no such agent"));
        assert_eq!(
            check_call("hierarchical", "recover_resources (declined)", refused).unwrap_err(),
            "the allocator refused recover_resources (declined): no such agent"
        );
    }
}
