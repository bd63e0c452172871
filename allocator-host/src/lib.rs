//! The library a Mesos-style master embeds for its allocation side: it loads allocator and
//! sorter modules named by a Mesos-style manifest, checks them, creates the allocator and
//! sorters named by flags (falling back to the built-in hierarchical DRF allocator), and holds
//! the master core that drives them, its embedding API.
//!
//! * [`manifest`]: the `--modules` manifest (SPEC section 2).
//! * [`registry`]: loading and checking module libraries; creating allocators and sorters by name.
//! * [`hierarchical`]: the built-in hierarchical allocator (Mesos's rules R1–R25).
//! * [`master`]: the master core — [`Master`](master::Master), where every change to the
//!   cluster is one [`Command`](master::Command) through `apply`, with the offer guard, fault
//!   containment and the journal; [`actor`]: a master on its own thread on the wall clock, for
//!   an embedder; [`metrics`]: its metrics, with Mesos's names.
//! * [`guard`]: the offer guard and the sort-output checks (the host never trusts a module);
//!   [`watchdog`]: the call budget and timeout every module call runs under;
//!   [`isolation`]: modules in worker processes, so that no module can take the master down;
//!   [`worker`]: the worker process's side.
//! * [`names`]: names for the handles in a module's messages.
//!
//! It depends on no command line, HTTP, plotting or scenario code: the `allocator-master` crate
//! (the binary, scenarios, workloads, `serve`, `bench`, `conformance`, `soak`, `import`, reports)
//! is built on it.
#![deny(missing_docs)]

pub mod actor;
pub mod guard;
pub mod hierarchical;
pub mod isolation;
pub mod manifest;
pub mod master;
mod methods;
pub mod names;
pub mod registry;
pub mod watchdog;
pub mod worker;

pub use master::metrics;
pub use registry::{CreateError, LoadError, ModuleRegistry};
