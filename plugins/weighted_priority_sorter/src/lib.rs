//! The weighted-priority sorter (module `weighted_priority`, library `weighted_priority_sorter`).
//! Mesos has no equivalent.
//!
//! At every level of the client tree, siblings sort by:
//!
//! 1. weight, descending: the weight is a **priority**, and a higher level is always served
//!    before a lower one, however much it already holds;
//! 2. unweighted dominant share, ascending: inside one priority level, DRF fairness;
//! 3. the number of `allocated` calls, ascending;
//! 4. path, in byte order.
//!
//! # Worked example
//!
//! Roles `prod` (weight 10), `dev` and `test` (weight 1, the default) on a pool of
//! `cpus:100;mem:1000`:
//!
//! | role | weight | holds | dominant share |
//! |---|---|---|---|
//! | `prod` | 10 | `cpus:60;mem:100` | 0.6 |
//! | `dev` | 1 | `cpus:10;mem:300` | 0.3 |
//! | `test` | 1 | `cpus:5;mem:50` | 0.05 |
//!
//! The order is `prod, test, dev`: `prod` first despite the largest share (strict priority),
//! then `test` before `dev` by DRF inside weight 1. Under DRF the same weights would give
//! `test (0.05), dev (0.3), prod (0.6 / 10 = 0.06)` → `test, prod, dev`.
#![deny(missing_docs)]

use std::cmp::Ordering;

use allocator_api::SorterConfig;
use sorter_core::{Node, Order, Ordered, TreeSorter};

/// Weight descending, then share, allocation count and path ascending.
#[derive(Debug)]
pub struct WeightedPriorityOrder;

impl Order for WeightedPriorityOrder {
    fn compare(a: &Node, b: &Node) -> Ordering {
        b.weight
            .total_cmp(&a.weight)
            .then(a.share.total_cmp(&b.share))
            .then(a.count.cmp(&b.count))
            .then_with(|| a.path_cmp(b))
    }
}

/// The weighted-priority sorter.
pub type WeightedPrioritySorter = TreeSorter<Ordered<WeightedPriorityOrder>>;

/// Creates a weighted-priority sorter (the module's factory; takes no parameters).
pub fn create(config: &SorterConfig) -> WeightedPrioritySorter {
    WeightedPrioritySorter::new(config, Ordered::default())
}

allocator_api::export_modules! {
    sorter {
        name: "weighted_priority",
        author: "allocator project",
        description: "strict priority by weight, Dominant Resource Fairness within a weight",
        create: |config, _params| Ok::<_, String>(create(config)),
    },
}
