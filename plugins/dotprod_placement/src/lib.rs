//! `DotProd`: places each stated task on the agent whose free CPU and GPU are least aligned
//! with what the task asks, by the dot product of the two, each normalised by the artifact's
//! largest node:
//!
//! ```text
//! score = ⌊100 · (1 − (c_n·c_m / 128000² + R_n·D_m / 8000²) / 2)⌋
//! ```
//!
//! with `c_n` the agent's free milli-CPU, `R_n` its free milli-GPU over all devices, `c_m` and
//! `D_m` the task's milli-CPU and total milli-GPU. The highest score, so the **smallest** dot
//! product, wins; ties go to the per-seed agent order. A GPU share goes to the
//! tightest-fitting device, whole GPUs to the lowest fully free ones.
//!
//! This is the FGD artifact's `DotProd` exactly as coded (`dot_product_score.go`, GPU
//! dimensions merged, normalised by the largest node), reference §3.2. The artifact cites
//! Tetris, which places where the alignment is *largest*; the code does the opposite, and we
//! reproduce the code.

#![deny(missing_docs)]

use placement_core::{Ask, Node, Placement, PlacementAllocator};

/// The artifact's largest node CPU, in milli (`MaxSpecCpu`).
pub const MAX_SPEC_CPU: f64 = 128_000.0;
/// The artifact's largest node GPU, in milli (`MaxSpecGpu`).
pub const MAX_SPEC_GPU: f64 = 8_000.0;

/// The dot-product policy.
#[derive(Debug, Default)]
pub struct DotProd;

impl Placement for DotProd {
    fn score(&mut self, node: &Node, ask: &Ask) -> i64 {
        let cpu = (node.cpu as f64 / MAX_SPEC_CPU) * (ask.cpu as f64 / MAX_SPEC_CPU);
        let gpu = (node.gpu_free() as f64 / MAX_SPEC_GPU) * (ask.gpu.total() as f64 / MAX_SPEC_GPU);
        (100.0 * (1.0 - (cpu + gpu) / 2.0)) as i64
    }
}

/// The `DotProd` allocator.
pub type DotProdAllocator = PlacementAllocator<DotProd>;

allocator_api::export_modules! {
    allocator {
        name: "DotProd",
        author: "allocator project",
        description: "places each requested task where free CPU/GPU align least with its demand (FGD artifact's DotProd)",
        create: |options, params| DotProdAllocator::new(DotProd, options).with_parameters(params),
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cpu: i64, gpus: &[i64]) -> Node {
        Node { cpu, mem: 1 << 40, gpus: gpus.to_vec(), ..Node::default() }
    }

    fn ask(text: &str) -> Ask {
        Ask::parse(text).unwrap()
    }

    #[test]
    fn the_smallest_dot_product_scores_highest() {
        let a = ask("cpus:8;gpus:1");
        let emptier = DotProd.score(&node(96_000, &[1000; 8]), &a);
        let fuller = DotProd.score(&node(16_000, &[1000, 0]), &a);
        assert!(fuller > emptier, "{fuller} vs {emptier}");
        // 1 − (96000·8000/128000² + 8000·1000/8000²)/2 = 1 − (0.046875 + 0.125)/2 → 91
        assert_eq!(emptier, 91);
    }

    #[test]
    fn a_cpu_only_task_prefers_the_agent_with_the_least_free_cpu() {
        let a = ask("cpus:4");
        assert!(DotProd.score(&node(8000, &[1000]), &a) >= DotProd.score(&node(96_000, &[]), &a));
        assert_eq!(DotProd.score(&node(128_000, &[]), &ask("cpus:128")), 50);
    }
}
