//! The `allocator-master` command line (SPEC section 1).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::output::EventStream;
use crate::registry::ModuleRegistry;
use crate::scenario::Document;
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
    #[arg(long = "modules", value_name = "VALUE")]
    pub modules: Option<String>,
    /// Load every manifest file in DIR, in alphabetical order.
    #[arg(long = "modules_dir", alias = "modules-dir", value_name = "DIR")]
    pub modules_dir: Option<PathBuf>,
    /// `hierarchical` (alias `HierarchicalDRF`) is the built-in; any other name is a loaded
    /// allocator module.
    #[arg(long = "allocator", default_value = "hierarchical", value_name = "NAME")]
    pub allocator: String,
    /// Sorter for roles: `drf` (built-in) or a loaded sorter module.
    #[arg(long = "role_sorter", alias = "role-sorter", value_name = "NAME")]
    pub role_sorter: Option<String>,
    /// Sorter for frameworks inside a role; independent of --role_sorter.
    #[arg(long = "framework_sorter", alias = "framework-sorter", value_name = "NAME")]
    pub framework_sorter: Option<String>,
    /// Batch allocation interval, seconds (decimal).
    #[arg(long = "allocation_interval", alias = "allocation-interval", value_name = "SECS")]
    pub allocation_interval: Option<f64>,
    /// Mesos syntax: `cpus:0.01|mem:32` (`|` = OR of sets, `;` = AND inside a set).
    #[arg(
        long = "min_allocatable_resources",
        alias = "min-allocatable-resources",
        value_name = "SPEC"
    )]
    pub min_allocatable_resources: Option<String>,
    /// Resource names left out of share computation (comma-separated).
    #[arg(
        long = "fair_sharing_excluded_resource_names",
        alias = "fair-sharing-excluded-resource-names",
        value_name = "a,b"
    )]
    pub fair_sharing_excluded_resource_names: Option<String>,
    /// Only GPU_RESOURCES frameworks get offers from agents with GPUs.
    #[arg(long = "filter_gpu_resources", alias = "filter-gpu-resources", value_name = "BOOL")]
    pub filter_gpu_resources: Option<bool>,
    /// Seed of every random choice (agent shuffle, random sorters).
    #[arg(long = "seed", value_name = "N")]
    pub seed: Option<u64>,
    /// Run a scenario and exit.
    #[arg(long = "scenario", value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Write the event stream here instead of stdout.
    #[arg(long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print every loaded module (name, kind, library, API version, author, description) and exit.
    #[arg(long = "list-modules", alias = "list_modules")]
    pub list_modules: bool,
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
    registry
        .load_flags(args.modules.as_deref(), args.modules_dir.as_deref())
        .map_err(|e| format!("error loading modules: {e}"))?;
    if args.list_modules {
        print_modules(&registry);
        return Ok(0);
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
    let mut out = match &args.output {
        Some(path) => EventStream::file(path)
            .map_err(|e| format!("cannot write --output '{}': {e}", path.display()))?,
        None => EventStream::stdout(),
    };
    let Some(path) = &args.scenario else {
        return Err(
            "running without --scenario needs the built-in hierarchical allocator, which is not \
                    implemented yet; run a sorter scenario with --scenario FILE"
                .into(),
        );
    };
    let doc = Document::read(path).map_err(|e| e.to_string())?;
    if doc.is_sorter_scenario() {
        let overrides = SorterOverrides {
            seed: args.seed,
            excluded: args
                .fair_sharing_excluded_resource_names
                .as_ref()
                .map(|s| s.split(',').filter(|n| !n.is_empty()).map(str::to_owned).collect()),
        };
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
    Err(format!(
        "scenario '{}': allocator scenarios need the built-in hierarchical allocator, which is not implemented yet",
        doc.file
    ))
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
