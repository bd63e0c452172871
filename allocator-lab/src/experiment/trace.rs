//! The experiment's inputs: an openb node list and pod list, and a seed's arrival order
//! (reference §1.2: a seeded shuffle, then "tune": resampling with replacement up to the
//! target GPU demand, or random thinning down to it).

use std::path::Path;

use allocator_api::gorand::GoRand;
use allocator_api::resources::{DEVICE_MILLI, Demand, GpuAsk};
use allocator_api::rng::Rng;
use allocator_api::{Resources, Scalar};

use crate::import::read_csv;

/// One node of the cluster.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    /// Its serial number (the agent's name).
    pub name: String,
    /// Its resources, GPUs as devices (`gpus[0]:1;…`).
    pub resources: Resources,
    /// GPU devices.
    pub gpus: u32,
    /// GPU model.
    pub model: String,
}

/// One pod of a pod list.
#[derive(Clone, Debug)]
pub struct Pod {
    /// Milli-CPU.
    pub cpu: i64,
    /// What it asks of the GPUs.
    pub gpu: GpuAsk,
    /// The accepted GPU models.
    pub models: Vec<String>,
    /// Its resources as a task asks for them (`cpus`, `mem`, pooled `gpus`).
    pub resources: Resources,
    /// Its demand as a request states it.
    pub request: Resources,
}

impl Pod {
    /// The GPU demand it adds to "arrived" (per-GPU milli × GPU count).
    pub fn gpu_milli(&self) -> i64 {
        self.gpu.total()
    }
}

fn cell(row: &[String], col: usize) -> &str {
    row.get(col).map_or("", |s| s.trim())
}

fn int(row: &[String], col: usize, what: &str, file: &str, line: usize) -> Result<i64, String> {
    let text = cell(row, col);
    text.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .map(|x| x.round() as i64)
        .ok_or_else(|| format!("{file}:{line}: {what} must be a non-negative number, got '{text}'"))
}

/// Reads an openb node list (`sn, cpu_milli, memory_mib, gpu, model`).
pub fn read_nodes(path: &Path) -> Result<Vec<NodeSpec>, String> {
    let csv = read_csv(path)?;
    let cols = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
        .iter()
        .map(|c| csv.column(c))
        .collect::<Result<Vec<_>, _>>()?;
    let mut nodes = Vec::with_capacity(csv.rows.len());
    for (line, row) in &csv.rows {
        let f = &csv.file;
        let name = cell(row, cols[0]).to_owned();
        if name.is_empty() {
            return Err(format!("{f}:{line}: empty sn"));
        }
        let cpu = int(row, cols[1], "cpu_milli", f, *line)?;
        let mem = int(row, cols[2], "memory_mib", f, *line)?;
        let gpus = int(row, cols[3], "gpu", f, *line)? as u32;
        let mut text = format!("cpus:{};mem:{mem}", Scalar::from_millis(cpu));
        for g in 0..gpus {
            text.push_str(&format!(";gpus[{g}]:1"));
        }
        let resources = text.parse().map_err(|e| format!("{f}:{line}: {e}"))?;
        nodes.push(NodeSpec { name, resources, gpus, model: cell(row, cols[4]).to_owned() });
    }
    if nodes.is_empty() {
        return Err(format!("{}: no nodes", csv.file));
    }
    Ok(nodes)
}

/// Reads an openb pod list (`name, cpu_milli, memory_mib, num_gpu, gpu_milli[, gpu_spec]`), in
/// name order. A GPU pod's per-GPU milli is `gpu_milli` up to 1000 (1000 above), as the
/// artifact's conversion does; one GPU below 1000 milli is a share, anything else whole GPUs.
pub fn read_pods(path: &Path) -> Result<Vec<Pod>, String> {
    let csv = read_csv(path)?;
    let cols = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"]
        .iter()
        .map(|c| csv.column(c))
        .collect::<Result<Vec<_>, _>>()?;
    let spec = csv.column("gpu_spec").ok();
    let mut named = Vec::with_capacity(csv.rows.len());
    for (line, row) in &csv.rows {
        let f = &csv.file;
        let cpu = int(row, cols[1], "cpu_milli", f, *line)?;
        let mem = int(row, cols[2], "memory_mib", f, *line)?;
        let num = int(row, cols[3], "num_gpu", f, *line)?;
        let milli = int(row, cols[4], "gpu_milli", f, *line)?.min(DEVICE_MILLI);
        let gpu = match (num, milli) {
            (0, _) | (_, 0) => GpuAsk::None,
            (1, m) if m < DEVICE_MILLI => GpuAsk::Share(m),
            (k, _) => GpuAsk::Whole(k as u32),
        };
        let models: Vec<String> = spec
            .map(|c| cell(row, c).split('|').filter(|s| !s.is_empty()).map(str::to_owned).collect())
            .unwrap_or_default();
        let base: Resources = format!("cpus:{};mem:{mem}", Scalar::from_millis(cpu))
            .parse()
            .map_err(|e| format!("{f}:{line}: {e}"))?;
        let demand = Demand { resources: base, gpus: gpu, models: models.clone() };
        let request = demand.to_request();
        let resources =
            request.filter(|r| r.name.as_str() != allocator_api::resources::MODELS_REQUEST);
        named.push((cell(row, cols[0]).to_owned(), Pod { cpu, gpu, models, resources, request }));
    }
    named.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(named.into_iter().map(|(_, p)| p).collect())
}

/// The arrival order of `pods` (name-sorted) for `seed`: a uniform shuffle, then tuned to
/// `target` milli-GPU of demand: while below, pods drawn uniformly with replacement from the
/// original list are appended, stopping at the first whose per-GPU milli would pass the target;
/// while above, uniformly drawn pods are removed. Indices into `pods`.
pub fn arrival_order(pods: &[Pod], seed: u64, target: i64) -> Vec<usize> {
    let mut rng = Rng::new(seed);
    let mut order: Vec<usize> = (0..pods.len()).collect();
    rng.shuffle(&mut order);
    let mut total: i64 = pods.iter().map(Pod::gpu_milli).sum();
    if total < target {
        loop {
            let i = rng.below(pods.len() as u64) as usize;
            if total + pods[i].gpu.per_device() > target {
                break;
            }
            total += pods[i].gpu_milli();
            order.push(i);
        }
    } else {
        while total > target && !order.is_empty() {
            let k = rng.below(order.len() as u64) as usize;
            total -= pods[order.remove(k)].gpu_milli();
        }
    }
    order
}

/// The FGD artifact's own order for a seed, drawn exactly as it draws it from Go's global
/// `math/rand` (reference §1.2; `pkg/simulator/core.go` `Simulate`, `simulator.go`):
/// `rand.Seed(seed)`; one `rand.Int()` (evaluated as a log argument); `rand.Shuffle` of the
/// name-sorted pods; tune up (`rand.Intn(n)` over the name-sorted original list, appending a
/// copy until the first whose per-GPU milli would pass the target) or tune down (removing
/// `pods[rand.Intn(len)]` while above the target); then `rand.Perm(#nodes)` over the
/// name-sorted nodes (after the scheduler's start-up draws, [`ARTIFACT_STARTUP_DRAWS`]),
/// whose entry becomes node i's `%04d-` name prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactOrder {
    /// The arrival order: indices into the name-sorted pods.
    pub pods: Vec<usize>,
    /// Per node of the name-sorted node list, its name prefix (a permutation of 0..#nodes).
    pub prefixes: Vec<usize>,
    /// How many values the start-up took from Go's source: the scheduler's later draws
    /// (`Random`'s) continue from there.
    pub draws: u64,
}

/// The values the artifact's scheduler takes from Go's global source when it starts, between
/// the tuning and `rand.Perm` (`RunCluster` starts the scheduler, then
/// `syncClusterResourceList` draws the node prefixes). Measured: with 10 (and no other
/// count from 0 to 30) every cell of DotProd's seed-42 default run matches the artifact's
/// cached row, and then every policy's cell on every pod list and seed (docs/faithfulness.md).
/// It agrees with one `rand.Float64()` per informer the scheduler starts: client-go's
/// reflector draws its watch timeout that way when it first watches.
pub const ARTIFACT_STARTUP_DRAWS: usize = 10;

/// The artifact's order for `seed` over `pods` (name-sorted, as [`read_pods`] returns them)
/// and `nodes` nodes, tuned to `target` milli-GPU (see [`ArtifactOrder`]).
pub fn artifact_order(pods: &[Pod], nodes: usize, seed: u64, target: i64) -> ArtifactOrder {
    let mut go = GoRand::new(seed as i64);
    go.int();
    let mut order: Vec<usize> = (0..pods.len()).collect();
    go.shuffle(&mut order);
    let mut total: i64 = pods.iter().map(Pod::gpu_milli).sum();
    if total > target {
        while total > target && !order.is_empty() {
            let k = go.intn(order.len());
            total -= pods[order.remove(k)].gpu_milli();
        }
    } else if total < target && !pods.is_empty() {
        loop {
            let i = go.intn(pods.len());
            if total + pods[i].gpu.per_device() > target {
                break;
            }
            total += pods[i].gpu_milli();
            order.push(i);
        }
    }
    for _ in 0..ARTIFACT_STARTUP_DRAWS {
        go.float64();
    }
    let prefixes = if nodes > 0 { go.perm(nodes) } else { Vec::new() };
    ArtifactOrder { pods: order, prefixes, draws: go.draws() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(milli: i64, num: u32) -> Pod {
        let gpu = if num == 0 {
            GpuAsk::None
        } else if milli < 1000 {
            GpuAsk::Share(milli)
        } else {
            GpuAsk::Whole(num)
        };
        Pod {
            cpu: 1000,
            gpu,
            models: vec![],
            resources: Resources::new(),
            request: Resources::new(),
        }
    }

    #[test]
    fn tuning_up_resamples_until_the_target() {
        let pods = vec![pod(500, 1), pod(1000, 1), pod(0, 0)];
        let order = arrival_order(&pods, 42, 10_000);
        let total: i64 = order.iter().map(|&i| pods[i].gpu_milli()).sum();
        assert!(total <= 10_000 && total > 9_000, "{total}");
        let mut first: Vec<usize> = order[..3].to_vec();
        first.sort();
        assert_eq!(first, [0, 1, 2], "the original list comes first, shuffled");
    }

    #[test]
    fn tuning_down_thins_to_the_target() {
        let pods: Vec<Pod> = (0..20).map(|_| pod(1000, 1)).collect();
        let order = arrival_order(&pods, 7, 10_000);
        assert_eq!(order.len(), 10);
    }

    #[test]
    fn the_artifacts_order_shuffles_tunes_then_draws_the_node_prefixes() {
        let pods: Vec<Pod> = (0..30).map(|i| pod(100 * (i % 10) + 50, 1)).collect();
        let a = artifact_order(&pods, 12, 42, 40_000);
        let mut first: Vec<usize> = a.pods[..30].to_vec();
        first.sort();
        assert_eq!(first, (0..30).collect::<Vec<_>>(), "the original list first, shuffled");
        assert!(a.pods.len() > 30, "tuned up with clones");
        let mut prefixes = a.prefixes.clone();
        prefixes.sort();
        assert_eq!(prefixes, (0..12).collect::<Vec<_>>());
        // The shuffle is Go's: one `Int` drawn first, then `Shuffle`.
        let mut go = GoRand::new(42);
        go.int();
        let mut shuffled: Vec<usize> = (0..30).collect();
        go.shuffle(&mut shuffled);
        assert_eq!(a.pods[..30], shuffled[..]);
        assert_eq!(a, artifact_order(&pods, 12, 42, 40_000));
        let down = artifact_order(&pods, 12, 42, 5_000);
        assert!(down.pods.len() < 30);
    }

    #[test]
    fn the_order_depends_on_the_seed() {
        let pods: Vec<Pod> = (0..50).map(|i| pod(10 * i + 1, 1)).collect();
        assert_eq!(arrival_order(&pods, 1, 40_000), arrival_order(&pods, 1, 40_000));
        assert_ne!(arrival_order(&pods, 1, 40_000), arrival_order(&pods, 2, 40_000));
    }
}
