//! Module ABI 3 (version `3.0.0`, what [`export_modules!`](crate::export_modules) writes): the
//! root module [`ModuleLibraryV3`], its descriptors and factories, the sorter interface
//! [`AbiSorterV3`] (ABI 2's sorter methods in the same order, then `set_time`) and the
//! allocator interface [`AbiAllocatorV3`] (ABI 1's allocator methods in the same order, then
//! `request` and `explain`).
//!
//! What ABI 3 adds: demand that says what it is ([`Request`]: role, group, all-or-nothing
//! size, constraints) through [`Allocator::request`]; the allocation run's time for sorters
//! ([`Sorter::set_time`]); allocator-side reasons ([`Allocator::explain`]). A host that loads
//! an ABI 1 or ABI 2 library keeps the plain traits' defaults for the calls those libraries
//! lack: requests reach them [flattened](Request::flatten) through `request_resources`, their
//! sorters never hear the time, and their allocators explain nothing.
//!
//! **This file is frozen once shipped**, as [`super::v1`] and [`super::v2`] are: a new call
//! goes into a new ABI file beside this one.
//!
//! [`Allocator::request`]: crate::Allocator::request
//! [`Allocator::explain`]: crate::Allocator::explain
//! [`Sorter::set_time`]: crate::Sorter::set_time

// abi_stable 0.11's `#[sabi_trait]` expands to impls that newer rustc flags as non-local.
#![allow(non_local_definitions)]

use abi_stable::library::RootModule;
use abi_stable::sabi_types::VersionStrings;
use abi_stable::std_types::{RBox, ROption, RResult, RSlice, RStr, RString, RVec};
use abi_stable::{StableAbi, declare_root_module_statics, sabi_trait};

use super::descriptor::ModuleKind;
use super::guarded::{Guarded, guard};
use super::parameters::Parameter;
#[cfg(doc)]
use super::v1::ModuleDescriptor;
use super::v1::abi1_allocator_methods;
use super::v2::abi2_sorter_methods;
use crate::allocator::*;
use crate::error::{ModuleError, Result};
use crate::explain::{ExplainEntry, ExplainSubject};
use crate::ids::{AgentId, ClientId, FrameworkId};
use crate::logging::HostServices;
use crate::requests::Request;
use crate::resources::{Quantities, Resources};
use crate::sorter::{AgentAllocation, Sorter, SorterConfig};

/// The version of module ABI 3 (the version strings of [`ModuleLibraryV3`]), which
/// [`export_modules!`](crate::export_modules) writes.
pub const ABI_VERSION_3: &str = "3.0.0";

/// A module's factory in an ABI 3 library. The variant is the module's kind.
#[repr(u8)]
#[derive(StableAbi, Copy, Clone)]
pub enum ModuleFactoryV3 {
    /// Creates a sorter (with the ABI 3 interface) from the host's configuration and the
    /// manifest parameters.
    Sorter(
        extern "C" fn(
            config: &SorterConfig,
            parameters: RSlice<'_, Parameter>,
        ) -> RResult<SorterBoxV3, ModuleError>,
    ),
    /// Creates an allocator (with the ABI 3 interface) from the host's options and the
    /// manifest parameters.
    Allocator(
        extern "C" fn(
            options: &AllocatorOptions,
            parameters: RSlice<'_, Parameter>,
        ) -> RResult<AllocatorBoxV3, ModuleError>,
    ),
}

/// Describes one module of an ABI 3 library: [`ModuleDescriptor`]'s fields, with an ABI 3
/// factory.
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct ModuleDescriptorV3 {
    /// The module name, as manifests and flags refer to it.
    pub name: RStr<'static>,
    /// Who wrote it.
    pub author: RStr<'static>,
    /// What it does, in one line.
    pub description: RStr<'static>,
    /// The [`API_VERSION`](super::API_VERSION) it was built against (filled in by the export
    /// helpers).
    pub api_version: RStr<'static>,
    /// An optional check the host calls before using the module; `false` means incompatible.
    pub compatible: ROption<extern "C" fn() -> bool>,
    /// The factory.
    pub factory: ModuleFactoryV3,
}

impl ModuleDescriptorV3 {
    /// The module's kind, from its factory.
    pub fn kind(&self) -> ModuleKind {
        match self.factory {
            ModuleFactoryV3::Sorter(_) => ModuleKind::SORTER,
            ModuleFactoryV3::Allocator(_) => ModuleKind::ALLOCATOR,
        }
    }
}

/// The root module of an ABI 3 module library (version [`ABI_VERSION_3`]): ABI 1's root
/// module with ABI 3 descriptors.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = ModuleLibraryV3Ref, prefix_ref_docs = "A reference to a loaded library's [`ModuleLibraryV3`].")))]
#[sabi(missing_field(panic))]
pub struct ModuleLibraryV3 {
    /// Called once by the host right after loading, before any factory: installs the log
    /// forwarder inside the library.
    pub init: extern "C" fn(host: HostServices) -> RResult<(), ModuleError>,
    /// The library's modules.
    #[sabi(last_prefix_field)]
    pub modules: RSlice<'static, ModuleDescriptorV3>,
}

impl RootModule for ModuleLibraryV3Ref {
    declare_root_module_statics! {ModuleLibraryV3Ref}
    const BASE_NAME: &'static str = "allocator_module";
    const NAME: &'static str = "allocator module library (ABI 3)";
    const VERSION_STRINGS: VersionStrings = VersionStrings::new(ABI_VERSION_3);
}

abi2_sorter_methods! {
    [
        /// The sorter interface as it crosses the boundary in ABI 3: every method of ABI 2's
        /// sorter interface, in the same order, then [`Sorter::set_time`]. See [`Sorter`] for
        /// each method's contract.
        trait AbiSorterV3 mirrors Sorter for S, boxed as SorterBoxV3, extends
    ]
    [
        adds {} last {
        /// See [`Sorter::set_time`].
        fn set_time(&mut self, now: f64 => f64) -> Result<()> => RResult<(), ModuleError>;
        }
    ]
}

/// A sorter instance created by an ABI 3 module.
pub type SorterBoxV3 = AbiSorterV3_TO<'static, RBox<()>>;

abi1_allocator_methods! {
    [
        /// The allocator interface as it crosses the boundary in ABI 3: every method of ABI 1's
        /// allocator interface, in the same order, then [`Allocator::request`] and
        /// [`Allocator::explain`]. See [`Allocator`] for each method's contract. The host
        /// calls `request`, never ABI 1's `request_resources`, on an ABI 3 allocator.
        trait AbiAllocatorV3 mirrors Allocator for A, boxed as AllocatorBoxV3, extends
    ]
    [
        adds {
        /// See [`Allocator::request`].
        fn request(
            &mut self,
            framework: FrameworkId => FrameworkId,
            requests: &[Request] => RSlice<'_, Request>,
        ) -> Result<()> => RResult<(), ModuleError>;
        } last {
        /// See [`Allocator::explain`].
        fn explain(
            &self,
            subject: &ExplainSubject => &ExplainSubject,
            out: &mut RVec<ExplainEntry> => &mut RVec<ExplainEntry>,
        ) -> Result<()> => RResult<(), ModuleError>;
        }
    ]
}

/// An allocator instance created by an ABI 3 module.
pub type AllocatorBoxV3 = AbiAllocatorV3_TO<'static, RBox<()>>;
