//! `FGD` (Fragmentation Gradient Descent): places each stated task where it grows the
//! cluster's GPU fragmentation least, as Weng et al. (USENIX ATC '23) propose.
//!
//! A node's fragmentation `F_n` ([`placement_core::frag`]) is the expected free GPU that a
//! *typical task* of the workload could not use there. For task `m` on node `n`, with `n'` the
//! node after placing it:
//!
//! ```text
//! score = ⌊100 · σ((F_n − F_n') / 1000)⌋        σ(x) = 1 / (1 + e^(−x))
//! ```
//!
//! A share of one GPU is tried on every device with room (`n'` takes the share from that
//! device and the CPU); the node's score is the best device's, and the share goes to the first
//! device (in device order) with that score. A CPU-only or whole-GPU task takes its CPU and
//! whole GPUs from fully free devices. The highest score wins; ties go to the per-seed agent
//! order. Memory is not part of the measure.
//!
//! This is the FGD artifact's `FGD` exactly as coded (`fgd_score.go`, `frag.go`), reference
//! §3.6, including the sigmoid and the integer truncation (which make near-equal nodes tie).
//!
//! # The typical tasks
//!
//! The measure needs the workload's typical tasks and their frequencies. A module gets them,
//! in this order of precedence, from its parameters:
//!
//! * `typical_tasks`: the table inline, one task per line or `;`, each
//!   `cpu_milli,gpu_milli,gpus,models,p` (models `|`-separated, empty for any; `p` a weight,
//!   renormalised) — [`placement_core::frag::format_table`] writes it, and `allocator-master
//!   experiment` passes each pod list's table this way;
//! * `typical_tasks_file`: a file holding the same text;
//! * neither: **learned from the demand it sees**: the shapes of the tasks frameworks state,
//!   counted and cut at `coverage` (parameter, default 0.95), relearned after every
//!   `relearn_every` (parameter, default 64) stated tasks, and after the first. Until a task has
//!   been stated every node's fragmentation is 0 and every score 50.
//!
//! The parameter `fragmentation_sum` = `artifact` sums each node's fragmentation in the
//! artifact's floating-point order ([`FragSum::Artifact`]; the default, `direct`, sums over
//! the typical tasks directly). The value differs in the last bits only, but those decide
//! some of the sigmoid's integer ties. With it the table's weights are taken as written, not
//! renormalised (the artifact's frequencies, computed by
//! [`placement_core::frag::typical_tasks_by`], already are). The placement modules' common parameters
//! (`tie_break`, `order_seed`: [`placement_core::TieBreak`]) apply too.

#![deny(missing_docs)]

use allocator_api::Parameters;
use allocator_api::resources::GpuAsk;
use placement_core::frag::{
    FragSum, TYPICAL_TASKS_PARAMETER, TypicalTask, fragmentation_by, parse_table_with,
    typical_tasks_counted,
};
use placement_core::{Ask, Node, Placement, PlacementAllocator};
use rustc_hash::FxHashMap;

/// A stated task's shape: CPU milli, per-device GPU milli, devices, accepted models.
type TaskShape = (i64, i64, u32, Vec<String>);

/// Where the typical tasks come from.
#[derive(Debug)]
enum Source {
    /// Given (a parameter or a file).
    Given,
    /// Learned from stated tasks: their shapes, counted as they come (a relearning reads each
    /// shape once, not every task ever stated).
    Learned { seen: FxHashMap<TaskShape, u64>, coverage: f64, every: usize, since: usize },
}

/// The FGD policy.
#[derive(Debug)]
pub struct Fgd {
    typical: Vec<TypicalTask>,
    source: Source,
    /// Scratch: a node's devices after a placement.
    after: Vec<i64>,
    /// Scores already computed, by node state and task shape (see [`Memo`]).
    memo: Memo,
    /// How a node's fragmentation is summed (parameter `fragmentation_sum`).
    sum: FragSum,
}

/// Node scores already computed. A score depends only on the node's free CPU, its GPU model
/// and the **multiset** of its devices' free milli (not their order), and on the task's CPU,
/// GPU ask and models: so a score is kept under that key and reused by every node in the same
/// state (a large cluster has few distinct states: most nodes are alike and change one task at
/// a time). Answers are exactly those computed without it. Nodes with more than
/// [`MEMO_DEVICES`] devices are not memoised.
#[derive(Debug, Default)]
struct Memo {
    scores: FxHashMap<(StateKey, AskKey), i64>,
    names: FxHashMap<String, u32>,
}

/// Nodes with at most this many devices are memoised.
const MEMO_DEVICES: usize = 8;

/// A node state: free milli-CPU, interned model, sorted free milli per device (padded).
type StateKey = (i64, u32, [u16; MEMO_DEVICES], u8);
/// A task: milli-CPU, per-device milli, device count, interned model list.
type AskKey = (i64, i64, u32, u32);

impl Memo {
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.names.get(name) {
            return id;
        }
        let id = self.names.len() as u32 + 1;
        self.names.insert(name.to_owned(), id);
        id
    }

    fn key(&mut self, node: &Node, ask: &Ask) -> Option<(StateKey, AskKey)> {
        if node.gpus.len() > MEMO_DEVICES {
            return None;
        }
        let mut gpus = [0u16; MEMO_DEVICES];
        for (slot, &g) in gpus.iter_mut().zip(&node.gpus) {
            *slot = u16::try_from(g).ok()?;
        }
        gpus[..node.gpus.len()].sort_unstable();
        let model = node.model.as_deref().map_or(0, |m| self.intern(m));
        let models = match ask.demand.models.as_slice() {
            [] => 0,
            list => self.intern(&list.join("|")),
        };
        let state = (node.cpu, model, gpus, node.gpus.len() as u8);
        Some((state, (ask.cpu, ask.gpu.per_device(), ask.gpu.devices(), models)))
    }
}

impl Fgd {
    /// A policy with a fixed typical-task table.
    pub fn with_table(typical: Vec<TypicalTask>) -> Fgd {
        Fgd {
            typical,
            source: Source::Given,
            after: Vec::new(),
            memo: Memo::default(),
            sum: FragSum::Direct,
        }
    }

    /// A policy that learns the table from the tasks it sees stated, cut at `coverage` and
    /// relearned after every `every` tasks.
    pub fn learning(coverage: f64, every: usize) -> Fgd {
        let source =
            Source::Learned { seen: FxHashMap::default(), coverage, every: every.max(1), since: 0 };
        Fgd {
            typical: Vec::new(),
            source,
            after: Vec::new(),
            memo: Memo::default(),
            sum: FragSum::Direct,
        }
    }

    /// The policy its module parameters describe (see the crate documentation).
    pub fn from_parameters(params: Parameters<'_>) -> Result<Fgd, String> {
        let sum = match params.get("fragmentation_sum") {
            None | Some("direct") => FragSum::Direct,
            Some("artifact") => FragSum::Artifact,
            Some(other) => {
                return Err(format!(
                    "parameter 'fragmentation_sum' = '{other}': expected direct or artifact"
                ));
            }
        };
        Self::from_table_parameters(params, sum).map(|mut f| {
            f.sum = sum;
            f
        })
    }

    fn from_table_parameters(params: Parameters<'_>, sum: FragSum) -> Result<Fgd, String> {
        // In the artifact's arithmetic the frequencies are taken as given (the artifact
        // normalises them once, as the table's writer did).
        let parse_table = |text: &str| parse_table_with(text, sum == FragSum::Direct);
        if let Some(text) = params.get(TYPICAL_TASKS_PARAMETER) {
            return parse_table(text)
                .map(Fgd::with_table)
                .map_err(|e| format!("typical_tasks: {e}"));
        }
        if let Some(path) = params.get("typical_tasks_file") {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("typical_tasks_file '{path}': {e}"))?;
            return parse_table(&text)
                .map(Fgd::with_table)
                .map_err(|e| format!("typical_tasks_file '{path}': {e}"));
        }
        let coverage: f64 = params.parse_or("coverage", 0.95)?;
        if !(coverage > 0.0 && coverage <= 1.0) {
            return Err(format!("parameter 'coverage' = {coverage}: must be in (0, 1]"));
        }
        Ok(Fgd::learning(coverage, params.parse_or("relearn_every", 64)?))
    }

    /// The typical tasks in use.
    pub fn typical(&self) -> &[TypicalTask] {
        &self.typical
    }

    /// The score of placing `ask` on `node` with the node's devices becoming `after`.
    fn gradient(&self, node: &Node, ask: &Ask, before: f64, after: &[i64]) -> i64 {
        let model = node.model.as_deref();
        let f_after = fragmentation_by(self.sum, node.cpu - ask.cpu, after, model, &self.typical);
        (100.0 * sigmoid((before - f_after) / 1000.0)) as i64
    }

    /// The best score on `node` and, for a share, the first device reaching it.
    fn best(&mut self, node: &Node, ask: &Ask) -> (i64, Option<usize>) {
        let model = node.model.as_deref();
        let before = fragmentation_by(self.sum, node.cpu, &node.gpus, model, &self.typical);
        let mut after = std::mem::take(&mut self.after);
        after.clear();
        after.extend_from_slice(&node.gpus);
        let best = match ask.gpu {
            GpuAsk::Share(d) => {
                let mut best: (i64, Option<usize>) = (0, None);
                for g in 0..node.gpus.len() {
                    if node.gpus[g] < d {
                        continue;
                    }
                    after[g] -= d;
                    let s = self.gradient(node, ask, before, &after);
                    after[g] += d;
                    if best.1.is_none() || s > best.0 {
                        best = (s, Some(g));
                    }
                }
                best
            }
            GpuAsk::Whole(k) => {
                let mut left = k;
                for g in after.iter_mut().filter(|g| **g >= allocator_api::resources::DEVICE_MILLI)
                {
                    if left == 0 {
                        break;
                    }
                    *g = 0;
                    left -= 1;
                }
                (self.gradient(node, ask, before, &after), None)
            }
            GpuAsk::None => (self.gradient(node, ask, before, &after), None),
        };
        self.after = after;
        best
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

impl Placement for Fgd {
    fn score(&mut self, node: &Node, ask: &Ask) -> i64 {
        if ask.gpu == GpuAsk::None && node.gpus.iter().all(|&g| g == 0) {
            // No free GPU before or after, so no fragmentation either way (both sums are 0):
            // the gradient of a zero difference, without a memo lookup. This is every node of
            // a cluster without GPUs, for every pod.
            return (100.0 * sigmoid(0.0)) as i64;
        }
        let Some(key) = self.memo.key(node, ask) else { return self.best(node, ask).0 };
        if let Some(&score) = self.memo.scores.get(&key) {
            return score;
        }
        let score = self.best(node, ask).0;
        self.memo.scores.insert(key, score);
        score
    }

    fn share_device(&mut self, node: &Node, ask: &Ask) -> Option<usize> {
        self.best(node, ask).1
    }

    fn requested(&mut self, ask: &Ask) {
        let Source::Learned { seen, coverage, every, since } = &mut self.source else { return };
        let (milli, gpus) = match ask.gpu {
            GpuAsk::None => (0, 0),
            GpuAsk::Share(m) => (m, 1),
            GpuAsk::Whole(k) => (allocator_api::resources::DEVICE_MILLI, k),
        };
        let first = seen.is_empty();
        let shape = (ask.cpu, milli, gpus, ask.demand.models.to_vec());
        *seen.entry(shape).or_default() += 1;
        *since += 1;
        if first || *since >= *every {
            *since = 0;
            let shapes =
                seen.iter().map(|((c, m, g, models), n)| ((*c, *m, *g, models.as_slice()), *n));
            self.typical = typical_tasks_counted(shapes, *coverage, FragSum::Direct);
            self.memo.scores.clear();
        }
    }
}

/// The `FGD` allocator.
pub type FgdAllocator = PlacementAllocator<Fgd>;

allocator_api::export_modules! {
    allocator {
        name: "FGD",
        author: "allocator project",
        description: "places each requested task where GPU fragmentation grows least (Fragmentation Gradient Descent, Weng et al. ATC '23)",
        create: |options, params| Fgd::from_parameters(params)
            .and_then(|p| FgdAllocator::new(p, options).with_parameters(params)),
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use placement_core::frag::parse_table;

    fn node(cpu: i64, gpus: &[i64]) -> Node {
        Node { cpu, mem: 1 << 40, gpus: gpus.to_vec(), ..Node::default() }
    }

    fn ask(text: &str) -> Ask {
        Ask::parse(text).unwrap()
    }

    #[test]
    fn a_node_without_free_gpus_scores_a_cpu_task_as_the_full_computation_does() {
        for sum in [FragSum::Direct, FragSum::Artifact] {
            let mut fgd = half_gpu_tasks();
            fgd.sum = sum;
            for (cpu, gpus) in [(0, vec![]), (4000, vec![]), (64000, vec![0, 0]), (100, vec![0])] {
                let (n, a) = (node(cpu, &gpus), ask("cpus:0.1;mem:10"));
                assert_eq!(fgd.score(&n, &a), fgd.best(&n, &a).0, "{sum:?} {cpu} {gpus:?}");
            }
        }
    }

    fn half_gpu_tasks() -> Fgd {
        Fgd::with_table(parse_table("1000,500,1,,1").unwrap())
    }

    #[test]
    fn a_share_that_leaves_no_fragment_scores_fifty_and_one_that_strands_gpu_less() {
        let mut fgd = half_gpu_tasks();
        let a = ask("cpus:1;gpus:0.5");
        // [500, 1000]: on device 0 nothing is stranded (Δ = 0 → 50); on device 1 it leaves
        // 500 + 500, both still usable (Δ = 0 → 50): the first device reaching 50 is taken.
        assert_eq!(fgd.best(&node(8000, &[500, 1000]), &a), (50, Some(0)));
        // A 0.3 share on [1000]: leaves 700, still usable: 50. On [600]: leaves 300, a
        // fragment of 300 milli: ⌊100·σ(−0.3)⌋ = 42.
        let b = ask("cpus:1;gpus:0.3");
        assert_eq!(fgd.score(&node(8000, &[1000]), &b), 50);
        assert_eq!(fgd.score(&node(8000, &[600]), &b), 42);
    }

    #[test]
    fn the_share_goes_to_the_device_that_grows_fragmentation_least() {
        let mut fgd = half_gpu_tasks();
        // 0.3 on device 0 (600 → 300, a new fragment) or device 1 (800 → 500, none).
        assert_eq!(fgd.best(&node(8000, &[600, 800]), &ask("cpus:1;gpus:0.3")).1, Some(1));
    }

    #[test]
    fn a_cpu_only_task_that_strands_idle_gpus_scores_below_one_that_does_not() {
        let mut fgd = half_gpu_tasks();
        let cpu = ask("cpus:2");
        // Taking 2 of 2.5 CPUs leaves 0.5: the half-GPU task (1 CPU) no longer fits, so both
        // idle GPUs become fragments (Δ = 2000 → ⌊100·σ(−2)⌋ = 11).
        assert_eq!(fgd.score(&node(2500, &[1000, 1000]), &cpu), 11);
        assert_eq!(fgd.score(&node(64_000, &[1000, 1000]), &cpu), 50);
    }

    #[test]
    fn without_a_table_it_learns_the_typical_tasks_from_what_is_stated() {
        let mut fgd = Fgd::from_parameters(Parameters(&[])).unwrap();
        assert!(fgd.typical().is_empty());
        fgd.requested(&ask("cpus:1;gpus:0.5"));
        assert_eq!(fgd.typical(), parse_table("1000,500,1,,1").unwrap());
    }

    #[test]
    fn a_bad_table_parameter_is_refused_with_its_name() {
        let params =
            [allocator_api::abi::Parameter { key: "typical_tasks".into(), value: "1,2".into() }];
        let e = Fgd::from_parameters(Parameters(&params)).unwrap_err();
        assert!(e.starts_with("typical_tasks: typical task 1"), "{e}");
    }
}
