//! `Random`: places each stated task on an agent drawn uniformly from those that can take it,
//! and a GPU share on a device drawn uniformly from those with room (whole GPUs go to the
//! lowest fully free devices).
//!
//! This is the FGD artifact's `Random` policy (`random_score.go`: one feasible node drawn
//! uniformly per task; GPU selection `random`), reference §3.1. Seeded by the host's `--seed`.
//! The bookkeeping, feasibility and offers are [`placement_core::PlacementAllocator`]'s.
//!
//! # Go's stream
//!
//! With the parameter `go_seed` (an integer) it draws exactly as the artifact does, from Go's
//! `math/rand` ([`allocator_api::gorand`]) seeded with `go_seed` and advanced past `go_draws`
//! values (parameter, default 0: the draws the artifact takes at start-up, before its first
//! pod): with two or more agents that can take a task, `Intn(n)` over them listed in the order
//! they were added (the artifact's feasible-node list; a lone agent is taken without a draw);
//! a share goes to a device chosen by reservoir sampling, one `Intn(k)` for the k-th device
//! with room.

#![deny(missing_docs)]

use allocator_api::Parameters;
use allocator_api::gorand::GoRand;
use allocator_api::rng::Rng;
use placement_core::{Ask, Node, Placement, PlacementAllocator};

/// The uniform random policy.
#[derive(Debug)]
pub enum RandomPlacement {
    /// Our generator: an independent draw per feasible agent, the largest wins.
    Own(Rng),
    /// Go's stream, drawn as the FGD artifact draws it (see the crate documentation).
    Go(GoRand),
}

impl RandomPlacement {
    /// A policy drawing from a generator seeded with `seed`.
    pub fn new(seed: u64) -> RandomPlacement {
        RandomPlacement::Own(Rng::new(seed))
    }

    /// The policy its parameters describe (`go_seed`, `go_draws`), else seeded with `seed`.
    pub fn from_parameters(seed: u64, params: Parameters<'_>) -> Result<RandomPlacement, String> {
        match params.get("go_seed") {
            None => Ok(RandomPlacement::new(seed)),
            Some(_) => {
                let go_seed: i64 = params.parse_or("go_seed", 0)?;
                let draws: u64 = params.parse_or("go_draws", 0)?;
                Ok(RandomPlacement::Go(GoRand::skipped(go_seed, draws)))
            }
        }
    }
}

impl Placement for RandomPlacement {
    /// An independent uniform draw per feasible agent: the largest wins, so the winner is
    /// uniform over the feasible agents. (With Go's stream agents are picked, not scored.)
    fn score(&mut self, _node: &Node, _ask: &Ask) -> i64 {
        match self {
            RandomPlacement::Own(rng) => (rng.next_u64() >> 1) as i64,
            RandomPlacement::Go(_) => 0,
        }
    }

    /// A device drawn uniformly from those with room for the share.
    fn share_device(&mut self, node: &Node, ask: &Ask) -> Option<usize> {
        let milli = ask.gpu.per_device();
        match self {
            RandomPlacement::Own(rng) => {
                let fitting = node.gpus.iter().filter(|&&f| f >= milli).count() as u64;
                if fitting == 0 {
                    return None;
                }
                let k = rng.below(fitting) as usize;
                node.gpus.iter().enumerate().filter(|(_, f)| **f >= milli).nth(k).map(|(i, _)| i)
            }
            RandomPlacement::Go(go) => {
                let (mut seen, mut chosen) = (0, None);
                for (i, _) in node.gpus.iter().enumerate().filter(|(_, f)| **f >= milli) {
                    seen += 1;
                    if go.intn(seen) == 0 {
                        chosen = Some(i);
                    }
                }
                chosen
            }
        }
    }

    fn picks(&self) -> bool {
        matches!(self, RandomPlacement::Go(_))
    }

    /// `Intn(feasible)`, without a draw for a lone agent.
    fn pick(&mut self, feasible: usize, _ask: &Ask) -> usize {
        match self {
            RandomPlacement::Go(go) if feasible > 1 => go.intn(feasible),
            _ => 0,
        }
    }
}

/// The `Random` allocator.
pub type RandomAllocator = PlacementAllocator<RandomPlacement>;

allocator_api::export_modules! {
    allocator {
        name: "Random",
        author: "allocator project",
        description: "places each requested task on a uniformly random feasible agent (FGD artifact's Random)",
        create: |options, params| {
            RandomPlacement::from_parameters(options.seed, params)
                .and_then(|p| RandomAllocator::new(p, options).with_parameters(params))
        },
    },
}
