//! `TightGpu`: each stated task goes to the agent it leaves with the fewest free GPUs, then
//! the fewest free CPUs — whole GPUs stay together for the tasks that need them.

use placement_core::{Ask, Node, Placement, PlacementAllocator};

/// The policy: a score per agent that can take the task; the highest wins.
#[derive(Debug, Default)]
pub struct TightGpu;

impl Placement for TightGpu {
    fn score(&mut self, node: &Node, ask: &Ask) -> i64 {
        let gpu_left = node.gpu_free() - ask.gpu.total(); // milli-GPU
        let cpu_left = node.cpu - ask.cpu; // milli-CPU
        -(gpu_left * 1_000_000 + cpu_left)
    }
}

allocator_api::export_modules! {
    allocator {
        name: "TightGpu",
        author: "Example Org <infra@example.org>",
        description: "places each stated task where it leaves the fewest GPUs, then CPUs, free",
        create: |options, _params| {
            Ok::<_, String>(PlacementAllocator::new(TightGpu, options))
        },
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_left_with_fewer_gpus_wins() {
        let ask = Ask::parse("cpus:4;gpus:1").unwrap();
        let full = Node { cpu: 8000, gpus: vec![1000, 0], ..Node::default() };
        let empty = Node { cpu: 8000, gpus: vec![1000, 1000], ..Node::default() };
        assert!(TightGpu.score(&full, &ask) > TightGpu.score(&empty, &ask));
    }
}
