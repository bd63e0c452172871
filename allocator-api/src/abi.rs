//! The stable-ABI boundary: what a module library exports and what the host calls.
//!
//! Module authors do not use this module directly: they implement [`Sorter`] or [`Allocator`]
//! and call [`export_modules!`](crate::export_modules). The host uses it to load libraries.
//!
//! # Layout of a module library
//!
//! Both ABI versions share this shape; they differ in the root module type and the sorter
//! interface.
//!
//! * One abi_stable root module, exported under abi_stable's standard symbol, whose version
//!   strings (independent of the crate version) name the ABI: [`ModuleLibraryRef`] for ABI 1
//!   ([`ABI_VERSION`], `1.0.0`), [`ModuleLibraryV2Ref`] for ABI 2 ([`ABI_VERSION_2`], `2.0.0`).
//! * Its `init` function receives [`HostServices`] (the host's logger) once, right after
//!   loading; its `modules` list describes each module: kind, name, author, description, API
//!   version ([`API_VERSION`]), optional compatibility check and a factory
//!   ([`ModuleDescriptor`]/[`ModuleFactory`] in ABI 1, [`ModuleDescriptorV2`]/[`ModuleFactoryV2`]
//!   in ABI 2: the same fields, with an ABI 2 sorter factory).
//! * Instances are abi_stable trait objects. Allocators are [`AllocatorBox`] in both versions.
//!   Sorters are [`SorterBox`] ([`AbiSorter`]) in ABI 1 and [`SorterBoxV2`] ([`AbiSorterV2`]) in
//!   ABI 2: every method of [`AbiSorter`] in the same order, then [`Sorter::sort_prefix`] and
//!   [`Sorter::keep_scalars_only`]. A host that loads an ABI 1 sorter keeps the plain trait's
//!   defaults for those two (one `sort`; `false`): the module is never asked either.
//! * Every method returns `RResult<_, ModuleError>`; panics are caught inside the module by
//!   [`Guarded`] and come back as [`ErrorKind::PANICKED`](crate::ErrorKind::PANICKED), after
//!   which the instance is poisoned.
//!
//! [`export_modules!`](crate::export_modules) writes ABI 2. The hidden `export_modules_abi1!`
//! writes ABI 1 (the test suite's proof that such libraries still load).
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
//! writes each version's sorter interface from one method list, so a method's contract stays
//! documented once, on the plain trait.
//!
//! The API version ([`API_VERSION`]) is separate: it says what the plain Rust traits are, and the
//! host loads every module of its major. Things that can change without a new ABI version: new
//! `u8`/`u32` constants in the newtype "enums" (error kinds, capabilities, flags, operation
//! kinds).

// abi_stable 0.11's `#[sabi_trait]` expands to impls that newer rustc flags as non-local.
#![allow(non_local_definitions)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};

use abi_stable::library::RootModule;
use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::sabi_types::VersionStrings;
use abi_stable::std_types::{RBox, ROption, RResult, RSlice, RStr, RString, RVec};
use abi_stable::{StableAbi, declare_root_module_statics, sabi_trait};

use crate::allocator::*;
use crate::error::{ErrorKind, ModuleError, Result};
use crate::ids::{AgentId, ClientId, FrameworkId};
use crate::mirror::boundary_mirror;
use crate::resources::{Quantities, Resources};
use crate::sorter::{AgentAllocation, Sorter, SorterConfig};

pub use crate::logging::{HostServices, LogRecord};

/// The version of module ABI 1 (the version strings of [`ModuleLibrary`]). Frozen.
pub const ABI_VERSION: &str = "1.0.0";

/// The version of module ABI 2 (the version strings of [`ModuleLibraryV2`]), which
/// [`export_modules!`](crate::export_modules) writes.
pub const ABI_VERSION_2: &str = "2.0.0";

/// The interface version a module was built against, as recorded in its descriptor.
///
/// `1.1.0`: the plain [`Sorter`] trait gained two provided methods
/// ([`Sorter::sort_prefix`], [`Sorter::keep_scalars_only`]), so a module written against
/// `1.0.0` still compiles and keeps its meaning; the host loads every `1.x` module (see
/// [`API_MAJOR`]), whichever ABI its library has. The API version says what the Rust traits
/// are; the ABI version ([`ABI_VERSION`], [`ABI_VERSION_2`]) says what crosses the boundary.
pub const API_VERSION: &str = "1.1.0";

/// The major version of [`API_VERSION`]: hosts load modules whose API major matches theirs.
pub const API_MAJOR: u32 = 1;

/// A manifest parameter (`{"key": …, "value": …}`).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct Parameter {
    /// The key.
    pub key: RString,
    /// The value.
    pub value: RString,
}

/// The manifest parameters of a module, as its factory receives them.
#[derive(Copy, Clone, Debug)]
pub struct Parameters<'a>(pub &'a [Parameter]);

impl<'a> Parameters<'a> {
    /// The value of the last parameter named `key`.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.0.iter().rev().find(|p| p.key == key).map(|p| p.value.as_str())
    }

    /// The value of `key` parsed as `T`, or `default` when absent. The error names the key and
    /// the value.
    pub fn parse_or<T: std::str::FromStr>(
        &self,
        key: &str,
        default: T,
    ) -> std::result::Result<T, String>
    where
        T::Err: std::fmt::Display,
    {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|e| format!("parameter '{key}' = '{v}': {e}")),
        }
    }

    /// Every parameter, in manifest order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> {
        self.0.iter().map(|p| (p.key.as_str(), p.value.as_str()))
    }
}

/// The kind of a module.
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct ModuleKind(pub u8);

impl ModuleKind {
    /// A sorter (`--role_sorter`, `--framework_sorter`).
    pub const SORTER: ModuleKind = ModuleKind(0);
    /// An allocator (`--allocator`).
    pub const ALLOCATOR: ModuleKind = ModuleKind(1);

    /// `sorter` or `allocator`.
    pub fn name(self) -> &'static str {
        match self {
            ModuleKind::SORTER => "sorter",
            ModuleKind::ALLOCATOR => "allocator",
            _ => "unknown",
        }
    }
}

impl std::fmt::Display for ModuleKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

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

abi1_sorter_methods! {
    [
        /// The sorter interface as it crosses the boundary (ABI 1, frozen). See [`Sorter`] for each
        /// method's contract. A loaded ABI 1 sorter keeps the plain trait's defaults for
        /// [`Sorter::sort_prefix`] and [`Sorter::keep_scalars_only`] (this interface has neither).
        trait AbiSorter mirrors Sorter for S, boxed as SorterBox
    ]
    []
}

abi1_sorter_methods! {
    [
        /// The sorter interface as it crosses the boundary in ABI 2: every method of
        /// [`AbiSorter`], in the same order, then [`Sorter::sort_prefix`] and
        /// [`Sorter::keep_scalars_only`]. See [`Sorter`] for each method's contract.
        trait AbiSorterV2 mirrors Sorter for S, boxed as SorterBoxV2, extends
    ]
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
    ]
}

/// A sorter instance created by an ABI 1 module.
pub type SorterBox = AbiSorter_TO<'static, RBox<()>>;

/// A sorter instance created by an ABI 2 module.
pub type SorterBoxV2 = AbiSorterV2_TO<'static, RBox<()>>;

boundary_mirror! {
    /// The allocator interface as it crosses the boundary. See [`Allocator`] for each method's
    /// contract.
    trait AbiAllocator mirrors Allocator for A, boxed as AllocatorBox {
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
}

/// An allocator instance created by a module.
pub type AllocatorBox = AbiAllocator_TO<'static, RBox<()>>;

/// Wraps a [`Sorter`] or [`Allocator`] so that it can cross the boundary: every call runs
/// inside `catch_unwind`; a panic becomes [`ErrorKind::PANICKED`] and poisons the instance, so
/// that later calls fail with [`ErrorKind::POISONED`] instead of running on broken state.
///
/// Dropping it drops the inner value inside `catch_unwind` too: a module whose `Drop` panics
/// (or panics with a payload that panics when dropped) cannot unwind into the host.
pub struct Guarded<T> {
    inner: std::mem::ManuallyDrop<T>,
    poisoned: AtomicBool,
}

impl<T> Guarded<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Guarded<T> {
        Guarded { inner: std::mem::ManuallyDrop::new(inner), poisoned: AtomicBool::new(false) }
    }
}

impl<T> Drop for Guarded<T> {
    fn drop(&mut self) {
        // SAFETY: `inner` is taken once, here, and `self` is never used again.
        let inner = unsafe { std::mem::ManuallyDrop::take(&mut self.inner) };
        if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(inner))) {
            let message = contained_message(payload);
            log::error!("a module instance panicked while being dropped: {message}");
        }
    }
}

/// Drops a panic payload without letting a second panic escape: a payload whose own `Drop`
/// panics is dropped inside `catch_unwind`, and the second payload is leaked.
pub fn drop_payload(payload: Box<dyn std::any::Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
}

/// The message of a caught panic, with the payload dropped safely (see [`drop_payload`]).
fn contained_message(payload: Box<dyn std::any::Any + Send>) -> String {
    let message = catch_unwind(AssertUnwindSafe(|| panic_message(&*payload))).unwrap_or_else(|p| {
        drop_payload(p);
        "panic with a payload that panicked when read".to_owned()
    });
    drop_payload(payload);
    message
}

/// Runs a module's `compatible` check; a panic (contained) means "not compatible".
pub fn run_compatible(check: fn() -> bool) -> bool {
    match catch_unwind(check) {
        Ok(answer) => answer,
        Err(payload) => {
            drop_payload(payload);
            false
        }
    }
}

/// Turns a panic payload into a message.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".to_owned()
    }
}

/// Runs `f`, catching a panic; `poisoned` is set on panic and checked before running.
fn guard<R>(
    poisoned: &AtomicBool,
    call: &str,
    f: impl FnOnce() -> Result<R>,
) -> RResult<R, ModuleError> {
    if poisoned.load(Ordering::Relaxed) {
        return RResult::RErr(ModuleError {
            kind: ErrorKind::POISONED,
            message: format!("{call}: the instance panicked earlier and is no longer used").into(),
        });
    }
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.into(),
        Err(payload) => {
            poisoned.store(true, Ordering::Relaxed);
            RResult::RErr(ModuleError {
                kind: ErrorKind::PANICKED,
                message: format!("{call}: {}", contained_message(payload)).into(),
            })
        }
    }
}

/// Boxes a sorter as a boundary object (panics caught, see [`Guarded`]).
pub fn sorter_box<S: Sorter + 'static>(sorter: S) -> SorterBox {
    AbiSorter_TO::from_value(Guarded::new(sorter), abi_stable::sabi_trait::TD_Opaque)
}

/// Boxes a sorter as an ABI 2 boundary object (panics caught, see [`Guarded`]).
pub fn sorter_box_v2<S: Sorter + 'static>(sorter: S) -> SorterBoxV2 {
    AbiSorterV2_TO::from_value(Guarded::new(sorter), abi_stable::sabi_trait::TD_Opaque)
}

/// Boxes an allocator as a boundary object (panics caught, see [`Guarded`]).
pub fn allocator_box<A: Allocator + 'static>(allocator: A) -> AllocatorBox {
    AbiAllocator_TO::from_value(Guarded::new(allocator), abi_stable::sabi_trait::TD_Opaque)
}

/// Runs a module factory, catching panics and turning errors into [`ModuleError`]s.
pub fn run_factory<T, C: ?Sized, E: std::fmt::Display, B>(
    config: &C,
    parameters: RSlice<'_, Parameter>,
    create: impl FnOnce(&C, Parameters<'_>) -> std::result::Result<T, E>,
    boxed: impl FnOnce(T) -> B,
) -> RResult<B, ModuleError> {
    let params = Parameters(parameters.as_slice());
    // Everything the module's code touches (its error's `Display` and `Drop` included) runs
    // inside `catch_unwind`.
    let outcome = catch_unwind(AssertUnwindSafe(|| match create(config, params) {
        Ok(v) => Ok(boxed(v)),
        Err(e) => Err(ModuleError::failed(e)),
    }));
    match outcome {
        Ok(Ok(b)) => RResult::ROk(b),
        Ok(Err(e)) => RResult::RErr(e),
        Err(payload) => RResult::RErr(ModuleError {
            kind: ErrorKind::PANICKED,
            message: format!("create: {}", contained_message(payload)).into(),
        }),
    }
}

/// Builds an ABI 2 library's root module from its descriptors (used by [`export_modules!`]).
///
/// [`export_modules!`]: crate::export_modules
pub fn build_library_v2(modules: Vec<ModuleDescriptorV2>) -> ModuleLibraryV2Ref {
    let modules: &'static [ModuleDescriptorV2] = Box::leak(modules.into_boxed_slice());
    ModuleLibraryV2 { init: crate::logging::library_init, modules: RSlice::from_slice(modules) }
        .leak_into_prefix()
}

/// Builds an ABI 1 library's root module from its descriptors (used by the hidden
/// `export_modules_abi1!`, which only tests and fixtures use).
pub fn build_library(modules: Vec<ModuleDescriptor>) -> ModuleLibraryRef {
    let modules: &'static [ModuleDescriptor] = Box::leak(modules.into_boxed_slice());
    ModuleLibrary { init: crate::logging::library_init, modules: RSlice::from_slice(modules) }
        .leak_into_prefix()
}

/// An ABI 1 sorter factory ([`ModuleFactory::Sorter`]).
pub type SorterFactoryV1 =
    extern "C" fn(&SorterConfig, RSlice<'_, Parameter>) -> RResult<SorterBox, ModuleError>;

/// An ABI 2 sorter factory ([`ModuleFactoryV2::Sorter`]).
pub type SorterFactoryV2 =
    extern "C" fn(&SorterConfig, RSlice<'_, Parameter>) -> RResult<SorterBoxV2, ModuleError>;

/// An allocator factory (the same in both ABIs).
pub type AllocatorFactory =
    extern "C" fn(&AllocatorOptions, RSlice<'_, Parameter>) -> RResult<AllocatorBox, ModuleError>;

/// A loaded library's root module, whichever ABI it was built with (host side). The host
/// reads the library header's version first and initialises the matching root type.
#[derive(Copy, Clone)]
pub enum LoadedLibrary {
    /// An ABI 1 library ([`ABI_VERSION`]).
    V1(ModuleLibraryRef),
    /// An ABI 2 library ([`ABI_VERSION_2`]).
    V2(ModuleLibraryV2Ref),
}

impl LoadedLibrary {
    /// The library's `init` ([`ModuleLibrary::init`]), to call once right after loading.
    pub fn init(self) -> extern "C" fn(HostServices) -> RResult<(), ModuleError> {
        match self {
            LoadedLibrary::V1(l) => l.init(),
            LoadedLibrary::V2(l) => l.init(),
        }
    }

    /// The library's modules, in the library's order.
    pub fn modules(self) -> Vec<AnyDescriptor> {
        match self {
            LoadedLibrary::V1(l) => l.modules().iter().map(|d| AnyDescriptor::from(*d)).collect(),
            LoadedLibrary::V2(l) => l.modules().iter().map(|d| AnyDescriptor::from(*d)).collect(),
        }
    }
}

/// One module of a loaded library, whichever ABI (host side): the fields of
/// [`ModuleDescriptor`] and [`ModuleDescriptorV2`].
#[derive(Copy, Clone)]
pub struct AnyDescriptor {
    /// The module name.
    pub name: RStr<'static>,
    /// Who wrote it.
    pub author: RStr<'static>,
    /// What it does.
    pub description: RStr<'static>,
    /// The API version it was built against.
    pub api_version: RStr<'static>,
    /// Its optional compatibility check.
    pub compatible: ROption<extern "C" fn() -> bool>,
    /// Its factory.
    pub factory: AnyFactory,
}

impl AnyDescriptor {
    /// The module's kind, from its factory.
    pub fn kind(&self) -> ModuleKind {
        match self.factory {
            AnyFactory::Sorter(_) => ModuleKind::SORTER,
            AnyFactory::Allocator(_) => ModuleKind::ALLOCATOR,
        }
    }
}

impl From<ModuleDescriptor> for AnyDescriptor {
    fn from(d: ModuleDescriptor) -> AnyDescriptor {
        AnyDescriptor {
            name: d.name,
            author: d.author,
            description: d.description,
            api_version: d.api_version,
            compatible: d.compatible,
            factory: match d.factory {
                ModuleFactory::Sorter(f) => AnyFactory::Sorter(AnySorterFactory::V1(f)),
                ModuleFactory::Allocator(f) => AnyFactory::Allocator(f),
            },
        }
    }
}

impl From<ModuleDescriptorV2> for AnyDescriptor {
    fn from(d: ModuleDescriptorV2) -> AnyDescriptor {
        AnyDescriptor {
            name: d.name,
            author: d.author,
            description: d.description,
            api_version: d.api_version,
            compatible: d.compatible,
            factory: match d.factory {
                ModuleFactoryV2::Sorter(f) => AnyFactory::Sorter(AnySorterFactory::V2(f)),
                ModuleFactoryV2::Allocator(f) => AnyFactory::Allocator(f),
            },
        }
    }
}

/// A module's factory, whichever ABI (host side). The variant is the module's kind.
#[derive(Copy, Clone)]
pub enum AnyFactory {
    /// A sorter's.
    Sorter(AnySorterFactory),
    /// An allocator's.
    Allocator(AllocatorFactory),
}

/// A sorter module's factory, by the ABI of its library (host side).
#[derive(Copy, Clone)]
pub enum AnySorterFactory {
    /// ABI 1: its sorters keep the [`Sorter`] defaults of `sort_prefix` (one `sort`) and
    /// `keep_scalars_only` (`false`): the module is never asked either.
    V1(SorterFactoryV1),
    /// ABI 2: its sorters answer every [`Sorter`] method themselves.
    V2(SorterFactoryV2),
}

impl AnySorterFactory {
    /// Runs the factory (it catches the module's panics itself, see [`run_factory`]) and
    /// returns the instance as a plain [`Sorter`].
    pub fn create(
        self,
        config: &SorterConfig,
        parameters: &[Parameter],
    ) -> Result<Box<dyn Sorter>> {
        let parameters = RSlice::from_slice(parameters);
        match self {
            AnySorterFactory::V1(f) => {
                f(config, parameters).into_result().map(|s| Box::new(s) as Box<dyn Sorter>)
            }
            AnySorterFactory::V2(f) => {
                f(config, parameters).into_result().map(|s| Box::new(s) as Box<dyn Sorter>)
            }
        }
    }
}

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

// Host-side convenience: a loaded sorter or allocator is usable through the plain traits, with
// boundary errors turned back into `Result`s. Both impls are written by `boundary_mirror!`
// above, with the interfaces and the `Guarded` impls.

#[cfg(test)]
mod tests {
    use super::*;

    struct Panicky;

    impl Sorter for Panicky {
        fn add(&mut self, _: ClientId, path: &str) -> Result<()> {
            panic!("cannot add {path}")
        }
        fn remove(&mut self, _: ClientId) -> Result<()> {
            Ok(())
        }
        fn activate(&mut self, _: ClientId) -> Result<()> {
            Ok(())
        }
        fn deactivate(&mut self, _: ClientId) -> Result<()> {
            Err(ModuleError::rejected("no"))
        }
        fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()> {
            out.clear();
            Ok(())
        }
        fn contains(&self, _: ClientId) -> bool {
            false
        }
        fn count(&self) -> usize {
            0
        }
    }

    #[test]
    fn root_symbol_matches_abi_stable() {
        assert_eq!(ROOT_SYMBOL, abi_stable::library::ROOT_MODULE_LOADER_NAME);
    }

    #[test]
    fn a_panic_becomes_an_error_and_poisons_the_instance() {
        let mut s = sorter_box(Panicky);
        let e = Sorter::add(&mut s, ClientId(1), "a").unwrap_err();
        assert_eq!(e.kind, ErrorKind::PANICKED);
        assert_eq!(e.message.as_str(), "add: cannot add a");
        let e = Sorter::remove(&mut s, ClientId(1)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::POISONED);
    }

    /// Panics when dropped.
    struct PanicsOnDrop;

    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("drop panics on purpose");
        }
    }

    /// A sorter that holds a value whose `Drop` panics, and panics with such a payload.
    struct HostileDrop(#[allow(dead_code)] PanicsOnDrop);

    impl Sorter for HostileDrop {
        fn add(&mut self, _: ClientId, _: &str) -> Result<()> {
            std::panic::panic_any(PanicsOnDrop)
        }
        fn remove(&mut self, _: ClientId) -> Result<()> {
            Ok(())
        }
        fn activate(&mut self, _: ClientId) -> Result<()> {
            Ok(())
        }
        fn deactivate(&mut self, _: ClientId) -> Result<()> {
            Ok(())
        }
        fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()> {
            out.clear();
            Ok(())
        }
        fn contains(&self, _: ClientId) -> bool {
            false
        }
        fn count(&self) -> usize {
            0
        }
    }

    #[test]
    fn a_panic_in_a_module_instances_drop_stays_inside_the_export_helpers() {
        let s = sorter_box(HostileDrop(PanicsOnDrop));
        drop(s); // would unwind through the vtable's destructor and exit the process
    }

    #[test]
    fn a_panic_payload_that_panics_when_dropped_is_contained() {
        let mut s = sorter_box(HostileDrop(PanicsOnDrop));
        let e = Sorter::add(&mut s, ClientId(1), "a").unwrap_err();
        assert_eq!(e.kind, ErrorKind::PANICKED);
        std::mem::forget(s);
    }

    #[test]
    fn a_factory_error_whose_drop_panics_is_contained() {
        struct BadError;
        impl std::fmt::Display for BadError {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bad")
            }
        }
        impl Drop for BadError {
            fn drop(&mut self) {
                panic!("error drop panics");
            }
        }
        let r = run_factory(
            &(),
            RSlice::from_slice(&[]),
            |_, _| -> std::result::Result<Panicky, BadError> { Err(BadError) },
            sorter_box,
        );
        assert_eq!(r.into_result().err().unwrap().kind, ErrorKind::PANICKED);
    }

    #[test]
    fn a_refusal_is_not_a_fault() {
        let mut s = sorter_box(Panicky);
        let e = Sorter::deactivate(&mut s, ClientId(1)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::REJECTED);
        assert!(!e.is_fault());
        assert!(Sorter::activate(&mut s, ClientId(1)).is_ok(), "a refusal does not poison");
    }

    #[test]
    fn a_panicking_factory_is_reported() {
        let r = run_factory(
            &(),
            RSlice::from_slice(&[]),
            |_, _| -> std::result::Result<Panicky, String> { panic!("bad config") },
            sorter_box,
        );
        let e = r.into_result().err().unwrap();
        assert_eq!(e.kind, ErrorKind::PANICKED);
        assert_eq!(e.message.as_str(), "create: bad config");
    }

    /// Answers a scripted prefix, keeps scalars only, and panics in `sort_prefix` when asked
    /// for more than 10 clients.
    struct Prefixed;

    impl Sorter for Prefixed {
        fn add(&mut self, _: ClientId, _: &str) -> Result<()> {
            Ok(())
        }
        fn remove(&mut self, _: ClientId) -> Result<()> {
            Ok(())
        }
        fn activate(&mut self, _: ClientId) -> Result<()> {
            Ok(())
        }
        fn deactivate(&mut self, _: ClientId) -> Result<()> {
            Ok(())
        }
        fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()> {
            out.clear();
            out.extend([ClientId(4), ClientId(2), ClientId(9)]);
            Ok(())
        }
        fn sort_prefix(&mut self, len: usize, out: &mut RVec<ClientId>) -> Result<bool> {
            assert!(len <= 10, "asked for {len}");
            self.sort(out)?;
            out.truncate(len);
            Ok(len >= 3)
        }
        fn keep_scalars_only(&mut self) -> bool {
            true
        }
        fn contains(&self, _: ClientId) -> bool {
            false
        }
        fn count(&self) -> usize {
            3
        }
    }

    #[test]
    fn an_abi2_sorter_answers_sort_prefix_and_keep_scalars_only_across_the_boundary() {
        let mut s = sorter_box_v2(Prefixed);
        assert!(Sorter::keep_scalars_only(&mut s));
        let mut out = RVec::new();
        assert!(!Sorter::sort_prefix(&mut s, 1, &mut out).unwrap());
        assert_eq!(out.as_slice(), &[ClientId(4)]);
        assert!(Sorter::sort_prefix(&mut s, 3, &mut out).unwrap());
        assert_eq!(out.as_slice(), &[ClientId(4), ClientId(2), ClientId(9)]);
    }

    #[test]
    fn a_panic_in_sort_prefix_becomes_an_error_and_poisons_the_instance() {
        let mut s = sorter_box_v2(Prefixed);
        let mut out = RVec::new();
        let e = Sorter::sort_prefix(&mut s, 11, &mut out).unwrap_err();
        assert_eq!(e.kind, ErrorKind::PANICKED);
        assert_eq!(e.message.as_str(), "sort_prefix: asked for 11");
        let e = Sorter::sort(&mut s, &mut out).unwrap_err();
        assert_eq!(e.kind, ErrorKind::POISONED);
        assert!(!Sorter::keep_scalars_only(&mut s), "a poisoned instance answers false");
    }

    #[test]
    fn an_abi1_sorter_keeps_the_trait_defaults_for_the_abi2_calls() {
        let mut s = sorter_box(Prefixed);
        assert!(!Sorter::keep_scalars_only(&mut s), "ABI 1 cannot carry the call");
        let mut out = RVec::new();
        assert!(Sorter::sort_prefix(&mut s, 1, &mut out).unwrap(), "one whole sort");
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn parameters_parse_with_named_errors() {
        let ps = [Parameter { key: "threshold".into(), value: "x".into() }];
        let p = Parameters(&ps);
        assert_eq!(p.get("threshold"), Some("x"));
        let e = p.parse_or::<f64>("threshold", 1.0).unwrap_err();
        assert!(e.starts_with("parameter 'threshold' = 'x': "), "{e}");
        assert_eq!(p.parse_or::<f64>("other", 1.5), Ok(1.5));
    }
}
