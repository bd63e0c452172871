//! `allocator-master bench`: Mesos's benchmarks ([`crate::bench`]) for the built-in allocator
//! with its linked-in DRF sorters and, side by side in the same run, for the allocator and
//! sorters the flags name when any of them is a module (`--modules examples/modules.json
//! --role_sorter drf --framework_sorter drf` benchmarks the DRF module loaded from its `.so`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use allocator_api::{Allocator, AllocatorOptions, Sorter};

use super::{CallLimitFlags, EngineFlags, ModuleFlags};
use crate::bench;
use allocator_host::registry::{
    BUILTIN_ALLOCATOR, BUILTIN_ALLOCATOR_ALIAS, BUILTIN_SORTER, ModuleRegistry,
};

/// `allocator-master bench` arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Which benchmark (Mesos's names): `full-sort` (sorter), `decline-offers`,
    /// `suppress-offers`, `large-and-small-quota`, `add-and-update-agent`, `memory` (peak
    /// resident memory of the decline-offers cluster, and its resident memory and median run
    /// time at runs 1, 10, 100 and `--rounds`),
    /// `nothing-to-offer` (runs after every framework has filtered every agent), or `all` (the
    /// matrix recorded in BENCHMARKS.md).
    #[arg(value_parser = ["full-sort", "decline-offers", "suppress-offers", "large-and-small-quota",
                          "add-and-update-agent", "memory", "nothing-to-offer", "all"])]
    pub benchmark: String,
    /// Agent counts (comma-separated); for large-and-small-quota, the small-role counts.
    #[arg(long, value_delimiter = ',')]
    pub agents: Vec<u32>,
    /// Client counts for full-sort, framework counts otherwise; for large-and-small-quota, the
    /// large-role counts (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub clients: Vec<u32>,
    /// Allocation runs per configuration (decline-offers: timed runs, 50 by default, reported
    /// as the medians of the first 5 and the last 5; large-and-small-quota: empty runs, 5 by
    /// default; memory: runs watched, 1,000 by default).
    #[arg(long)]
    pub rounds: Option<u32>,
    /// decline-offers: also draw ms per run against agents, one line per framework count (and
    /// subject), with a line through the origin for reference, the same per agent, and (for the
    /// built-in allocator) ns per agent × framework considered, as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Where modules come from.
    #[command(flatten)]
    pub modules: ModuleFlags,
    /// The allocator and sorters measured beside the built-in ones.
    #[command(flatten)]
    pub engine: EngineFlags,
    /// The call budget and watchdog.
    #[command(flatten)]
    pub limits: CallLimitFlags,
}

/// One configuration being measured.
struct Subject<'r> {
    label: String,
    /// `None`: the built-in allocator with the DRF sorter linked into the host.
    named: Option<(String, String, String)>,
    registry: &'r ModuleRegistry,
}

impl Subject<'_> {
    fn allocator(&self) -> Result<Box<dyn Allocator>, String> {
        let Some((allocator, role, framework)) = &self.named else {
            return Ok(Box::new(bench::builtin_allocator(
                bench::linked_drf(),
                bench::linked_drf(),
            )?));
        };
        if allocator == BUILTIN_ALLOCATOR || allocator == BUILTIN_ALLOCATOR_ALIAS {
            // Isolated sorter modules: the built-in allocator runs in their worker, as the
            // master runs it.
            let options = AllocatorOptions {
                role_sorter: role.as_str().into(),
                framework_sorter: framework.as_str().into(),
                ..AllocatorOptions::default()
            };
            let hosted =
                self.registry.create_builtin_in_worker(&options).map_err(|e| e.to_string())?;
            if let Some(hosted) = hosted {
                return Ok(hosted);
            }
            let r =
                self.registry.sorter_factory(role, "--role_sorter").map_err(|e| e.to_string())?;
            let f = self
                .registry
                .sorter_factory(framework, "--framework_sorter")
                .map_err(|e| e.to_string())?;
            Ok(Box::new(bench::builtin_allocator(r, f)?))
        } else {
            self.registry
                .create_allocator_module(allocator, &AllocatorOptions::default())
                .map_err(|e| e.to_string())
        }
    }

    /// Mesos's DeclineOffers on this subject ([`bench::decline_offers`]); the built-in subject
    /// also counts the frameworks each run considered.
    fn decline_offers(
        &self,
        agents: u32,
        frameworks: u32,
        rounds: u32,
    ) -> Result<bench::DeclineRuns, String> {
        if self.named.is_none() {
            let mut a = bench::builtin_allocator(bench::linked_drf(), bench::linked_drf())?;
            return bench::decline_offers(&mut a, agents, frameworks, rounds, 1.0, |a| {
                Some(a.frameworks_considered())
            });
        }
        let mut a = self.allocator()?;
        bench::decline_offers(a.as_mut(), agents, frameworks, rounds, 1.0, |_| None)
    }

    fn sorter(&self) -> Result<Box<dyn Sorter>, String> {
        match &self.named {
            None => Ok(Box::new(drf_sorter::create(&bench::sorter_config()))),
            Some((_, role, _)) => {
                let make = self
                    .registry
                    .sorter_factory(role, "--role_sorter")
                    .map_err(|e| e.to_string())?;
                make(&bench::sorter_config())
            }
        }
    }
}

/// The built-in subject, plus the flags' configuration when it involves a module.
fn subjects<'r>(args: &EngineFlags, registry: &'r ModuleRegistry) -> Vec<Subject<'r>> {
    let mut out = vec![Subject { label: "built-in".into(), named: None, registry }];
    let allocator = args.allocator.clone().unwrap_or_else(|| BUILTIN_ALLOCATOR.into());
    let role = args.role_sorter.clone().unwrap_or_else(|| BUILTIN_SORTER.into());
    let framework = args.framework_sorter.clone().unwrap_or_else(|| BUILTIN_SORTER.into());
    let modules: Vec<&String> = [&allocator, &role, &framework]
        .into_iter()
        .filter(|n| registry.module(n).is_some())
        .collect();
    if !modules.is_empty() {
        let label = if registry.module(&allocator).is_some() {
            format!("module {allocator}")
        } else if role == framework {
            format!("module {role}")
        } else {
            format!("{role}/{framework}")
        };
        out.push(Subject { label, named: Some((allocator, role, framework)), registry });
    }
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Prints one row: the parameters, each subject's figure, and the ratio of the second to the
/// first when there are two.
fn row(params: &str, values: &[f64], unit: &str) {
    let mut line = format!("{params:<32}");
    for v in values {
        if v.is_nan() {
            line.push_str(&format!(" {:>12}", "-")); // not measured for this subject
        } else {
            line.push_str(&format!(" {v:>12.2}"));
        }
    }
    if let [a, b] = values
        && *a > 0.0
        && b.is_finite()
    {
        line.push_str(&format!(" {:>8.2}x", b / a));
    }
    println!("{line}  {unit}");
}

fn header(title: &str, subjects: &[Subject<'_>]) {
    println!();
    println!("## {title}");
    let mut line = format!("{:<32}", "");
    for s in subjects {
        line.push_str(&format!(" {:>12}", s.label));
    }
    if subjects.len() == 2 {
        line.push_str(&format!(" {:>9}", "ratio"));
    }
    println!("{line}");
}

fn or<'a>(given: &'a [u32], default: &'a [u32]) -> &'a [u32] {
    if given.is_empty() { default } else { given }
}

/// Writes the DeclineOffers curves ([`allocator_pictures::decline_offers_curve_svg`]).
fn write_curve(
    path: &std::path::Path,
    agents: &[u32],
    curves: &BTreeMap<String, Vec<f64>>,
    per_considered: &BTreeMap<String, Vec<f64>>,
    runs: &str,
) -> Result<(), String> {
    let svg = allocator_pictures::decline_offers_curve_svg(agents, curves, per_considered, runs)
        .map_err(|e| e.to_string())?;
    std::fs::write(path, svg)
        .map_err(|e| format!("cannot write --plot '{}': {e}", path.display()))?;
    eprintln!("curve written to {}", path.display());
    Ok(())
}

/// DeclineOffers runs by default: enough for the refuse filters to reach their steady state.
const DECLINE_ROUNDS: u32 = 50;

/// How many runs each DeclineOffers median covers, at the start and at the end.
const STEADY_WINDOW: usize = 5;

/// Names the first and the last `window` of `rounds` runs (`runs 1-5`, `runs 46-50`).
fn window_labels(rounds: u32, window: usize) -> (String, String) {
    let w = window as u32;
    let span = |from: u32, to: u32| {
        if from == to { format!("run {from}") } else { format!("runs {from}-{to}") }
    };
    (span(1, w), span(rounds - w + 1, rounds))
}

/// Stops a benchmark between two measurements on SIGINT/SIGTERM: what was measured is already
/// printed.
fn interrupted() -> bool {
    crate::interrupt::requested().is_some()
}

/// Runs `allocator-master bench`; SIGINT or SIGTERM stops it between measurements.
pub fn run(args: &EngineFlags, b: &BenchArgs, registry: &ModuleRegistry) -> Result<u8, String> {
    crate::interrupt::install();
    let progress = crate::progress::Progress::start("bench", "measurements");
    let counters = progress.counters();
    let mut measured = 0;
    let mut step = || {
        measured += 1;
        counters.set_done(measured, 0);
        interrupted()
    };
    let result = run_benchmarks(args, b, registry, &mut step);
    progress.finish();
    let code = result?;
    if let Some(signal) = crate::interrupt::requested() {
        eprintln!(
            "allocator-master: bench stopped by {}; the figures above were measured",
            crate::interrupt::name(signal)
        );
        return Ok(crate::interrupt::exit_code(signal));
    }
    Ok(code)
}

/// The benchmarks; `step()` is called after each measurement and returns `true` to stop.
fn run_benchmarks(
    args: &EngineFlags,
    b: &BenchArgs,
    registry: &ModuleRegistry,
    step: &mut dyn FnMut() -> bool,
) -> Result<u8, String> {
    let subjects = subjects(args, registry);
    let all = b.benchmark == "all";
    if (all || b.benchmark == "decline-offers") && decline_offers_table(b, &subjects, step)? {
        return Ok(0);
    }
    if (all || b.benchmark == "nothing-to-offer") && nothing_to_offer_table(b, &subjects, step)? {
        return Ok(0);
    }
    if (all || b.benchmark == "suppress-offers") && suppress_offers_table(b, &subjects, step)? {
        return Ok(0);
    }
    if (all || b.benchmark == "large-and-small-quota")
        && large_and_small_quota_table(b, &subjects, step)?
    {
        return Ok(0);
    }
    if (all || b.benchmark == "add-and-update-agent")
        && add_and_update_agent_table(b, &subjects, step)?
    {
        return Ok(0);
    }
    if (all || b.benchmark == "full-sort") && full_sort_table(b, &subjects, step)? {
        return Ok(0);
    }
    if b.benchmark == "memory" {
        memory_table(b, &subjects)?;
    }
    Ok(0)
}

/// `bench decline-offers`; `Ok(true)` when interrupted.
fn decline_offers_table(
    b: &BenchArgs,
    subjects: &[Subject<'_>],
    step: &mut dyn FnMut() -> bool,
) -> Result<bool, String> {
    let rounds = b.rounds.unwrap_or(DECLINE_ROUNDS).max(1);
    let window = STEADY_WINDOW.min(rounds as usize);
    let (first, last) = window_labels(rounds, window);
    header(
        &format!(
            "DeclineOffers: {rounds} allocation runs; medians of {first} (filters piling \
             up) and {last} (steady state); setup through events; peak resident memory"
        ),
        subjects,
    );
    let agent_counts = or(&b.agents, &[1000, 5000, 10_000, 20_000]);
    let mut curves: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut pair_curves: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for &agents in agent_counts {
        for &frameworks in or(&b.clients, &[100, 1000, 2000]) {
            let (mut early, mut steady, mut setup, mut peak) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let (mut per_agent, mut per_pair) = (Vec::new(), Vec::new());
            for s in subjects {
                let m = s.decline_offers(agents, frameworks, rounds)?;
                early.push(ms(m.first(window)));
                steady.push(ms(m.last(window)));
                setup.push(ms(m.setup));
                peak.push(m.peak_rss_kib as f64 / 1024.0);
                let key = format!("{}, {frameworks} fw", s.label);
                curves.entry(key.clone()).or_default().push(ms(m.last(window)));
                let considered = m.considered_last(window).map(|c| c / f64::from(agents));
                per_agent.push(considered.unwrap_or(f64::NAN));
                // Nanoseconds per (agent × framework considered) in the steady state.
                let pair = considered
                    .filter(|c| *c > 0.0)
                    .map_or(f64::NAN, |c| ms(m.last(window)) * 1e6 / (f64::from(agents) * c));
                per_pair.push(pair);
                if pair.is_finite() {
                    pair_curves.entry(key).or_default().push(pair);
                }
            }
            let params = format!("{agents} x {frameworks} fw");
            row(&format!("{params}: {first}"), &early, "ms/run");
            if first != last {
                row(&format!("{params}: {last}"), &steady, "ms/run");
            }
            row(&format!("{params}: fw considered"), &per_agent, "per agent");
            row(&format!("{params}: agent x fw"), &per_pair, "ns each");
            row(&format!("{params}: setup"), &setup, "ms");
            row(&format!("{params}: peak RSS"), &peak, "MiB");
            if step() {
                return Ok(true);
            }
        }
    }
    if let Some(path) = &b.plot {
        // Per (agent × framework considered): only curves measured at every agent count.
        pair_curves.retain(|_, v| v.len() == agent_counts.len());
        write_curve(path, agent_counts, &curves, &pair_curves, &last)?;
    }
    Ok(false)
}

/// `bench nothing-to-offer`; `Ok(true)` when interrupted.
fn nothing_to_offer_table(
    b: &BenchArgs,
    subjects: &[Subject<'_>],
    step: &mut dyn FnMut() -> bool,
) -> Result<bool, String> {
    let rounds = b.rounds.unwrap_or(20).max(1);
    header(
        &format!(
            "Nothing to offer: offers declined until a run makes none, then the median of \
             {rounds} runs"
        ),
        subjects,
    );
    for &agents in or(&b.agents, &[10_000]) {
        for &frameworks in or(&b.clients, &[50]) {
            let mut values = Vec::new();
            for s in subjects {
                let mut a = s.allocator()?;
                let m = bench::nothing_to_offer(a.as_mut(), agents, frameworks, rounds)?;
                values.push(ms(bench::median(&m.runs)));
            }
            row(&format!("{agents} agents x {frameworks} fw"), &values, "ms/run");
            if step() {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// `bench suppress-offers`; `Ok(true)` when interrupted.
fn suppress_offers_table(
    b: &BenchArgs,
    subjects: &[Subject<'_>],
    step: &mut dyn FnMut() -> bool,
) -> Result<bool, String> {
    header("SuppressOffers: median of 5 runs, a fifth more suppressed each", subjects);
    for &agents in or(&b.agents, &[1000, 10_000]) {
        for &frameworks in or(&b.clients, &[100, 1000]) {
            let mut values = Vec::new();
            for s in subjects {
                let mut a = s.allocator()?;
                let times = bench::suppress_offers(a.as_mut(), agents, frameworks)?;
                values.push(ms(bench::median(&times)));
            }
            row(&format!("{agents} agents x {frameworks} fw"), &values, "ms/run");
            if step() {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// `bench large-and-small-quota`; `Ok(true)` when interrupted.
fn large_and_small_quota_table(
    b: &BenchArgs,
    subjects: &[Subject<'_>],
    step: &mut dyn FnMut() -> bool,
) -> Result<bool, String> {
    let rounds = b.rounds.unwrap_or(5);
    header(
        &format!("LargeAndSmallQuota: a full run, then the median of {rounds} with nothing left"),
        subjects,
    );
    let small = or(&b.agents, &[25, 250, 2500]);
    let large = or(&b.clients, &[5, 50, 500]);
    for (&s_roles, &l_roles) in small.iter().zip(large) {
        let (mut full, mut empty) = (Vec::new(), Vec::new());
        let mut offers = 0;
        for s in subjects {
            let mut a = s.allocator()?;
            let r = bench::large_and_small_quota(a.as_mut(), s_roles, l_roles, rounds)?;
            full.push(ms(r.full));
            empty.push(ms(r.empty));
            offers = r.offers;
        }
        let agents = s_roles / 5 + l_roles * 5;
        let params = format!("{agents} agents x {} roles", s_roles + l_roles);
        row(&format!("{params}: full ({offers} offers)"), &full, "ms");
        row(&format!("{params}: empty"), &empty, "ms");
        if step() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `bench add-and-update-agent`; `Ok(true)` when interrupted.
fn add_and_update_agent_table(
    b: &BenchArgs,
    subjects: &[Subject<'_>],
    step: &mut dyn FnMut() -> bool,
) -> Result<bool, String> {
    header("AddAndUpdateSlave: add every agent, then update every agent", subjects);
    for &agents in or(&b.agents, &[1000, 10_000, 20_000]) {
        for &frameworks in or(&b.clients, &[100, 1000]) {
            let (mut add, mut update) = (Vec::new(), Vec::new());
            for s in subjects {
                let mut a = s.allocator()?;
                let (x, y) = bench::add_and_update_agents(a.as_mut(), agents, frameworks)?;
                add.push(ms(x));
                update.push(ms(y));
            }
            row(&format!("{agents} agents x {frameworks} fw: add"), &add, "ms");
            row(&format!("{agents} agents x {frameworks} fw: update"), &update, "ms");
            if step() {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// `bench full-sort`; `Ok(true)` when interrupted.
fn full_sort_table(
    b: &BenchArgs,
    subjects: &[Subject<'_>],
    step: &mut dyn FnMut() -> bool,
) -> Result<bool, String> {
    const REPEAT: usize = 3;
    header(
        &format!("FullSort: each phase, median of {REPEAT} runs alternating the subjects"),
        subjects,
    );
    for &agents in or(&b.agents, &[1000, 10_000, 50_000]) {
        for &clients in or(&b.clients, &[100, 1000]) {
            // runs[subject][repetition] = the phases of one run.
            let mut runs: Vec<Vec<Vec<bench::Phase>>> = vec![Vec::new(); subjects.len()];
            for _ in 0..REPEAT {
                for (k, s) in subjects.iter().enumerate() {
                    let mut sorter = s.sorter()?;
                    runs[k].push(bench::sorter_full_sort(sorter.as_mut(), agents, clients)?);
                }
            }
            for (i, phase) in runs[0][0].iter().enumerate() {
                let values: Vec<f64> = runs
                    .iter()
                    .map(|reps| {
                        let times: Vec<Duration> = reps.iter().map(|p| p[i].elapsed).collect();
                        ms(bench::median(&times))
                    })
                    .collect();
                row(&format!("{agents} x {clients}: {}", phase.name), &values, "ms");
            }
            if step() {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// `bench memory`.
fn memory_table(b: &BenchArgs, subjects: &[Subject<'_>]) -> Result<(), String> {
    // Peak memory is per process: measure one subject, the flags' one when given.
    let s = subjects.last().expect("the built-in is always there");
    let agents = or(&b.agents, &[50_000])[0];
    let frameworks = or(&b.clients, &[6000])[0];
    let runs = b.rounds.unwrap_or(1000);
    let mut samples = vec![1, 10, 100, runs];
    samples.retain(|&r| r <= runs);
    samples.dedup();
    println!(
        "Memory and time per run ({}): DeclineOffers cluster, offers given back without filters",
        s.label
    );
    let before = crate::soak::rss_kib();
    let mut a = s.allocator()?;
    eprintln!("setting up {agents} agents x {frameworks} frameworks, then {runs} runs…");
    let start = std::time::Instant::now();
    let mut progress = |run: u32| {
        if run.is_multiple_of(50) && run < runs {
            let left = start.elapsed().as_secs_f64() / f64::from(run) * f64::from(runs - run);
            eprintln!("  run {run} of {runs}, about {left:.0} s left");
        }
    };
    let (setup, points) =
        bench::steady_runs(a.as_mut(), agents, frameworks, runs, &samples, &mut progress)?;
    println!("{agents} agents x {frameworks} frameworks");
    println!("  resident before setup: {before} KiB; after setup: {setup} KiB");
    for p in points {
        println!(
            "  after run {:>6}: {} KiB; median run since the last sample {:.2} ms",
            p.run,
            p.rss_kib,
            ms(p.median_run)
        );
    }
    println!("  peak resident: {} KiB", bench::peak_rss_kib());
    Ok(())
}
