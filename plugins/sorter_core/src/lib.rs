//! The client tree shared by the shipped sorters (Mesos's sorter tree, written once).
//!
//! [`TreeSorter`] implements [`Sorter`] for any sibling [`Order`]: it keeps the tree of
//! clients (`a/b/c` paths, virtual `.` leaves for clients that gained children), allocations
//! counted at every ancestor, weights by path, the pool of agent quantities, and the ordering of
//! siblings. The DRF and weighted-priority sorters are `TreeSorter`s with different orders; the
//! random sorter uses the same tree for bookkeeping and draws its own order.
//!
//! Ordering is incremental, as in Mesos 1.7 (MESOS-9249): any change that can reorder many
//! nodes sets a dirty bit and the next [`sort`](Sorter::sort) recomputes every share and
//! re-sorts each level; an [`allocated`](Sorter::allocated) call on a clean tree only
//! recomputes the shares on the client's path and moves those nodes among their siblings.
//! Siblings are kept in blocks of at most 128 (`siblings.rs`), each entry with its client beside
//! it: a move costs O(log n) comparisons and shifts entries within at most two blocks, and
//! [`sort_prefix`](Sorter::sort_prefix) of a flat tree writes `len` clients in O(`len`).
//!
//! Every node counts what its clients hold as scalar totals (`totals`: shares need nothing
//! else). A leaf also keeps what its client holds per agent, for
//! [`allocation`](Sorter::allocation) and [`allocation_on`](Sorter::allocation_on), unless the
//! caller said it never asks ([`keep_scalars_only`](Sorter::keep_scalars_only)): then a leaf
//! keeps per agent only shared resources, as inner nodes do (needed to count a shared resource
//! once), and a grant or give-back of non-shared resources adds to or subtracts from the
//! totals on the client's path without touching a per-agent record or allocating.
//!
//! One concept a file, each using only the files listed before it: `siblings.rs` (a node's
//! ordered children), `held.rs` (what a node holds on one agent), `tree.rs` (nodes, paths,
//! weights), `holdings.rs` (allocations at every ancestor, the agent pool, shares),
//! `usage.rs` (shares over usage instead of holdings, for a policy that keeps usage over time),
//! `clients.rs` (adding and removing clients, virtual leaves), `ordering.rs` (orders,
//! incremental re-ordering, the active order, [`Policy`] and [`TreeSorter`]).
//!
//! A policy whose order depends on time (the `drf_decay` sorter) hears the allocation run's
//! clock through [`Policy::set_time`], keeps what it needs, and gives the tree a usage per node
//! ([`Tree::add_usage`]) that shares are then computed on ([`Tree::share_on_usage`]).

#![deny(missing_docs)]

mod clients;
pub mod drf;
mod held;
mod holdings;
mod ordering;
mod siblings;
mod tree;
mod usage;

pub use ordering::{Order, Ordered, Policy, TreeSorter};
pub use tree::{Node, NodeKind, Tree};

#[cfg(doc)]
use allocator_api::Sorter;

// (Here, not in `tree.rs`: `siblings.rs`, below the tree, stores node indices.)
/// Index of a node in the arena.
pub type NodeIndex = usize;
