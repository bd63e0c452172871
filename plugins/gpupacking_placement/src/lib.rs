//! `GpuPacking`: places each GPU task where it uses GPUs already in use first, then free GPUs
//! of an agent already in use, and an idle agent last (the fewer GPUs, the better). Scores, for
//! a task with GPUs (CPU-only tasks score 0 everywhere, so the per-seed agent order decides):
//!
//! 1. every device of the agent fully free: `33 − G_n` (`G_n` its devices);
//! 2. otherwise take the fitting devices in ascending free order, as many as the task needs;
//!    if any of them is fully free: `max(50 − (fully free devices taken), 33)`;
//! 3. else (a share on a device in use): `max(100 − ⌊Σ ⌊r_g·100/1000⌋ / 10⌋, 50)` over the
//!    devices taken, so the tighter the device, the higher.
//!
//! The highest score wins; ties go to the per-seed agent order. A share goes to the
//! tightest-fitting device, whole GPUs to the lowest fully free ones.
//!
//! This is the FGD artifact's `GpuPacking` (`gpu_packing_score.go`), reference §3.4.

#![deny(missing_docs)]

use allocator_api::resources::DEVICE_MILLI;
use placement_core::{Ask, Node, Placement, PlacementAllocator};

/// The GPU-packing policy.
#[derive(Debug, Default)]
pub struct GpuPacking {
    /// Device indices sorted by free milli (reused between calls).
    sorted: Vec<usize>,
}

impl Placement for GpuPacking {
    fn score(&mut self, node: &Node, ask: &Ask) -> i64 {
        let per_device = ask.gpu.per_device().min(DEVICE_MILLI);
        if per_device <= 0 {
            return 0;
        }
        let idle = node.idle_devices();
        if idle == node.gpus.len() {
            return (33 - idle as i64).max(idle as i64);
        }
        self.sorted.clear();
        self.sorted.extend(0..node.gpus.len());
        self.sorted.sort_by_key(|&i| node.gpus[i]);
        let (mut need, mut fully_free, mut free_pct) = (ask.gpu.devices(), 0i64, 0i64);
        for &i in &self.sorted {
            if need == 0 {
                break;
            }
            let left = node.gpus[i];
            if per_device <= left {
                need -= 1;
                free_pct += left * 100 / DEVICE_MILLI;
                if left == DEVICE_MILLI {
                    fully_free += 1;
                }
            }
        }
        if need != 0 {
            return 0;
        }
        if fully_free > 0 {
            return (50 - fully_free).max(33);
        }
        (100 - free_pct / 10).max(50)
    }
}

/// The `GpuPacking` allocator.
pub type GpuPackingAllocator = PlacementAllocator<GpuPacking>;

allocator_api::export_modules! {
    allocator {
        name: "GpuPacking",
        author: "allocator project",
        description: "places each requested task on GPUs in use first, then free GPUs of used agents, then idle agents (FGD artifact's GpuPacking)",
        create: |options, params| GpuPackingAllocator::new(GpuPacking::default(), options).with_parameters(params),
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(gpus: &[i64]) -> Node {
        Node { cpu: 64_000, mem: 1 << 40, gpus: gpus.to_vec(), ..Node::default() }
    }

    fn ask(text: &str) -> Ask {
        Ask::parse(text).unwrap()
    }

    #[test]
    fn a_used_gpu_beats_a_free_gpu_on_a_used_agent_which_beats_an_idle_agent() {
        let mut p = GpuPacking::default();
        let share = ask("cpus:1;gpus:0.25");
        let used_gpu = p.score(&node(&[300, 1000]), &share);
        let free_gpu_used_node = p.score(&node(&[200, 1000]), &share);
        let idle_node = p.score(&node(&[1000, 1000]), &share);
        // 100 − ⌊30/10⌋ = 97; 50 − 1 = 49; 33 − 2 = 31.
        assert_eq!((used_gpu, free_gpu_used_node, idle_node), (97, 49, 31));
    }

    #[test]
    fn among_idle_agents_fewer_gpus_is_better_and_cpu_only_tasks_score_zero() {
        let mut p = GpuPacking::default();
        let whole = ask("cpus:1;gpus:1");
        assert!(p.score(&node(&[1000; 2]), &whole) > p.score(&node(&[1000; 8]), &whole));
        assert_eq!(p.score(&node(&[300, 1000]), &ask("cpus:1")), 0);
    }
}
