//! Benchmarks mirroring Mesos's (`../shared/reference/mesos-allocator.md` section 6.1), usable
//! against any sorter or allocator, built-in or module: `allocator-master bench …` and the
//! criterion benches call these functions.

use std::time::{Duration, Instant};

use allocator_api::{
    AgentCapabilities, AgentId, AgentInfo, Allocation, Allocator, AllocatorOptions, ClientId,
    FrameworkCapabilities, FrameworkId, FrameworkInfo, FrameworkOptions, OfferBatch, RVec,
    Resources, Sorter, SorterConfig,
};

use crate::hierarchical::{HierarchicalAllocator, SorterFactory};

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

/// Mesos's `DeclineOffers`: `agents` agents of `cpus:24;mem:4096;disk:4096;ports:[31000-32000]`,
/// each with `cpus:16;mem:2014;disk:1024` plus 16 port ranges already used by a framework
/// (round-robin); every offer is declined with a refuse filter of the maximum length, and each
/// of `rounds` allocation runs is timed.
pub fn decline_offers(
    allocator: &mut dyn Allocator,
    agents: u32,
    frameworks: u32,
    rounds: u32,
    interval: f64,
) -> Result<Vec<Duration>, String> {
    let err = |e: allocator_api::ModuleError| e.to_string();
    let total: Resources =
        "cpus:24;mem:4096;disk:4096;ports:[31000-32000]".parse().map_err(|e| format!("{e}"))?;
    let used: Resources = format!("cpus:16;mem:2014;disk:1024;{}", fragmented_ports(16))
        .parse()
        .map_err(|e| format!("{e}"))?;
    for f in 0..frameworks {
        let info = FrameworkInfo {
            id: FrameworkId(f),
            name: format!("framework{f}").as_str().into(),
            roles: vec!["role1".into()].into(),
            capabilities: FrameworkCapabilities::MULTI_ROLE,
        };
        allocator.add_framework(&info, &[], true, &FrameworkOptions::default()).map_err(err)?;
    }
    for a in 0..agents {
        let info = AgentInfo {
            id: AgentId(a),
            name: format!("agent{a}").as_str().into(),
            hostname: format!("agent{a}").as_str().into(),
            attributes: RVec::new(),
            capabilities: AgentCapabilities::all(),
        };
        let holder = FrameworkId(a % frameworks.max(1));
        let u = Allocation {
            framework: holder,
            agent: AgentId(a),
            role: "role1".into(),
            resources: used.clone(),
        };
        allocator.add_agent(&info, None, &total, std::slice::from_ref(&u)).map_err(err)?;
    }
    let ids: Vec<AgentId> = (0..agents).map(AgentId).collect();
    let mut batch = OfferBatch::default();
    let mut times = Vec::new();
    let mut now = 0.0;
    for _ in 0..rounds {
        now += interval;
        allocator.set_time(now).map_err(err)?;
        batch.clear();
        let start = Instant::now();
        allocator.allocate(&ids, true, &mut batch).map_err(err)?;
        times.push(start.elapsed());
        for o in batch.offers.iter() {
            allocator
                .recover_resources(
                    o.framework,
                    o.agent,
                    &o.role,
                    &o.resources,
                    Some(f64::from(i32::MAX)),
                )
                .map_err(err)?;
        }
    }
    Ok(times)
}

/// The built-in allocator over the given sorter factories, with Mesos's benchmark options.
pub fn builtin_allocator(
    role: SorterFactory,
    framework: SorterFactory,
) -> Result<HierarchicalAllocator, String> {
    HierarchicalAllocator::new(&AllocatorOptions::default(), role, framework)
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
