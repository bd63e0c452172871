//! The policy lab's shared core: allocators that **place** each task a framework states
//! (Mesos's `requestResources`) on the agent and GPU device(s) a policy scores best, and offer
//! exactly that slice.
//!
//! A policy is a [`Placement`]: a score per feasible agent ([`Node`] for the agent, [`Ask`]
//! for the task), for a gang's member a score that may look at where its gang went
//! ([`Placement::score_member`], [`Members`]), and, for a share of one GPU, the device.
//! [`PlacementAllocator`] does the rest, once for every policy: groups placed all or nothing, the bookkeeping of agents, frameworks and what they hold,
//! feasibility (CPU, memory, GPU model, the sharing rule: a share on one device, whole GPUs on
//! fully free devices), refuse filters, GPU filtering, the whitelist, and ties broken by a
//! random agent order drawn once per seed ([`order`]). The shipped policies, each its own
//! module, are `random_placement` (`Random`) and `bestfit_placement` (`BestFit`).
//!
//! The formulas follow the FGD artifact (Weng et al., USENIX ATC '23), as
//! `../shared/reference/fgd-packing-experiment.md` §3 records them.

#![deny(missing_docs)]

mod allocator;
pub mod fairness;
pub mod frag;
mod node;
pub mod order;

pub use allocator::{Members, Placement, PlacementAllocator, TieBreak};
pub use node::{Ask, Node, Shape};
