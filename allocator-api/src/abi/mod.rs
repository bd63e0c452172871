//! The stable-ABI boundary: what a module library exports and what the host calls.
//!
//! Module authors do not use this module directly: they implement [`Sorter`] or [`Allocator`]
//! and call [`export_modules!`](crate::export_modules). The host uses it to load libraries.
//!
//! # Layout of a module library
//!
//! Every ABI version shares this shape; they differ in the root module type and the sorter and
//! allocator interfaces.
//!
//! * One abi_stable root module, exported under abi_stable's standard symbol, whose version
//!   strings (independent of the crate version) name the ABI: [`ModuleLibraryRef`] for ABI 1
//!   ([`ABI_VERSION`], `1.0.0`), [`ModuleLibraryV2Ref`] for ABI 2 ([`ABI_VERSION_2`], `2.0.0`),
//!   [`ModuleLibraryV3Ref`] for ABI 3 ([`ABI_VERSION_3`], `3.0.0`).
//! * Its `init` function receives [`HostServices`] (the host's logger) once, right after
//!   loading; its `modules` list describes each module: kind, name, author, description, API
//!   version ([`API_VERSION`]), optional compatibility check and a factory
//!   ([`ModuleDescriptor`]/[`ModuleFactory`] in ABI 1, [`ModuleDescriptorV2`]/[`ModuleFactoryV2`]
//!   in ABI 2, [`ModuleDescriptorV3`]/[`ModuleFactoryV3`] in ABI 3: the same fields, with that
//!   ABI's factories).
//! * Instances are abi_stable trait objects.
//!   * Sorters: [`SorterBox`] ([`AbiSorter`]) in ABI 1; [`SorterBoxV2`] ([`AbiSorterV2`]) in
//!     ABI 2: every method of [`AbiSorter`] in the same order, then [`Sorter::sort_prefix`] and
//!     [`Sorter::keep_scalars_only`]; [`SorterBoxV3`] ([`AbiSorterV3`]) in ABI 3: ABI 2's
//!     methods, then [`Sorter::set_time`].
//!   * Allocators: [`AllocatorBox`] ([`AbiAllocator`]) in ABI 1 and 2; [`AllocatorBoxV3`]
//!     ([`AbiAllocatorV3`]) in ABI 3: every method of [`AbiAllocator`] in the same order, then
//!     [`Allocator::request`] and [`Allocator::explain`].
//!   * A host that loads an older library keeps the plain traits' defaults for the calls it
//!     lacks: one `sort` for `sort_prefix`, `false` for `keep_scalars_only`, nothing for
//!     `set_time` and `explain`, and requests [flattened](crate::Request::flatten) into
//!     `request_resources`. The module is never asked those calls.
//! * Every method returns `RResult<_, ModuleError>`; panics are caught inside the module by
//!   [`Guarded`] and come back as [`ErrorKind::PANICKED`](crate::ErrorKind::PANICKED), after
//!   which the instance is poisoned.
//!
//! [`export_modules!`](crate::export_modules) writes ABI 3. The hidden `export_modules_abi1!`
//! and `export_modules_abi2!` write ABI 1 and ABI 2 (the test suite's proof that such
//! libraries still load).
//!
//! # Evolution
//!
//! abi_stable only lets prefix types and trait vtables grow in one direction (a new host
//! rejects a library with fewer fields). So a version, once shipped, is frozen: ABI 1's types
//! ([`ModuleLibrary`], [`ModuleDescriptor`], [`ModuleFactory`], [`AbiSorter`],
//! [`AbiAllocator`]) are byte for byte what they were before ABI 2, and ABI 2's are frozen in
//! turn. A later interface adds a *new* root module type with the next major version beside
//! these; the host reads the library header's version before choosing which root type to
//! initialise ([`LoadedLibrary`]) and refuses a major it does not know. `boundary_mirror!`
//! writes each version's sorter and allocator interfaces from one method list per version
//! (ABI 1's lists, then each later version's additions), so a method's contract stays
//! documented once, on the plain trait.
//!
//! Each shipped version has a file of its own that never changes again (`v1.rs`, `v2.rs`,
//! `v3.rs`); the next version is a new file. What the versions share is written once, by concept:
//! `parameters.rs` ([`Parameter`], [`Parameters`]), `descriptor.rs` ([`ModuleKind`],
//! [`API_VERSION`]), `guarded.rs` ([`Guarded`] and panic containment), `export_helpers.rs`
//! (what [`export_modules!`](crate::export_modules) calls) and `host_view.rs` ([`LoadedLibrary`],
//! [`AnyDescriptor`]). The log forwarding types ([`HostServices`], [`LogRecord`]) live in
//! [`logging`](crate::logging) and are re-exported here.
//!
//! The API version ([`API_VERSION`]) is separate: it says what the plain Rust traits are, and the
//! host loads every module of its major. Things that can change without a new ABI version: new
//! `u8`/`u32` constants in the newtype "enums" (error kinds, capabilities, flags, operation
//! kinds).
//!
//! [`Sorter`]: crate::Sorter
//! [`Sorter::sort_prefix`]: crate::Sorter::sort_prefix
//! [`Sorter::keep_scalars_only`]: crate::Sorter::keep_scalars_only
//! [`Allocator`]: crate::Allocator
//! [`Allocator::request`]: crate::Allocator::request
//! [`Allocator::explain`]: crate::Allocator::explain
//! [`Sorter::set_time`]: crate::Sorter::set_time

mod descriptor;
mod export_helpers;
mod guarded;
mod host_view;
mod parameters;
mod v1;
mod v2;
mod v3;

#[cfg(test)]
mod tests;

pub use descriptor::{API_MAJOR, API_VERSION, ModuleKind};
pub use export_helpers::{
    allocator_box, allocator_box_v3, build_library, build_library_v2, build_library_v3,
    run_compatible, run_factory, sorter_box, sorter_box_v2, sorter_box_v3,
};
pub use guarded::{Guarded, drop_payload, panic_message};
pub use host_view::{
    AllocatorFactory, AllocatorFactoryV3, AnyAllocatorFactory, AnyDescriptor, AnyFactory,
    AnySorterFactory, LoadedLibrary, SorterFactoryV1, SorterFactoryV2, SorterFactoryV3,
};
pub use parameters::{Parameter, Parameters};
pub use v1::{
    ABI_VERSION, AbiAllocator, AbiAllocator_CTO, AbiAllocator_TO, AbiAllocator_trait, AbiSorter,
    AbiSorter_CTO, AbiSorter_TO, AbiSorter_trait, AllocatorBox, ModuleDescriptor, ModuleFactory,
    ModuleLibrary, ModuleLibrary_Prefix, ModuleLibraryRef, SorterBox,
};
pub use v2::{
    ABI_VERSION_2, AbiSorterV2, AbiSorterV2_CTO, AbiSorterV2_TO, AbiSorterV2_trait,
    ModuleDescriptorV2, ModuleFactoryV2, ModuleLibraryV2, ModuleLibraryV2_Prefix,
    ModuleLibraryV2Ref, SorterBoxV2,
};
pub use v3::{
    ABI_VERSION_3, AbiAllocatorV3, AbiAllocatorV3_CTO, AbiAllocatorV3_TO, AbiAllocatorV3_trait,
    AbiSorterV3, AbiSorterV3_CTO, AbiSorterV3_TO, AbiSorterV3_trait, AllocatorBoxV3,
    ModuleDescriptorV3, ModuleFactoryV3, ModuleLibraryV3, ModuleLibraryV3_Prefix,
    ModuleLibraryV3Ref, SorterBoxV3,
};

pub use crate::logging::{HostServices, LogRecord};

/// Implementation details used by the export macro; not part of the stable API.
#[doc(hidden)]
pub mod __private {
    pub use abi_stable::library::{
        __call_root_module_loader, CheckTypeLayout, LibHeader, RootModuleResult,
    };
    pub use abi_stable::std_types::{ROption, RResult, RSlice, RStr};
}

/// The symbol abi_stable looks up in every library (checked against abi_stable in a test; the
/// export macro spells it out because `#[export_root_module]` needs a direct abi_stable
/// dependency in the module crate).
#[doc(hidden)]
pub const ROOT_SYMBOL: &str = "_1as_0lib_1header_0root_bmodule_bloader";
