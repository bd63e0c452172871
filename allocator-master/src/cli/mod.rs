//! The `allocator-master` command line (SPEC section 1); [`mod@bench`]: the `bench`
//! subcommand.

pub mod bench;

pub mod experiment;
mod http_flags;
pub use http_flags::HttpFlags;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use allocator_api::{AllocatorOptions, Quantities};

use crate::allocator_scenario::{AllocatorScenario, Op, ScenarioConfig};
use crate::driver::Driver;
use crate::output::EventStream;
use crate::scenario::Document;
use crate::sorter_scenario::{SorterOverrides, SorterScenario};
use allocator_host::master::DEFAULT_RESTART_LIMIT;
use allocator_host::master::{FailurePolicy, Setup};
use allocator_host::registry::{BUILTIN_ALLOCATOR, BUILTIN_SORTER, ModuleRegistry};

/// Exit code: a scenario expectation failed.
pub const EXIT_EXPECTATION_FAILED: u8 = 1;
/// Exit code: bad usage, a bad manifest, a module that cannot be loaded or created, or a
/// scenario that cannot be parsed.
pub const EXIT_USAGE: u8 = 2;

/// The allocation side of a Mesos-style master: loads allocator and sorter modules, runs
/// scenarios and workloads.
///
/// Flags are Mesos's snake_case names; each is also accepted in kebab case
/// (`--role-sorter`).
#[derive(Parser, Debug, Clone)]
#[command(name = "allocator-master", version, about, long_about = None)]
pub struct Args {
    /// Where modules come from.
    #[command(flatten)]
    pub modules: ModuleFlags,
    /// The allocator and its sorters.
    #[command(flatten)]
    pub engine: EngineFlags,
    /// Allocator options and fault containment.
    #[command(flatten)]
    pub allocator: AllocatorFlags,
    /// The scenario and the event stream.
    #[command(flatten)]
    pub run: RunFlags,
    /// Write an SVG report (dominant share per role and utilisation over time) to FILE.
    #[arg(long = "report", value_name = "FILE.svg")]
    pub report: Option<PathBuf>,
    /// Print every loaded module (name, kind, library, API version, author, description) and exit.
    #[arg(long = "list_modules", alias = "list-modules")]
    pub list_modules: bool,
    /// A subcommand; without one, run the scenario (or the embedded default workload).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `--modules` and `--modules_dir` (SPEC section 2).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ModuleFlags {
    /// Module manifest: inline JSON, a path, or file:///path.
    #[arg(long = "modules", value_name = "VALUE")]
    pub modules: Option<String>,
    /// Load every manifest file in DIR, in alphabetical order.
    #[arg(long = "modules_dir", alias = "modules-dir", value_name = "DIR")]
    pub modules_dir: Option<PathBuf>,
    /// Where module instances run: `none` in the master's process, `process` in a worker
    /// process per module, which the master survives whatever the module does (a module's
    /// manifest parameter `isolation` overrides this) [default: none].
    #[arg(
        long = "module_isolation",
        alias = "module-isolation",
        value_name = "MODE",
        value_parser = ["none", "process"]
    )]
    pub module_isolation: Option<String>,
    /// The address-space limit of each module worker, MiB (isolated modules only) [default:
    /// none].
    #[arg(long = "module_memory_limit_mb", alias = "module-memory-limit-mb", value_name = "MB")]
    pub module_memory_limit_mb: Option<u64>,
    /// The user module workers run as: `auto` (`nobody`, 65534:65534, when the master runs as
    /// root, else the master's user), `master`, or `UID:GID` (isolated modules only)
    /// [default: auto].
    #[arg(long = "module_worker_user", alias = "module-worker-user", value_name = "USER")]
    pub module_worker_user: Option<String>,
}

impl ModuleFlags {
    /// These flags where given, else `outer`'s (flags before a subcommand).
    fn or(self, outer: &ModuleFlags) -> ModuleFlags {
        ModuleFlags {
            modules: self.modules.or_else(|| outer.modules.clone()),
            modules_dir: self.modules_dir.or_else(|| outer.modules_dir.clone()),
            module_isolation: self.module_isolation.or_else(|| outer.module_isolation.clone()),
            module_memory_limit_mb: self.module_memory_limit_mb.or(outer.module_memory_limit_mb),
            module_worker_user: self
                .module_worker_user
                .or_else(|| outer.module_worker_user.clone()),
        }
    }

    fn any(&self) -> bool {
        self.modules.is_some()
            || self.modules_dir.is_some()
            || self.module_isolation.is_some()
            || self.module_memory_limit_mb.is_some()
            || self.module_worker_user.is_some()
    }

    /// `--module_isolation`, `--module_memory_limit_mb` and `--module_worker_user` as the
    /// registry takes them.
    fn isolation(&self) -> Result<allocator_host::isolation::IsolationSettings, String> {
        let default = match self.module_isolation.as_deref() {
            None => allocator_host::isolation::Isolation::None,
            Some(mode) => mode.parse().map_err(|e| format!("--module_isolation: {e}"))?,
        };
        if self.module_memory_limit_mb == Some(0) {
            return Err("--module_memory_limit_mb must be positive".into());
        }
        let worker_user = match self.module_worker_user.as_deref() {
            None => allocator_host::isolation::WorkerUser::Auto,
            Some(user) => user.parse().map_err(|e| format!("--module_worker_user: {e}"))?,
        };
        Ok(allocator_host::isolation::IsolationSettings {
            default,
            memory_limit_mb: self.module_memory_limit_mb,
            worker_exe: None,
            worker_user,
        })
    }
}

/// Which allocator and sorters to create.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct EngineFlags {
    /// `hierarchical` (alias `HierarchicalDRF`) is the built-in; any other name is a loaded
    /// allocator module [default: hierarchical].
    #[arg(long = "allocator", value_name = "NAME")]
    pub allocator: Option<String>,
    /// Sorter for roles: `drf` (built-in) or a loaded sorter module [default: drf].
    #[arg(long = "role_sorter", alias = "role-sorter", value_name = "NAME")]
    pub role_sorter: Option<String>,
    /// Sorter for frameworks inside a role; independent of --role_sorter [default: drf].
    #[arg(long = "framework_sorter", alias = "framework-sorter", value_name = "NAME")]
    pub framework_sorter: Option<String>,
}

impl EngineFlags {
    fn or(self, outer: &EngineFlags) -> EngineFlags {
        EngineFlags {
            allocator: self.allocator.or_else(|| outer.allocator.clone()),
            role_sorter: self.role_sorter.or_else(|| outer.role_sorter.clone()),
            framework_sorter: self.framework_sorter.or_else(|| outer.framework_sorter.clone()),
        }
    }

    fn any(&self) -> bool {
        self.allocator.is_some() || self.role_sorter.is_some() || self.framework_sorter.is_some()
    }
}

/// The allocator's options and how module faults are contained.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct AllocatorFlags {
    /// Batch allocation interval: seconds (decimal) or a Mesos duration (`1secs`, `500ms`,
    /// `2mins`), as every time-valued flag [default: 1secs].
    #[arg(
        long = "allocation_interval",
        alias = "allocation-interval",
        value_name = "DURATION",
        value_parser = crate::duration::seconds
    )]
    pub allocation_interval: Option<f64>,
    /// Mesos syntax: `cpus:0.01|mem:32` (`|` = OR of sets, `;` = AND inside a set)
    /// [default: cpus:0.01|mem:32].
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
    /// Only GPU_RESOURCES frameworks get offers from agents with GPUs [default: true].
    #[arg(long = "filter_gpu_resources", alias = "filter-gpu-resources", value_name = "BOOL")]
    pub filter_gpu_resources: Option<bool>,
    /// Seed of every random choice (agent shuffle, random sorters) [default: 0].
    #[arg(long = "seed", value_name = "N")]
    pub seed: Option<u64>,
    /// When a module fails (panics, returns a failure, its worker dies): `fallback` continues
    /// with the built-in (`hierarchical` for an allocator, `drf` for a sorter), rebuilt from the
    /// host's records; `restart` re-creates the module (in a fresh worker when isolated) with
    /// the host's records, up to --module_restart_limit times, then falls back; `stop` exits
    /// with the reason [default: fallback].
    #[arg(
        long = "on_module_failure",
        alias = "on-module-failure",
        value_name = "POLICY",
        value_parser = ["fallback", "restart", "stop"]
    )]
    pub on_module_failure: Option<String>,
    /// Under `--on_module_failure restart`, the most restarts in a run; past it, the built-in
    /// takes over [default: 3].
    #[arg(long = "module_restart_limit", alias = "module-restart-limit", value_name = "N")]
    pub module_restart_limit: Option<u32>,
    /// The call budget and watchdog.
    #[command(flatten)]
    pub limits: CallLimitFlags,
}

/// The budget and watchdog every module call runs under, in every mode.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CallLimitFlags {
    /// Report module calls slower than this many milliseconds (0: off) [default: 1000].
    #[arg(
        long = "module_call_budget_ms",
        alias = "module-call-budget-ms",
        value_name = "MS",
        value_parser = crate::duration::millis
    )]
    pub module_call_budget_ms: Option<f64>,
    /// Stop the master when a module call has not returned after this many milliseconds
    /// (0: off) [default: 30000].
    #[arg(
        long = "module_call_timeout_ms",
        alias = "module-call-timeout-ms",
        value_name = "MS",
        value_parser = crate::duration::millis
    )]
    pub module_call_timeout_ms: Option<f64>,
}

impl CallLimitFlags {
    fn or(self, outer: &CallLimitFlags) -> CallLimitFlags {
        CallLimitFlags {
            module_call_budget_ms: self.module_call_budget_ms.or(outer.module_call_budget_ms),
            module_call_timeout_ms: self.module_call_timeout_ms.or(outer.module_call_timeout_ms),
        }
    }

    /// The budget and timeout in milliseconds, defaults filled in, `None` where off.
    fn resolved(&self) -> (Option<f64>, Option<f64>) {
        let positive = |v: f64| (v > 0.0).then_some(v);
        (
            positive(self.module_call_budget_ms.unwrap_or(DEFAULT_CALL_BUDGET_MS)),
            positive(self.module_call_timeout_ms.unwrap_or(DEFAULT_CALL_TIMEOUT_MS)),
        )
    }

    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        if self.module_call_budget_ms.is_some() {
            given.push("--module_call_budget_ms");
        }
        if self.module_call_timeout_ms.is_some() {
            given.push("--module_call_timeout_ms");
        }
        given
    }
}

impl AllocatorFlags {
    fn or(self, outer: &AllocatorFlags) -> AllocatorFlags {
        let o = outer.clone();
        AllocatorFlags {
            allocation_interval: self.allocation_interval.or(o.allocation_interval),
            min_allocatable_resources: self
                .min_allocatable_resources
                .or(o.min_allocatable_resources),
            fair_sharing_excluded_resource_names: self
                .fair_sharing_excluded_resource_names
                .or(o.fair_sharing_excluded_resource_names),
            filter_gpu_resources: self.filter_gpu_resources.or(o.filter_gpu_resources),
            seed: self.seed.or(o.seed),
            on_module_failure: self.on_module_failure.or(o.on_module_failure),
            module_restart_limit: self.module_restart_limit.or(o.module_restart_limit),
            limits: self.limits.or(&o.limits),
        }
    }

    /// The flags given, by name, for "does not apply" messages.
    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        let mut note = |set: bool, name| {
            if set {
                given.push(name);
            }
        };
        note(self.allocation_interval.is_some(), "--allocation_interval");
        note(self.min_allocatable_resources.is_some(), "--min_allocatable_resources");
        note(
            self.fair_sharing_excluded_resource_names.is_some(),
            "--fair_sharing_excluded_resource_names",
        );
        note(self.filter_gpu_resources.is_some(), "--filter_gpu_resources");
        note(self.seed.is_some(), "--seed");
        note(self.on_module_failure.is_some(), "--on_module_failure");
        note(self.module_restart_limit.is_some(), "--module_restart_limit");
        given
    }
}

/// The scenario to run and where its event stream goes.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RunFlags {
    /// Run a scenario (SPEC section 4) instead of the embedded default workload.
    #[arg(long = "scenario", value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Write the event stream (SPEC section 5) to FILE (`-`: stdout, and the summary goes to
    /// stderr); without it no event stream is written.
    #[arg(long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Explain, after every allocation run, why this role or framework got what it got: an
    /// `explanation` event in the stream and a paragraph in the summary.
    #[arg(long = "explain", value_name = "ROLE_OR_FRAMEWORK")]
    pub explain: Option<String>,
}

impl RunFlags {
    fn or(self, outer: &RunFlags) -> RunFlags {
        RunFlags {
            scenario: self.scenario.or_else(|| outer.scenario.clone()),
            output: self.output.or_else(|| outer.output.clone()),
            explain: self.explain.or_else(|| outer.explain.clone()),
        }
    }
}

/// Subcommands.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum Command {
    /// Run Mesos's benchmarks against the configured (built-in or module) sorters and allocator.
    Bench(bench::BenchArgs),
    /// Convert a cluster trace into a scenario (on stdout).
    Import(ImportArgs),
    /// Check an allocator or sorter (module or built-in) against the conformance suite.
    Conformance(ConformanceArgs),
    /// A long run with agent and framework churn, checking invariants after every run.
    Soak(SoakArgs),
    /// Run the scenario (or the embedded default workload) live, in real time, with an HTTP
    /// endpoint: GET /metrics/snapshot, GET /state, POST /quota, /weights, /sorters, and the
    /// Mesos v1 scheduler (POST /api/v1/scheduler) and operator (POST /api/v1) APIs.
    Serve(Box<ServeArgs>),
    /// What-if: the offers and shares the next allocation run would make after a change at a
    /// time of the scenario, against without it (nothing is changed).
    Plan(PlanArgs),
    /// The GPU packing experiment of "Beware of Fragmentation" (USENIX ATC '23) through the
    /// master: pods placed one at a time by each allocator, per seed (SPEC 7).
    Experiment(experiment::ExperimentArgs),
}

impl ServeArgs {
    /// The directory the registry is kept in, or `None` for `--registry in_memory`.
    pub fn registry_dir(&self) -> Result<Option<std::path::PathBuf>, String> {
        match (self.registry.as_deref(), &self.work_dir) {
            (Some("in_memory"), _) => Ok(None),
            (_, Some(dir)) => Ok(Some(dir.clone())),
            (Some(_), None) => {
                Err("--registry=replicated_log needs --work_dir (where the registry is kept)"
                    .into())
            }
            (None, None) => Ok(None),
        }
    }

    /// Where to listen: `--listen`, else `--ip` (loopback) and `--port` (5050, Mesos's).
    pub fn address(&self) -> String {
        match &self.listen {
            Some(listen) => listen.clone(),
            None => {
                let ip = self.ip.unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
                std::net::SocketAddr::new(ip, self.port.unwrap_or(DEFAULT_PORT)).to_string()
            }
        }
    }
}

/// Mesos's default master port.
pub const DEFAULT_PORT: u16 = 5050;

/// `allocator-master plan` arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct PlanArgs {
    /// The virtual time (seconds) of the scenario at which the change is applied.
    #[arg(long, value_name = "SECONDS", value_parser = crate::duration::seconds)]
    pub at: f64,
    /// The change: one scenario event as JSON, e.g. '{"op": "update_weights", "weights":
    /// {"ml": 3}}' (update_quota, update_weights, set_sorters, update_unavailability,
    /// remove_agent, (de)activate_agent, suppress_offers, revive_offers, update_whitelist).
    #[arg(long, value_name = "JSON")]
    pub change: String,
    /// Print the plan as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Where modules come from.
    #[command(flatten)]
    pub modules: ModuleFlags,
    /// The allocator and its sorters.
    #[command(flatten)]
    pub engine: EngineFlags,
    /// Allocator options and fault containment.
    #[command(flatten)]
    pub allocator: AllocatorFlags,
    /// The scenario (default: the embedded default workload).
    #[command(flatten)]
    pub run: RunFlags,
}

/// `allocator-master serve` arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// HOST:PORT to listen on; port 0 picks a free port (the address is printed on stderr).
    /// Default: `--ip` and `--port`.
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["ip", "port"])]
    pub listen: Option<String>,
    /// The address to listen on, as Mesos's `--ip` [default: 127.0.0.1].
    #[arg(long, value_name = "IP")]
    pub ip: Option<std::net::IpAddr>,
    /// The port to listen on, as Mesos's `--port`; 0 picks a free one [default: 5050].
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Virtual seconds per wall-clock second.
    #[arg(long, default_value_t = 1.0, value_name = "K")]
    pub speed: f64,
    /// Stop after this many wall-clock seconds and print the summary (default: run until
    /// SIGINT or SIGTERM).
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::seconds)]
    pub duration: Option<f64>,
    /// Write, as it happens, a scenario of everything the master applied; replaying it with
    /// `--scenario FILE` and the same flags makes the same offers (SPEC 6.3).
    #[arg(long, value_name = "FILE")]
    pub record: Option<std::path::PathBuf>,
    /// Where the master keeps its registry (quota, weights, sorters, maintenance, agents
    /// marked gone, framework ids), which then survives restarts (Mesos's `--work_dir`).
    #[arg(long = "work_dir", alias = "work-dir", value_name = "DIR")]
    pub work_dir: Option<std::path::PathBuf>,
    /// `replicated_log` keeps the registry in `--work_dir` (the default when it is given; a
    /// single crash-safe file here, not a replicated log); `in_memory` keeps nothing across
    /// restarts (the default without `--work_dir`), as Mesos's `--registry`.
    #[arg(long, value_name = "STORE", value_parser = ["in_memory", "replicated_log"])]
    pub registry: Option<String>,
    /// Wall-clock seconds between HEARTBEAT events on Mesos scheduler API streams.
    #[arg(
        long = "heartbeat_interval",
        alias = "heartbeat-interval",
        default_value = "15secs",
        value_name = "DURATION",
        value_parser = crate::duration::seconds
    )]
    pub heartbeat_interval: f64,
    /// Authentication and authorization.
    #[command(flatten)]
    pub auth: AuthFlags,
    /// TLS and the HTTP server's limits (issue 31).
    #[command(flatten)]
    pub http: HttpFlags,
    /// Where modules come from.
    #[command(flatten)]
    pub modules: ModuleFlags,
    /// The allocator and its sorters.
    #[command(flatten)]
    pub engine: EngineFlags,
    /// Allocator options and fault containment.
    #[command(flatten)]
    pub allocator: AllocatorFlags,
    /// The scenario that supplies the cluster, and the event stream.
    #[command(flatten)]
    pub run: RunFlags,
}

/// `serve`'s authentication and authorization flags, as Mesos's master names them (see
/// [`crate::auth`]).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct AuthFlags {
    /// Principals and their secrets: Mesos's JSON (`{"credentials": [{"principal": …,
    /// "secret": …}]}`) or `principal secret` lines.
    #[arg(long, value_name = "FILE")]
    pub credentials: Option<PathBuf>,
    /// Require HTTP Basic authentication on the scheduler API.
    #[arg(long = "authenticate_http_frameworks", alias = "authenticate-http-frameworks", num_args = 0..=1, require_equals = true,
          default_value_t = false, default_missing_value = "true", value_name = "BOOL")]
    pub authenticate_http_frameworks: bool,
    /// Require HTTP Basic authentication on the endpoints that change state (the operator
    /// API, POST /quota, /weights, /sorters, /plan).
    #[arg(long = "authenticate_http_readwrite", alias = "authenticate-http-readwrite", num_args = 0..=1, require_equals = true,
          default_value_t = false, default_missing_value = "true", value_name = "BOOL")]
    pub authenticate_http_readwrite: bool,
    /// Require HTTP Basic authentication on the endpoints that read state (GET /state,
    /// /metrics/snapshot, /explain).
    #[arg(long = "authenticate_http_readonly", alias = "authenticate-http-readonly", num_args = 0..=1, require_equals = true,
          default_value_t = false, default_missing_value = "true", value_name = "BOOL")]
    pub authenticate_http_readonly: bool,
    /// Access control lists in Mesos's JSON: a file, or the JSON itself.
    #[arg(long, value_name = "FILE_OR_JSON")]
    pub acls: Option<String>,
}

impl AuthFlags {
    /// The checked [`crate::auth::Auth`] these flags describe.
    pub fn resolve(&self) -> Result<crate::auth::Auth, String> {
        let credentials =
            self.credentials.as_deref().map(crate::auth::Credentials::load).transpose()?;
        let acls = match self.acls.as_deref() {
            None => crate::auth::Acls::default(),
            Some(json) if json.trim_start().starts_with('{') => {
                crate::auth::Acls::parse(json).map_err(|e| format!("--acls: {e}"))?
            }
            Some(path) => crate::auth::Acls::load(std::path::Path::new(
                path.strip_prefix("file://").unwrap_or(path),
            ))?,
        };
        let auth = crate::auth::Auth {
            credentials,
            frameworks: self.authenticate_http_frameworks,
            readwrite: self.authenticate_http_readwrite,
            readonly: self.authenticate_http_readonly,
            acls,
        };
        auth.check()?;
        Ok(auth)
    }
}

/// `allocator-master soak` arguments (the built-in allocator with its DRF sorters).
#[derive(clap::Args, Debug, Clone)]
pub struct SoakArgs {
    /// Agents in the cluster (the default workload has 260; 3000 is about ten times that).
    #[arg(long, default_value_t = 3000)]
    pub agents: usize,
    /// Simulated frameworks.
    #[arg(long, default_value_t = 120)]
    pub frameworks: usize,
    /// Periodic allocation runs.
    #[arg(long, default_value_t = 100_000)]
    pub runs: u64,
    /// Seed of the workload and the churn.
    #[arg(long = "seed", aliases = ["soak-seed", "soak_seed"], default_value_t = 0)]
    pub seed: u64,
}

/// `allocator-master conformance` arguments: exactly one of `--allocator` and `--sorter`.
#[derive(clap::Args, Debug, Clone)]
pub struct ConformanceArgs {
    /// The allocator to check (`hierarchical` or a loaded allocator module).
    #[arg(long = "allocator", value_name = "NAME", group = "subject")]
    pub allocator: Option<String>,
    /// The sorter to check (`drf` or a loaded sorter module).
    #[arg(long = "sorter", value_name = "NAME", group = "subject")]
    pub sorter: Option<String>,
    /// Longest acceptable periodic allocation run on the 1,000-agent cluster, milliseconds.
    #[arg(long = "time_bound_ms", alias = "time-bound-ms", default_value_t = 1000.0)]
    pub time_bound_ms: f64,
    /// Where modules come from.
    #[command(flatten)]
    pub modules: ModuleFlags,
    /// The call budget and watchdog.
    #[command(flatten)]
    pub limits: CallLimitFlags,
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
    #[arg(long = "time_scale", alias = "time-scale", default_value_t = 1.0, value_name = "K")]
    pub time_scale: f64,
    /// Import only the first N pods.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// End the scenario S seconds (scaled) after the last pod arrives, whatever still runs
    /// (default: once every task has ended; the trace's longest pods run for months).
    #[arg(long, value_name = "S", value_parser = crate::duration::seconds)]
    pub horizon: Option<f64>,
    /// Multiplies the offered load: pods arrive K times as often, each running as long (to
    /// saturate the cluster; the trace itself keeps it below 1 % busy).
    #[arg(long, default_value_t = 1.0, value_name = "K")]
    pub load: f64,
    /// Write each node's GPUs as devices (`gpus[0]:1;gpus[1]:1;…`), not one pooled `gpus:N`.
    #[arg(long)]
    pub devices: bool,
    /// Let each framework state its next N pods to the allocator (`"request": N`; the flag
    /// alone: 1), for a placement module (`Random`, `BestFit`, `FGD`, …) to place.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "1", default_value_t = 0)]
    pub request: u32,
}

/// Parses the process's arguments and runs; returns the exit code.
pub fn main() -> ExitCode {
    init_logging();
    allocator_host::watchdog::report_modules_that_end_the_process();
    let args = Args::parse();
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("allocator-master: {message}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Every flag of this process's command line, given or defaulted, by its long name (as
/// Mesos's `/master/flags` and `GET_FLAGS` list them); durations in Mesos's format.
fn given_flags() -> Vec<(String, String)> {
    use clap::CommandFactory;
    let command = Args::command();
    let Ok(matches) = command.clone().try_get_matches_from(std::env::args_os()) else {
        return Vec::new();
    };
    let mut flags = std::collections::BTreeMap::new();
    let mut collect = |cmd: &clap::Command, m: &clap::ArgMatches| {
        for arg in cmd.get_arguments() {
            let (Some(long), id) = (arg.get_long(), arg.get_id().as_str()) else { continue };
            let mut value = match m.try_get_raw(id) {
                Ok(Some(raw)) => {
                    let values: Vec<String> =
                        raw.map(|v| v.to_string_lossy().into_owned()).collect();
                    values.join(",")
                }
                // Not given: the default its help states (`[default: 1secs]`), if any.
                _ => {
                    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                    let Some(default) =
                        help.split("[default: ").nth(1).and_then(|rest| rest.split(']').next())
                    else {
                        continue;
                    };
                    default.to_owned()
                }
            };
            if arg.get_value_names().is_some_and(|n| n.iter().any(|n| n == "DURATION"))
                && let Ok(seconds) = crate::duration::seconds(&value)
            {
                value = crate::duration::format_seconds(seconds);
            }
            flags.insert(long.to_owned(), value);
        }
    };
    collect(&command, &matches);
    if let Some((name, sub)) = matches.subcommand()
        && let Some(cmd) = command.find_subcommand(name)
    {
        collect(cmd, sub);
    }
    flags.into_iter().collect()
}

fn init_logging() {
    let env = env_logger::Env::default().default_filter_or("warn");
    let _ = env_logger::Builder::from_env(env).format_timestamp_millis().try_init();
}

/// Everything one allocator run (a scenario, the default workload, or `serve`) is given.
struct RunSetup<'a> {
    engine: EngineFlags,
    allocator: AllocatorFlags,
    run: RunFlags,
    report: Option<&'a PathBuf>,
    serve: Option<&'a ServeArgs>,
}

/// Runs with parsed arguments; `Err` is a one-line message for exit code 2.
pub fn run(args: &Args) -> Result<u8, String> {
    let Some(command) = &args.command else {
        let registry = load_modules(&args.modules, &args.allocator.limits)?;
        if args.list_modules {
            print_modules(&registry);
            return Ok(0);
        }
        let setup = RunSetup {
            engine: args.engine.clone(),
            allocator: args.allocator.clone(),
            run: args.run.clone(),
            report: args.report.as_ref(),
            serve: None,
        };
        return run_allocation(&registry, &setup);
    };
    match command {
        Command::Import(import) => {
            refuse_outer_flags(args, "import", Applies::NOTHING)?;
            run_import(import)
        }
        Command::Soak(soak) => {
            refuse_outer_flags(args, "soak", Applies::NOTHING)?;
            run_soak(soak)
        }
        Command::Conformance(c) => {
            refuse_outer_flags(args, "conformance", Applies::MODULES)?;
            let limits = c.limits.clone().or(&args.allocator.limits);
            let registry = load_modules(&c.modules.clone().or(&args.modules), &limits)?;
            let (subject, checks) = match (&c.allocator, &c.sorter) {
                (Some(a), _) => (
                    format!("allocator '{a}'"),
                    allocator_conformance::run_allocator_checks(&registry, a, c.time_bound_ms),
                ),
                (None, Some(s)) => (
                    format!("sorter '{s}'"),
                    allocator_conformance::run_sorter_checks(&registry, s),
                ),
                (None, None) => {
                    return Err(
                        "conformance needs the subject to check: --allocator NAME or --sorter NAME"
                            .into(),
                    );
                }
            };
            Ok(if allocator_conformance::report(&subject, &checks) {
                0
            } else {
                EXIT_EXPECTATION_FAILED
            })
        }
        Command::Bench(bench) => {
            refuse_outer_flags(args, "bench", Applies::MODULES_AND_ENGINE)?;
            let limits = bench.limits.clone().or(&args.allocator.limits);
            let registry = load_modules(&bench.modules.clone().or(&args.modules), &limits)?;
            let engine = bench.engine.clone().or(&args.engine);
            bench::run(&engine, bench, &registry)
        }
        Command::Serve(serve) => {
            refuse_outer_flags(args, "serve", Applies::RUN)?;
            let registry = load_modules(
                &serve.modules.clone().or(&args.modules),
                &serve.allocator.limits.clone().or(&args.allocator.limits),
            )?;
            let setup = RunSetup {
                engine: serve.engine.clone().or(&args.engine),
                allocator: serve.allocator.clone().or(&args.allocator),
                run: serve.run.clone().or(&args.run),
                report: None,
                serve: Some(serve),
            };
            run_allocation(&registry, &setup)
        }
        Command::Experiment(e) => {
            refuse_outer_flags(args, "experiment", Applies::MODULES)?;
            experiment::run(e, &args.modules, &args.allocator.limits)
        }
        Command::Plan(plan) => {
            refuse_outer_flags(args, "plan", Applies::RUN)?;
            let registry = load_modules(
                &plan.modules.clone().or(&args.modules),
                &plan.allocator.limits.clone().or(&args.allocator.limits),
            )?;
            run_plan(
                &registry,
                plan,
                &plan.engine.clone().or(&args.engine),
                &plan.allocator.clone().or(&args.allocator),
                &plan.run.clone().or(&args.run),
            )
        }
    }
}

/// `allocator-master plan`: forks the scenario at `--at` with and without `--change`.
fn run_plan(
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
    let change = crate::plan::parse_change(&plan.change).map_err(|e| format!("--change: {e}"))?;
    let doc = match &run.scenario {
        Some(path) => Document::read(path).map_err(|e| e.to_string())?,
        None => crate::workload::default_document(flags.seed.unwrap_or(0)),
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
    let history = crate::plan::history_until(&scenario, plan.at);
    let result = crate::plan::plan(registry, &setup, &history, &change)?;
    if plan.json {
        println!("{}", result.to_json());
    } else {
        print!("{}", result.to_text());
    }
    Ok(0)
}

/// The virtual time of a scenario's last event: its `advance`s and `tick`s added up.
fn scenario_end(scenario: &AllocatorScenario, interval: f64) -> f64 {
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

/// Which of the flags given before a subcommand the subcommand uses.
#[derive(Clone, Copy)]
struct Applies {
    modules: bool,
    engine: bool,
    limits: bool,
    run: bool,
}

impl Applies {
    const NOTHING: Applies = Applies { modules: false, engine: false, limits: false, run: false };
    const MODULES: Applies = Applies { modules: true, engine: false, limits: true, run: false };
    const MODULES_AND_ENGINE: Applies =
        Applies { modules: true, engine: true, limits: true, run: false };
    const RUN: Applies = Applies { modules: true, engine: true, limits: true, run: true };
}

/// Refuses flags given before `subcommand` that it does not use, instead of ignoring them.
fn refuse_outer_flags(args: &Args, subcommand: &str, applies: Applies) -> Result<(), String> {
    let mut given: Vec<&str> = Vec::new();
    if !applies.modules && args.modules.any() {
        given.push(if args.modules.modules.is_some() {
            "--modules"
        } else if args.modules.modules_dir.is_some() {
            "--modules_dir"
        } else {
            "--module_isolation/--module_memory_limit_mb/--module_worker_user"
        });
    }
    if !applies.engine && args.engine.any() {
        given.push("--allocator/--role_sorter/--framework_sorter");
    }
    if !applies.limits {
        given.extend(args.allocator.limits.given());
    }
    if !applies.run {
        given.extend(args.allocator.given());
        if args.run.scenario.is_some() {
            given.push("--scenario");
        }
        if args.run.output.is_some() {
            given.push("--output");
        }
    }
    if args.report.is_some() {
        given.push("--report");
    }
    if args.list_modules {
        given.push("--list_modules");
    }
    match given.as_slice() {
        [] => Ok(()),
        flags => Err(format!(
            "{} does not apply to '{subcommand}' (see 'allocator-master {subcommand} --help')",
            flags.join(", ")
        )),
    }
}

/// Creates the registry and loads the manifest; every module call it makes possible
/// (factories included) runs under the call budget and watchdog of `limits`.
fn load_modules(flags: &ModuleFlags, limits: &CallLimitFlags) -> Result<ModuleRegistry, String> {
    let mut registry = ModuleRegistry::new();
    let (budget, timeout) = limits.resolved();
    registry.watchdog().set_limits(budget, timeout);
    registry.set_isolation(flags.isolation()?);
    registry
        .load_flags(flags.modules.as_deref(), flags.modules_dir.as_deref())
        .map_err(|e| format!("error loading modules: {e}"))?;
    Ok(registry)
}

/// Where the human summary goes: stdout, unless the event stream does (`--output -`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum SummaryTo {
    Stdout,
    Stderr,
}

impl SummaryTo {
    fn print(self, text: &str) {
        use std::io::Write;
        let line_end = if text.ends_with('\n') { "" } else { "\n" };
        let _ = match self {
            SummaryTo::Stdout => write!(std::io::stdout(), "{text}{line_end}"),
            SummaryTo::Stderr => write!(std::io::stderr(), "{text}{line_end}"),
        };
    }
}

/// Opens the event stream named by `--output` (none: no stream).
fn open_output(output: Option<&PathBuf>) -> Result<(EventStream, SummaryTo), String> {
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
fn run_allocation(registry: &ModuleRegistry, s: &RunSetup<'_>) -> Result<u8, String> {
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
        None => crate::workload::default_document(s.allocator.seed.unwrap_or(0)),
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
    let setup = setup(&s.engine, &s.allocator, &scenario.config)?;
    let mut sim = Driver::new(registry, setup, &doc.file)?;
    sim.set_interrupt(crate::interrupt::install());
    if let Some(subject) = &s.run.explain {
        sim.explain_each_run(subject);
    }
    if let Some(serve) = s.serve {
        let options = crate::serve::ServeOptions {
            listen: serve.address(),
            speed: serve.speed,
            duration: serve.duration,
            heartbeat_interval: serve.heartbeat_interval,
            auth: serve.auth.resolve()?,
            http_limits: serve.http.limits()?,
            tls: serve.http.tls()?,
            work_dir: serve.registry_dir()?,
            flags: given_flags(),
        };
        sim.set_offer_tracking(
            scenario
                .events
                .iter()
                .any(|(_, op)| matches!(op, crate::allocator_scenario::Op::ExpectOffers(_))),
        );
        // POST /plan forks the master by replaying what it applied; GET /explain counts offers.
        sim.keep_history();
        sim.enable_explanations();
        if let Some(path) = &serve.record {
            let config = match doc.root.get("config") {
                Some(serde_json::Value::Object(c)) => c.clone(),
                _ => serde_json::Map::new(),
            };
            let recorder = crate::recording::Recorder::create(path, &config)
                .map_err(|e| format!("cannot record to '{}': {e}", path.display()))?;
            sim.record_to(recorder);
        }
        let served = crate::serve::serve(&mut sim, &scenario, &mut out, &options);
        let recorded = sim.finish_recording();
        served?;
        if let Some(signal) = crate::interrupt::requested() {
            eprintln!(
                "allocator-master: serve stopped by {} at virtual time {:.3} s",
                crate::interrupt::name(signal),
                sim.master().now()
            );
        }
        out.emit(&sim.summary_event());
        out.flush();
        summary_to.print(&sim.summary_text());
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
    sim.set_progress(progress.counters());
    let outcome = sim.run(&scenario, &mut out).map_err(|e| e.to_string());
    progress.finish();
    let outcome = outcome?;
    if let Some(path) = s.report {
        let svg = sim.report_svg(&report_title(&scenario, &doc)).map_err(|e| e.to_string())?;
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
            sim.master().now()
        );
        return Ok(crate::interrupt::exit_code(signal));
    }
    Ok(if outcome.failures.is_empty() { 0 } else { EXIT_EXPECTATION_FAILED })
}

/// The report's title: the scenario's description's first sentence, whole (the picture wraps
/// it), or its file name.
fn report_title(scenario: &AllocatorScenario, doc: &Document) -> String {
    scenario
        .description
        .as_deref()
        .map_or_else(|| doc.file.clone(), |d| d.split(". ").next().unwrap_or(d).to_owned())
}

fn run_soak(a: &SoakArgs) -> Result<u8, String> {
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

fn run_import(args: &ImportArgs) -> Result<u8, String> {
    let options = crate::import::ImportOptions {
        time_scale: args.time_scale,
        limit: args.limit,
        horizon: args.horizon,
        load: args.load,
        devices: args.devices,
        request: args.request,
    };
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

fn excluded_flag(flags: &AllocatorFlags) -> Option<Vec<String>> {
    flags
        .fair_sharing_excluded_resource_names
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

/// The call budget when no flag sets it, milliseconds.
pub const DEFAULT_CALL_BUDGET_MS: f64 = 1000.0;
/// The watchdog timeout when no flag sets it, milliseconds.
pub const DEFAULT_CALL_TIMEOUT_MS: f64 = 30_000.0;

/// Merges flags (which win) over the scenario's config (which wins over the defaults).
pub fn setup(
    engine: &EngineFlags,
    flags: &AllocatorFlags,
    config: &ScenarioConfig,
) -> Result<Setup, String> {
    let mut options = AllocatorOptions::default();
    if let Some(i) = flags.allocation_interval.or(config.allocation_interval) {
        if !(i.is_finite() && i > 0.0) {
            return Err(format!(
                "--allocation_interval must be a positive number of seconds, got {i}"
            ));
        }
        options.allocation_interval = i;
    }
    if let Some(text) = &flags.min_allocatable_resources {
        options.min_allocatable_resources = parse_min_allocatable(text)?.into();
    } else if let Some(m) = &config.min_allocatable_resources {
        options.min_allocatable_resources = m.clone().into();
    }
    if let Some(ex) =
        excluded_flag(flags).or_else(|| config.fair_sharing_excluded_resource_names.clone())
    {
        options.fairness_excluded_resource_names = ex.iter().map(|s| s.as_str().into()).collect();
    }
    if let Some(g) = flags.filter_gpu_resources.or(config.filter_gpu_resources) {
        options.filter_gpu_resources = g;
    }
    options.seed = flags.seed.or(config.seed).unwrap_or(0);
    let pick = |flag: &Option<String>, cfg: &Option<String>, default: &str| {
        flag.clone().or_else(|| cfg.clone()).unwrap_or_else(|| default.to_owned())
    };
    let role_sorter = pick(&engine.role_sorter, &config.role_sorter, BUILTIN_SORTER);
    let framework_sorter = pick(&engine.framework_sorter, &config.framework_sorter, BUILTIN_SORTER);
    options.role_sorter = role_sorter.as_str().into();
    options.framework_sorter = framework_sorter.as_str().into();
    let on_module_failure = match flags.on_module_failure.as_deref() {
        Some("stop") => FailurePolicy::Stop,
        Some("restart") => FailurePolicy::Restart {
            limit: flags.module_restart_limit.unwrap_or(DEFAULT_RESTART_LIMIT),
        },
        _ if flags.module_restart_limit.is_some() => {
            return Err(
                "--module_restart_limit applies only with --on_module_failure restart".into()
            );
        }
        _ => FailurePolicy::Fallback,
    };
    let (call_budget_ms, call_timeout_ms) = flags.limits.resolved();
    Ok(Setup {
        call_budget_ms,
        call_timeout_ms,
        on_module_failure,
        allocator: pick(&engine.allocator, &config.allocator, BUILTIN_ALLOCATOR),
        role_sorter,
        framework_sorter,
        options,
        allocator_parameters: Vec::new(),
    })
}

/// The `--list_modules` table, with columns as wide as their widest entry.
pub fn modules_table(registry: &ModuleRegistry) -> String {
    let modules: Vec<_> = registry.modules().collect();
    if modules.is_empty() {
        return "no modules loaded (built in: allocator 'hierarchical', sorter 'drf')\n".into();
    }
    let header = ["NAME", "KIND", "API", "AUTHOR", "LIBRARY", "DESCRIPTION"];
    let rows: Vec<[String; 6]> = modules
        .iter()
        .map(|m| {
            [
                m.name.to_string(),
                m.kind.to_string(),
                m.api_version.to_string(),
                m.author.to_string(),
                m.library.display().to_string(),
                m.description.to_string(),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<w$}  "));
            }
        }
        text.trim_end().to_owned() + "\n"
    };
    let mut table = line(header.to_vec());
    for row in &rows {
        table.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    table
}

fn print_modules(registry: &ModuleRegistry) {
    print!("{}", modules_table(registry));
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("allocator-master").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_definition_is_consistent() {
        Args::command().debug_assert();
    }

    fn serve_args(args: &[&str]) -> ServeArgs {
        let mut all = vec!["serve"];
        all.extend_from_slice(args);
        match parse(&all).unwrap().command {
            Some(Command::Serve(s)) => *s,
            other => panic!("not serve: {other:?}"),
        }
    }

    #[test]
    fn serve_listens_on_mesoss_port_5050_on_loopback_by_default() {
        assert_eq!(serve_args(&[]).address(), "127.0.0.1:5050");
        assert_eq!(serve_args(&["--port", "0"]).address(), "127.0.0.1:0");
        assert_eq!(serve_args(&["--ip", "0.0.0.0", "--port", "5051"]).address(), "0.0.0.0:5051");
        assert_eq!(serve_args(&["--ip", "::1"]).address(), "[::1]:5050");
        assert_eq!(serve_args(&["--listen", "127.0.0.1:7"]).address(), "127.0.0.1:7");
        assert!(parse(&["serve", "--listen", "127.0.0.1:7", "--port", "8"]).is_err());
    }

    #[test]
    fn time_flags_take_mesos_durations() {
        let s = serve_args(&["--allocation_interval=1secs", "--heartbeat_interval", "500ms"]);
        assert_eq!(s.allocator.allocation_interval, Some(1.0));
        assert_eq!(s.heartbeat_interval, 0.5);
        assert_eq!(serve_args(&["--duration", "2mins"]).duration, Some(120.0));
        assert_eq!(serve_args(&[]).heartbeat_interval, 15.0);
        let a = parse(&["--allocation_interval", "250ms", "--module_call_timeout_ms", "2secs"])
            .unwrap();
        assert_eq!(a.allocator.allocation_interval, Some(0.25));
        assert_eq!(a.allocator.limits.module_call_timeout_ms, Some(2000.0));
        let e = parse(&["--allocation_interval", "1sec"]).unwrap_err().to_string();
        assert!(e.contains("unknown unit 'sec'"), "{e}");
    }

    /// Every flag of every (sub)command, with the command's name.
    fn all_flags() -> Vec<(String, clap::Arg)> {
        fn walk(cmd: &clap::Command, path: String, out: &mut Vec<(String, clap::Arg)>) {
            for arg in cmd.get_arguments() {
                out.push((path.clone(), arg.clone()));
            }
            for sub in cmd.get_subcommands() {
                walk(sub, format!("{path} {}", sub.get_name()), out);
            }
        }
        let mut out = Vec::new();
        walk(&Args::command(), "allocator-master".into(), &mut out);
        out
    }

    #[test]
    fn flags_are_snake_case_with_a_kebab_case_alias() {
        for (cmd, arg) in all_flags() {
            let Some(long) = arg.get_long() else { continue };
            assert!(!long.contains('-'), "{cmd}: --{long} should be snake_case");
            if long.contains('_') {
                let kebab = long.replace('_', "-");
                let aliases = arg.get_all_aliases().unwrap_or_default();
                assert!(aliases.contains(&kebab.as_str()), "{cmd}: --{long} lacks --{kebab}");
            }
        }
    }

    #[test]
    fn kebab_case_flags_are_accepted() {
        let a = parse(&["--role-sorter", "random", "--framework-sorter", "drf", "--list-modules"])
            .unwrap();
        assert_eq!(a.engine.role_sorter.as_deref(), Some("random"));
        assert!(a.list_modules);
    }

    #[test]
    fn conformance_takes_a_time_bound_with_its_subject() {
        let a = parse(&["conformance", "--allocator", "x", "--time-bound-ms", "500"]).unwrap();
        let Some(Command::Conformance(c)) = a.command else { panic!("not conformance") };
        assert_eq!((c.allocator.as_deref(), c.time_bound_ms), (Some("x"), 500.0));
        assert!(parse(&["conformance", "--sorter", "drf", "--time_bound_ms", "5"]).is_ok());
    }

    #[test]
    fn conformance_without_a_subject_is_a_usage_error_not_a_panic() {
        let a = parse(&["conformance", "--time-bound-ms", "500"]).unwrap();
        assert_eq!(
            run(&a).unwrap_err(),
            "conformance needs the subject to check: --allocator NAME or --sorter NAME"
        );
    }

    #[test]
    fn conformance_refuses_two_subjects() {
        assert!(parse(&["conformance", "--allocator", "a", "--sorter", "s"]).is_err());
    }

    #[test]
    fn module_and_engine_flags_may_come_before_or_after_a_subcommand() {
        for args in [
            &["--modules", "m.json", "--role_sorter", "drf", "bench", "all"][..],
            &["bench", "all", "--modules", "m.json", "--role_sorter", "drf"],
            &["--modules", "m.json", "serve", "--listen", "127.0.0.1:0", "--scenario", "s.json"],
            &["serve", "--listen", "127.0.0.1:0", "--seed", "3", "--output", "-"],
            &["conformance", "--modules", "m.json", "--sorter", "random"],
            &["--modules", "m.json", "conformance", "--sorter", "random"],
            &["soak", "--agents", "10", "--runs", "5", "--soak-seed", "2"],
            &["import", "alibaba-gpu-v2023", "--nodes", "n", "--pods", "p", "--time-scale", "10"],
        ] {
            assert!(parse(args).is_ok(), "{args:?}: {}", parse(args).unwrap_err());
        }
    }

    #[test]
    fn the_call_budget_and_watchdog_can_be_set_for_every_mode_that_calls_modules() {
        for args in [
            &["conformance", "--sorter", "s", "--module_call_timeout_ms", "500"][..],
            &["--module_call_timeout_ms", "500", "conformance", "--sorter", "s"],
            &["bench", "all", "--module_call_budget_ms", "5"],
            &["serve", "--listen", "127.0.0.1:0", "--module_call_timeout_ms", "500"],
            &["--module_call_budget_ms", "5", "--scenario", "s.json"],
        ] {
            assert!(parse(args).is_ok(), "{args:?}: {}", parse(args).unwrap_err());
        }
        let a = parse(&[
            "--module_call_timeout_ms",
            "500",
            "import",
            "alibaba-gpu-v2023",
            "--nodes",
            "n",
            "--pods",
            "p",
        ])
        .unwrap();
        assert!(run(&a).unwrap_err().starts_with("--module_call_timeout_ms does not apply"));
    }

    #[test]
    fn subcommands_list_only_the_flags_they_use() {
        let cmd = Args::command();
        let flags = |name: &str| -> Vec<String> {
            let sub = cmd.find_subcommand(name).expect(name);
            sub.get_arguments().filter_map(|a| a.get_long().map(str::to_owned)).collect()
        };
        for (sub, absent) in [
            ("import", &["report", "allocator", "scenario", "modules", "seed"][..]),
            ("soak", &["report", "allocator", "scenario", "output"]),
            ("conformance", &["report", "scenario", "output", "role_sorter"]),
            ("bench", &["report", "scenario", "output", "allocation_interval"]),
            ("serve", &["report", "list_modules"]),
        ] {
            for flag in absent {
                assert!(!flags(sub).iter().any(|f| f == flag), "{sub} lists --{flag}");
            }
        }
    }

    #[test]
    fn a_flag_before_a_subcommand_that_does_not_use_it_is_refused() {
        let a = parse(&["--scenario", "x.json", "soak"]).unwrap();
        assert_eq!(
            run(&a).unwrap_err(),
            "--scenario does not apply to 'soak' (see 'allocator-master soak --help')"
        );
    }

    #[test]
    fn serve_help_does_not_call_scenario_run_and_exit() {
        let mut cmd = Args::command();
        let help = cmd.find_subcommand_mut("serve").unwrap().render_help().to_string();
        assert!(!help.contains("and exit"), "{help}");
        assert!(help.contains("--scenario"));
    }

    #[test]
    fn an_empty_registry_says_what_is_built_in() {
        let registry = ModuleRegistry::new();
        assert!(modules_table(&registry).starts_with("no modules loaded"));
    }
}
