//! The conformance suite for allocator and sorter modules: the checks
//! `allocator-master conformance` runs, as a library a module crate's `cargo test` calls.
//!
//! Each check drives the module through the host's own code — [`allocator_host`]'s master
//! core with its offer guard for an allocator, the registry's sorter wrapper for a sorter — and
//! judges what comes out. A failure says what the module did, and for a rule of the "Who does
//! what" table of `docs/authoring.md`, names the rule. A check the module opts out of (it
//! answers `unsupported` to an optional call) is skipped, not failed.
//!
//! ```no_run
//! // tests/conformance.rs of a module crate
//! use allocator_conformance::{assert_all_pass, run_allocator_checks, this_crate};
//!
//! #[test]
//! fn the_allocator_passes_conformance() {
//!     let library = this_crate::build_cdylib(env!("CARGO_MANIFEST_DIR"), env!("CARGO_PKG_NAME"));
//!     let registry = this_crate::load(&library, &["my_allocator"]);
//!     assert_all_pass("allocator 'my_allocator'", &run_allocator_checks(&registry, "my_allocator", 1000.0));
//! }
//! ```
//!
//! * [`run_allocator_checks`]: the allocator checks (`allocator_checks`, `rule_checks`, and
//!   `request_checks`: those that send requests, skipped for a module that ignores them).
//! * [`run_sorter_checks`]: the sorter checks, each a [`sorter_script`].
//! * [`Check`], [`report`], [`assert_all_pass`]: verdicts and their report.
//! * [`this_crate`]: building and loading the module crate under test.
#![deny(missing_docs)]

mod allocator_checks;
mod check;
mod cluster;
mod request_checks;
mod rule_checks;
mod sorter_checks;
pub mod sorter_script;
pub mod this_crate;

pub use allocator_checks::run_allocator_checks;
pub use check::{Check, assert_all_pass, counts, render, report};
pub use sorter_checks::run_sorter_checks;
