//! The runners of the command line: a scenario or the default workload (with `serve`), a
//! plan, the soak and the import.

use super::*;

use std::path::PathBuf;

use allocator_host::registry::ModuleRegistry;
use allocator_sim::allocator_scenario::{AllocatorScenario, Op};
use allocator_sim::driver::Driver;
use allocator_sim::output::EventStream;
use allocator_sim::scenario::Document;
use allocator_sim::sorter_scenario::{SorterOverrides, SorterScenario};

/// `allocator-master plan`: forks the scenario at `--at` with and without `--change`.
pub(crate) fn run_plan(
    registry: &ModuleRegistry,
    plan: &PlanArgs,
    engine: &EngineFlags,
    flags: &AllocatorFlags,
    run: &RunFlags,
) -> Result<u8, String> {
    if !(plan.at.is_finite() && plan.at >= 0.0) {
        return Err(format!("--at must be a non-negative number of seconds, got {}", plan.at));
    }
    if run.output.is_some() || run.explain.is_some() {
        return Err("plan prints what-if offers and shares and writes no event stream or explanation: --output and --explain do not apply (--json prints the plan as JSON)".into());
    }
    let change =
        allocator_sim::plan::parse_change(&plan.change).map_err(|e| format!("--change: {e}"))?;
    let doc = match &run.scenario {
        Some(path) => Document::read(path).map_err(|e| e.to_string())?,
        None => allocator_sim::workload::default_document(flags.seed.unwrap_or(0)),
    };
    if doc.is_sorter_scenario() {
        return Err(format!(
            "plan needs an allocator scenario; '{}' is a sorter scenario",
            doc.file
        ));
    }
    let scenario = AllocatorScenario::parse(&doc).map_err(|e| e.to_string())?;
    let setup = setup(engine, flags, &scenario.config)?;
    let end = scenario_end(&scenario, setup.options.allocation_interval);
    if plan.at > end {
        eprintln!(
            "allocator-master: note: --at {} s is past the scenario's last event (at {end} s); the plan starts from the state after it",
            plan.at
        );
    }
    let history = allocator_sim::plan::history_until(&scenario, plan.at);
    let result = allocator_sim::plan::plan(registry, &setup, &history, &change)?;
    if plan.json {
        println!("{}", result.to_json());
    } else {
        print!("{}", result.to_text());
    }
    Ok(0)
}

/// The virtual time of a scenario's last event: its `advance`s and `tick`s added up.
pub(crate) fn scenario_end(scenario: &AllocatorScenario, interval: f64) -> f64 {
    scenario
        .events
        .iter()
        .map(|(_, op)| match op {
            Op::Advance(s) => *s,
            Op::Tick => interval,
            _ => 0.0,
        })
        .sum()
}

/// Where the human summary goes: stdout, unless the event stream does (`--output -`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SummaryTo {
    Stdout,
    Stderr,
}

impl SummaryTo {
    pub(crate) fn print(self, text: &str) {
        use std::io::Write;
        let line_end = if text.ends_with('\n') { "" } else { "\n" };
        let _ = match self {
            SummaryTo::Stdout => write!(std::io::stdout(), "{text}{line_end}"),
            SummaryTo::Stderr => write!(std::io::stderr(), "{text}{line_end}"),
        };
    }
}

/// Opens the event stream named by `--output` (none: no stream).
pub(crate) fn open_output(output: Option<&PathBuf>) -> Result<(EventStream, SummaryTo), String> {
    match output {
        None => Ok((EventStream::sink(), SummaryTo::Stdout)),
        Some(p) if p.as_os_str() == "-" => Ok((EventStream::stdout(), SummaryTo::Stderr)),
        Some(path) => Ok((
            EventStream::file(path)
                .map_err(|e| format!("cannot write --output '{}': {e}", path.display()))?,
            SummaryTo::Stdout,
        )),
    }
}

/// Runs an allocator scenario, the default workload, a sorter scenario, or `serve`.
pub(crate) fn run_allocation(registry: &ModuleRegistry, s: &RunSetup<'_>) -> Result<u8, String> {
    for (flag, name) in [
        ("--role_sorter", &s.engine.role_sorter),
        ("--framework_sorter", &s.engine.framework_sorter),
    ] {
        if let Some(name) = name {
            // Check the choice now so that a bad name fails before any work.
            registry
                .create_sorter(name, flag, &allocator_api::SorterConfig::default())
                .map_err(|e| e.to_string())?;
            log::info!("{flag} {name}: {}", registry.describe_sorter(name));
        }
    }
    let (mut out, summary_to) = open_output(s.run.output.as_ref())?;
    let doc = match &s.run.scenario {
        Some(path) => Document::read(path).map_err(|e| e.to_string())?,
        // A Kubernetes cluster supplies the agents and the demand: no workload of its own.
        None if s.kube.is_some() => {
            let mut root = serde_json::Map::new();
            root.insert("events".into(), serde_json::json!([]));
            Document { file: "kubernetes".into(), root }
        }
        None => allocator_sim::workload::default_document(s.allocator.seed.unwrap_or(0)),
    };
    if doc.is_sorter_scenario() {
        if s.serve.is_some() {
            return Err(format!(
                "serve needs an allocator scenario; '{}' is a sorter scenario",
                doc.file
            ));
        }
        let unused: Vec<&str> =
            [(s.report.is_some(), "--report"), (s.run.explain.is_some(), "--explain")]
                .into_iter()
                .filter_map(|(given, flag)| given.then_some(flag))
                .collect();
        if !unused.is_empty() {
            let verb = if unused.len() == 1 { "does" } else { "do" };
            return Err(format!(
                "{} {verb} not apply to a sorter scenario ('{}' drives one sorter: no allocations to draw or explain)",
                unused.join(" and "),
                doc.file
            ));
        }
        let overrides =
            SorterOverrides { seed: s.allocator.seed, excluded: excluded_flag(&s.allocator) };
        let scenario = SorterScenario::parse(&doc, &overrides).map_err(|e| e.to_string())?;
        let outcome = scenario.run(registry, &doc.file, &mut out).map_err(|e| e.to_string())?;
        for failure in &outcome.failures {
            eprintln!("{failure}");
        }
        summary_to.print(&format!(
            "sorter scenario '{}': {} expectation(s) passed, {} failed",
            doc.file,
            outcome.passed,
            outcome.failures.len()
        ));
        return Ok(if outcome.failures.is_empty() { 0 } else { EXIT_EXPECTATION_FAILED });
    }
    let scenario = AllocatorScenario::parse(&doc).map_err(|e| e.to_string())?;
    let mut setup = setup(&s.engine, &s.allocator, &scenario.config)?;
    if s.kube.is_some() {
        // Pods per node is a resource every pod asks one of; it is no share of anything.
        let excluded = &mut setup.options.fairness_excluded_resource_names;
        if !excluded.iter().any(|n| n.as_str() == allocator_kube::convert::PODS) {
            excluded.push(allocator_kube::convert::PODS.into());
        }
    }
    let mut driver = Driver::new(registry, setup, &doc.file)?;
    driver.set_interrupt(crate::interrupt::install());
    if let Some(subject) = &s.run.explain {
        driver.explain_each_run(subject);
    }
    if let Some(serve) = s.serve {
        let options = crate::serve::ServeOptions {
            listen: serve.address(),
            speed: serve.speed,
            duration: serve.duration,
            heartbeat_interval: serve.heartbeat_interval,
            auth: serve.auth.resolve()?,
            http_limits: serve.http.limits()?,
            framework_limits: serve.framework_limits()?,
            tls: serve.http.tls()?,
            work_dir: serve.registry_dir()?,
            hostname: serve.hostname.clone(),
            flags: given_flags(),
            kube: s.kube.map(KubeArgs::options).transpose()?,
        };
        driver.set_offer_tracking(
            scenario.events.iter().any(|(_, op)| {
                matches!(op, allocator_sim::allocator_scenario::Op::ExpectOffers(_))
            }),
        );
        // POST /plan forks the master by replaying what it applied; GET /explain counts offers.
        driver.keep_history();
        driver.limit_history(crate::serve::HISTORY_KEPT);
        driver.enable_explanations();
        if let Some(path) = &serve.record {
            let config = match doc.root.get("config") {
                Some(serde_json::Value::Object(c)) => c.clone(),
                _ => serde_json::Map::new(),
            };
            let recorder = allocator_sim::recording::Recorder::create(path, &config)
                .map_err(|e| format!("cannot record to '{}': {e}", path.display()))?;
            driver.record_to(recorder);
        }
        // `--weights` first: the registry's weights, restored at start, win over them.
        let weights = serve.initial_weights()?;
        if !weights.is_empty() {
            driver
                .command(&allocator_host::master::Command::UpdateWeights(weights), &mut out)
                .map_err(|e| format!("--weights: {e}"))?;
        }
        let served = crate::serve::serve(&mut driver, &scenario, &mut out, &options);
        let recorded = driver.finish_recording();
        served?;
        if let Some(signal) = crate::interrupt::requested() {
            eprintln!(
                "allocator-master: serve stopped by {} at virtual time {:.3} s",
                crate::interrupt::name(signal),
                driver.master().now()
            );
        }
        out.emit(&driver.summary_event());
        out.flush();
        summary_to.print(&driver.summary_text());
        // A recording that is incomplete is a failure of the run, said last and in the code.
        if let Err(e) = recorded {
            return Err(format!(
                "the recording '{}' is incomplete: {e}",
                serve.record.as_deref().map_or(String::new(), |p| p.display().to_string())
            ));
        }
        // Stopping by a signal is how a live master ends: a clean stop, exit code 0.
        return Ok(0);
    }
    let progress = crate::progress::Progress::start(&doc.file, "events");
    driver.set_progress(progress.counters());
    let outcome = driver.run(&scenario, &mut out).map_err(|e| e.to_string());
    progress.finish();
    let outcome = outcome?;
    if let Some(subject) = &s.run.explain {
        let master = driver.master();
        if !master.role_names().contains(subject) && master.framework_id(subject).is_err() {
            eprintln!(
                "allocator-master: warning: --explain '{subject}': the master knows no role or framework of that name (its explanations only say it has no frameworks; a typo?)"
            );
        }
    }
    if let Some(path) = s.report {
        let svg = driver.report_svg(&report_title(&scenario, &doc)).map_err(|e| e.to_string())?;
        std::fs::write(path, svg)
            .map_err(|e| format!("cannot write --report '{}': {e}", path.display()))?;
        eprintln!("report written to {}", path.display());
    }
    for failure in &outcome.failures {
        eprintln!("{failure}");
    }
    if let Some(d) = &scenario.description {
        summary_to.print(d);
    }
    summary_to.print(&outcome.summary);
    if let Some(signal) = crate::interrupt::requested() {
        eprintln!(
            "allocator-master: stopped by {} at virtual time {:.3} s; the summary covers the run so far",
            crate::interrupt::name(signal),
            driver.master().now()
        );
        return Ok(crate::interrupt::exit_code(signal));
    }
    Ok(if outcome.failures.is_empty() { 0 } else { EXIT_EXPECTATION_FAILED })
}

/// The report's title: the scenario's description's first sentence, whole (the picture wraps
/// it), or its file name.
pub(crate) fn report_title(scenario: &AllocatorScenario, doc: &Document) -> String {
    scenario
        .description
        .as_deref()
        .map_or_else(|| doc.file.clone(), |d| d.split(". ").next().unwrap_or(d).to_owned())
}

pub(crate) fn run_soak(a: &SoakArgs) -> Result<u8, String> {
    let registry = ModuleRegistry::new();
    let progress = crate::progress::Progress::start("soak", "periodic runs");
    let options = crate::soak::SoakOptions {
        agents: a.agents,
        frameworks: a.frameworks,
        runs: a.runs,
        seed: a.seed,
        interrupt: Some(crate::interrupt::install()),
        progress: Some(progress.counters()),
    };
    let r = crate::soak::run(&registry, &options);
    progress.finish();
    let r = r?;
    println!(
        "soak: {} periodic runs ({} allocation runs in all, those after churn events included), {} churn events, {:.1} s; resident memory {} KiB after setup, {} KiB at the end; {} invariant violations",
        a.runs,
        r.runs,
        r.churn_events,
        r.seconds,
        r.rss_kib.0,
        r.rss_kib.1,
        r.violations.len()
    );
    for v in &r.violations {
        println!("  {v}");
    }
    if !r.violations.is_empty() {
        return Ok(EXIT_EXPECTATION_FAILED);
    }
    if let Some(signal) = crate::interrupt::requested() {
        eprintln!(
            "allocator-master: soak stopped by {} after {} runs",
            crate::interrupt::name(signal),
            r.runs
        );
        return Ok(crate::interrupt::exit_code(signal));
    }
    Ok(0)
}

pub(crate) fn run_import(args: &ImportArgs) -> Result<u8, String> {
    let options = allocator_lab::import::ImportOptions {
        time_scale: args.time_scale,
        limit: args.limit,
        horizon: args.horizon,
        load: args.load,
        devices: args.devices,
        request: args.request,
        gangs: args.gangs,
    };
    let imported = allocator_lab::import::alibaba_gpu_v2023(&args.nodes, &args.pods, &options)?;
    for bad in &imported.bad_rows {
        eprintln!("{bad}");
    }
    let text = serde_json::to_string_pretty(&imported.scenario).map_err(|e| e.to_string())?;
    println!("{text}");
    eprintln!(
        "imported {} nodes and {} pods ({} rows skipped)",
        imported.nodes,
        imported.pods,
        imported.bad_rows.len()
    );
    Ok(0)
}
