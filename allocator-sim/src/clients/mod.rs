//! Clients of the [master core](allocator_host::master) in a simulation: what drives a master
//! through its commands on the virtual clock.
//!
//! * [`scenario`]: scenario events (SPEC section 4) become commands; expectations are checked
//!   against what the master did.
//! * [`simulated`]: simulated and trace-driven frameworks take tasks from their offers, decline
//!   the rest with refuse filters, and suppress their offers when idle.
//!
//! Live clients (real frameworks over the Mesos scheduler API, the operator API) live in the
//! `allocator-master` binary and attach as a [`crate::driver::Client`].

pub mod scenario;
pub mod simulated;
