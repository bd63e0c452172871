//! The DRF order: Mesos's `DRFSorter`. Written once here; shipped as the module `drf` (library
//! `drf_sorter`), linked into the host as its built-in fallback, and used by the placement
//! allocators to order roles.
//!
//! Siblings are ordered by weighted dominant share ascending, then by the number of
//! `allocated` calls, then by path (byte order):
//!
//! * share = max over resource names that are not excluded and have a positive pool of
//!   `allocated ÷ pool`, then `÷ weight`, computed in `f64` in that order (Mesos's results
//!   depend on it: `(15/100)/3 < (10/100)/2`);
//! * a name with an empty pool contributes nothing, so no share is ever NaN;
//! * revocable and reserved resources count under their plain name, and a shared resource
//!   counts once however many copies are allocated.
//!
//! The tree, the virtual leaves and the incremental re-ordering are this crate's.

use std::cmp::Ordering;

use crate::Node;
use crate::{Order, Ordered, TreeSorter};
use allocator_api::SorterConfig;

/// Mesos's `compareDRF`.
#[derive(Debug)]
pub struct DrfOrder;

impl Order for DrfOrder {
    fn compare(a: &Node, b: &Node) -> Ordering {
        (a.share / a.weight)
            .total_cmp(&(b.share / b.weight))
            .then(a.count.cmp(&b.count))
            .then_with(|| a.path_cmp(b))
    }
}

/// The DRF sorter.
pub type DrfSorter = TreeSorter<Ordered<DrfOrder>>;

/// Creates a DRF sorter (the module's factory; takes no parameters).
pub fn create(config: &SorterConfig) -> DrfSorter {
    DrfSorter::new(config, Ordered::default())
}
