//! `allocator-master experiment`: the GPU packing experiment of Weng et al., "Beware of
//! Fragmentation" (USENIX ATC '23), through the master (SPEC 7).
//!
//! For each (pod list, allocator, seed): the nodes become agents with GPU devices, the pods
//! arrive one at a time in the seed's order ([`trace::arrival_order`]), each placed by the
//! allocator before the next ([`run::run_one`]); none finishes, and one no agent can take is
//! dropped. After every pod the arrived GPU demand, the allocated GPU and the fragmentation are
//! recorded, then bucketed by arrived % as the artifact's analysis does ([`buckets`]).
//! Experiments run in parallel (`--jobs`); each is deterministic by its seed.

pub mod plot;
pub mod run;
pub mod trace;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use allocator_host::ModuleRegistry;
use placement_core::frag::{FragSum, TypicalTask, typical_tasks, typical_tasks_by};

use run::Curve;
use trace::{NodeSpec, Pod};

/// The highest arrived-% bucket written.
pub const MAX_BUCKET: usize = 130;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The node list.
    pub nodes: PathBuf,
    /// The pod lists.
    pub pods: Vec<PathBuf>,
    /// The allocators, by name (built-in or module).
    pub allocators: Vec<String>,
    /// The seeds.
    pub seeds: Vec<u64>,
    /// Target GPU demand as a multiple of the cluster's GPUs.
    pub inflation: f64,
    /// Worker threads.
    pub jobs: usize,
    /// Whose arrival and node order.
    pub order: Order,
}

/// Whose arrival order, node order and random draws an experiment uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// Ours: the arrival order from our generator ([`trace::arrival_order`]), ties broken by
    /// a random agent order drawn from the seed and the pod list's name
    /// ([`tie_break_seed`]), `Random` drawing from our generator.
    #[default]
    Ours,
    /// The artifact's, seed for seed ([`trace::artifact_order`]): Go's `math/rand` stream as
    /// the artifact draws it, nodes named with its `%04d-` prefixes and ties going to the
    /// smallest name, `Random` continuing Go's stream, and FGD's fragmentation summed in the
    /// artifact's floating-point order.
    Artifact,
}

impl std::str::FromStr for Order {
    type Err = String;

    fn from_str(s: &str) -> Result<Order, String> {
        match s {
            "ours" => Ok(Order::Ours),
            "artifact" => Ok(Order::Artifact),
            _ => Err(format!("'{s}': expected ours or artifact")),
        }
    }
}

/// The seed of the tie-break order in [`Order::Ours`]: the experiment's seed mixed with the
/// pod list's name, so that one seed gives each pod list its own agent order (the artifact's
/// node order also differs between pod lists for a seed, since its draws before it depend
/// on the pod list).
pub fn tie_break_seed(seed: u64, workload: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in workload.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut z = h ^ seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One experiment's result row.
#[derive(Clone, Debug)]
pub struct Row {
    /// The pod list's file name without `.csv`.
    pub workload: String,
    /// The allocator.
    pub policy: String,
    /// The seed.
    pub seed: u64,
    /// 100 × allocated / capacity, mean per arrived-% bucket (`None`: no pod in the bucket or
    /// its neighbours).
    pub allocated: Vec<Option<f64>>,
    /// The fragmentation amount, 100 × fragmentation / capacity, mean per bucket (the
    /// artifact's `analysis_frag_discrete.csv`).
    pub fragmentation: Vec<Option<f64>>,
    /// The fragmentation ratio, 100 × fragmentation / unallocated GPU, mean per bucket (the
    /// artifact's `analysis_frag_ratio_discrete.csv`; 0 when no GPU is unallocated).
    pub frag_ratio: Vec<Option<f64>>,
    /// Pods dropped.
    pub dropped: usize,
    /// Pods arrived.
    pub pods: usize,
}

/// A pod list loaded, with its typical tasks.
struct Workload {
    name: String,
    pods: Vec<Pod>,
    typical: Vec<TypicalTask>,
    /// The same tasks with the frequencies in the artifact's arithmetic ([`Order::Artifact`]).
    typical_artifact: Vec<TypicalTask>,
}

/// Python's `round` to an integer (half to even), for the bucket of an arrived %.
fn round_half_even(x: f64) -> i64 {
    let f = x.floor();
    let d = x - f;
    let r = if d > 0.5 || (d == 0.5 && (f as i64) % 2 != 0) { f + 1.0 } else { f };
    r as i64
}

/// Buckets a curve as the artifact's `merge_alloc_discrete.py` does: for each a in
/// 0..=[`MAX_BUCKET`], the mean over pods after which round(100 × arrived / capacity) = a of
/// `value` (allocated: rounded to two decimals per pod first); an empty bucket takes the
/// window [a − 1, a + 1].
pub fn buckets(
    arrived: &[i64],
    percents: &[f64],
    capacity: i64,
    round_each: bool,
) -> Vec<Option<f64>> {
    let mut sum = vec![0.0; MAX_BUCKET + 1];
    let mut count = vec![0usize; MAX_BUCKET + 1];
    for (a, &v) in arrived.iter().zip(percents) {
        let pct = *a as f64 / capacity as f64 * 100.0;
        let b = round_half_even(pct);
        if (0..=MAX_BUCKET as i64).contains(&b) {
            sum[b as usize] += if round_each { (v * 100.0).round() / 100.0 } else { v };
            count[b as usize] += 1;
        }
    }
    (0..=MAX_BUCKET)
        .map(|a| {
            if count[a] > 0 {
                return Some(sum[a] / count[a] as f64);
            }
            let window = a.saturating_sub(1)..=(a + 1).min(MAX_BUCKET);
            let (s, n) = window.fold((0.0, 0), |(s, n), b| (s + sum[b], n + count[b]));
            (n > 0).then(|| s / n as f64)
        })
        .collect()
}

/// Runs every (pod list, allocator, seed), in parallel over one registry; rows in that order.
/// `progress` is called after each experiment with (done, total).
pub fn run_all(
    options: &Options,
    registry: &ModuleRegistry,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<(i64, Vec<Row>), String> {
    let nodes = trace::read_nodes(&options.nodes)?;
    let capacity: i64 = nodes.iter().map(|n| i64::from(n.gpus)).sum::<i64>() * 1000;
    if capacity == 0 {
        return Err(format!("{}: the nodes have no GPUs", options.nodes.display()));
    }
    let workloads = options.pods.iter().map(|p| load_workload(p)).collect::<Result<Vec<_>, _>>()?;
    let target = (options.inflation * capacity as f64).round() as i64;
    let mut jobs = Vec::new();
    for w in 0..workloads.len() {
        for a in &options.allocators {
            for &s in &options.seeds {
                jobs.push((w, a.clone(), s));
            }
        }
    }
    let total = jobs.len();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Row, String>>>> = Mutex::new(vec![None; total]);
    let threads = options.jobs.clamp(1, total.max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    let (w, allocator, seed) = &jobs[i];
                    let row = one(
                        registry,
                        &nodes,
                        &workloads[*w],
                        allocator,
                        *seed,
                        target,
                        capacity,
                        options.order,
                    );
                    let failed = row.is_err();
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(row);
                    progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
                    if failed {
                        // Stop taking work: the error is reported once all threads end.
                        next.store(total, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let rows = results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .flatten()
        .collect::<Result<Vec<Row>, String>>()?;
    if rows.len() != total {
        return Err("an experiment did not finish".into());
    }
    Ok((capacity, rows))
}

fn load_workload(path: &Path) -> Result<Workload, String> {
    let pods = trace::read_pods(path)?;
    if pods.is_empty() {
        return Err(format!("{}: no pods", path.display()));
    }
    let shapes: Vec<(i64, i64, u32, &[String])> = pods
        .iter()
        .map(|p| (p.cpu, p.gpu.per_device(), p.gpu.devices(), p.models.as_slice()))
        .collect();
    let typical = typical_tasks(shapes.iter().copied(), 0.95);
    let typical_artifact = typical_tasks_by(shapes, 0.95, FragSum::Artifact);
    let name = path
        .file_stem()
        .map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into_owned());
    Ok(Workload { name, pods, typical, typical_artifact })
}

#[allow(clippy::too_many_arguments)]
fn one(
    registry: &ModuleRegistry,
    nodes: &[NodeSpec],
    w: &Workload,
    allocator: &str,
    seed: u64,
    target: i64,
    capacity: i64,
    kind: Order,
) -> Result<Row, String> {
    let typical = match kind {
        Order::Ours => &w.typical,
        Order::Artifact => &w.typical_artifact,
    };
    let (order, nodes, knobs) = match kind {
        Order::Ours => {
            let knobs = run::Knobs {
                parameters: vec![("order_seed".into(), tie_break_seed(seed, &w.name).to_string())],
                sum: FragSum::Direct,
            };
            (trace::arrival_order(&w.pods, seed, target), nodes.to_vec(), knobs)
        }
        Order::Artifact => {
            let mut sorted: Vec<&NodeSpec> = nodes.iter().collect();
            sorted.sort_by(|a, b| a.name.cmp(&b.name));
            let a = trace::artifact_order(&w.pods, sorted.len(), seed, target);
            let renamed: Vec<NodeSpec> = sorted
                .iter()
                .zip(&a.prefixes)
                .map(|(n, p)| NodeSpec { name: format!("{p:04}-{}", n.name), ..(*n).clone() })
                .collect();
            let knobs = run::Knobs {
                parameters: [
                    ("tie_break", "name".to_owned()),
                    ("go_seed", seed.to_string()),
                    ("go_draws", a.draws.to_string()),
                    ("fragmentation_sum", "artifact".to_owned()),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
                sum: FragSum::Artifact,
            };
            (a.pods, renamed, knobs)
        }
    };
    let curve: Curve =
        run::run_one(registry, allocator, seed, &nodes, &w.pods, &order, typical, &knobs)
            .map_err(|e| format!("{} with {allocator}, seed {seed}: {e}", w.name))?;
    let cap = capacity as f64;
    let allocated: Vec<f64> = curve.allocated.iter().map(|&a| 100.0 * a as f64 / cap).collect();
    let amount: Vec<f64> = curve.fragmentation.iter().map(|&f| 100.0 * f / cap).collect();
    let ratio: Vec<f64> = (curve.fragmentation.iter().zip(&curve.allocated))
        .map(|(&f, &a)| if a < capacity { 100.0 * f / (capacity - a) as f64 } else { 0.0 })
        .collect();
    Ok(Row {
        workload: w.name.clone(),
        policy: allocator.to_owned(),
        seed,
        allocated: buckets(&curve.arrived, &allocated, capacity, true),
        fragmentation: buckets(&curve.arrived, &amount, capacity, false),
        frag_ratio: buckets(&curve.arrived, &ratio, capacity, false),
        dropped: curve.dropped,
        pods: order.len(),
    })
}

/// One experiment's inputs, for running its pod list elsewhere (issue 47: the same pods
/// replayed through a Kubernetes cluster by `allocator-master kube-replay`): the nodes, the
/// pods and their arrival order in [`Order::Ours`] for the seed, and the parameters the
/// experiment gives the allocator module.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The pod list's file name without `.csv`.
    pub workload: String,
    /// The nodes, in the order they are added.
    pub nodes: Vec<NodeSpec>,
    /// The pod list (name order).
    pub pods: Vec<Pod>,
    /// The arrival order: indices into `pods` (resampled or thinned to the target demand).
    pub order: Vec<usize>,
    /// The module parameters the experiment passes (`order_seed`, `typical_tasks`), as a
    /// manifest carries them.
    pub parameters: Vec<(String, String)>,
    /// The nodes' GPU capacity, milli.
    pub capacity: i64,
    typical: Vec<TypicalTask>,
    order_seed: u64,
}

/// Reads a node list and a pod list and draws the seed's arrival order as the experiment does
/// ([`Order::Ours`], demand `inflation` × the GPU capacity). `node_limit`: only that many nodes,
/// taken evenly along the list (so a small cluster keeps the list's mix of GPU models), and the
/// demand tuned to their capacity.
pub fn prepare(
    nodes: &Path,
    pods: &Path,
    seed: u64,
    inflation: f64,
    node_limit: Option<usize>,
) -> Result<Prepared, String> {
    let mut nodes = trace::read_nodes(nodes)?;
    if let Some(limit) = node_limit.filter(|l| *l < nodes.len()) {
        let n = nodes.len();
        let limit = limit.max(1);
        nodes = (0..limit).map(|i| nodes[i * n / limit].clone()).collect();
    }
    let capacity: i64 = nodes.iter().map(|n| i64::from(n.gpus)).sum::<i64>() * 1000;
    if capacity == 0 {
        return Err("the nodes have no GPUs".into());
    }
    let w = load_workload(pods)?;
    let target = (inflation * capacity as f64).round() as i64;
    let order = trace::arrival_order(&w.pods, seed, target);
    let order_seed = tie_break_seed(seed, &w.name);
    let parameters = vec![
        ("order_seed".to_owned(), order_seed.to_string()),
        (
            placement_core::frag::TYPICAL_TASKS_PARAMETER.to_owned(),
            placement_core::frag::format_table(&w.typical),
        ),
    ];
    Ok(Prepared {
        workload: w.name,
        nodes,
        pods: w.pods,
        order,
        parameters,
        capacity,
        typical: w.typical,
        order_seed,
    })
}

impl Prepared {
    /// Runs the experiment on it with `allocator` and `seed`, as `experiment` does: what it
    /// recorded after each pod (the last `allocated` is the milli-GPU allocated once every pod
    /// has arrived; `placements` where each pod went).
    pub fn run(
        &self,
        registry: &ModuleRegistry,
        allocator: &str,
        seed: u64,
    ) -> Result<Curve, String> {
        let knobs = run::Knobs {
            parameters: vec![("order_seed".into(), self.order_seed.to_string())],
            sum: FragSum::Direct,
        };
        run::run_one(
            registry,
            allocator,
            seed,
            &self.nodes,
            &self.pods,
            &self.order,
            &self.typical,
            &knobs,
        )
    }
}

/// A few lines for the terminal: per (pod list, allocator), the mean allocated GPU % at 100 %
/// and at the last arrived bucket over seeds, and pods dropped.
pub fn summary(rows: &[Row], seconds: f64, jobs: usize) -> String {
    let mut groups: Vec<((String, String), Vec<&Row>)> = Vec::new();
    for r in rows {
        let key = (r.workload.clone(), r.policy.clone());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    let mean = |v: &[&Row], a: usize| {
        let xs: Vec<f64> = v.iter().filter_map(|r| r.allocated[a]).collect();
        if xs.is_empty() {
            "-".to_owned()
        } else {
            format!("{:.2}", xs.iter().sum::<f64>() / xs.len() as f64)
        }
    };
    // Columns as wide as their longest entry, so that long pod-list names stay aligned.
    let ww = groups.iter().map(|((w, _), _)| w.len()).chain(["workload".len()]).max().unwrap_or(8);
    let pw = groups.iter().map(|((_, p), _)| p.len()).chain([14]).max().unwrap_or(14);
    let mut out = format!(
        "{} experiments in {seconds:.1} s on {jobs} thread(s)\n{:<ww$} {:<pw$} {:>6} {:>14} {:>14} {:>10}\n",
        rows.len(),
        "workload",
        "allocator",
        "seeds",
        "alloc % @100",
        "alloc % @130",
        "dropped"
    );
    for ((w, p), v) in &groups {
        let dropped = v.iter().map(|r| r.dropped as f64).sum::<f64>() / v.len() as f64;
        out.push_str(&format!(
            "{w:<ww$} {p:<pw$} {:>6} {:>14} {:>14} {dropped:>10.1}\n",
            v.len(),
            mean(v, 100),
            mean(v, MAX_BUCKET)
        ));
    }
    out.push_str("(mean over seeds of the allocated GPU % at 100 % and 130 % arrived demand; pods dropped per run)");
    out
}

/// Which per-bucket values a CSV holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Allocated GPU % (SPEC 7's CSV, the artifact's `analysis_allo_discrete.csv`).
    Allocated,
    /// Fragmentation amount % of capacity (`analysis_frag_discrete.csv`).
    FragAmount,
    /// Fragmentation % of unallocated GPU (`analysis_frag_ratio_discrete.csv`).
    FragRatio,
}

impl Row {
    /// The per-bucket values of `measure`.
    pub fn values(&self, measure: Measure) -> &[Option<f64>] {
        match measure {
            Measure::Allocated => &self.allocated,
            Measure::FragAmount => &self.fragmentation,
            Measure::FragRatio => &self.frag_ratio,
        }
    }
}

/// The CSV of SPEC 7 (`workload,sc_policy,tune,seed,total_gpus,0,…,130`).
pub fn csv(rows: &[Row], inflation: f64, capacity: i64) -> String {
    csv_of(rows, inflation, capacity, Measure::Allocated)
}

/// The CSV of SPEC 7's layout holding `measure` per bucket (two decimals).
pub fn csv_of(rows: &[Row], inflation: f64, capacity: i64, measure: Measure) -> String {
    let mut out = String::from("workload,sc_policy,tune,seed,total_gpus");
    for a in 0..=MAX_BUCKET {
        out.push_str(&format!(",{a}"));
    }
    out.push('\n');
    for r in rows {
        out.push_str(&format!(
            "{},{},{},{},{}",
            r.workload,
            r.policy,
            inflation,
            r.seed,
            capacity / 1000
        ));
        for v in r.values(measure) {
            match v {
                Some(v) => out.push_str(&format!(",{v:.2}")),
                None => out.push(','),
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_round_half_to_even_as_python() {
        assert_eq!(round_half_even(0.5), 0);
        assert_eq!(round_half_even(1.5), 2);
        assert_eq!(round_half_even(2.4999), 2);
        assert_eq!(round_half_even(2.5001), 3);
    }

    #[test]
    fn a_bucket_is_the_mean_of_its_pods() {
        // Capacity 1000 milli: 1 % per 10 milli arrived.
        let arrived = [10, 12, 20];
        let allocated = [1.0, 1.2, 2.0];
        let b = buckets(&arrived, &allocated, 1000, true);
        assert_eq!(b[1], Some(1.1)); // pods at 1.0 % and 1.2 % arrived: mean of 1.0 and 1.2
        assert_eq!(b[2], Some(2.0));
        assert_eq!(b[0], Some(1.1), "an empty bucket takes its neighbours [0, 1]");
        assert_eq!(b[4], None);
    }
}
