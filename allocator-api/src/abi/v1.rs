//! Module ABI 1 (version `1.0.0`): the root module [`ModuleLibrary`], its descriptors and
//! factories, and the boundary interfaces [`AbiSorter`] and [`AbiAllocator`].
//!
//! **This file is frozen and never changes again.** abi_stable checks every type reachable
//! from the root module when a library loads (type and field names, field order, vtable order,
//! signatures), and a host whose root module or interfaces have more fields or methods than a
//! library's refuses that library: a change here would stop libraries built against ABI 1 from
//! loading, or break them. A new call goes into a new ABI: a new file beside this one, with its
//! own root module type and version. ABI 2 (`v2.rs`) reuses this file's allocator interface
//! and extends its sorter method list ([`abi1_sorter_methods!`]).
//!
//! The boundary data types these signatures use are frozen with it, where they are defined:
//! [`Parameter`], [`HostServices`], [`SorterConfig`], [`AllocatorOptions`] and the types of
//! the plain traits' arguments.

// abi_stable 0.11's `#[sabi_trait]` expands to impls that newer rustc flags as non-local.
#![allow(non_local_definitions)]

use abi_stable::library::RootModule;
use abi_stable::sabi_types::VersionStrings;
use abi_stable::std_types::{RBox, ROption, RResult, RSlice, RStr, RString, RVec};
use abi_stable::{StableAbi, declare_root_module_statics, sabi_trait};

#[cfg(doc)]
use super::descriptor::API_VERSION;
use super::descriptor::ModuleKind;
use super::guarded::{Guarded, guard};
use super::parameters::Parameter;
use crate::allocator::*;
use crate::error::{ModuleError, Result};
use crate::ids::{AgentId, ClientId, FrameworkId};
use crate::logging::HostServices;
use crate::resources::{Quantities, Resources};
use crate::sorter::{AgentAllocation, Sorter, SorterConfig};

/// The version of module ABI 1 (the version strings of [`ModuleLibrary`]). Frozen.
pub const ABI_VERSION: &str = "1.0.0";

/// A module's factory. The variant is the module's kind.
#[repr(u8)]
#[derive(StableAbi, Copy, Clone)]
pub enum ModuleFactory {
    /// Creates a sorter from the host's configuration and the manifest parameters.
    Sorter(
        extern "C" fn(
            config: &SorterConfig,
            parameters: RSlice<'_, Parameter>,
        ) -> RResult<SorterBox, ModuleError>,
    ),
    /// Creates an allocator from the host's options and the manifest parameters.
    Allocator(
        extern "C" fn(
            options: &AllocatorOptions,
            parameters: RSlice<'_, Parameter>,
        ) -> RResult<AllocatorBox, ModuleError>,
    ),
}

/// Describes one module of a library.
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct ModuleDescriptor {
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
    pub factory: ModuleFactory,
}

impl ModuleDescriptor {
    /// The module's kind, from its factory.
    pub fn kind(&self) -> ModuleKind {
        match self.factory {
            ModuleFactory::Sorter(_) => ModuleKind::SORTER,
            ModuleFactory::Allocator(_) => ModuleKind::ALLOCATOR,
        }
    }
}

/// The root module of every module library (ABI version 1, frozen).
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = ModuleLibraryRef, prefix_ref_docs = "A reference to a loaded library's [`ModuleLibrary`].")))]
#[sabi(missing_field(panic))]
pub struct ModuleLibrary {
    /// Called once by the host right after loading, before any factory: installs the log
    /// forwarder inside the library.
    pub init: extern "C" fn(host: HostServices) -> RResult<(), ModuleError>,
    /// The library's modules.
    #[sabi(last_prefix_field)]
    pub modules: RSlice<'static, ModuleDescriptor>,
}

impl RootModule for ModuleLibraryRef {
    declare_root_module_statics! {ModuleLibraryRef}
    const BASE_NAME: &'static str = "allocator_module";
    const NAME: &'static str = "allocator module library";
    const VERSION_STRINGS: VersionStrings = VersionStrings::new(ABI_VERSION);
}

/// Writes a sorter interface with `boundary_mirror!` from ABI 1's sorter methods, in their
/// frozen vtable order: the tokens in the first brackets (the interface's docs and
/// `trait … mirrors Sorter for …, boxed as …`), the method list, then the tokens in the
/// second brackets. [`AbiSorter`] is the list alone; ABI 2's sorter interface puts `extends` before
/// it and its added methods after it, so each method is listed (and linked to its contract)
/// once.
macro_rules! abi1_sorter_methods {
    ([$($before:tt)*] [$($after:tt)*]) => {
        $crate::mirror::boundary_mirror! {
            $($before)*
            {
            /// See [`Sorter::add`].
            fn add(&mut self, client: ClientId => ClientId, path: &str => RStr<'_>)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Sorter::remove`].
            fn remove(&mut self, client: ClientId => ClientId)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Sorter::activate`].
            fn activate(&mut self, client: ClientId => ClientId)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Sorter::deactivate`].
            fn deactivate(&mut self, client: ClientId => ClientId)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Sorter::update_weight`].
            fn update_weight(&mut self, path: &str => RStr<'_>, weight: f64 => f64)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Sorter::allocated`].
            fn allocated(
                &mut self,
                client: ClientId => ClientId,
                agent: AgentId => AgentId,
                resources: &Resources => &Resources,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Sorter::update`].
            fn update(
                &mut self,
                client: ClientId => ClientId,
                agent: AgentId => AgentId,
                old: &Resources => &Resources,
                new: &Resources => &Resources,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Sorter::unallocated`].
            fn unallocated(
                &mut self,
                client: ClientId => ClientId,
                agent: AgentId => AgentId,
                resources: &Resources => &Resources,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Sorter::allocation`].
            fn allocation(
                &self,
                client: ClientId => ClientId,
                out: &mut RVec<AgentAllocation> => &mut RVec<AgentAllocation>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Sorter::allocation_on`].
            fn allocation_on(
                &self,
                client: ClientId => ClientId,
                agent: AgentId => AgentId,
                out: &mut Resources => &mut Resources,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Sorter::allocation_scalar_quantities`].
            fn allocation_scalar_quantities(
                &self,
                client: Option<ClientId> => ROption<ClientId>,
                out: &mut Quantities => &mut Quantities,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Sorter::add_agent`].
            fn add_agent(&mut self, agent: AgentId => AgentId, total: &Quantities => &Quantities)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Sorter::remove_agent`].
            fn remove_agent(&mut self, agent: AgentId => AgentId)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Sorter::sort`].
            fn sort(&mut self, out: &mut RVec<ClientId> => &mut RVec<ClientId>)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Sorter::contains`].
            fn contains(&self, client: ClientId => ClientId)
                -> bool => RResult<bool, ModuleError>;
            /// See [`Sorter::count`].
            fn count(&self) -> usize => RResult<u64, ModuleError>;
            } last {
            /// See [`Sorter::dominant_share`].
            fn dominant_share(&self, client: ClientId => ClientId)
                -> Option<f64> => RResult<ROption<f64>, ModuleError>;
            }
            $($after)*
        }
    };
}
pub(super) use abi1_sorter_methods;

abi1_sorter_methods! {
    [
        /// The sorter interface as it crosses the boundary (ABI 1, frozen). See [`Sorter`] for each
        /// method's contract. A loaded ABI 1 sorter keeps the plain trait's defaults for
        /// [`Sorter::sort_prefix`] and [`Sorter::keep_scalars_only`] (this interface has neither).
        trait AbiSorter mirrors Sorter for S, boxed as SorterBox
    ]
    []
}

/// A sorter instance created by an ABI 1 module.
pub type SorterBox = AbiSorter_TO<'static, RBox<()>>;

/// Writes an allocator interface with `boundary_mirror!` from ABI 1's allocator methods, in
/// their frozen vtable order: the tokens in the first brackets (the interface's docs and
/// `trait … mirrors Allocator for …, boxed as …`), the method list, then the tokens in the
/// second brackets. [`AbiAllocator`] is the list alone; ABI 3's allocator interface puts
/// `extends` before it and its added methods after it, as ABI 2's sorter interface does with
/// [`abi1_sorter_methods!`].
macro_rules! abi1_allocator_methods {
    ([$($before:tt)*] [$($after:tt)*]) => {
        $crate::mirror::boundary_mirror! {
            $($before)*
            {

            /// See [`Allocator::set_time`].
            fn set_time(&mut self, now: f64 => f64) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::recover`].
            fn recover(
                &mut self,
                expected_agents: u32 => u32,
                quotas: &[RoleQuota] => RSlice<'_, RoleQuota>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::add_framework`].
            fn add_framework(
                &mut self,
                info: &FrameworkInfo => &FrameworkInfo,
                used: &[Allocation] => RSlice<'_, Allocation>,
                active: bool => bool,
                options: &FrameworkOptions => &FrameworkOptions,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::remove_framework`].
            fn remove_framework(&mut self, framework: FrameworkId => FrameworkId)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::activate_framework`].
            fn activate_framework(&mut self, framework: FrameworkId => FrameworkId)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::deactivate_framework`].
            fn deactivate_framework(&mut self, framework: FrameworkId => FrameworkId)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::update_framework`].
            fn update_framework(
                &mut self,
                info: &FrameworkInfo => &FrameworkInfo,
                options: &FrameworkOptions => &FrameworkOptions,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::add_agent`].
            fn add_agent(
                &mut self,
                info: &AgentInfo => &AgentInfo,
                unavailability: Option<&Unavailability> => ROption<Unavailability>,
                total: &Resources => &Resources,
                used: &[Allocation] => RSlice<'_, Allocation>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::remove_agent`].
            fn remove_agent(&mut self, agent: AgentId => AgentId)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::update_agent`].
            fn update_agent(
                &mut self,
                info: &AgentInfo => &AgentInfo,
                total: Option<&Resources> => ROption<&Resources>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::add_resource_provider`].
            fn add_resource_provider(
                &mut self,
                agent: AgentId => AgentId,
                total: &Resources => &Resources,
                used: &[Allocation] => RSlice<'_, Allocation>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::activate_agent`].
            fn activate_agent(&mut self, agent: AgentId => AgentId)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::deactivate_agent`].
            fn deactivate_agent(&mut self, agent: AgentId => AgentId)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::update_whitelist`].
            fn update_whitelist(
                &mut self,
                hostnames: Option<&[RString]> => ROption<RSlice<'_, RString>>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::request_resources`].
            fn request_resources(
                &mut self,
                framework: FrameworkId => FrameworkId,
                requests: &[Resources] => RSlice<'_, Resources>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::update_allocation`].
            fn update_allocation(
                &mut self,
                framework: FrameworkId => FrameworkId,
                agent: AgentId => AgentId,
                role: &str => RStr<'_>,
                operations: &[Operation] => RSlice<'_, Operation>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::update_available`].
            fn update_available(
                &mut self,
                agent: AgentId => AgentId,
                operations: &[Operation] => RSlice<'_, Operation>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::update_unavailability`].
            fn update_unavailability(
                &mut self,
                agent: AgentId => AgentId,
                unavailability: Option<&Unavailability> => ROption<Unavailability>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::update_inverse_offer`].
            fn update_inverse_offer(
                &mut self,
                agent: AgentId => AgentId,
                framework: FrameworkId => FrameworkId,
                status: Option<InverseOfferStatus> => ROption<InverseOfferStatus>,
                refuse_seconds: Option<f64> => ROption<f64>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::inverse_offer_statuses`].
            fn inverse_offer_statuses(
                &self,
                out: &mut RVec<InverseOfferStatusEntry> => &mut RVec<InverseOfferStatusEntry>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::transition_offered_to_allocated`].
            fn transition_offered_to_allocated(
                &mut self,
                agent: AgentId => AgentId,
                resources: &Resources => &Resources,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::recover_resources`].
            fn recover_resources(
                &mut self,
                framework: FrameworkId => FrameworkId,
                agent: AgentId => AgentId,
                role: &str => RStr<'_>,
                resources: &Resources => &Resources,
                refuse_seconds: Option<f64> => ROption<f64>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::suppress_offers`].
            fn suppress_offers(
                &mut self,
                framework: FrameworkId => FrameworkId,
                roles: &[RString] => RSlice<'_, RString>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::revive_offers`].
            fn revive_offers(
                &mut self,
                framework: FrameworkId => FrameworkId,
                roles: &[RString] => RSlice<'_, RString>,
            ) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::update_quota`].
            fn update_quota(&mut self, role: &str => RStr<'_>, quota: &Quota => &Quota)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::update_weights`].
            fn update_weights(&mut self, weights: &[RoleWeight] => RSlice<'_, RoleWeight>)
                -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::pause`].
            fn pause(&mut self) -> Result<()> => RResult<(), ModuleError>;
            /// See [`Allocator::resume`].
            fn resume(&mut self) -> Result<()> => RResult<(), ModuleError>;
            } last {
            /// See [`Allocator::allocate`].
            fn allocate(
                &mut self,
                agents: &[AgentId] => RSlice<'_, AgentId>,
                periodic: bool => bool,
                out: &mut OfferBatch => &mut OfferBatch,
            ) -> Result<()> => RResult<(), ModuleError>;
            }
            $($after)*
        }
    };
}
pub(super) use abi1_allocator_methods;

abi1_allocator_methods! {
    [
        /// The allocator interface as it crosses the boundary. See [`Allocator`] for each method's
        /// contract.
        trait AbiAllocator mirrors Allocator for A, boxed as AllocatorBox
    ]
    []
}

/// An allocator instance created by a module.
pub type AllocatorBox = AbiAllocator_TO<'static, RBox<()>>;

// Host-side convenience: a loaded sorter or allocator is usable through the plain traits, with
// boundary errors turned back into `Result`s. Both impls are written by `boundary_mirror!`
// above, with the interfaces and the `Guarded` impls.
