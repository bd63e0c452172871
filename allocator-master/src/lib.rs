//! `allocator-master`: the command line, and the live master's wiring. Everything else is a
//! crate of its own, which this one puts together:
//!
//! * `allocator_sim`: the simulated master (scenarios, simulated frameworks, observers, plans,
//!   explanations, recordings); `allocator_lab`: the packing experiment and the trace import;
//!   `allocator_pictures`: SVG reports and curves; `allocator_mesos`: Mesos's v1 JSON;
//!   `allocator_http`: the HTTP/1.1 server; `allocator_host`: loading modules and the master core;
//!   `allocator_conformance`: the conformance suite.
//!
//! What is here:
//!
//! * [`cli`]: the command line (SPEC section 1): flags, subcommands, exit codes, and the
//!   runners of each subcommand.
//! * [`serve`]: the master live over HTTP, with [`auth`] (authentication and
//!   authorization), [`clients`] (the Mesos scheduler and operator APIs and Mesos's master
//!   endpoints over a [`Driver`](allocator_sim::driver::Driver)), [`planner`] (what-if plans
//!   off the master thread), [`master_registry`] (what survives a restart) and
//!   [`system_metrics`].
//! * [`bench`](mod@bench), [`cli::bench`]: Mesos's benchmarks and their subcommand; [`soak`]:
//!   the churn soak; `conformance` runs the [`allocator_conformance`] suite.
//! * [`descriptors`]: the open-file limit and the connection places that fit in it.
//! * [`interrupt`], [`progress`]: SIGINT/SIGTERM and signs of life for long runs;
//!   [`duration`]: Mesos's duration format; [`logging`]: the log, `--log_dir` and the
//!   operator API's logging level.
#![deny(missing_docs)]

pub mod auth;
pub mod bench;
pub mod cli;
pub mod clients;
pub mod descriptors;
pub mod duration;
pub mod interrupt;
pub mod logging;
pub mod master_registry;
pub mod planner;
pub mod progress;
pub mod serve;
pub mod soak;
pub mod system_metrics;
