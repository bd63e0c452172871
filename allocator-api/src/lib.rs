//! The stable-ABI contract between the allocator host (`allocator-host`, which a master such as
//! `allocator-master` embeds) and the allocator and sorter modules it loads from `.so`/`.dylib`
//! files.
//!
//! Third-party module authors depend on this crate and nothing else:
//!
//! * [`resources`]: resources and quantities in the SPEC text format, with the arithmetic the
//!   host and every module share.
//! * [`Sorter`] and [`Allocator`]: the interfaces a module implements (Mesos's sorter and
//!   allocator, with integer handles and caller-owned output buffers).
//! * [`export_modules!`]: turns a `cdylib` crate into a module library; it catches panics at
//!   the boundary, forwards `log` records to the host and records the API version.
//! * [`abi`]: what crosses the boundary (for hosts; authors rarely need it).
//!
//! Where the rules an author needs are written:
//!
//! * what a request means (role, group, all-or-nothing size, constraints, withdrawal) and who
//!   checks what: [`Allocator::request`] and the [`requests`] module;
//! * refuse filters and why [`Allocator::allocate`] has a `periodic` flag:
//!   [`Allocator::recover_resources`];
//! * duplicate adds, unknown handles, `used` lists: the [`allocator`] module docs;
//! * when the built-in allocator calls `allocated`, `unallocated`, `update` and `sort`: the
//!   [`sorter`] module docs;
//! * one role type and its conversions: [`Role`];
//! * resource arithmetic ([`Resources::intersection`], [`Resources::contains_quantities`],
//!   [`Resources::scalar_quantities`]) and quota limits that keep their zeros
//!   ([`Quota::limit_headroom`]): the [`resources`] module.
//!
//! The crate stands alone (`cargo package -p allocator-api`): depend on it by path or version,
//! and not on `abi_stable` directly; it requires the `abi_stable` releases (`^0.11.3`) whose
//! ABI the host accepts.
//!
//! A complete sorter module:
//!
//! ```ignore
//! use allocator_api::{ClientId, Result, Sorter, RVec};
//!
//! #[derive(Default)]
//! pub struct Fifo(Vec<(ClientId, bool)>);
//!
//! impl Sorter for Fifo {
//!     fn add(&mut self, c: ClientId, _path: &str) -> Result<()> { self.0.push((c, false)); Ok(()) }
//!     fn remove(&mut self, c: ClientId) -> Result<()> { self.0.retain(|e| e.0 != c); Ok(()) }
//!     fn activate(&mut self, c: ClientId) -> Result<()> { self.set(c, true) }
//!     fn deactivate(&mut self, c: ClientId) -> Result<()> { self.set(c, false) }
//!     fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()> {
//!         out.clear();
//!         out.extend(self.0.iter().filter(|e| e.1).map(|e| e.0));
//!         Ok(())
//!     }
//!     fn contains(&self, c: ClientId) -> bool { self.0.iter().any(|e| e.0 == c) }
//!     fn count(&self) -> usize { self.0.len() }
//! }
//!
//! allocator_api::export_modules! {
//!     sorter { name: "fifo", author: "Example", description: "first come, first served",
//!              create: |_, _| Ok::<_, String>(Fifo::default()) },
//! }
//! ```
#![deny(missing_docs)]

pub mod abi;
pub mod allocator;
mod error;
pub mod explain;
mod export;
pub mod filters;
pub mod gorand;
#[rustfmt::skip]
mod gorand_table;
pub mod ids;
pub mod logging;
#[doc(hidden)]
pub mod mirror;
pub mod requests;
pub mod resources;
pub mod rng;
pub mod roles;
pub mod sorter;

pub use abi::{ModuleKind, Parameters};
pub use abi_stable::std_types::{ROption, RString, RVec};
pub use allocator::{
    AgentCapabilities, AgentInfo, Allocation, Allocator, AllocatorOptions, Attribute,
    FrameworkCapabilities, FrameworkInfo, FrameworkOptions, InverseOffer, InverseOfferStatus,
    InverseOfferStatusEntry, OfferBatch, Operation, OperationKind, Quota, RoleMinAllocatable,
    RoleQuota, RoleWeight, Unavailability,
};
pub use error::{ErrorKind, ModuleError, Result};
pub use explain::{ExplainEntry, ExplainSubject};
pub use filters::RefuseFilter;
pub use ids::{AgentId, ClientId, FrameworkId, IdHasher, IdMap, IdSet};
pub use log;
pub use requests::{Constraint, ConstraintOp, GroupId, Request};
pub use resources::{Name, Quantities, Resource, Resources, Role, Scalar};
pub use sorter::{AgentAllocation, Sorter, SorterConfig};
