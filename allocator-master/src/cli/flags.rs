//! The command line's schema: every flag and subcommand (clap derive), with the defaults and
//! checks that belong to a flag.

use super::{DEFAULT_CALL_BUDGET_MS, DEFAULT_CALL_TIMEOUT_MS, HttpFlags, bench, experiment};
use std::path::PathBuf;

use clap::Parser;
use clap::builder::TypedValueParser as _;

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
    pub(crate) fn or(self, outer: &ModuleFlags) -> ModuleFlags {
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

    pub(crate) fn any(&self) -> bool {
        self.modules.is_some()
            || self.modules_dir.is_some()
            || self.module_isolation.is_some()
            || self.module_memory_limit_mb.is_some()
            || self.module_worker_user.is_some()
    }

    /// `--module_isolation`, `--module_memory_limit_mb` and `--module_worker_user` as the
    /// registry takes them.
    pub(crate) fn isolation(&self) -> Result<allocator_host::isolation::IsolationSettings, String> {
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
    pub(crate) fn or(self, outer: &EngineFlags) -> EngineFlags {
        EngineFlags {
            allocator: self.allocator.or_else(|| outer.allocator.clone()),
            role_sorter: self.role_sorter.or_else(|| outer.role_sorter.clone()),
            framework_sorter: self.framework_sorter.or_else(|| outer.framework_sorter.clone()),
        }
    }

    pub(crate) fn any(&self) -> bool {
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
    pub(crate) fn or(self, outer: &CallLimitFlags) -> CallLimitFlags {
        CallLimitFlags {
            module_call_budget_ms: self.module_call_budget_ms.or(outer.module_call_budget_ms),
            module_call_timeout_ms: self.module_call_timeout_ms.or(outer.module_call_timeout_ms),
        }
    }

    /// The budget and timeout in milliseconds, defaults filled in, `None` where off.
    pub(crate) fn resolved(&self) -> (Option<f64>, Option<f64>) {
        let positive = |v: f64| (v > 0.0).then_some(v);
        (
            positive(self.module_call_budget_ms.unwrap_or(DEFAULT_CALL_BUDGET_MS)),
            positive(self.module_call_timeout_ms.unwrap_or(DEFAULT_CALL_TIMEOUT_MS)),
        )
    }

    pub(crate) fn given(&self) -> Vec<&'static str> {
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
    pub(crate) fn or(self, outer: &AllocatorFlags) -> AllocatorFlags {
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
    pub(crate) fn given(&self) -> Vec<&'static str> {
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
    pub(crate) fn or(self, outer: &RunFlags) -> RunFlags {
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
    /// Schedule the pods of a Kubernetes cluster whose `spec.schedulerName` is this
    /// scheduler's, with the same modules and flags as `serve` (whose live endpoints it keeps):
    /// nodes are agents, namespaces roles, workloads frameworks, offers become Bindings.
    Kube(Box<KubeArgs>),
    /// What-if: the offers and shares the next allocation run would make after a change at a
    /// time of the scenario, against without it (nothing is changed).
    Plan(PlanArgs),
    /// The GPU packing experiment of "Beware of Fragmentation" (USENIX ATC '23) through the
    /// master: pods placed one at a time by each allocator, per seed (SPEC 7).
    Experiment(experiment::ExperimentArgs),
    /// Load a Kubernetes test cluster and measure a scheduler on it: the packing experiment's
    /// pod list as pods (`trace`), a backlog of identical pods (`synthetic`), and a scheduler's
    /// bindings, CPU time and memory (`measure`).
    KubeReplay(super::kube_replay::KubeReplayArgs),
}

impl ServeArgs {
    /// The limits on what frameworks may hold (`--max_frameworks`,
    /// `--max_framework_info_bytes`).
    pub fn framework_limits(&self) -> Result<crate::clients::mesos::FrameworkLimits, String> {
        let roles = match &self.roles {
            None => None,
            Some(list) => {
                let roles: std::collections::BTreeSet<String> = list
                    .split(',')
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(str::to_owned)
                    .collect();
                for role in &roles {
                    allocator_api::roles::validate(role).map_err(|e| format!("--roles: {e}"))?;
                }
                Some(roles)
            }
        };
        let offer_timeout = match self.offer_timeout {
            Some(t) if !(t.is_finite() && t > 0.0) => {
                return Err(format!("--offer_timeout must be a positive duration, not {t}"));
            }
            t => t.map(std::time::Duration::from_secs_f64),
        };
        Ok(crate::clients::mesos::FrameworkLimits {
            max_frameworks: self.max_frameworks,
            max_info_bytes: self.max_framework_info_bytes,
            roles,
            offer_timeout,
        })
    }

    /// `--weights role=weight,…` as (role, weight) pairs, each role by Mesos's rules and each
    /// weight positive.
    pub fn initial_weights(&self) -> Result<Vec<(String, f64)>, String> {
        let Some(list) = &self.weights else { return Ok(Vec::new()) };
        let mut weights = Vec::new();
        for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (role, weight) = item
                .split_once('=')
                .ok_or_else(|| format!("--weights: '{item}' is not role=weight"))?;
            allocator_api::roles::validate(role).map_err(|e| format!("--weights: {e}"))?;
            let weight: f64 = weight
                .parse()
                .ok()
                .filter(|w: &f64| w.is_finite() && *w > 0.0)
                .ok_or_else(|| format!("--weights: the weight of '{role}' must be a positive number, not '{weight}'"))?;
            weights.push((role.to_owned(), weight));
        }
        Ok(weights)
    }

    /// `Err` for Mesos's flags this master does not take, saying why.
    pub fn refuse_unsupported(&self) -> Result<(), String> {
        if self.zk.is_some() {
            return Err("--zk: this master has no ZooKeeper leader election; run one master with --work_dir, whose registry survives restarts (docs/operators/registry.md says how high availability would work)".into());
        }
        Ok(())
    }

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
    /// The master's name, as Mesos's `--hostname`: requests may name it in their `Host`
    /// header, beside an IP address or `localhost` (any other name is refused, against DNS
    /// rebinding); the endpoints advertise it as the master's hostname.
    #[arg(long, value_name = "NAME")]
    pub hostname: Option<String>,
    /// The cluster's name, as Mesos's `--cluster`: shown in `/master/state` and
    /// `/master/state-summary`.
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
    /// Write the log to DIR/allocator-master.log instead of stderr (Mesos's `--log_dir`).
    #[arg(long = "log_dir", alias = "log-dir", value_name = "DIR")]
    pub log_dir: Option<std::path::PathBuf>,
    /// Role weights at start, `role=weight,…` (Mesos's deprecated `--weights`); weights in
    /// the registry (`--work_dir`), set through the APIs, win over these after a restart.
    #[arg(long, value_name = "ROLE=WEIGHT,…")]
    pub weights: Option<String>,
    /// The only roles frameworks may subscribe in, `role,…` (Mesos's deprecated `--roles`);
    /// default: any role.
    #[arg(long, value_name = "ROLE,…")]
    pub roles: Option<String>,
    /// Rescind an offer a framework over the scheduler API has not answered after this long,
    /// and give its resources back to the allocator (Mesos's `--offer_timeout`; default:
    /// offers do not time out).
    #[arg(
        long = "offer_timeout",
        alias = "offer-timeout",
        value_name = "DURATION",
        value_parser = crate::duration::seconds
    )]
    pub offer_timeout: Option<f64>,
    /// Mesos's ZooKeeper URL for leader election: refused (this master runs alone; see
    /// `docs/operators/registry.md` on its registry and on high availability).
    #[arg(long, value_name = "URL", hide = true)]
    pub zk: Option<String>,
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
    /// Frameworks the master keeps at once over the scheduler API (connected, or waiting
    /// within their failover timeout); a new one beyond is refused (503).
    #[arg(
        long = "max_frameworks",
        alias = "max-frameworks",
        default_value_t = crate::clients::mesos::FrameworkLimits::default().max_frameworks,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..).map(|n| n as usize)
    )]
    pub max_frameworks: usize,
    /// Largest FrameworkInfo a framework may subscribe with, in bytes of JSON; a larger one is
    /// refused (400).
    #[arg(
        long = "max_framework_info_bytes",
        alias = "max-framework-info-bytes",
        default_value_t = crate::clients::mesos::FrameworkLimits::default().max_info_bytes,
        value_name = "BYTES",
        value_parser = clap::value_parser!(u32).range(256..).map(|n| n as usize)
    )]
    pub max_framework_info_bytes: usize,
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

/// `allocator-master kube` arguments: `serve`'s, and how to reach the cluster.
#[derive(clap::Args, Debug, Clone)]
pub struct KubeArgs {
    /// The kubeconfig to use (default: `KUBECONFIG`, `~/.kube/config`, or the in-cluster
    /// service account).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The `spec.schedulerName` of the pods this scheduler schedules.
    #[arg(
        long = "scheduler_name",
        alias = "scheduler-name",
        default_value = "allocator-scheduler",
        value_name = "NAME"
    )]
    pub scheduler_name: String,
    /// The ConfigMap whose `roles.json` holds each role's (namespace's) weight and quota,
    /// `NAMESPACE/NAME`; watched (`none`: no ConfigMap).
    #[arg(
        long = "roles_config_map",
        alias = "roles-config-map",
        default_value = "kube-system/allocator-scheduler",
        value_name = "NS/NAME"
    )]
    pub roles_config_map: String,
    /// Writes to the API server (bindings, events, conditions) per second at most.
    #[arg(
        long = "kube_api_qps",
        alias = "kube-api-qps",
        default_value_t = 100.0,
        value_name = "QPS"
    )]
    pub kube_api_qps: f64,
    /// Writes allowed at once above the rate.
    #[arg(
        long = "kube_api_burst",
        alias = "kube-api-burst",
        default_value_t = 200,
        value_name = "N"
    )]
    pub kube_api_burst: u32,
    /// How many of a workload's pending pods are stated to the allocator at once (placement
    /// modules place them in one allocation run, in order); 1 states one a run, as the packing
    /// experiment does.
    #[arg(
        long = "request_window",
        alias = "request-window",
        default_value_t = allocator_kube::scheduler::REQUEST_WINDOW,
        value_name = "N"
    )]
    pub request_window: usize,
    /// What a framework declined on a node is not offered to it again for this long.
    #[arg(long = "refuse_seconds", alias = "refuse-seconds", default_value = "2secs", value_name = "DURATION", value_parser = crate::duration::seconds)]
    pub refuse_seconds: f64,
    /// The least time between two reports (event and condition) of why one pod waits.
    #[arg(long = "report_interval", alias = "report-interval", default_value = "30secs", value_name = "DURATION", value_parser = crate::duration::seconds)]
    pub report_interval: f64,
    /// Run as one of several replicas: only the one that holds the Lease watches the cluster
    /// and binds (kube-scheduler's `--leader-elect`; default off: it leads alone).
    #[arg(long = "leader_elect", alias = "leader-elect", num_args = 0..=1, require_equals = true,
          default_value_t = false, default_missing_value = "true", value_name = "BOOL")]
    pub leader_elect: bool,
    /// The Lease of the election.
    #[arg(
        long = "leader_elect_resource_name",
        alias = "leader-elect-resource-name",
        default_value = "allocator-scheduler",
        value_name = "NAME"
    )]
    pub leader_elect_resource_name: String,
    /// The namespace of the election's Lease.
    #[arg(
        long = "leader_elect_resource_namespace",
        alias = "leader-elect-resource-namespace",
        default_value = "kube-system",
        value_name = "NS"
    )]
    pub leader_elect_resource_namespace: String,
    /// How long a lease holds without renewal before another replica takes it.
    #[arg(long = "leader_elect_lease_duration", alias = "leader-elect-lease-duration", default_value = "15secs", value_name = "DURATION", value_parser = crate::duration::seconds)]
    pub leader_elect_lease_duration: f64,
    /// How long the leader tries to renew before it stops (less than the lease duration).
    #[arg(long = "leader_elect_renew_deadline", alias = "leader-elect-renew-deadline", default_value = "10secs", value_name = "DURATION", value_parser = crate::duration::seconds)]
    pub leader_elect_renew_deadline: f64,
    /// Between two tries to take or renew the lease.
    #[arg(long = "leader_elect_retry_period", alias = "leader-elect-retry-period", default_value = "2secs", value_name = "DURATION", value_parser = crate::duration::seconds)]
    pub leader_elect_retry_period: f64,
    /// Everything `serve` takes: modules, allocator, sorters, weights, the HTTP endpoints.
    #[command(flatten)]
    pub serve: ServeArgs,
}

impl KubeArgs {
    /// The client's options.
    pub fn options(&self) -> Result<allocator_kube::KubeOptions, String> {
        let mut o = allocator_kube::KubeOptions::new(&self.scheduler_name);
        o.kubeconfig = self.kubeconfig.clone();
        o.config_map = match self.roles_config_map.as_str() {
            "none" | "" => None,
            text => {
                let (ns, name) = text
                    .split_once('/')
                    .ok_or_else(|| format!("--roles_config_map: '{text}' is not NAMESPACE/NAME"))?;
                Some((ns.to_owned(), name.to_owned()))
            }
        };
        if !(self.kube_api_qps.is_finite() && self.kube_api_qps > 0.0) {
            return Err(format!(
                "--kube_api_qps must be a positive number, not {}",
                self.kube_api_qps
            ));
        }
        o.qps = self.kube_api_qps;
        o.burst = self.kube_api_burst;
        if self.request_window == 0 {
            return Err("--request_window must be at least 1".into());
        }
        o.request_window = self.request_window;
        o.refuse_seconds = self.refuse_seconds;
        o.report_interval = std::time::Duration::from_secs_f64(self.report_interval.max(0.0));
        if self.leader_elect {
            let d = |s: f64| std::time::Duration::from_secs_f64(s.max(0.0));
            let mut le =
                allocator_kube::lease::LeaderElection::new(&self.leader_elect_resource_name);
            le.namespace = self.leader_elect_resource_namespace.clone();
            le.lease_duration = d(self.leader_elect_lease_duration);
            le.renew_deadline = d(self.leader_elect_renew_deadline);
            le.retry_period = d(self.leader_elect_retry_period);
            le.validate()?;
            o.leader_election = Some(le);
        }
        Ok(o)
    }
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
    /// Submit pods that look like one job's tasks (same QoS class, creation second, shape and
    /// GPU models) as one gang, stated and launched all or nothing (the trace has no job ids).
    #[arg(long)]
    pub gangs: bool,
}
