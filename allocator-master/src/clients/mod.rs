//! The live master's clients of the [master core](allocator_host::master): what drives it over
//! HTTP. (The simulation's clients, scenario events and simulated frameworks, are
//! `allocator_sim::clients`.)
//!
//! * [`mesos`]: real frameworks over the Mesos v1 scheduler API (`serve`): subscriptions,
//!   offers by id, tasks on simulated agents, status updates and acknowledgements.
//! * [`operator`]: the Mesos v1 operator API (`serve`): queries and operator commands;
//!   [`operator_events`]: its `SUBSCRIBE` event stream.
//! * [`endpoints`]: Mesos's master HTTP endpoints (`/master/state` and friends, v0 JSON).
//! * [`wiring`]: the scheduler client as the driver's live client, the driver as the operator
//!   API's cluster.
//!
//! The HTTP front end of `serve` ([`crate::serve`]) drives the same surface.

pub mod endpoints;
pub mod mesos;
pub mod operator;
pub mod operator_events;
pub mod v0_calls;
pub mod wiring;
