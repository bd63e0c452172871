//! `Random`: places each stated task on an agent drawn uniformly from those that can take it,
//! and a GPU share on a device drawn uniformly from those with room (whole GPUs go to the
//! lowest fully free devices).
//!
//! This is the FGD artifact's `Random` policy (`random_score.go`: one feasible node drawn
//! uniformly per task; GPU selection `random`), reference §3.1. Seeded by the host's `--seed`.
//! The bookkeeping, feasibility and offers are [`placement_core::PlacementAllocator`]'s.

#![deny(missing_docs)]

use allocator_api::rng::Rng;
use placement_core::{Ask, Node, Placement, PlacementAllocator};

/// The uniform random policy.
#[derive(Debug)]
pub struct RandomPlacement {
    rng: Rng,
}

impl RandomPlacement {
    /// A policy drawing from a generator seeded with `seed`.
    pub fn new(seed: u64) -> RandomPlacement {
        RandomPlacement { rng: Rng::new(seed) }
    }
}

impl Placement for RandomPlacement {
    /// An independent uniform draw per feasible agent: the largest wins, so the winner is
    /// uniform over the feasible agents.
    fn score(&mut self, _node: &Node, _ask: &Ask) -> i64 {
        (self.rng.next_u64() >> 1) as i64
    }

    /// A device drawn uniformly from those with room for the share.
    fn share_device(&mut self, node: &Node, ask: &Ask) -> Option<usize> {
        let milli = ask.gpu.per_device();
        let fitting = node.gpus.iter().filter(|&&f| f >= milli).count() as u64;
        if fitting == 0 {
            return None;
        }
        let k = self.rng.below(fitting) as usize;
        node.gpus.iter().enumerate().filter(|(_, f)| **f >= milli).nth(k).map(|(i, _)| i)
    }
}

/// The `Random` allocator.
pub type RandomAllocator = PlacementAllocator<RandomPlacement>;

allocator_api::export_modules! {
    allocator {
        name: "Random",
        author: "allocator project",
        description: "places each requested task on a uniformly random feasible agent (FGD artifact's Random)",
        create: |options, _params| {
            Ok::<_, String>(RandomAllocator::new(RandomPlacement::new(options.seed), options))
        },
    },
}
