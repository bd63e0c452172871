//! Clients of the [master core](allocator_host::master): what drives a master through its commands.
//!
//! * [`scenario`]: scenario events (SPEC section 4) become commands; expectations are checked
//!   against what the master did.
//! * [`simulated`]: simulated and trace-driven frameworks take tasks from their offers, decline
//!   the rest with refuse filters, and suppress their offers when idle.
//! * [`mesos`]: real frameworks over the Mesos v1 scheduler API (`serve`): subscriptions,
//!   offers by id, tasks on simulated agents, status updates and acknowledgements.
//! * [`operator`]: the Mesos v1 operator API (`serve`): queries and operator commands.
//!
//! The HTTP front end of `serve` ([`crate::serve`]) drives the same surface.

pub mod endpoints;
pub mod mesos;
pub mod operator;
pub mod operator_events;
pub mod scenario;
pub mod simulated;
