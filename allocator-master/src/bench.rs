//! Benchmarks mirroring Mesos's (`../shared/reference/mesos-allocator.md` section 6.1), usable
//! against any sorter or allocator, built-in or module: `allocator-master bench …` and the
//! criterion benches call these functions.

use std::time::{Duration, Instant};

use allocator_api::{
    AgentCapabilities, AgentId, AgentInfo, Allocation, Allocator, AllocatorOptions, ClientId,
    FrameworkCapabilities, FrameworkId, FrameworkInfo, FrameworkOptions, OfferBatch, RVec,
    Resources, Sorter, SorterConfig,
};

use allocator_host::hierarchical::{HierarchicalAllocator, SorterFactory};

/// One timed phase.
#[derive(Clone, Debug)]
pub struct Phase {
    /// The phase's name (`add clients`, `full sort`, …).
    pub name: &'static str,
    /// How long it took.
    pub elapsed: Duration,
}

fn timed<T>(name: &'static str, phases: &mut Vec<Phase>, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let v = f();
    phases.push(Phase { name, elapsed: start.elapsed() });
    v
}

/// `n` port ranges fragmenting 31000-32000 (Mesos's benchmark helper).
fn fragmented_ports(n: u64) -> String {
    let step = 1000 / n.max(1);
    let ranges: Vec<String> =
        (0..n).map(|i| format!("{}-{}", 31000 + i * step, 31000 + i * step + step / 2)).collect();
    format!("ports:[{}]", ranges.join(","))
}

/// Mesos's `BENCHMARK_FullSort`: `agents` agents of `cpus:24;mem:4096;disk:4096`, one allocation
/// of `cpus:16;mem:2014;disk:1024` plus 100 port ranges per agent, round-robin over `clients`
/// clients. Returns the time of each phase.
pub fn sorter_full_sort(
    sorter: &mut dyn Sorter,
    agents: u32,
    clients: u32,
) -> Result<Vec<Phase>, String> {
    let err = |e: allocator_api::ModuleError| e.to_string();
    let mut phases = Vec::new();
    let total: Resources = "cpus:24;mem:4096;disk:4096".parse().map_err(|e| format!("{e}"))?;
    let quantities = total.scalar_quantities();
    let allocation: Resources = format!("cpus:16;mem:2014;disk:1024;{}", fragmented_ports(100))
        .parse()
        .map_err(|e| format!("{e}"))?;
    timed("add clients", &mut phases, || -> Result<(), String> {
        for c in 0..clients {
            sorter.add(ClientId(c), &format!("client{c}")).map_err(err)?;
            sorter.activate(ClientId(c)).map_err(err)?;
        }
        Ok(())
    })?;
    timed("add agents", &mut phases, || -> Result<(), String> {
        for a in 0..agents {
            sorter.add_agent(AgentId(a), &quantities).map_err(err)?;
        }
        Ok(())
    })?;
    timed("add allocations", &mut phases, || -> Result<(), String> {
        for a in 0..agents {
            sorter.allocated(ClientId(a % clients.max(1)), AgentId(a), &allocation).map_err(err)?;
        }
        Ok(())
    })?;
    let mut out = RVec::with_capacity(clients as usize);
    timed("full sort", &mut phases, || sorter.sort(&mut out)).map_err(err)?;
    timed("no-op sort", &mut phases, || sorter.sort(&mut out)).map_err(err)?;
    timed("remove allocations", &mut phases, || -> Result<(), String> {
        for a in 0..agents {
            sorter
                .unallocated(ClientId(a % clients.max(1)), AgentId(a), &allocation)
                .map_err(err)?;
        }
        Ok(())
    })?;
    timed("remove agents", &mut phases, || -> Result<(), String> {
        for a in 0..agents {
            sorter.remove_agent(AgentId(a)).map_err(err)?;
        }
        Ok(())
    })?;
    timed("remove clients", &mut phases, || -> Result<(), String> {
        for c in 0..clients {
            sorter.remove(ClientId(c)).map_err(err)?;
        }
        Ok(())
    })?;
    Ok(phases)
}

/// What [`decline_offers`] measured.
#[derive(Clone, Debug)]
pub struct DeclineRuns {
    /// Building the cluster through the allocator's events (`add_framework`, `add_agent`).
    pub setup: Duration,
    /// Each allocation run, in order.
    pub runs: Vec<Duration>,
    /// Resident memory of the process when the measurement started, KiB (0 where unknown).
    pub rss_before_kib: u64,
    /// Peak resident memory of the process during the measurement, KiB (0 where unknown): the
    /// peak is reset at the start where the kernel allows it (see [`reset_peak_rss`]), so this
    /// is the peak of this measurement, not of the process's whole life.
    pub peak_rss_kib: u64,
    /// The frameworks each run's walks considered (filtered or granted), in order; empty where
    /// the allocator does not count them (only the built-in one does:
    /// [`HierarchicalAllocator::frameworks_considered`]).
    pub considered: Vec<u64>,
}

impl DeclineRuns {
    /// The median of the first `n` runs (the transient: refuse filters piling up).
    pub fn first(&self, n: usize) -> Duration {
        median(&self.runs[..n.min(self.runs.len())])
    }

    /// The median of the last `n` runs (the steady state).
    pub fn last(&self, n: usize) -> Duration {
        median(&self.runs[self.runs.len().saturating_sub(n)..])
    }

    /// The mean number of frameworks considered per run over the last `n` runs; `None` when not
    /// counted.
    pub fn considered_last(&self, n: usize) -> Option<f64> {
        let tail = &self.considered[self.considered.len().saturating_sub(n)..];
        (!tail.is_empty()).then(|| tail.iter().sum::<u64>() as f64 / tail.len() as f64)
    }
}

/// Mesos's `DeclineOffers`: `agents` agents of `cpus:24;mem:4096;disk:4096;ports:[31000-32000]`,
/// each with `cpus:16;mem:2014;disk:1024` plus 16 port ranges already used by a framework
/// (round-robin); every offer is declined with a refuse filter of the maximum length, and each
/// of `rounds` allocation runs is timed, as is the setup. Peak resident memory is reset before
/// the setup and read after the last run. `considered` reads the allocator's running count of
/// frameworks considered ([`HierarchicalAllocator::frameworks_considered`]; `None` where it
/// has none), read around each run.
pub fn decline_offers<A: Allocator + ?Sized>(
    allocator: &mut A,
    agents: u32,
    frameworks: u32,
    rounds: u32,
    interval: f64,
    considered: impl Fn(&A) -> Option<u64>,
) -> Result<DeclineRuns, String> {
    let err = |e: allocator_api::ModuleError| e.to_string();
    reset_peak_rss();
    let rss_before_kib = crate::soak::rss_kib();
    let start = Instant::now();
    let ids = decline_offers_cluster(allocator, agents, frameworks)?;
    let setup = start.elapsed();
    let mut batch = OfferBatch::default();
    let mut runs = Vec::new();
    let mut counts = Vec::new();
    let mut now = 0.0;
    for _ in 0..rounds {
        now += interval;
        allocator.set_time(now).map_err(err)?;
        batch.clear();
        let before = considered(allocator);
        let start = Instant::now();
        allocator.allocate(&ids, true, &mut batch).map_err(err)?;
        runs.push(start.elapsed());
        if let (Some(b), Some(a)) = (before, considered(allocator)) {
            counts.push(a - b);
        }
        give_back(allocator, &batch, Some(f64::from(i32::MAX)))?;
    }
    Ok(DeclineRuns {
        setup,
        runs,
        rss_before_kib,
        peak_rss_kib: peak_rss_kib(),
        considered: counts,
    })
}

/// What [`nothing_to_offer`] measured.
#[derive(Clone, Debug)]
pub struct FilteredRuns {
    /// The `DeclineOffers` rounds it took until a run made no offer (every agent filtered by
    /// every framework).
    pub rounds_to_filter: u32,
    /// Each timed run after that, in order (none of them made an offer).
    pub runs: Vec<Duration>,
}

/// A run with nothing to offer: the `DeclineOffers` cluster, whose offers are declined with
/// the longest refuse filter until a run makes no offer at all (every framework has filtered
/// every agent; at most `10 × frameworks + 10` rounds), then `runs` periodic runs timed. An
/// error if the cluster never gets there or a timed run makes an offer.
pub fn nothing_to_offer(
    allocator: &mut dyn Allocator,
    agents: u32,
    frameworks: u32,
    runs: u32,
) -> Result<FilteredRuns, String> {
    let err = |e: allocator_api::ModuleError| e.to_string();
    let ids = decline_offers_cluster(allocator, agents, frameworks)?;
    let mut batch = OfferBatch::default();
    let mut now = 0.0;
    let mut rounds_to_filter = 0;
    loop {
        if rounds_to_filter > 10 * frameworks + 10 {
            return Err(format!("offers still made after {rounds_to_filter} declining rounds"));
        }
        now += 1.0;
        allocator.set_time(now).map_err(err)?;
        batch.clear();
        allocator.allocate(&ids, true, &mut batch).map_err(err)?;
        if batch.offers.is_empty() {
            break;
        }
        give_back(allocator, &batch, Some(f64::from(i32::MAX)))?;
        rounds_to_filter += 1;
    }
    let mut times = Vec::new();
    for _ in 0..runs {
        now += 1.0;
        allocator.set_time(now).map_err(err)?;
        batch.clear();
        let start = Instant::now();
        allocator.allocate(&ids, true, &mut batch).map_err(err)?;
        times.push(start.elapsed());
        if !batch.offers.is_empty() {
            return Err(format!("a run after {rounds_to_filter} declining rounds made offers"));
        }
    }
    Ok(FilteredRuns { rounds_to_filter, runs: times })
}

fn framework(id: u32, role: &str) -> FrameworkInfo {
    FrameworkInfo {
        id: FrameworkId(id),
        name: format!("framework{id}").as_str().into(),
        roles: vec![role.into()].into(),
        capabilities: FrameworkCapabilities::MULTI_ROLE,
    }
}

fn agent(id: u32) -> AgentInfo {
    AgentInfo {
        id: AgentId(id),
        name: format!("agent{id}").as_str().into(),
        hostname: format!("agent{id}").as_str().into(),
        attributes: RVec::new(),
        capabilities: AgentCapabilities::all(),
    }
}

fn parse(text: &str) -> Result<Resources, String> {
    text.parse().map_err(|e| format!("{e}"))
}

/// Gives every offer of `batch` back, with a refuse filter of `refuse_seconds` (`None`: none).
fn give_back<A: Allocator + ?Sized>(
    allocator: &mut A,
    batch: &OfferBatch,
    refuse_seconds: Option<f64>,
) -> Result<(), String> {
    for o in batch.offers.iter() {
        allocator
            .recover_resources(o.framework, o.agent, &o.role, &o.resources, refuse_seconds)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Adds `count` active frameworks (ids 0..count) subscribed to `role`.
fn add_frameworks<A: Allocator + ?Sized>(
    allocator: &mut A,
    count: u32,
    role: &str,
) -> Result<(), String> {
    for f in 0..count {
        allocator
            .add_framework(&framework(f, role), &[], true, &FrameworkOptions::default())
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Adds `agents` agents of `total`, each with `used` already held in `role1` by one of the
/// `frameworks` frameworks, round-robin.
fn add_agents_in_use<A: Allocator + ?Sized>(
    allocator: &mut A,
    agents: u32,
    frameworks: u32,
    total: &Resources,
    used: &Resources,
) -> Result<(), String> {
    for a in 0..agents {
        let u = Allocation {
            framework: FrameworkId(a % frameworks.max(1)),
            agent: AgentId(a),
            role: "role1".into(),
            resources: used.clone(),
        };
        allocator
            .add_agent(&agent(a), None, total, std::slice::from_ref(&u))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The `DeclineOffers` cluster: `frameworks` frameworks in `role1`, `agents` agents of
/// `cpus:24;mem:4096;disk:4096;ports:[31000-32000]` with `cpus:16;mem:2014;disk:1024` and 16
/// port ranges used (round-robin over the frameworks).
pub fn decline_offers_cluster<A: Allocator + ?Sized>(
    allocator: &mut A,
    agents: u32,
    frameworks: u32,
) -> Result<Vec<AgentId>, String> {
    let total = parse("cpus:24;mem:4096;disk:4096;ports:[31000-32000]")?;
    let used = parse(&format!("cpus:16;mem:2014;disk:1024;{}", fragmented_ports(16)))?;
    add_frameworks(allocator, frameworks, "role1")?;
    add_agents_in_use(allocator, agents, frameworks, &total, &used)?;
    Ok((0..agents).map(AgentId).collect())
}

/// Mesos's `SuppressOffers`: the `DeclineOffers` cluster; in each of 5 rounds another fifth of
/// the frameworks suppresses its offers, then one allocation run is timed. Offers are given back
/// without a filter, so every run offers every agent again, to whoever is not suppressed (the
/// last run has no one to offer to).
pub fn suppress_offers(
    allocator: &mut dyn Allocator,
    agents: u32,
    frameworks: u32,
) -> Result<Vec<Duration>, String> {
    let err = |e: allocator_api::ModuleError| e.to_string();
    let ids = decline_offers_cluster(allocator, agents, frameworks)?;
    let mut batch = OfferBatch::default();
    let mut times = Vec::new();
    let step = frameworks.div_ceil(5).max(1);
    for round in 0..5u32 {
        for f in (round * step)..((round + 1) * step).min(frameworks) {
            allocator.suppress_offers(FrameworkId(f), &[]).map_err(err)?;
        }
        allocator.set_time(f64::from(round + 1)).map_err(err)?;
        batch.clear();
        let start = Instant::now();
        allocator.allocate(&ids, true, &mut batch).map_err(err)?;
        times.push(start.elapsed());
        give_back(allocator, &batch, Some(0.0))?;
    }
    Ok(times)
}

/// What [`large_and_small_quota`] measured.
#[derive(Clone, Debug)]
pub struct QuotaRuns {
    /// The first run, which allocates every agent.
    pub full: Duration,
    /// The runs right after, with nothing left to allocate (median).
    pub empty: Duration,
    /// Offers made by the first run.
    pub offers: usize,
}

/// Mesos's `LargeAndSmallQuota`: `small` roles with quota `cpus:1;mem:1024;disk:1024` and
/// `large` roles with quota `cpus:4;mem:4096;disk:4096` (guarantee = limit), one framework per
/// role, `small / 5 + large * 5` agents of `cpus:2;mem:2048;disk:2048`; times one allocation run
/// (everything is offered) and the median of the next `empty_runs` (nothing left).
pub fn large_and_small_quota(
    allocator: &mut dyn Allocator,
    small: u32,
    large: u32,
    empty_runs: u32,
) -> Result<QuotaRuns, String> {
    let err = |e: allocator_api::ModuleError| e.to_string();
    let quantities = |t: &str| -> Result<allocator_api::Quantities, String> {
        t.parse().map_err(|e| format!("{e}"))
    };
    let small_quota = quantities("cpus:1;mem:1024;disk:1024")?;
    let large_quota = quantities("cpus:4;mem:4096;disk:4096")?;
    let roles: Vec<(String, &allocator_api::Quantities)> = (0..small)
        .map(|i| (format!("quota_small_{i}"), &small_quota))
        .chain((0..large).map(|i| (format!("quota_large_{i}"), &large_quota)))
        .collect();
    for (role, q) in &roles {
        let quota = allocator_api::Quota { guarantees: (*q).clone(), limits: (*q).clone() };
        allocator.update_quota(role, &quota).map_err(err)?;
    }
    for (i, (role, _)) in roles.iter().enumerate() {
        allocator
            .add_framework(&framework(i as u32, role), &[], true, &FrameworkOptions::default())
            .map_err(err)?;
    }
    let total = parse("cpus:2;mem:2048;disk:2048")?;
    let agents = small / 5 + large * 5;
    for a in 0..agents {
        allocator.add_agent(&agent(a), None, &total, &[]).map_err(err)?;
    }
    let ids: Vec<AgentId> = (0..agents).map(AgentId).collect();
    let mut batch = OfferBatch::default();
    allocator.set_time(1.0).map_err(err)?;
    let start = Instant::now();
    allocator.allocate(&ids, true, &mut batch).map_err(err)?;
    let full = start.elapsed();
    let offers = batch.offers.len();
    let mut empty = Vec::new();
    for run in 0..empty_runs.max(1) {
        allocator.set_time(f64::from(run + 2)).map_err(err)?;
        batch.clear();
        let start = Instant::now();
        allocator.allocate(&ids, true, &mut batch).map_err(err)?;
        empty.push(start.elapsed());
    }
    Ok(QuotaRuns { full, empty: median(&empty), offers })
}

/// Mesos's `AddAndUpdateSlave`: `frameworks` frameworks in `role1`; times adding `agents` agents
/// of `cpus:2;mem:1024;disk:4096;ports:[31000-32000]` with `cpus:1;mem:128;disk:1024` and 16 port
/// ranges in use, then updating each to add `cpus(*){revocable}:10`. Returns both phases.
pub fn add_and_update_agents(
    allocator: &mut dyn Allocator,
    agents: u32,
    frameworks: u32,
) -> Result<(Duration, Duration), String> {
    let err = |e: allocator_api::ModuleError| e.to_string();
    add_frameworks(allocator, frameworks, "role1")?;
    let total = parse("cpus:2;mem:1024;disk:4096;ports:[31000-32000]")?;
    let used = parse(&format!("cpus:1;mem:128;disk:1024;{}", fragmented_ports(16)))?;
    let start = Instant::now();
    add_agents_in_use(allocator, agents, frameworks, &total, &used)?;
    let add = start.elapsed();
    let updated = total + &parse("cpus{revocable}:10")?;
    let start = Instant::now();
    for a in 0..agents {
        allocator.update_agent(&agent(a), Some(&updated)).map_err(err)?;
    }
    Ok((add, start.elapsed()))
}

/// One sample of [`steady_runs`].
#[derive(Clone, Copy, Debug)]
pub struct SteadyPoint {
    /// The run after which it was taken (1-based).
    pub run: u32,
    /// Resident memory then, KiB (0 where unknown).
    pub rss_kib: u64,
    /// The median allocation run since the previous sample (this sample's run included).
    pub median_run: Duration,
}

/// Steady state for memory and time: the `DeclineOffers` cluster, `runs` allocation runs whose
/// offers are all given back without a filter (so every run does the same work). Returns the
/// resident memory (KiB) after setup, and a [`SteadyPoint`] after each run in `samples`.
pub fn steady_runs(
    allocator: &mut dyn Allocator,
    agents: u32,
    frameworks: u32,
    runs: u32,
    samples: &[u32],
    on_run: &mut dyn FnMut(u32),
) -> Result<(u64, Vec<SteadyPoint>), String> {
    let err = |e: allocator_api::ModuleError| e.to_string();
    let ids = decline_offers_cluster(allocator, agents, frameworks)?;
    let after_setup = crate::soak::rss_kib();
    let mut batch = OfferBatch::default();
    let mut out = Vec::new();
    let mut since_sample = Vec::new();
    for run in 1..=runs {
        allocator.set_time(f64::from(run)).map_err(err)?;
        batch.clear();
        let start = Instant::now();
        allocator.allocate(&ids, true, &mut batch).map_err(err)?;
        since_sample.push(start.elapsed());
        give_back(allocator, &batch, Some(0.0))?;
        on_run(run);
        if samples.contains(&run) {
            let median_run = median(&since_sample);
            since_sample.clear();
            out.push(SteadyPoint { run, rss_kib: crate::soak::rss_kib(), median_run });
        }
    }
    Ok((after_setup, out))
}

/// Peak resident memory of this process so far, KiB (`VmHWM`; 0 where unknown).
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Resets this process's peak resident memory (`VmHWM`) to its current resident memory, so
/// that [`peak_rss_kib`] reports the peak of what follows (Linux `clear_refs`, value 5).
/// Returns `false` where that is not possible; the peak then covers the process's whole life.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The built-in allocator over the given sorter factories, with Mesos's benchmark options.
pub fn builtin_allocator(
    role: SorterFactory,
    framework: SorterFactory,
) -> Result<HierarchicalAllocator, String> {
    HierarchicalAllocator::new(&AllocatorOptions::default(), role, framework)
}

/// The DRF sorter linked into the host (not loaded from its `.so`), as a factory.
pub fn linked_drf() -> SorterFactory {
    Box::new(|c: &SorterConfig| Ok(Box::new(drf_sorter::create(c)) as Box<dyn Sorter>))
}

/// The median of some durations.
pub fn median(times: &[Duration]) -> Duration {
    let mut t = times.to_vec();
    t.sort();
    t.get(t.len() / 2).copied().unwrap_or_default()
}

/// The default sorter configuration for benchmarks.
pub fn sorter_config() -> SorterConfig {
    SorterConfig::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(ms: &[u64]) -> DeclineRuns {
        DeclineRuns {
            setup: Duration::ZERO,
            runs: ms.iter().map(|&m| Duration::from_millis(m)).collect(),
            rss_before_kib: 0,
            peak_rss_kib: 0,
            considered: Vec::new(),
        }
    }

    #[test]
    fn decline_offers_reports_the_first_and_the_last_runs_separately() {
        let m = runs(&[1, 2, 3, 100, 100, 100, 9, 8, 7]);
        assert_eq!(m.first(3), Duration::from_millis(2));
        assert_eq!(m.last(3), Duration::from_millis(8));
    }

    #[test]
    fn a_window_longer_than_the_runs_covers_them_all() {
        let m = runs(&[4, 1, 9]);
        assert_eq!(m.first(5), Duration::from_millis(4));
        assert_eq!(m.last(5), Duration::from_millis(4));
    }

    #[test]
    fn decline_offers_counts_one_framework_per_agent_first_and_none_once_all_are_blocked() {
        let mut a = builtin_allocator(linked_drf(), linked_drf()).unwrap();
        let m = decline_offers(&mut a, 20, 4, 8, 1.0, |a| Some(a.frameworks_considered())).unwrap();
        // Run 1: the first framework in order takes each agent.
        assert_eq!(m.considered[0], 20);
        // After 4 declining runs every framework has filtered every agent: the walk that finds
        // so records the role as blocked, and later runs skip it without considering anyone.
        assert!(m.considered[4..].iter().any(|&c| c >= 20 * 4), "{:?}", m.considered);
        assert_eq!(*m.considered.last().unwrap(), 0, "{:?}", m.considered);
    }

    #[test]
    fn nothing_to_offer_times_runs_after_every_agent_is_filtered() {
        let mut a = builtin_allocator(linked_drf(), linked_drf()).unwrap();
        let m = nothing_to_offer(&mut a, 20, 3, 4).unwrap();
        assert_eq!(m.runs.len(), 4);
        assert!(m.rounds_to_filter >= 3, "each framework declines each agent once");
    }

    #[test]
    fn decline_offers_measures_every_round_the_setup_and_the_peak_memory() {
        let mut a = builtin_allocator(linked_drf(), linked_drf()).unwrap();
        let m = decline_offers(&mut a, 20, 4, 7, 1.0, |a| Some(a.frameworks_considered())).unwrap();
        assert_eq!(m.runs.len(), 7);
        assert_eq!(m.considered.len(), 7);
        assert!(m.setup > Duration::ZERO);
        if cfg!(target_os = "linux") {
            assert!(m.peak_rss_kib >= m.rss_before_kib && m.peak_rss_kib > 0);
        }
    }
}
