//! `allocator-master soak`: a long run with random agent and framework churn that checks the
//! invariants after every allocation run and reports memory at the start and the end. Not part
//! of the test suite (it is long by design); see BENCHMARKS.md for a recorded run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use allocator_api::FrameworkCapabilities;
use allocator_api::rng::Rng;

use allocator_host::master::Command;
use allocator_host::master::{FailurePolicy, Setup};
use allocator_host::registry::ModuleRegistry;
use allocator_sim::allocator_scenario::Op;
use allocator_sim::driver::Driver;
use allocator_sim::output::EventStream;
use allocator_sim::tasks::TaskSpec;

/// Soak parameters.
#[derive(Clone, Debug)]
pub struct SoakOptions {
    /// Agents in the cluster.
    pub agents: usize,
    /// Simulated frameworks.
    pub frameworks: usize,
    /// Periodic allocation runs to make.
    pub runs: u64,
    /// Seed of the workload and the churn.
    pub seed: u64,
    /// Stop after the current run once this is non-zero (SIGINT/SIGTERM).
    pub interrupt: Option<Arc<AtomicUsize>>,
    /// Where the runs done are reported.
    pub progress: Option<Arc<allocator_sim::progress::Counters>>,
}

/// What a soak run measured.
#[derive(Clone, Debug)]
pub struct SoakReport {
    /// Periodic allocation runs made.
    pub runs: u64,
    /// Agents and frameworks removed and re-added.
    pub churn_events: u64,
    /// Invariant violations found (none expected).
    pub violations: Vec<String>,
    /// Resident memory after setup and at the end, in KiB (0 where unavailable).
    pub rss_kib: (u64, u64),
    /// Wall time in seconds.
    pub seconds: f64,
}

/// Resident set size of this process in KiB (Linux `/proc/self/statm`; 0 elsewhere).
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()))
        .map_or(0, |pages| pages * 4)
}

fn agent_op(i: usize, rng: &mut Rng) -> Op {
    let shapes = [
        "cpus:16;mem:65536;disk:500000",
        "cpus:32;mem:131072;disk:1000000",
        "cpus:8;mem:32768;gpus:2",
    ];
    let shape = shapes[rng.below(shapes.len() as u64) as usize];
    Op::Command(Command::AddAgent {
        agent: format!("agent-{i:05}"),
        resources: shape.parse().expect("valid shape"),
        hostname: None,
        capabilities: None,
        attributes: vec![],
        used: vec![],
        unavailability: None,
    })
}

fn framework_op(i: usize, rng: &mut Rng) -> Op {
    let roles = ["services", "batch", "analytics", "ml"];
    let role = roles[i % roles.len()];
    let long = role == "services";
    let add = Command::AddFramework {
        framework: format!("fw-{i:04}"),
        roles: vec![role.into()],
        capabilities: FrameworkCapabilities::MULTI_ROLE.with(FrameworkCapabilities::GPU_RESOURCES),
        active: true,
        used: vec![],
        suppressed_roles: vec![],
        min_allocatable: vec![],
    };
    let tasks = TaskSpec {
        resources: Some(
            if role == "ml" { "cpus:2;mem:8192;gpus:1" } else { "cpus:1;mem:2048" }
                .parse()
                .expect("valid"),
        ),
        count: None,
        duration: if long { None } else { Some(5.0 + rng.below(60) as f64) },
        per_offer: Some(16),
        refuse_seconds: 2.0,
        request: 0,
        gang: false,
    };
    Op::Play { add, tasks }
}

/// Runs the soak.
pub fn run(registry: &ModuleRegistry, options: &SoakOptions) -> Result<SoakReport, String> {
    let started = Instant::now();
    let mut rng = Rng::new(options.seed);
    let mut setup = Setup { on_module_failure: FailurePolicy::Stop, ..Setup::default() };
    setup.options.seed = options.seed;
    let mut driver = Driver::new(registry, setup, "soak")?;
    let mut out = EventStream::sink();
    let mut index = 0;
    let mut apply = |driver: &mut Driver<'_>, op: Op| -> Result<(), String> {
        index += 1;
        driver.apply(index, &op, &mut out)
    };
    for i in 0..options.agents {
        apply(&mut driver, agent_op(i, &mut rng))?;
    }
    for i in 0..options.frameworks {
        apply(&mut driver, framework_op(i, &mut rng))?;
    }
    let rss_start = rss_kib();
    let mut violations = Vec::new();
    let mut churn = 0;
    let mut next_agent = options.agents;
    let mut live_agents: Vec<usize> = (0..options.agents).collect();
    let mut removed_frameworks: Vec<usize> = Vec::new();
    for run in 0..options.runs {
        // Churn: now and then an agent fails and a new one joins, a framework leaves or returns.
        if rng.below(4) == 0 && !live_agents.is_empty() {
            let k = rng.below(live_agents.len() as u64) as usize;
            let gone = live_agents.swap_remove(k);
            apply(&mut driver, Op::Command(Command::RemoveAgent(format!("agent-{gone:05}"))))?;
            apply(&mut driver, agent_op(next_agent, &mut rng))?;
            live_agents.push(next_agent);
            next_agent += 1;
            churn += 2;
        }
        if rng.below(20) == 0 {
            if let Some(f) = removed_frameworks.pop() {
                apply(&mut driver, framework_op(f, &mut rng))?;
            } else {
                let f = rng.below(options.frameworks as u64) as usize;
                apply(&mut driver, Op::Command(Command::RemoveFramework(format!("fw-{f:04}"))))?;
                removed_frameworks.push(f);
            }
            churn += 1;
        }
        apply(&mut driver, Op::Tick)?;
        if let Err(e) = driver.master().check_conservation() {
            violations.push(format!("run {run}: {e}"));
        }
        let key = |a: &allocator_api::Allocation| (a.framework, a.agent, a.role.to_string());
        let (mut ours, mut theirs) =
            (driver.master().ledger(), driver.master().allocator_records());
        ours.sort_by_key(key);
        theirs.sort_by_key(key);
        if ours != theirs {
            violations
                .push(format!("run {run}: the host's ledger and the allocator's records differ"));
        }
        if violations.len() > 20 {
            break;
        }
        if let Some(p) = &options.progress {
            p.set_done(run + 1, options.runs);
        }
        if options.interrupt.as_ref().is_some_and(|f| f.load(Ordering::Relaxed) != 0) {
            break;
        }
    }
    Ok(SoakReport {
        runs: driver.master().runs(),
        churn_events: churn,
        violations,
        rss_kib: (rss_start, rss_kib()),
        seconds: started.elapsed().as_secs_f64(),
    })
}
