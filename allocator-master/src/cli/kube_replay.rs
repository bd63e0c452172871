//! `allocator-master kube-replay` (issue 47): loads a test cluster and measures a scheduler on
//! it.
//!
//! * `trace`: the packing experiment's node list and pod list, the pods created in the seed's
//!   arrival order, with a manifest that gives the allocator module the experiment's
//!   parameters; the experiment itself runs on the same pods, so its answer is printed beside.
//! * `synthetic`: N identical nodes and M identical pods (the benchmark's backlog).
//! * `measure`: watches a namespace's pods, starts the scheduler command given after `--` once
//!   the watch has listed them, and reports when its bindings came, its CPU time and peak RSS
//!   (from `/proc`), the API server's CPU time over the same span and the allocated-GPU share.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use allocator_api::resources::GpuAsk;
use allocator_kube::replay::{self, FakeGpu, FakeNode, FakePod, Loader};
use serde_json::{Value, json};

use super::{CallLimitFlags, ModuleFlags, load_modules};

/// `allocator-master kube-replay` arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct KubeReplayArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: ReplayAction,
}

/// What `kube-replay` does.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum ReplayAction {
    /// Create a trace's GPU nodes and a pod list's pods in the experiment's arrival order.
    Trace(Box<TraceArgs>),
    /// Create identical nodes and a backlog of identical pods.
    Synthetic(SyntheticArgs),
    /// Start a scheduler (the command after `--`) and time its bindings.
    Measure(MeasureArgs),
}

/// Flags every action has.
#[derive(clap::Args, Debug, Clone)]
pub struct Target {
    /// The kubeconfig (default: `KUBECONFIG`, `~/.kube/config`).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The namespace of the pods.
    #[arg(long, default_value = "replay", value_name = "NS")]
    pub namespace: String,
}

/// `kube-replay trace`.
#[derive(clap::Args, Debug, Clone)]
pub struct TraceArgs {
    /// Cluster and namespace.
    #[command(flatten)]
    pub target: Target,
    /// The node list (`openb_node_list_gpu_node.csv`).
    #[arg(long, value_name = "NODES.csv")]
    pub nodes: PathBuf,
    /// The pod list (`openb_pod_list_default.csv`).
    #[arg(long, value_name = "PODS.csv")]
    pub pods: PathBuf,
    /// The experiment's seed (arrival order, tie-break order).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Target GPU demand as a multiple of the nodes' GPUs, as `experiment`'s.
    #[arg(long, default_value_t = 1.3, value_name = "X")]
    pub inflation: f64,
    /// Only this many nodes, taken evenly along the list (the demand is tuned to them).
    #[arg(long = "node_limit", alias = "node-limit", value_name = "N")]
    pub node_limit: Option<usize>,
    /// The pods' `spec.schedulerName`.
    #[arg(
        long = "scheduler_name",
        alias = "scheduler-name",
        default_value = "allocator-scheduler"
    )]
    pub scheduler_name: String,
    /// The allocator the experiment beside runs, and whose manifest entry gets the
    /// experiment's parameters.
    #[arg(long, default_value = "FGD", value_name = "NAME")]
    pub allocator: String,
    /// Write the manifest the scheduler loads: the `--modules` manifest with the experiment's
    /// parameters (`order_seed`, `typical_tasks`) on the `--allocator` module.
    #[arg(long = "manifest_out", alias = "manifest-out", value_name = "FILE")]
    pub manifest_out: Option<PathBuf>,
    /// Write what was created and the experiment's answer as JSON.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Pods created at once (1: each after the one before, so creation times keep the order).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub concurrency: usize,
    /// Only print the plan and the experiment's answer; create nothing.
    #[arg(long = "dry_run", alias = "dry-run")]
    pub dry_run: bool,
    /// Where modules come from.
    #[command(flatten)]
    pub modules: ModuleFlags,
    /// The module call budget and watchdog.
    #[command(flatten)]
    pub limits: CallLimitFlags,
}

/// `kube-replay synthetic`.
#[derive(clap::Args, Debug, Clone)]
pub struct SyntheticArgs {
    /// Cluster and namespace.
    #[command(flatten)]
    pub target: Target,
    /// Nodes to create (`node-00000`, …); 0: none.
    #[arg(long = "node_count", alias = "node-count", default_value_t = 0, value_name = "N")]
    pub node_count: usize,
    /// Each node's CPUs.
    #[arg(long = "node_cpu", alias = "node-cpu", default_value_t = 32, value_name = "CORES")]
    pub node_cpu: i64,
    /// Each node's allocatable pods.
    #[arg(long = "node_pods", alias = "node-pods", default_value_t = 110, value_name = "N")]
    pub node_pods: u32,
    /// Pods to create (`p-00000`, …).
    #[arg(long = "pod_count", alias = "pod-count", default_value_t = 0, value_name = "N")]
    pub pod_count: usize,
    /// Each pod's CPU request, milli.
    #[arg(long = "pod_cpu_milli", alias = "pod-cpu-milli", default_value_t = 100)]
    pub pod_cpu_milli: i64,
    /// The pods' `spec.schedulerName`.
    #[arg(
        long = "scheduler_name",
        alias = "scheduler-name",
        default_value = "allocator-scheduler"
    )]
    pub scheduler_name: String,
    /// Calls in flight.
    #[arg(long, default_value_t = 32, value_name = "N")]
    pub concurrency: usize,
    /// Delete every pod of the namespace first.
    #[arg(long)]
    pub clean: bool,
}

/// `kube-replay measure`.
#[derive(clap::Args, Debug, Clone)]
pub struct MeasureArgs {
    /// Cluster and namespace.
    #[command(flatten)]
    pub target: Target,
    /// Stop once this many pods of the namespace are bound.
    #[arg(long, value_name = "N")]
    pub expect: usize,
    /// Stop once no pod was bound for this long, seconds.
    #[arg(long, default_value_t = 15.0, value_name = "S")]
    pub settle: f64,
    /// Stop after this long in any case, seconds.
    #[arg(long, default_value_t = 900.0, value_name = "S")]
    pub timeout: f64,
    /// The API server's process id, for its CPU time over the run.
    #[arg(long = "apiserver_pid", alias = "apiserver-pid", value_name = "PID")]
    pub apiserver_pid: Option<u32>,
    /// The scheduler's standard error goes here.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Write the measures as JSON.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// A label for the output (`kube-scheduler`, `DRF`, `FGD`).
    #[arg(long, default_value = "scheduler")]
    pub label: String,
    /// The scheduler command line.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// Runs `kube-replay`; the exit code.
pub fn run(args: &KubeReplayArgs) -> Result<u8, String> {
    match &args.action {
        ReplayAction::Trace(a) => trace(a),
        ReplayAction::Synthetic(a) => synthetic(a),
        ReplayAction::Measure(a) => measure(a),
    }
}

fn write_json(path: &Path, value: &Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
}

/// The trace's pods as the cluster gets them: one per arrival, named by its place in the
/// order (`p-00000`, …) so that the scheduler's order (creation time, then name) is the
/// experiment's.
fn fake_pods(p: &allocator_lab::experiment::Prepared) -> Result<Vec<FakePod>, String> {
    p.order
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let pod = &p.pods[i];
            let name = format!("p-{k:05}");
            let model = match pod.models.as_slice() {
                [] => None,
                [one] => Some(one.clone()),
                more => {
                    return Err(format!(
                        "pod {name} accepts {} GPU models ({}): a nodeSelector names one; pod lists with several models per pod are not replayed",
                        more.len(),
                        more.join("|")
                    ));
                }
            };
            let gpu = match pod.gpu {
                GpuAsk::None => FakeGpu::None,
                GpuAsk::Share(m) => FakeGpu::Share(m),
                GpuAsk::Whole(k) => FakeGpu::Whole(k),
            };
            Ok(FakePod {
                name,
                cpu_milli: pod.cpu,
                mem_mib: pod.resources.scalar("mem").millis() / 1000,
                gpu,
                model,
            })
        })
        .collect()
}

/// The `--modules` manifest with `parameters` on the entries of module `allocator`; library
/// files named relative to the manifest are made absolute (the copy lives elsewhere).
fn manifest_with(
    source: &str,
    allocator: &str,
    parameters: &[(String, String)],
) -> Result<Value, String> {
    let (text, base) = if source.trim_start().starts_with('{') {
        (source.to_owned(), std::env::current_dir().map_err(|e| e.to_string())?)
    } else {
        let path = Path::new(source.strip_prefix("file://").unwrap_or(source));
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let base = std::fs::canonicalize(&base).unwrap_or(base);
        (text, base)
    };
    let mut manifest: Value =
        serde_json::from_str(&text).map_err(|e| format!("the manifest: {e}"))?;
    let libraries = manifest
        .get_mut("libraries")
        .and_then(Value::as_array_mut)
        .ok_or("the manifest has no \"libraries\" list")?;
    let mut found = false;
    for lib in libraries {
        if let Some(file) = lib.get("file").and_then(Value::as_str)
            && !Path::new(file).is_absolute()
        {
            lib["file"] = json!(base.join(file).display().to_string());
        }
        for module in lib.get_mut("modules").and_then(Value::as_array_mut).into_iter().flatten() {
            if module.get("name").and_then(Value::as_str) != Some(allocator) {
                continue;
            }
            found = true;
            let list: Vec<Value> =
                parameters.iter().map(|(k, v)| json!({"key": k, "value": v})).collect();
            module["parameters"] = Value::Array(list);
        }
    }
    if !found {
        return Err(format!("the manifest has no module '{allocator}'"));
    }
    Ok(manifest)
}

fn trace(a: &TraceArgs) -> Result<u8, String> {
    let prepared =
        allocator_lab::experiment::prepare(&a.nodes, &a.pods, a.seed, a.inflation, a.node_limit)?;
    let pods = fake_pods(&prepared)?;
    let nodes: Vec<FakeNode> = prepared
        .nodes
        .iter()
        .map(|n| FakeNode {
            name: n.name.clone(),
            cpu_milli: n.resources.scalar("cpus").millis(),
            mem_mib: n.resources.scalar("mem").millis() / 1000,
            gpus: n.gpus,
            model: Some(n.model.clone()).filter(|m| !m.is_empty()),
            // The experiment has no pods-per-node limit; one no node comes near.
            pods: 1000,
        })
        .collect();
    let registry = load_modules(&a.modules, &a.limits)?;
    let t0 = Instant::now();
    let curve = prepared.run(&registry, &a.allocator, a.seed)?;
    let (allocated, dropped) = (curve.allocated.last().copied().unwrap_or(0), curve.dropped);
    let placements: serde_json::Map<String, Value> = pods
        .iter()
        .zip(&curve.placements)
        .map(|(p, n)| (p.name.clone(), json!(n.map(|i| nodes[i].name.clone()))))
        .collect();
    let pct = 100.0 * allocated as f64 / prepared.capacity as f64;
    eprintln!(
        "kube-replay: {} with {}, seed {}: {} nodes ({} GPUs), {} pods; the experiment allocates {allocated} milli-GPU ({pct:.2} %), {dropped} pods dropped ({:.1} s)",
        prepared.workload,
        a.allocator,
        a.seed,
        nodes.len(),
        prepared.capacity / 1000,
        pods.len(),
        t0.elapsed().as_secs_f64()
    );
    if let Some(path) = &a.manifest_out {
        let source = a.modules.modules.as_deref().ok_or("--manifest_out needs --modules")?;
        let manifest = manifest_with(source, &a.allocator, &prepared.parameters)?;
        write_json(path, &manifest)?;
    }
    if let Some(path) = &a.output {
        write_json(
            path,
            &json!({
                "workload": prepared.workload,
                "allocator": a.allocator,
                "seed": a.seed,
                "nodes": nodes.len(),
                "gpus": prepared.capacity / 1000,
                "pods": pods.len(),
                "experiment_allocated_milli": allocated,
                "experiment_allocated_percent": pct,
                "experiment_dropped": dropped,
                "experiment_placements": placements,
            }),
        )?;
    }
    if a.dry_run {
        return Ok(0);
    }
    let loader = Loader::connect(a.target.kubeconfig.as_deref()).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    loader.create_nodes(&nodes, 32).map_err(|e| e.to_string())?;
    loader.namespace(&a.target.namespace).map_err(|e| e.to_string())?;
    loader
        .create_pods(&a.target.namespace, &a.scheduler_name, &pods, a.concurrency)
        .map_err(|e| e.to_string())?;
    eprintln!(
        "kube-replay: created {} nodes and {} pods in '{}' in {:.1} s",
        nodes.len(),
        pods.len(),
        a.target.namespace,
        t0.elapsed().as_secs_f64()
    );
    Ok(0)
}

fn synthetic(a: &SyntheticArgs) -> Result<u8, String> {
    let loader = Loader::connect(a.target.kubeconfig.as_deref()).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    let nodes: Vec<FakeNode> = (0..a.node_count)
        .map(|i| FakeNode {
            name: format!("node-{i:05}"),
            cpu_milli: a.node_cpu * 1000,
            mem_mib: a.node_cpu * 4096,
            gpus: 0,
            model: None,
            pods: a.node_pods,
        })
        .collect();
    loader.create_nodes(&nodes, a.concurrency).map_err(|e| e.to_string())?;
    loader.namespace(&a.target.namespace).map_err(|e| e.to_string())?;
    if a.clean {
        loader.delete_pods(&a.target.namespace).map_err(|e| e.to_string())?;
    }
    let pods: Vec<FakePod> = (0..a.pod_count)
        .map(|i| FakePod {
            name: format!("p-{i:05}"),
            cpu_milli: a.pod_cpu_milli,
            mem_mib: 64,
            gpu: FakeGpu::None,
            model: None,
        })
        .collect();
    loader
        .create_pods(&a.target.namespace, &a.scheduler_name, &pods, a.concurrency)
        .map_err(|e| e.to_string())?;
    eprintln!(
        "kube-replay: {} nodes, {} pods in '{}' for {} ({:.1} s)",
        nodes.len(),
        pods.len(),
        a.target.namespace,
        a.scheduler_name,
        t0.elapsed().as_secs_f64()
    );
    Ok(0)
}

/// A process's CPU time (user + system), seconds, from `/proc/PID/stat`.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name (in parentheses, which may hold spaces): fields 3 onwards.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let tick = if tick > 0 { tick as f64 } else { 100.0 };
    Some((utime + stime) / tick)
}

/// A process's peak resident set, MiB (`VmHWM`).
fn peak_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn stop(child: &mut Child) {
    // SAFETY: kill with a pid this process started and has not reaped.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn measure(a: &MeasureArgs) -> Result<u8, String> {
    let loader = Loader::connect(a.target.kubeconfig.as_deref()).map_err(|e| e.to_string())?;
    let stderr = match &a.log {
        Some(p) => {
            Stdio::from(std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?)
        }
        None => Stdio::null(),
    };
    let (program, rest) = a.command.split_first().ok_or("no scheduler command after --")?;
    let mut child: Option<Child> = None;
    let mut spawn_error: Option<String> = None;
    let mut api_cpu0 = None;
    let load0 = load_average();
    let started = Instant::now();
    let times = loader.watch_bindings(
        &a.target.namespace,
        a.expect,
        Duration::from_secs_f64(a.settle),
        Duration::from_secs_f64(a.timeout),
        || {
            api_cpu0 = a.apiserver_pid.and_then(cpu_seconds);
            match std::process::Command::new(program)
                .args(rest)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(stderr)
                .spawn()
            {
                Ok(c) => child = Some(c),
                Err(e) => spawn_error = Some(format!("{program}: {e}")),
            }
        },
    );
    let wall = started.elapsed().as_secs_f64();
    let api_cpu1 = a.apiserver_pid.and_then(cpu_seconds);
    let Some(mut child) = child else {
        return Err(spawn_error.unwrap_or_else(|| "the scheduler was not started".into()));
    };
    let pid = child.id();
    let cpu = cpu_seconds(pid);
    let rss = peak_rss_mib(pid);
    let exited = child.try_wait().ok().flatten();
    stop(&mut child);
    let times = times.map_err(|e| e.to_string())?;
    let pods = loader.pods(&a.target.namespace).map_err(|e| e.to_string())?;
    let capacity = loader.gpu_capacity().map_err(|e| e.to_string())?;
    let (gpu_milli, gpu_pct) = replay::allocated_share(&pods, capacity);
    let bound = pods.iter().filter(|p| p.node.is_some()).count();
    let span = match (times.first, times.last) {
        (Some(f), Some(l)) => Some(l.saturating_sub(f).as_secs_f64()),
        _ => None,
    };
    let api_cpu = match (api_cpu0, api_cpu1) {
        (Some(a0), Some(a1)) => Some(a1 - a0),
        _ => None,
    };
    let value = json!({
        "label": a.label,
        "pods": pods.len(),
        "bound": bound,
        "bound_seen_by_watch": times.bound,
        "first_bind_s": times.first.map(|d| d.as_secs_f64()),
        "last_bind_s": times.last.map(|d| d.as_secs_f64()),
        "pods_per_second": times.rate(),
        "scheduler_cpu_s": cpu,
        "scheduler_cpu_ms_per_pod": cpu.map(|c| 1000.0 * c / bound.max(1) as f64),
        "scheduler_peak_rss_mib": rss,
        "apiserver_cpu_s": api_cpu,
        // Of the wall time from the scheduler's start to the last binding: how busy the API
        // server was (1.0 = one core all the time).
        "apiserver_cpu_share": match (api_cpu, times.last) {
            (Some(c), Some(l)) if l.as_secs_f64() > 0.0 => Some(c / l.as_secs_f64()),
            _ => None,
        },
        "bind_span_s": span,
        "wall_s": wall,
        "gpus": capacity,
        "allocated_gpu_milli": gpu_milli,
        "allocated_gpu_percent": gpu_pct,
        "load_average_before": load0,
        "load_average_after": load_average(),
        "scheduler_exited_early": exited.map(|s| s.to_string()),
        "placements": pods
            .iter()
            .map(|p| (p.name.clone(), json!(p.node)))
            .collect::<serde_json::Map<String, Value>>(),
    });
    eprintln!(
        "kube-replay: {}: {bound}/{} pods bound, {} pods/s, scheduler {} CPU-s ({} ms/pod), peak RSS {} MiB, API server {} CPU-s; allocated GPU {gpu_pct:.2} % of {capacity}; load {}",
        a.label,
        pods.len(),
        times.rate().map_or("-".into(), |r| format!("{r:.1}")),
        cpu.map_or("-".into(), |c| format!("{c:.2}")),
        cpu.map_or("-".into(), |c| format!("{:.3}", 1000.0 * c / bound.max(1) as f64)),
        rss.map_or("-".into(), |r| format!("{r:.0}")),
        api_cpu.map_or("-".into(), |c| format!("{c:.1}")),
        load_average()
    );
    if let Some(path) = &a.output {
        write_json(path, &value)?;
    }
    if let Some(status) = exited {
        return Err(format!("the scheduler ended before the measure did: {status}"));
    }
    Ok(0)
}
