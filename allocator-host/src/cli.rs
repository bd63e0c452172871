//! The `allocator-master` command line (SPEC section 1).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use allocator_api::{AllocatorOptions, Quantities};

use crate::allocator_scenario::{AllocatorScenario, ScenarioConfig};
use crate::output::EventStream;
use crate::registry::{BUILTIN_ALLOCATOR, BUILTIN_SORTER, ModuleRegistry};
use crate::scenario::Document;
use crate::simulation::{FailurePolicy, Setup, Simulation};
use crate::sorter_scenario::{SorterOverrides, SorterScenario};

/// Exit code: a scenario expectation failed.
pub const EXIT_EXPECTATION_FAILED: u8 = 1;
/// Exit code: bad usage, a bad manifest, a module that cannot be loaded or created, or a
/// scenario that cannot be parsed.
pub const EXIT_USAGE: u8 = 2;

/// The allocation side of a Mesos-style master: loads allocator and sorter modules, runs
/// scenarios and workloads.
#[derive(Parser, Debug, Clone)]
#[command(name = "allocator-master", version, about, long_about = None)]
pub struct Args {
    /// Module manifest: inline JSON, a path, or file:///path.
    #[arg(long = "modules", value_name = "VALUE", global = true)]
    pub modules: Option<String>,
    /// Load every manifest file in DIR, in alphabetical order.
    #[arg(long = "modules_dir", alias = "modules-dir", value_name = "DIR", global = true)]
    pub modules_dir: Option<PathBuf>,
    /// `hierarchical` (alias `HierarchicalDRF`) is the built-in; any other name is a loaded
    /// allocator module.
    #[arg(long = "allocator", value_name = "NAME", global = true)]
    pub allocator: Option<String>,
    /// Sorter for roles: `drf` (built-in) or a loaded sorter module.
    #[arg(long = "role_sorter", alias = "role-sorter", value_name = "NAME", global = true)]
    pub role_sorter: Option<String>,
    /// Sorter for frameworks inside a role; independent of --role_sorter.
    #[arg(
        long = "framework_sorter",
        alias = "framework-sorter",
        value_name = "NAME",
        global = true
    )]
    pub framework_sorter: Option<String>,
    /// Batch allocation interval, seconds (decimal).
    #[arg(
        long = "allocation_interval",
        alias = "allocation-interval",
        value_name = "SECS",
        global = true
    )]
    pub allocation_interval: Option<f64>,
    /// Mesos syntax: `cpus:0.01|mem:32` (`|` = OR of sets, `;` = AND inside a set).
    #[arg(
        long = "min_allocatable_resources",
        alias = "min-allocatable-resources",
        value_name = "SPEC",
        global = true
    )]
    pub min_allocatable_resources: Option<String>,
    /// Resource names left out of share computation (comma-separated).
    #[arg(
        long = "fair_sharing_excluded_resource_names",
        alias = "fair-sharing-excluded-resource-names",
        value_name = "a,b",
        global = true
    )]
    pub fair_sharing_excluded_resource_names: Option<String>,
    /// Only GPU_RESOURCES frameworks get offers from agents with GPUs.
    #[arg(
        long = "filter_gpu_resources",
        alias = "filter-gpu-resources",
        value_name = "BOOL",
        global = true
    )]
    pub filter_gpu_resources: Option<bool>,
    /// Seed of every random choice (agent shuffle, random sorters).
    #[arg(long = "seed", value_name = "N", global = true)]
    pub seed: Option<u64>,
    /// Run a scenario and exit.
    #[arg(long = "scenario", value_name = "FILE", global = true)]
    pub scenario: Option<PathBuf>,
    /// Write the event stream here instead of stdout.
    #[arg(long = "output", value_name = "FILE", global = true)]
    pub output: Option<PathBuf>,
    /// When a module fails (panics, returns a failure): `fallback` continues with the built-in
    /// (`hierarchical` for an allocator, `drf` for a sorter), rebuilt from the host's records;
    /// `stop` exits with the reason.
    #[arg(
        long = "on_module_failure",
        alias = "on-module-failure",
        default_value = "fallback",
        value_parser = ["fallback", "stop"],
        global = true
    )]
    pub on_module_failure: String,
    /// Report module calls slower than this many milliseconds (0: off).
    #[arg(
        long = "module_call_budget_ms",
        alias = "module-call-budget-ms",
        default_value_t = 1000.0,
        global = true
    )]
    pub module_call_budget_ms: f64,
    /// Stop the master when a module call has not returned after this many milliseconds (0: off).
    #[arg(
        long = "module_call_timeout_ms",
        alias = "module-call-timeout-ms",
        default_value_t = 30000.0,
        global = true
    )]
    pub module_call_timeout_ms: f64,
    /// Write an SVG report (dominant share per role and utilisation over time) to FILE.
    #[arg(long = "report", value_name = "FILE.svg", global = true)]
    pub report: Option<PathBuf>,
    /// Print every loaded module (name, kind, library, API version, author, description) and exit.
    #[arg(long = "list-modules", alias = "list_modules")]
    pub list_modules: bool,
    /// A subcommand; without one, run the scenario (or the embedded default workload).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum Command {
    /// Run Mesos's benchmarks against the configured (built-in or module) sorters and allocator.
    Bench(BenchArgs),
    /// Convert a cluster trace into a scenario (on stdout).
    Import(ImportArgs),
    /// Check an allocator or sorter (module or built-in) against the conformance suite.
    Conformance(ConformanceArgs),
    /// A long run with agent and framework churn, checking invariants after every run.
    Soak(SoakArgs),
    /// Run the scenario (or the embedded default workload) live, in real time, with an HTTP
    /// endpoint: GET /metrics/snapshot, GET /state, POST /quota, /weights, /sorters.
    Serve(ServeArgs),
}

/// `allocator-master serve` arguments (the run flags, `--scenario`, `--allocator`, … apply).
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// HOST:PORT to listen on; port 0 picks a free port (the address is printed on stderr).
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: String,
    /// Virtual seconds per wall-clock second.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Stop after this many wall-clock seconds and print the summary (default: run until killed).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
}

/// `allocator-master soak` arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct SoakArgs {
    /// Agents in the cluster (the default workload has about 300; 10x is 3000).
    #[arg(long, default_value_t = 3000)]
    pub agents: usize,
    /// Simulated frameworks.
    #[arg(long, default_value_t = 120)]
    pub frameworks: usize,
    /// Periodic allocation runs.
    #[arg(long, default_value_t = 100_000)]
    pub runs: u64,
    /// Seed of the workload and the churn.
    #[arg(long = "soak-seed", default_value_t = 0)]
    pub seed: u64,
}

/// `allocator-master conformance` arguments.
#[derive(clap::Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct ConformanceArgs {
    /// The allocator to check (`hierarchical` or a loaded allocator module).
    #[arg(long = "allocator", value_name = "NAME")]
    pub allocator: Option<String>,
    /// The sorter to check (`drf` or a loaded sorter module).
    #[arg(long = "sorter", value_name = "NAME")]
    pub sorter: Option<String>,
    /// Longest acceptable periodic allocation run on the 1,000-agent cluster, milliseconds.
    #[arg(long = "time-bound-ms", default_value_t = 1000.0)]
    pub time_bound_ms: f64,
}

/// `allocator-master import` arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct ImportArgs {
    /// The trace format.
    #[arg(value_parser = ["alibaba-gpu-v2023"])]
    pub format: String,
    /// The node list (`openb_node_list_all_node.csv`).
    #[arg(long, value_name = "NODES.csv")]
    pub nodes: PathBuf,
    /// The pod list (`openb_pod_list_default.csv`, …).
    #[arg(long, value_name = "PODS.csv")]
    pub pods: PathBuf,
    /// Trace seconds per simulated second (compresses the trace's time).
    #[arg(long = "time-scale", alias = "time_scale", default_value_t = 1.0, value_name = "K")]
    pub time_scale: f64,
    /// Import only the first N pods.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
}

/// `allocator-master bench` arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Which benchmark (Mesos's names): `full-sort` (sorter), `decline-offers`,
    /// `suppress-offers`, `large-and-small-quota`, `add-and-update-agent`, `memory` (peak
    /// resident memory of the decline-offers cluster and its growth over `--rounds` runs), or
    /// `all` (the matrix recorded in BENCHMARKS.md).
    #[arg(value_parser = ["full-sort", "decline-offers", "suppress-offers", "large-and-small-quota",
                          "add-and-update-agent", "memory", "all"])]
    pub benchmark: String,
    /// Agent counts (comma-separated); for large-and-small-quota, the small-role counts.
    #[arg(long, value_delimiter = ',')]
    pub agents: Vec<u32>,
    /// Client counts for full-sort, framework counts otherwise; for large-and-small-quota, the
    /// large-role counts (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub clients: Vec<u32>,
    /// Allocation runs per configuration (decline-offers: timed runs; memory: runs watched).
    #[arg(long)]
    pub rounds: Option<u32>,
    /// decline-offers: also draw ms per run against agents, one line per framework count (and
    /// subject), with a line through the origin for reference, as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// Parses the process's arguments and runs; returns the exit code.
pub fn main() -> ExitCode {
    init_logging();
    let args = Args::parse();
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("allocator-master: {message}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

fn init_logging() {
    let env = env_logger::Env::default().default_filter_or("warn");
    let _ = env_logger::Builder::from_env(env).format_timestamp_millis().try_init();
}

/// Runs with parsed arguments; `Err` is a one-line message for exit code 2.
pub fn run(args: &Args) -> Result<u8, String> {
    let mut registry = ModuleRegistry::new();
    // Every module call in every mode (factories included) runs under these.
    let positive = |v: f64| (v > 0.0).then_some(v);
    registry
        .watchdog()
        .set_limits(positive(args.module_call_budget_ms), positive(args.module_call_timeout_ms));
    registry
        .load_flags(args.modules.as_deref(), args.modules_dir.as_deref())
        .map_err(|e| format!("error loading modules: {e}"))?;
    if args.list_modules {
        print_modules(&registry);
        return Ok(0);
    }
    match &args.command {
        Some(Command::Bench(bench)) => return crate::bench_cli::run(args, bench, &registry),
        Some(Command::Import(import)) => return run_import(import),
        Some(Command::Soak(a)) => {
            let options = crate::soak::SoakOptions {
                agents: a.agents,
                frameworks: a.frameworks,
                runs: a.runs,
                seed: a.seed,
            };
            let r = crate::soak::run(&registry, &options)?;
            println!(
                "soak: {} allocation runs, {} churn events, {:.1} s; resident memory {} KiB after setup, {} KiB at the end; {} invariant violations",
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
            return Ok(if r.violations.is_empty() { 0 } else { EXIT_EXPECTATION_FAILED });
        }
        Some(Command::Conformance(c)) => {
            let (subject, checks) = match (&c.allocator, &c.sorter) {
                (Some(a), _) => (
                    format!("allocator '{a}'"),
                    crate::conformance::run_allocator_checks(&registry, a, c.time_bound_ms),
                ),
                (None, Some(s)) => {
                    (format!("sorter '{s}'"), crate::conformance::run_sorter_checks(&registry, s))
                }
                (None, None) => unreachable!("clap requires one"),
            };
            return Ok(if crate::conformance::report(&subject, &checks) {
                0
            } else {
                EXIT_EXPECTATION_FAILED
            });
        }
        Some(Command::Serve(_)) | None => {}
    }
    for (flag, name) in
        [("--role_sorter", &args.role_sorter), ("--framework_sorter", &args.framework_sorter)]
    {
        if let Some(name) = name {
            // Check the choice now so that a bad name fails before any work.
            registry
                .create_sorter(name, flag, &allocator_api::SorterConfig::default())
                .map_err(|e| e.to_string())?;
            log::info!("{flag} {name}: {}", registry.describe_sorter(name));
        }
    }
    let serving = match &args.command {
        Some(Command::Serve(s)) => Some(s),
        _ => None,
    };
    let mut out = match &args.output {
        Some(path) => EventStream::file(path)
            .map_err(|e| format!("cannot write --output '{}': {e}", path.display()))?,
        // A live master writes its event stream only where asked to.
        None if serving.is_some() => EventStream::sink(),
        None => EventStream::stdout(),
    };
    let doc = match &args.scenario {
        Some(path) => Document::read(path).map_err(|e| e.to_string())?,
        None => crate::workload::default_document(args.seed.unwrap_or(0)),
    };
    if doc.is_sorter_scenario() {
        if serving.is_some() {
            return Err(format!(
                "serve needs an allocator scenario; '{}' is a sorter scenario",
                doc.file
            ));
        }
        let overrides = SorterOverrides { seed: args.seed, excluded: excluded_flag(args) };
        let scenario = SorterScenario::parse(&doc, &overrides).map_err(|e| e.to_string())?;
        let outcome = scenario.run(&registry, &doc.file, &mut out).map_err(|e| e.to_string())?;
        for failure in &outcome.failures {
            eprintln!("{failure}");
        }
        eprintln!(
            "sorter scenario '{}': {} expectation(s) passed, {} failed",
            doc.file,
            outcome.passed,
            outcome.failures.len()
        );
        return Ok(if outcome.failures.is_empty() { 0 } else { EXIT_EXPECTATION_FAILED });
    }
    let scenario = AllocatorScenario::parse(&doc).map_err(|e| e.to_string())?;
    let setup = setup(args, &scenario.config)?;
    let mut sim = Simulation::new(&registry, setup, &doc.file)?;
    if let Some(s) = serving {
        let options = crate::serve::ServeOptions {
            listen: s.listen.clone(),
            speed: s.speed,
            duration: s.duration,
        };
        sim.start_watchdog();
        sim.set_offer_tracking(
            scenario
                .events
                .iter()
                .any(|(_, op)| matches!(op, crate::allocator_scenario::Op::ExpectOffers(_))),
        );
        crate::serve::serve(&mut sim, &scenario, &mut out, &options)?;
        eprint!("{}", sim.summary_text());
        return Ok(0);
    }
    let mut progress = Progress::new(scenario.events.len());
    let outcome = sim
        .run_with_progress(&scenario, &mut out, &mut |done, total| progress.update(done, total))
        .map_err(|e| e.to_string())?;
    progress.finish();
    if let Some(path) = &args.report {
        let title = scenario.description.as_deref().map_or_else(
            || doc.file.clone(),
            |d| {
                let first = d.split(". ").next().unwrap_or(d);
                if first.chars().count() > 80 {
                    format!("{}…", first.chars().take(80).collect::<String>())
                } else {
                    first.to_owned()
                }
            },
        );
        std::fs::write(path, sim.report_svg(&title))
            .map_err(|e| format!("cannot write --report '{}': {e}", path.display()))?;
        eprintln!("report written to {}", path.display());
    }
    for failure in &outcome.failures {
        eprintln!("{failure}");
    }
    if let Some(d) = &scenario.description {
        eprintln!("{d}");
    }
    eprint!("{}", outcome.summary);
    Ok(if outcome.failures.is_empty() { 0 } else { EXIT_EXPECTATION_FAILED })
}

fn run_import(args: &ImportArgs) -> Result<u8, String> {
    let options = crate::import::ImportOptions { time_scale: args.time_scale, limit: args.limit };
    let imported = crate::import::alibaba_gpu_v2023(&args.nodes, &args.pods, &options)?;
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

fn excluded_flag(args: &Args) -> Option<Vec<String>> {
    args.fair_sharing_excluded_resource_names
        .as_ref()
        .map(|s| s.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect())
}

/// Parses `--min_allocatable_resources` (`cpus:0.01|mem:32`).
pub fn parse_min_allocatable(text: &str) -> Result<Vec<Quantities>, String> {
    text.split('|')
        .filter(|s| !s.trim().is_empty())
        .map(|s| Quantities::parse(s).map_err(|e| format!("--min_allocatable_resources: {e}")))
        .collect()
}

/// Merges flags (which win) over the scenario's config (which wins over the defaults).
pub fn setup(args: &Args, config: &ScenarioConfig) -> Result<Setup, String> {
    let mut options = AllocatorOptions::default();
    if let Some(i) = args.allocation_interval.or(config.allocation_interval) {
        if !(i.is_finite() && i > 0.0) {
            return Err(format!(
                "--allocation_interval must be a positive number of seconds, got {i}"
            ));
        }
        options.allocation_interval = i;
    }
    if let Some(text) = &args.min_allocatable_resources {
        options.min_allocatable_resources = parse_min_allocatable(text)?.into();
    } else if let Some(m) = &config.min_allocatable_resources {
        options.min_allocatable_resources = m.clone().into();
    }
    if let Some(ex) =
        excluded_flag(args).or_else(|| config.fair_sharing_excluded_resource_names.clone())
    {
        options.fairness_excluded_resource_names = ex.iter().map(|s| s.as_str().into()).collect();
    }
    if let Some(g) = args.filter_gpu_resources.or(config.filter_gpu_resources) {
        options.filter_gpu_resources = g;
    }
    options.seed = args.seed.or(config.seed).unwrap_or(0);
    let pick = |flag: &Option<String>, cfg: &Option<String>, default: &str| {
        flag.clone().or_else(|| cfg.clone()).unwrap_or_else(|| default.to_owned())
    };
    let role_sorter = pick(&args.role_sorter, &config.role_sorter, BUILTIN_SORTER);
    let framework_sorter = pick(&args.framework_sorter, &config.framework_sorter, BUILTIN_SORTER);
    options.role_sorter = role_sorter.as_str().into();
    options.framework_sorter = framework_sorter.as_str().into();
    let on_module_failure = match args.on_module_failure.as_str() {
        "fallback" => FailurePolicy::Fallback,
        _ => FailurePolicy::Stop,
    };
    let positive = |v: f64| (v > 0.0).then_some(v);
    Ok(Setup {
        call_budget_ms: positive(args.module_call_budget_ms),
        call_timeout_ms: positive(args.module_call_timeout_ms),
        on_module_failure,
        allocator: pick(&args.allocator, &config.allocator, BUILTIN_ALLOCATOR),
        role_sorter,
        framework_sorter,
        options,
    })
}

/// A progress bar on stderr for runs longer than a second, when stderr is a terminal.
struct Progress {
    start: std::time::Instant,
    enabled: bool,
    shown: bool,
    last: std::time::Instant,
}

impl Progress {
    fn new(total: usize) -> Progress {
        use std::io::IsTerminal;
        let now = std::time::Instant::now();
        Progress {
            start: now,
            enabled: total > 0 && std::io::stderr().is_terminal(),
            shown: false,
            last: now,
        }
    }

    fn update(&mut self, done: usize, total: usize) {
        if !self.enabled
            || self.start.elapsed().as_secs_f64() < 1.0
            || self.last.elapsed().as_millis() < 100
        {
            return;
        }
        self.last = std::time::Instant::now();
        self.shown = true;
        let width = 40;
        let filled = done * width / total.max(1);
        eprint!("\r[{}{}] {done}/{total} events", "#".repeat(filled), " ".repeat(width - filled));
    }

    fn finish(&mut self) {
        if self.shown {
            eprint!("\r{}\r", " ".repeat(70));
        }
    }
}

fn print_modules(registry: &ModuleRegistry) {
    let modules: Vec<_> = registry.modules().collect();
    if modules.is_empty() {
        println!("no modules loaded (built in: allocator 'hierarchical', sorter 'drf')");
        return;
    }
    println!(
        "{:<20} {:<10} {:<8} {:<24} {:<40} DESCRIPTION",
        "NAME", "KIND", "API", "AUTHOR", "LIBRARY"
    );
    for m in modules {
        println!(
            "{:<20} {:<10} {:<8} {:<24} {:<40} {}",
            m.name,
            m.kind,
            m.api_version,
            m.author,
            m.library.display(),
            m.description
        );
    }
}
