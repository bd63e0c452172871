//! The random sorter: Mesos's `RandomSorter`, as the module `random` (library `random_sorter`).
//!
//! Every `sort` is a fresh weighted shuffle of the active clients:
//!
//! 1. each active client's relative weight is the product, down the tree, of
//!    `weight ÷ (its weight + its active siblings' weights)`, where an inner node is active when
//!    an active client lies below it (so the relative weights sum to 1);
//! 2. the shuffle is Efraimidis–Spirakis weighted sampling without replacement: each client
//!    draws `u` uniform in (0, 1) and gets the key `u^(1/w)`; larger keys come first.
//!
//! The probability that a client comes first is exactly its relative weight. The generator is
//! seeded from the configuration seed (`--seed`), so one seed gives one sequence of orders (Mesos
//! uses a default-seeded `mt19937`, which makes its sequence fixed; ours is fixed per seed).
#![deny(missing_docs)]

use allocator_api::rng::Rng;
use allocator_api::{ClientId, RVec, SorterConfig};
use sorter_core::{NodeIndex, Policy, Tree, TreeSorter};

/// The shuffle policy.
#[derive(Debug)]
pub struct Shuffle {
    rng: Rng,
    /// Active clients and their relative weights, recomputed when the tree is dirty.
    weights: Vec<(ClientId, f64)>,
    keyed: Vec<(f64, ClientId)>,
    stale: bool,
}

impl Shuffle {
    /// A shuffle seeded with `seed`.
    pub fn new(seed: u64) -> Shuffle {
        Shuffle { rng: Rng::new(seed), weights: Vec::new(), keyed: Vec::new(), stale: true }
    }

    fn recompute(&mut self, tree: &Tree) {
        self.weights.clear();
        let mut stack: Vec<(NodeIndex, f64)> = vec![(tree.root(), 1.0)];
        while let Some((i, rw)) = stack.pop() {
            let children: Vec<NodeIndex> = tree.active_children(i).collect();
            let sum: f64 = children.iter().map(|&c| tree.node(c).weight).sum();
            for c in children {
                let w = rw * tree.node(c).weight / sum;
                match tree.client_of(c) {
                    Some(client) if tree.node(c).kind == sorter_core::NodeKind::ActiveLeaf => {
                        self.weights.push((client, w))
                    }
                    _ => stack.push((c, w)),
                }
            }
        }
    }
}

impl Policy for Shuffle {
    fn on_allocated(&mut self, _tree: &mut Tree, _leaf: NodeIndex) {}

    fn invalidate(&mut self) {
        self.stale = true;
    }

    fn sort(&mut self, tree: &mut Tree, dirty: bool, out: &mut RVec<ClientId>) {
        if dirty || self.stale {
            self.recompute(tree);
            self.stale = false;
        }
        self.keyed.clear();
        for &(client, w) in &self.weights {
            let u = self.rng.next_f64_open();
            self.keyed.push((u.powf(1.0 / w), client));
        }
        self.keyed.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        out.clear();
        out.extend(self.keyed.iter().map(|&(_, c)| c));
    }
}

/// The random sorter.
pub type RandomSorter = TreeSorter<Shuffle>;

/// Creates a random sorter seeded from `config.seed` (the module's factory; no parameters).
pub fn create(config: &SorterConfig) -> RandomSorter {
    RandomSorter::new(config, Shuffle::new(config.seed))
}

allocator_api::export_modules! {
    sorter {
        name: "random",
        author: "allocator project",
        description: "weighted random shuffle on every sort, as Mesos's RandomSorter",
        create: |config, _params| Ok::<_, String>(create(config)),
    },
}
