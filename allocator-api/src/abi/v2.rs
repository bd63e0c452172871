//! Module ABI 2 (version `2.0.0`, what [`export_modules!`](crate::export_modules) writes): the
//! root module [`ModuleLibraryV2`], its descriptors and factories, and the sorter interface
//! [`AbiSorterV2`] (ABI 1's sorter methods in the same order, then `sort_prefix` and
//! `keep_scalars_only`). Allocators keep ABI 1's interface ([`AllocatorBox`]).
//!
//! **This file is frozen and never changes again**, for the same reason as ABI 1's
//! ([`super::v1`]): libraries built against ABI 2 must keep loading. A new call goes into a new
//! ABI file beside this one, with its own root module type and the next major version.

// abi_stable 0.11's `#[sabi_trait]` expands to impls that newer rustc flags as non-local.
#![allow(non_local_definitions)]

use abi_stable::library::RootModule;
use abi_stable::sabi_types::VersionStrings;
use abi_stable::std_types::{RBox, ROption, RResult, RSlice, RStr, RVec};
use abi_stable::{StableAbi, declare_root_module_statics, sabi_trait};

#[cfg(doc)]
use super::descriptor::API_VERSION;
use super::guarded::{Guarded, guard};
use super::parameters::Parameter;
use super::v1::AllocatorBox;
#[cfg(doc)]
use super::v1::{AbiSorter, ModuleDescriptor, ModuleLibrary};
use crate::allocator::AllocatorOptions;
use crate::error::{ModuleError, Result};
use crate::ids::{AgentId, ClientId};
use crate::logging::HostServices;
use crate::resources::{Quantities, Resources};
use crate::sorter::{AgentAllocation, Sorter, SorterConfig};

/// The version of module ABI 2 (the version strings of [`ModuleLibraryV2`]), which
/// [`export_modules!`](crate::export_modules) writes.
pub const ABI_VERSION_2: &str = "2.0.0";

/// A module's factory in an ABI 2 library. The variant is the module's kind; an allocator's
/// factory is the same as in ABI 1.
#[repr(u8)]
#[derive(StableAbi, Copy, Clone)]
pub enum ModuleFactoryV2 {
    /// Creates a sorter (with the ABI 2 interface) from the host's configuration and the
    /// manifest parameters.
    Sorter(
        extern "C" fn(
            config: &SorterConfig,
            parameters: RSlice<'_, Parameter>,
        ) -> RResult<SorterBoxV2, ModuleError>,
    ),
    /// Creates an allocator from the host's options and the manifest parameters.
    Allocator(
        extern "C" fn(
            options: &AllocatorOptions,
            parameters: RSlice<'_, Parameter>,
        ) -> RResult<AllocatorBox, ModuleError>,
    ),
}

/// Describes one module of an ABI 2 library: [`ModuleDescriptor`]'s fields, with an ABI 2
/// factory.
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct ModuleDescriptorV2 {
    /// The module name, as manifests and flags refer to it.
    pub name: RStr<'static>,
    /// Who wrote it.
    pub author: RStr<'static>,
    /// What it does, in one line.
    pub description: RStr<'static>,
    /// The [`API_VERSION`] it was built against (filled in by the export helpers).
    pub api_version: RStr<'static>,
    /// An optional check the host calls before using the module; `false` means incompatible.
    pub compatible: ROption<extern "C" fn() -> bool>,
    /// The factory.
    pub factory: ModuleFactoryV2,
}

/// The root module of an ABI 2 module library (version [`ABI_VERSION_2`]): [`ModuleLibrary`]
/// with ABI 2 descriptors.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = ModuleLibraryV2Ref, prefix_ref_docs = "A reference to a loaded library's [`ModuleLibraryV2`].")))]
#[sabi(missing_field(panic))]
pub struct ModuleLibraryV2 {
    /// Called once by the host right after loading, before any factory: installs the log
    /// forwarder inside the library.
    pub init: extern "C" fn(host: HostServices) -> RResult<(), ModuleError>,
    /// The library's modules.
    #[sabi(last_prefix_field)]
    pub modules: RSlice<'static, ModuleDescriptorV2>,
}

impl RootModule for ModuleLibraryV2Ref {
    declare_root_module_statics! {ModuleLibraryV2Ref}
    const BASE_NAME: &'static str = "allocator_module";
    const NAME: &'static str = "allocator module library (ABI 2)";
    const VERSION_STRINGS: VersionStrings = VersionStrings::new(ABI_VERSION_2);
}

/// Writes a sorter interface from ABI 2's sorter methods (ABI 1's list, then `sort_prefix`
/// and `keep_scalars_only`), as [`abi1_sorter_methods!`](super::v1) does from ABI 1's: ABI 3's
/// sorter interface extends it.
macro_rules! abi2_sorter_methods {
    ([$($before:tt)*] [$($after:tt)*]) => {
        super::v1::abi1_sorter_methods! {
            [$($before)*]
            [
                adds {
                /// See [`Sorter::sort_prefix`].
                fn sort_prefix(
                    &mut self,
                    len: usize => u64,
                    out: &mut RVec<ClientId> => &mut RVec<ClientId>,
                ) -> Result<bool> => RResult<bool, ModuleError>;
                } last {
                /// See [`Sorter::keep_scalars_only`].
                fn keep_scalars_only(&mut self) -> bool => RResult<bool, ModuleError>;
                }
                $($after)*
            ]
        }
    };
}
pub(super) use abi2_sorter_methods;

abi2_sorter_methods! {
    [
        /// The sorter interface as it crosses the boundary in ABI 2: every method of
        /// [`AbiSorter`], in the same order, then [`Sorter::sort_prefix`] and
        /// [`Sorter::keep_scalars_only`]. See [`Sorter`] for each method's contract.
        trait AbiSorterV2 mirrors Sorter for S, boxed as SorterBoxV2, extends
    ]
    []
}

/// A sorter instance created by an ABI 2 module.
pub type SorterBoxV2 = AbiSorterV2_TO<'static, RBox<()>>;

// Host-side convenience: a loaded ABI 2 sorter is usable through the plain trait, with boundary
// errors turned back into `Result`s; the impl is written by `boundary_mirror!` above, with the
// interface and the `Guarded` impl.
