//! The allocation side of a Mesos-style master: loads allocator and sorter modules named by a
//! Mesos-style manifest, creates the allocator and sorters named by flags (falling back to the
//! built-ins), drives them, and ships the `allocator-master` binary.
//!
//! * [`manifest`]: the `--modules` manifest (SPEC section 2).
//! * [`registry`]: loading and checking module libraries; creating allocators and sorters by name.
//! * [`scenario`], [`sorter_scenario`]: scenario files (SPEC section 4).
//! * [`output`]: the event stream (SPEC section 5).
//! * [`cli`]: the `allocator-master` command line (SPEC section 1).
//! * [`actor`]: embedding an allocator in a live master; [`serve`]: the simulated master live over HTTP.
#![deny(missing_docs)]

pub mod actor;
pub mod allocator_scenario;
pub mod bench;
pub mod bench_cli;
pub mod cli;
pub mod conformance;
pub mod guard;
pub mod hierarchical;
pub mod http;
pub mod import;
pub mod manifest;
pub mod metrics;
pub mod output;
pub mod registry;
pub mod report;
pub mod scenario;
pub mod serve;
pub mod simulation;
pub mod soak;
pub mod sorter_scenario;
pub mod watchdog;
pub mod workload;

pub use registry::{CreateError, LoadError, ModuleRegistry};
