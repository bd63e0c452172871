//! `allocator-sim`: the simulated master. The [master core](allocator_host::master) driven on a
//! virtual clock by scenario events and simulated or trace-driven frameworks, watched by
//! observers (the event stream, statistics, expectations, explanations), forked for what-if
//! plans and recorded as replayable scenarios.
//!
//! * [`scenario`], [`allocator_scenario`], [`sorter_scenario`]: scenario files (SPEC section 4).
//! * [`clients`]: what drives the core in a simulation (scenario events, simulated
//!   frameworks); [`observers`]: what watches it (the event stream, statistics, the summary).
//! * [`driver`]: the core wired to its clients and observers ([`driver::Driver`]: every master
//!   the binary runs, and the one a live client attaches to through [`driver::Client`]);
//!   [`workload`]: the embedded default workload.
//! * [`output`]: the event stream (SPEC section 5); [`recording`]: what a master applied, as a
//!   replayable scenario (SPEC section 6.3); [`plan`]: what a change would do to the next
//!   allocation run (what-if); [`explain`]: why a role or framework got what it got.
//! * [`progress`]: what a long run has done so far (counters a display reads); [`tasks`]:
//!   the simulated workload's types.
//!
//! What this crate must never know: HTTP, tokio or sockets; Mesos's JSON; authentication; the
//! command line. A live client (the Mesos scheduler API of `allocator-master serve`, a
//! Kubernetes scheduler) attaches to a [`driver::Driver`] from outside as a
//! [`driver::Client`]; the policy lab (`allocator-lab`) builds on this crate.
#![deny(missing_docs)]

pub mod allocator_scenario;
pub mod clients;
pub mod driver;
pub mod explain;
pub mod observers;
pub mod output;
pub mod plan;
pub mod progress;
pub mod recording;
pub mod scenario;
pub mod sorter_scenario;
pub mod tasks;
pub mod workload;
