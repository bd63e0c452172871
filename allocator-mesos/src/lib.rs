//! The JSON of Apache Mesos's v1 HTTP APIs, as `allocator-master serve` speaks them (SPEC
//! section 6).
//!
//! Only this crate knows Mesos's JSON: the rest of the workspace talks in
//! [`allocator_api`]'s types and converts at this boundary. It holds no master state and does
//! no I/O (no HTTP, no files): messages are parsed and written, nothing else.
//!
//! Field and enum names are those of Mesos's protobuf definitions under the protobuf JSON
//! mapping (`include/mesos/v1/mesos.proto`, `scheduler/scheduler.proto`, `master/master.proto`,
//! `quota/quota.proto`, `maintenance/maintenance.proto`): messages are objects with the proto
//! field names, enums are their value names as strings, `bytes` fields are base64 text
//! ([`Bytes`]), `int64` fields are numbers (text is accepted too). Unknown fields are ignored
//! on input, as Mesos ignores them; absent optional fields are left out on output.
//!
//! * [`common`]: ids, values, attributes, labels, times, filters.
//! * [`resource`]: Mesos `Resource` JSON and the conversion to and from
//!   [`allocator_api::resources::Resources`] (SPEC section 3).
//! * [`scheduler`]: the scheduler API's `Call` and `Event` (SPEC 6.1) and what they carry
//!   (`FrameworkInfo`, `Offer`, `TaskInfo`, `TaskStatus`, …).
//! * [`operator`]: the operator API's `Call` and `Response` for the calls of SPEC 6.2.
//! * [`recordio`]: RecordIO framing of an event stream (`<length>\n<json>`).

#![deny(missing_docs)]

/// The Mesos version `serve` speaks (`GET /version`, `SUBSCRIBED`): plain dotted integers,
/// since clients (pymesos) parse every part as a number.
pub const MESOS_VERSION: &str = "1.12.0";

pub mod common;
pub mod operator;
pub mod recordio;
pub mod resource;
pub mod scheduler;

pub use common::*;
pub use resource::{Resource, ResourceFormat, from_mesos, to_mesos};
