//! The library a Mesos-style master embeds for its allocation side: it loads allocator and
//! sorter modules named by a Mesos-style manifest, checks them, creates the allocator and
//! sorters named by flags (falling back to the built-in hierarchical DRF allocator), and holds
//! the master core that drives them, its embedding API.
//!
//! The embedding API:
//!
//! * [`manifest`]: the `--modules` manifest (SPEC section 2).
//! * [`registry`]: loading and checking module libraries ([`ModuleRegistry`], [`LoadError`]);
//!   creating allocators and sorters by name ([`CreateError`]).
//! * [`master`]: the master core — [`Master`](master::Master), where every change to the
//!   cluster is one [`Command`](master::Command) through `apply`, with the offer guard, fault
//!   containment and the [`Journal`](master::Journal); it is created from a
//!   [`Setup`](master::Setup) and tells what happened in [`Event`](master::Event)s.
//!   [`actor`]: a master on its own thread on the wall clock, for an embedder
//!   ([`MasterActor`](actor::MasterActor), [`MasterHandle`](actor::MasterHandle),
//!   [`ActorOptions`](actor::ActorOptions)); [`wall_clock`]: the one loop that keeps a live
//!   master on the wall clock (the actor's, and `serve`'s with its own [`Wiring`](wall_clock::Wiring));
//!   [`metrics`]: its metrics, with Mesos's names.
//! * [`worker_main`] and [`is_worker_invocation`]: a master whose modules may run in worker
//!   processes (a manifest's `isolation: process`) lets its executable act as the worker, first
//!   thing in `main`:
//!
//! ```no_run
//! if allocator_host::is_worker_invocation() {
//!     allocator_host::worker_main(); // never returns
//! }
//! // … the master …
//! ```
//!
//! The host never prints: what it has to say goes through [`log`] (a module's fault and what
//! the host did about it at `error`), to whatever logger the embedder installs.
//!
//! Inside, not promised to embedders: the built-in hierarchical allocator (Mesos's rules
//! R1–R25), the offer guard and the sort-output checks (the host never trusts a module), the
//! call budget and watchdog every module call runs under, modules in worker processes (so that
//! no module can take the master down) and the worker's side, and names for the handles in a
//! module's messages.
//!
//! It depends on no command line, HTTP, plotting or scenario code: the `allocator-master` crate
//! (the binary, scenarios, workloads, `serve`, `bench`, `conformance`, `soak`, `import`, reports)
//! is built on it.
#![deny(missing_docs)]

pub mod actor;
// Public only for the workspace's own crates and tests; not promised.
#[doc(hidden)]
pub mod guard;
// Public only for the workspace's own crates and tests; not promised.
#[doc(hidden)]
pub mod hierarchical;
// Public only for the workspace's own crates and tests; not promised.
#[doc(hidden)]
pub mod isolation;
pub mod manifest;
pub mod master;
mod methods;
// Public only for the workspace's own crates and tests; not promised.
#[doc(hidden)]
pub mod names;
pub mod registry;
pub mod wall_clock;
// Public only for the workspace's own crates and tests; not promised.
#[doc(hidden)]
pub mod watchdog;
// Public only for the workspace's own crates and tests; not promised.
#[doc(hidden)]
pub mod worker;

pub use isolation::is_worker_invocation;
pub use master::metrics;
pub use registry::{CreateError, LoadError, LoadErrorKind, ModuleRegistry};
pub use worker::worker_main;
