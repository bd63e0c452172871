//! Observers of the [master core](allocator_host::master)'s events: they read what happened and the
//! master's queries, and never issue commands.
//!
//! * [`stream`]: the event stream (SPEC section 5) written with `--output`.
//! * [`stats`]: per-role statistics, utilisation over time, the report's time series, the
//!   metrics and the summary table.

pub mod stats;
pub mod stream;
