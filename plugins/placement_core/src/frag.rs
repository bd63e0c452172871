//! GPU fragmentation as the FGD artifact measures it (reference §1.5 and §3.6).
//!
//! The **typical tasks** of a workload are its most common task shapes (CPU, per-GPU milli,
//! GPU count, accepted models), taken from the most frequent down until they cover 95 % of its
//! tasks, with their frequencies renormalised to sum to 1. A node's fragmentation is the
//! expected amount of its free GPU that a typical task could **not** use:
//!
//! * for a task without GPUs, one whose models exclude the node's, or one that does not fit
//!   (too little CPU, or fewer than `k` devices with room for its per-GPU share): all of the
//!   node's free GPU;
//! * for a task that fits: the free GPU of the devices that each have less room than its
//!   per-GPU share.
//!
//! The cluster's fragmentation is the sum over nodes. Memory is not part of the measure.

use std::collections::HashMap;

use crate::node::Node;

/// The module parameter that carries a typical-task table inline ([`format_table`]'s text):
/// `FGD` reads it, and `allocator-master experiment` passes each pod list's table in it.
pub const TYPICAL_TASKS_PARAMETER: &str = "typical_tasks";

/// One typical task shape and its (renormalised) frequency.
#[derive(Clone, Debug, PartialEq)]
pub struct TypicalTask {
    /// Milli-CPU.
    pub cpu: i64,
    /// Milli-GPU per device (0 for a task without GPUs; 1000 for whole GPUs).
    pub gpu_milli: i64,
    /// Devices (0, 1 for a share, or k whole).
    pub gpus: u32,
    /// Accepted GPU models (empty: any).
    pub models: Vec<String>,
    /// Its frequency among the typical tasks (they sum to 1).
    pub p: f64,
}

/// The typical tasks of a workload whose tasks are `(cpu milli, per-GPU milli, GPU count,
/// accepted models)`: the most frequent shapes (ties: the larger shape first) until they cover
/// `coverage` (0.95 in the artifact) of the tasks, renormalised.
pub fn typical_tasks<'a>(
    tasks: impl IntoIterator<Item = (i64, i64, u32, &'a [String])>,
    coverage: f64,
) -> Vec<TypicalTask> {
    typical_tasks_by(tasks, coverage, FragSum::Direct)
}

/// [`typical_tasks`], with the frequencies computed as `sum` says: [`FragSum::Direct`] cuts
/// where the covered count reaches `coverage × total` and gives `count / covered`;
/// [`FragSum::Artifact`] computes them as the artifact's `GetTypicalPods` does, in its
/// floating-point steps: it cuts where the covered count reaches `100·coverage × total / 100`
/// and gives `(count / total) / (covered / total)`.
pub fn typical_tasks_by<'a>(
    tasks: impl IntoIterator<Item = (i64, i64, u32, &'a [String])>,
    coverage: f64,
    sum: FragSum,
) -> Vec<TypicalTask> {
    let mut counts: HashMap<(i64, i64, u32, &[String]), u64> = HashMap::new();
    for (cpu, milli, gpus, models) in tasks {
        *counts.entry((cpu, milli, gpus, models)).or_default() += 1;
    }
    typical_tasks_counted(counts, coverage, sum)
}

/// [`typical_tasks_by`] of tasks already counted by shape (each shape once, with its count),
/// for a caller that keeps the counts as tasks come instead of every task.
pub fn typical_tasks_counted<'a>(
    counts: impl IntoIterator<Item = ((i64, i64, u32, &'a [String]), u64)>,
    coverage: f64,
    sum: FragSum,
) -> Vec<TypicalTask> {
    let mut shapes: Vec<_> = counts.into_iter().filter(|(_, n)| *n > 0).collect();
    let total: u64 = shapes.iter().map(|(_, n)| n).sum();
    shapes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
    let mut kept = Vec::new();
    let mut covered = 0u64;
    let threshold = match sum {
        FragSum::Direct => coverage * total as f64,
        FragSum::Artifact => (coverage * 100.0).round() * total as f64 / 100.0,
    };
    for (shape, n) in shapes {
        if total > 0 && covered as f64 >= threshold {
            break;
        }
        covered += n;
        kept.push((shape, n));
    }
    kept.into_iter()
        .map(|((cpu, gpu_milli, gpus, models), n)| TypicalTask {
            cpu,
            gpu_milli,
            gpus,
            models: models.to_vec(),
            p: match sum {
                FragSum::Direct => n as f64 / covered as f64,
                FragSum::Artifact => (n as f64 / total as f64) / (covered as f64 / total as f64),
            },
        })
        .collect()
}

/// How a node's fragmentation is summed in floating point (the value is the same up to
/// rounding; the last bits decide FGD's ties).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FragSum {
    /// `Σ_t p_t · F_n(t)` in typical-task order.
    #[default]
    Direct,
    /// As the FGD artifact sums it (`NodeGpuShareFragAmount`, `FragAmountSumExceptQ3`): each
    /// task's `p_t · amount` is added to one of seven category totals (Q1 lack both, Q2 lack
    /// GPU, Q3 satisfied, Q4 lack CPU, XL, XR, no access; a task that fits adds its fragment
    /// to Q2 and the rest to Q3), in typical-task order; then the totals other than Q3 are
    /// added up in that category order, from 0.
    Artifact,
}

/// [`fragmentation`] summed as `sum` says.
pub fn fragmentation_by(
    sum: FragSum,
    cpu: i64,
    gpus: &[i64],
    model: Option<&str>,
    typical: &[TypicalTask],
) -> f64 {
    match sum {
        FragSum::Direct => fragmentation(cpu, gpus, model, typical),
        FragSum::Artifact => fragmentation_artifact(cpu, gpus, model, typical),
    }
}

fn fragmentation_artifact(
    cpu: i64,
    gpus: &[i64],
    model: Option<&str>,
    typical: &[TypicalTask],
) -> f64 {
    const Q1: usize = 0;
    const Q2: usize = 1;
    const Q3: usize = 2;
    const Q4: usize = 3;
    const XL: usize = 4;
    const XR: usize = 5;
    const NO_ACCESS: usize = 6;
    let free = gpus.iter().sum::<i64>() as f64;
    let mut data = [0.0f64; 7];
    for t in typical {
        let cpu_ok = cpu >= t.cpu;
        if t.gpu_milli == 0 {
            data[if cpu_ok { XL } else { XR }] += t.p * free;
            continue;
        }
        let model_ok =
            t.models.is_empty() || model.is_some_and(|m| t.models.iter().any(|x| x == m));
        if !model_ok {
            data[NO_ACCESS] += t.p * free;
            continue;
        }
        let with_room = gpus.iter().filter(|&&r| r >= t.gpu_milli).count();
        if with_room >= t.gpus as usize {
            if cpu_ok {
                let frag: i64 = gpus.iter().filter(|&&r| r < t.gpu_milli).sum();
                data[Q2] += t.p * frag as f64;
                data[Q3] += t.p * (free - frag as f64);
            } else {
                data[Q4] += t.p * free;
            }
        } else {
            data[if cpu_ok { Q2 } else { Q1 }] += t.p * free;
        }
    }
    let mut out = 0.0;
    for (i, v) in data.iter().enumerate() {
        if i != Q3 {
            out += v;
        }
    }
    out
}

/// The node's fragmentation against the typical tasks, in milli-GPU.
pub fn node_fragmentation(node: &Node, typical: &[TypicalTask]) -> f64 {
    fragmentation(node.cpu, &node.gpus, node.model.as_deref(), typical)
}

/// The fragmentation of a node with `cpu` milli-CPU free, `gpus` milli-GPU free per device and
/// GPU model `model` ([`node_fragmentation`] without a [`Node`]).
pub fn fragmentation(cpu: i64, gpus: &[i64], model: Option<&str>, typical: &[TypicalTask]) -> f64 {
    let free: i64 = gpus.iter().sum();
    if free <= 0 {
        return 0.0;
    }
    let free = free as f64;
    typical.iter().map(|t| t.p * task_fragmentation(cpu, gpus, model, t, free)).sum()
}

fn task_fragmentation(
    cpu: i64,
    gpus: &[i64],
    model: Option<&str>,
    t: &TypicalTask,
    free: f64,
) -> f64 {
    let model_ok = t.models.is_empty() || model.is_some_and(|m| t.models.iter().any(|x| x == m));
    if t.gpu_milli == 0 || !model_ok || t.cpu > cpu {
        return free;
    }
    let with_room = gpus.iter().filter(|&&r| r >= t.gpu_milli).count();
    if with_room < t.gpus as usize {
        return free;
    }
    gpus.iter().filter(|&&r| r < t.gpu_milli).map(|&r| r as f64).sum()
}

/// Writes a typical-task table as text: one task per line, `cpu_milli,gpu_milli,gpus,models,p`
/// with the models `|`-separated (empty: any) and `p` its frequency. [`parse_table`] reads it
/// back exactly (`p` is written with Rust's shortest round-trip form).
pub fn format_table(typical: &[TypicalTask]) -> String {
    let mut out = String::new();
    for t in typical {
        out.push_str(&format!(
            "{},{},{},{},{:?}\n",
            t.cpu,
            t.gpu_milli,
            t.gpus,
            t.models.join("|"),
            t.p
        ));
    }
    out
}

/// Reads a typical-task table ([`format_table`]'s text; lines or `;` separate tasks, blank
/// ones and `#` comments are skipped, as is a header line starting `cpu_milli`). The
/// frequencies are renormalised to sum to 1.
pub fn parse_table(text: &str) -> Result<Vec<TypicalTask>, String> {
    parse_table_with(text, true)
}

/// [`parse_table`], renormalising the weights or (`renormalise` false) taking them as
/// written (for a table whose frequencies already sum to 1 in the bits they must have).
pub fn parse_table_with(text: &str, renormalise: bool) -> Result<Vec<TypicalTask>, String> {
    let mut out = Vec::new();
    for (i, row) in text.split(['\n', ';']).map(str::trim).enumerate() {
        if row.is_empty() || row.starts_with('#') || row.starts_with("cpu_milli") {
            continue;
        }
        let bad = |why: &str| format!("typical task {} ('{row}'): {why}", i + 1);
        let f: Vec<&str> = row.split(',').map(str::trim).collect();
        let [cpu, gpu_milli, gpus, models, p] = f[..] else {
            return Err(bad("expected cpu_milli,gpu_milli,gpus,models,p"));
        };
        let int = |v: &str| v.parse::<i64>().map_err(|_| bad(&format!("'{v}' is not an integer")));
        let t = TypicalTask {
            cpu: int(cpu)?,
            gpu_milli: int(gpu_milli)?,
            gpus: u32::try_from(int(gpus)?).map_err(|_| bad("a negative GPU count"))?,
            models: models.split('|').filter(|m| !m.is_empty()).map(str::to_owned).collect(),
            p: p.parse::<f64>().map_err(|_| bad(&format!("'{p}' is not a number")))?,
        };
        if !(t.p.is_finite() && t.p > 0.0) || t.cpu < 0 || !(0..=1000).contains(&t.gpu_milli) {
            return Err(bad("p must be positive, cpu_milli ≥ 0 and gpu_milli 0..=1000"));
        }
        out.push(t);
    }
    let total: f64 = out.iter().map(|t| t.p).sum();
    if out.is_empty() {
        return Err("the typical-task table is empty".into());
    }
    if renormalise {
        for t in &mut out {
            t.p /= total;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cpu: i64, gpus: &[i64]) -> Node {
        Node { cpu, mem: 0, gpus: gpus.to_vec(), model: Some("T4".into()), ..Node::default() }
    }

    #[test]
    fn typical_tasks_of_counts_are_those_of_the_tasks_counted() {
        let (none, t4) = (Vec::new(), vec!["T4".to_owned()]);
        let shapes = [(1000, 500, 1, &none), (2000, 0, 0, &none), (1000, 1000, 2, &t4)];
        // 7, 5, 5 and 1 of each shape, interleaved: ties broken by shape, a rare one cut.
        let mut tasks = Vec::new();
        for (i, n) in [7, 5, 5].into_iter().enumerate() {
            for _ in 0..n {
                let (c, m, g, models) = shapes[i];
                tasks.push((c, m, g, models.as_slice()));
            }
        }
        tasks.push((500, 0, 0, none.as_slice()));
        tasks.rotate_left(4);
        for sum in [FragSum::Direct, FragSum::Artifact] {
            let mut counts: HashMap<(i64, i64, u32, &[String]), u64> = HashMap::new();
            for t in &tasks {
                *counts.entry(*t).or_default() += 1;
            }
            let by_task = typical_tasks_by(tasks.iter().copied(), 0.9, sum);
            assert_eq!(by_task.len(), 3, "the rare shape is cut");
            assert_eq!(typical_tasks_counted(counts, 0.9, sum), by_task);
        }
    }

    #[test]
    fn typical_tasks_cover_the_most_frequent_shapes() {
        let none: &[String] = &[];
        let tasks = [(1000, 500, 1, none); 6]
            .into_iter()
            .chain([(2000, 1000, 1, none); 3])
            .chain([(1, 0, 0, none)]);
        let t = typical_tasks(tasks, 0.9);
        assert_eq!(t.len(), 2, "{t:?}");
        assert!((t[0].p - 6.0 / 9.0).abs() < 1e-12);
    }

    #[test]
    fn devices_too_small_for_the_share_are_fragments() {
        let half = TypicalTask { cpu: 1000, gpu_milli: 500, gpus: 1, models: vec![], p: 1.0 };
        // 300 of device 0 cannot take a 500 share; device 1 (1000) can.
        assert_eq!(
            node_fragmentation(&node(4000, &[300, 1000]), std::slice::from_ref(&half)),
            300.0
        );
        // Without CPU, all free GPU is a fragment.
        assert_eq!(node_fragmentation(&node(500, &[300, 1000]), &[half]), 1300.0);
    }

    #[test]
    fn a_table_written_as_text_reads_back_the_same() {
        let tasks = [
            TypicalTask { cpu: 3152, gpu_milli: 810, gpus: 1, models: vec![], p: 0.25 },
            TypicalTask {
                cpu: 8000,
                gpu_milli: 1000,
                gpus: 2,
                models: vec!["T4".into(), "A10".into()],
                p: 0.75,
            },
        ];
        assert_eq!(parse_table(&format_table(&tasks)).unwrap(), tasks);
        assert_eq!(parse_table("1000,0,0,,1;2000,500,1,,3").unwrap()[1].p, 0.75);
        assert!(parse_table("1000,x,0,,1").unwrap_err().contains("'x' is not an integer"));
    }

    #[test]
    fn a_cpu_only_task_counts_every_free_gpu() {
        let cpu = TypicalTask { cpu: 1000, gpu_milli: 0, gpus: 0, models: vec![], p: 1.0 };
        assert_eq!(node_fragmentation(&node(4000, &[1000, 1000]), &[cpu]), 2000.0);
    }

    #[test]
    fn a_model_the_task_excludes_makes_all_free_gpu_a_fragment() {
        let v100 = TypicalTask {
            cpu: 1,
            gpu_milli: 1000,
            gpus: 1,
            models: vec!["V100M16".into()],
            p: 1.0,
        };
        assert_eq!(node_fragmentation(&node(4000, &[1000]), &[v100]), 1000.0);
    }
}
