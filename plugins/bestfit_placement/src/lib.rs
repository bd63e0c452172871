//! `BestFit`: places each stated task on the agent it leaves with the least CPU and GPU free,
//! weighted half and half:
//!
//! ```text
//! score = ⌊100 · (1 − [0.5 · (c_n − c_m) / 128000 + 0.5 · (R_n − D_m) / 8000])⌋
//! ```
//!
//! with `c_n` the agent's free milli-CPU, `R_n` its free milli-GPU over all devices, `c_m` and
//! `D_m` the task's milli-CPU and total milli-GPU, and 128,000 / 8,000 the artifact's largest
//! node (`MaxSpecCpu`, `MaxSpecGpu`). The highest score wins; ties go to the per-seed agent
//! order. A GPU share goes to the tightest-fitting device, whole GPUs to the lowest fully free
//! ones (the artifact's `best` GPU selection).
//!
//! This is the FGD artifact's `BestFit` (`best_fit_score.go`), reference §3.5. The artifact
//! then min–max normalises the scores over the feasible nodes; with scores in 0..=100 that
//! keeps exactly the same best nodes, so it is left out.

#![deny(missing_docs)]

use placement_core::{Ask, Node, Placement, PlacementAllocator};

/// The artifact's largest node CPU, in milli (`MaxSpecCpu`).
pub const MAX_SPEC_CPU: f64 = 128_000.0;
/// The artifact's largest node GPU, in milli (`MaxSpecGpu`).
pub const MAX_SPEC_GPU: f64 = 8_000.0;

/// The best-fit policy.
#[derive(Debug, Default)]
pub struct BestFit;

impl Placement for BestFit {
    fn score(&mut self, node: &Node, ask: &Ask) -> i64 {
        let cpu_left = (node.cpu - ask.cpu) as f64 / MAX_SPEC_CPU;
        let gpu_left = (node.gpu_free() - ask.gpu.total()) as f64 / MAX_SPEC_GPU;
        (100.0 * (1.0 - (0.5 * cpu_left + 0.5 * gpu_left))) as i64
    }
}

/// The `BestFit` allocator.
pub type BestFitAllocator = PlacementAllocator<BestFit>;

allocator_api::export_modules! {
    allocator {
        name: "BestFit",
        author: "allocator project",
        description: "places each requested task where it leaves the least CPU and GPU free (FGD artifact's BestFit)",
        create: |options, params| BestFitAllocator::new(BestFit, options).with_parameters(params),
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cpu: i64, gpus: &[i64]) -> Node {
        Node { cpu, mem: 1 << 40, gpus: gpus.to_vec(), ..Node::default() }
    }

    #[test]
    fn the_agent_left_fullest_scores_highest() {
        let ask = Ask::parse("cpus:4;gpus:0.5").unwrap();
        let tight = BestFit.score(&node(8000, &[500, 0]), &ask);
        let loose = BestFit.score(&node(96000, &[1000; 8]), &ask);
        assert!(tight > loose, "{tight} vs {loose}");
        // 1 − [0.5·4000/128000 + 0.5·0/8000] = 0.984375 → 98
        assert_eq!(tight, 98);
    }
}
