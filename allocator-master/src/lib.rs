//! `allocator-master`: the master with its allocation side. It drives an allocator (the
//! built-in or a module, loaded through [`allocator_host`]) from scenarios, simulated and
//! trace-driven workloads, and live over HTTP; it benchmarks, checks conformance, soaks, and
//! reports.
//!
//! * [`cli`]: the command line (SPEC section 1).
//! * [`scenario`], [`allocator_scenario`], [`sorter_scenario`]: scenario files (SPEC section 4).
//! * [`clients`]: what drives the core (scenario events, simulated frameworks);
//!   [`observers`]: what watches it (the event stream, statistics, the summary).
//! * [`driver`]: the core wired to its clients and observers (every master the binary runs);
//!   [`workload`]: the embedded default workload.
//! * [`output`]: the event stream (SPEC section 5); [`report`]: SVG reports and curves;
//!   [`recording`]: what a live master applied, as a replayable scenario (SPEC section 6.3);
//!   [`plan`]: what a change would do to the next allocation run (what-if), made off the
//!   master thread by the [`planner`]; [`explain`]: why
//!   a role or framework got what it got.
//! * [`serve`]: the simulated master live over HTTP, with [`auth`] (authentication and
//!   authorization); [`http`]: its HTTP/1.1 server (keep-alive,
//!   chunked bodies, streamed answers); [`mesos`]: the JSON of Mesos's v1 scheduler and
//!   operator APIs, resource conversion and RecordIO.
//! * [`bench`](mod@bench), [`cli::bench`]: Mesos's benchmarks and their subcommand;
//!   `conformance` runs the [`allocator_conformance`] suite; [`soak`]: the churn soak; [`import`]: the trace
//!   importer.
//! * [`progress`], [`interrupt`]: signs of life and SIGINT/SIGTERM for long runs.
#![deny(missing_docs)]

pub mod allocator_scenario;
pub mod auth;
pub mod bench;
pub mod cli;
pub mod clients;
pub mod driver;
pub mod duration;
pub mod experiment;
pub mod explain;
pub mod http;
pub mod import;
pub mod interrupt;
pub mod master_registry;
pub mod mesos;
pub mod observers;
pub mod output;
pub mod plan;
pub mod planner;
pub mod progress;
pub mod recording;
pub mod report;
pub mod scenario;
pub mod serve;
pub mod soak;
pub mod sorter_scenario;
pub mod system_metrics;
pub mod workload;
