//! `GpuClustering`: places each GPU task on an agent that already runs GPU tasks of the same
//! class, so that classes cluster. A task's class is: a share of one GPU (every share size is
//! one class), or `k` whole GPUs. With `u = ⌊25·(8000 − R_n)/8000⌋` (`R_n` the agent's free
//! milli-GPU; always over 8,000, the artifact's largest node, so small agents look fuller):
//!
//! | the agent's GPU tasks | score |
//! |---|---|
//! | only the task's class | `75 + u` |
//! | the task's class and others | `50 + u` |
//! | none | `25 + u` |
//! | only other classes | `u` |
//!
//! CPU-only tasks score 0 everywhere (the per-seed agent order decides). The highest score
//! wins; ties go to the per-seed agent order. A share goes to the tightest-fitting device,
//! whole GPUs to the lowest fully free ones. The classes on an agent are the GPU tasks the
//! allocator placed there ([`placement_core::Node::gpu_tasks`]).
//!
//! This is the FGD artifact's `GpuClustering` (`gpu_clustering_score.go`), reference §3.3.

#![deny(missing_docs)]

use allocator_api::resources::GpuAsk;
use placement_core::{Ask, Node, Placement, PlacementAllocator};

/// The artifact's largest node GPU, in milli (`MaxSpecGpu`).
pub const MAX_SPEC_GPU: i64 = 8_000;

/// A task's GPU class: all shares are one class, `k` whole GPUs another.
fn class(ask: GpuAsk) -> Option<Option<u32>> {
    match ask {
        GpuAsk::None => None,
        GpuAsk::Share(_) => Some(None),
        GpuAsk::Whole(k) => Some(Some(k)),
    }
}

/// The GPU-clustering policy.
#[derive(Debug, Default)]
pub struct GpuClustering;

impl Placement for GpuClustering {
    fn score(&mut self, node: &Node, ask: &Ask) -> i64 {
        let Some(mine) = class(ask.gpu) else { return 0 };
        let u = 25 * (MAX_SPEC_GPU - node.gpu_free()) / MAX_SPEC_GPU;
        let (mut same, mut other) = (false, false);
        for (shape, _) in &node.gpu_tasks {
            if class(*shape) == Some(mine) {
                same = true;
            } else {
                other = true;
            }
        }
        u + match (same, other) {
            (true, false) => 75,
            (true, true) => 50,
            (false, false) => 25,
            (false, true) => 0,
        }
    }
}

/// The `GpuClustering` allocator.
pub type GpuClusteringAllocator = PlacementAllocator<GpuClustering>;

allocator_api::export_modules! {
    allocator {
        name: "GpuClustering",
        author: "allocator project",
        description: "places each requested task with GPU tasks of its own class (FGD artifact's GpuClustering)",
        create: |options, params| GpuClusteringAllocator::new(GpuClustering, options).with_parameters(params),
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(gpus: &[i64], tasks: &[(GpuAsk, u32)]) -> Node {
        Node {
            cpu: 64_000,
            mem: 1 << 40,
            gpus: gpus.to_vec(),
            gpu_tasks: tasks.to_vec(),
            ..Node::default()
        }
    }

    fn ask(text: &str) -> Ask {
        Ask::parse(text).unwrap()
    }

    #[test]
    fn the_same_class_alone_beats_mixed_beats_idle_beats_other_classes() {
        let share = ask("cpus:1;gpus:0.5");
        let (s, w) = (GpuAsk::Share(300), GpuAsk::Whole(1));
        let gpus = [700, 1000, 1000, 1000, 1000, 1000, 1000, 0];
        // u = ⌊25·(8000 − 6700)/8000⌋ = 4
        assert_eq!(GpuClustering.score(&node(&gpus, &[(s, 2)]), &share), 79);
        assert_eq!(GpuClustering.score(&node(&gpus, &[(s, 1), (w, 1)]), &share), 54);
        assert_eq!(GpuClustering.score(&node(&gpus, &[]), &share), 29);
        assert_eq!(GpuClustering.score(&node(&gpus, &[(w, 1)]), &share), 4);
    }

    #[test]
    fn every_share_size_is_one_class_and_cpu_only_tasks_score_zero() {
        let n = node(&[1000, 1000], &[(GpuAsk::Share(810), 1)]);
        // u = ⌊25·6000/8000⌋ = 18
        assert_eq!(GpuClustering.score(&n, &ask("cpus:1;gpus:0.1")), 93);
        assert_eq!(GpuClustering.score(&n, &ask("cpus:1")), 0);
    }
}
