//! The host's view of a loaded library, whichever ABI it was built with: [`LoadedLibrary`]
//! (the root module of any version), [`AnyDescriptor`] (any version's descriptor, converted
//! with `From`) and the factory types, from which the host creates instances usable through
//! the plain traits.

use abi_stable::std_types::{ROption, RResult, RSlice, RStr};

use super::descriptor::ModuleKind;
#[cfg(doc)]
use super::export_helpers::run_factory;
use super::parameters::Parameter;
#[cfg(doc)]
use super::v1::{ABI_VERSION, ModuleLibrary};
use super::v1::{AllocatorBox, ModuleDescriptor, ModuleFactory, ModuleLibraryRef, SorterBox};
#[cfg(doc)]
use super::v2::ABI_VERSION_2;
use super::v2::{ModuleDescriptorV2, ModuleFactoryV2, ModuleLibraryV2Ref, SorterBoxV2};
#[cfg(doc)]
use super::v3::ABI_VERSION_3;
use super::v3::{
    AllocatorBoxV3, ModuleDescriptorV3, ModuleFactoryV3, ModuleLibraryV3Ref, SorterBoxV3,
};
use crate::allocator::{Allocator, AllocatorOptions};
use crate::error::{ModuleError, Result};
use crate::logging::HostServices;
use crate::sorter::{Sorter, SorterConfig};

/// An ABI 1 sorter factory ([`ModuleFactory::Sorter`]).
pub type SorterFactoryV1 =
    extern "C" fn(&SorterConfig, RSlice<'_, Parameter>) -> RResult<SorterBox, ModuleError>;

/// An ABI 2 sorter factory ([`ModuleFactoryV2::Sorter`]).
pub type SorterFactoryV2 =
    extern "C" fn(&SorterConfig, RSlice<'_, Parameter>) -> RResult<SorterBoxV2, ModuleError>;

/// An ABI 3 sorter factory ([`ModuleFactoryV3::Sorter`]).
pub type SorterFactoryV3 =
    extern "C" fn(&SorterConfig, RSlice<'_, Parameter>) -> RResult<SorterBoxV3, ModuleError>;

/// An ABI 1 allocator factory (ABI 2 has the same).
pub type AllocatorFactory =
    extern "C" fn(&AllocatorOptions, RSlice<'_, Parameter>) -> RResult<AllocatorBox, ModuleError>;

/// An ABI 3 allocator factory ([`ModuleFactoryV3::Allocator`]).
pub type AllocatorFactoryV3 =
    extern "C" fn(&AllocatorOptions, RSlice<'_, Parameter>) -> RResult<AllocatorBoxV3, ModuleError>;

/// A loaded library's root module, whichever ABI it was built with (host side). The host
/// reads the library header's version first and initialises the matching root type.
#[derive(Copy, Clone)]
pub enum LoadedLibrary {
    /// An ABI 1 library ([`ABI_VERSION`]).
    V1(ModuleLibraryRef),
    /// An ABI 2 library ([`ABI_VERSION_2`]).
    V2(ModuleLibraryV2Ref),
    /// An ABI 3 library ([`ABI_VERSION_3`]).
    V3(ModuleLibraryV3Ref),
}

impl LoadedLibrary {
    /// The library's `init` ([`ModuleLibrary::init`]), to call once right after loading.
    pub fn init(self) -> extern "C" fn(HostServices) -> RResult<(), ModuleError> {
        match self {
            LoadedLibrary::V1(l) => l.init(),
            LoadedLibrary::V2(l) => l.init(),
            LoadedLibrary::V3(l) => l.init(),
        }
    }

    /// The library's modules, in the library's order.
    pub fn modules(self) -> Vec<AnyDescriptor> {
        match self {
            LoadedLibrary::V1(l) => l.modules().iter().map(|d| AnyDescriptor::from(*d)).collect(),
            LoadedLibrary::V2(l) => l.modules().iter().map(|d| AnyDescriptor::from(*d)).collect(),
            LoadedLibrary::V3(l) => l.modules().iter().map(|d| AnyDescriptor::from(*d)).collect(),
        }
    }
}

/// One module of a loaded library, whichever ABI (host side): the fields of
/// [`ModuleDescriptor`], [`ModuleDescriptorV2`] and [`ModuleDescriptorV3`].
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
                ModuleFactory::Allocator(f) => AnyFactory::Allocator(AnyAllocatorFactory::V1(f)),
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
                ModuleFactoryV2::Allocator(f) => AnyFactory::Allocator(AnyAllocatorFactory::V1(f)),
            },
        }
    }
}

impl From<ModuleDescriptorV3> for AnyDescriptor {
    fn from(d: ModuleDescriptorV3) -> AnyDescriptor {
        AnyDescriptor {
            name: d.name,
            author: d.author,
            description: d.description,
            api_version: d.api_version,
            compatible: d.compatible,
            factory: match d.factory {
                ModuleFactoryV3::Sorter(f) => AnyFactory::Sorter(AnySorterFactory::V3(f)),
                ModuleFactoryV3::Allocator(f) => AnyFactory::Allocator(AnyAllocatorFactory::V3(f)),
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
    Allocator(AnyAllocatorFactory),
}

/// An allocator module's factory, by the ABI of its library (host side).
#[derive(Copy, Clone)]
pub enum AnyAllocatorFactory {
    /// ABI 1 or 2: its allocators keep the [`Allocator`] defaults of `request` (requests
    /// [flattened](crate::Request::flatten) into `request_resources`) and `explain`
    /// (nothing).
    V1(AllocatorFactory),
    /// ABI 3: its allocators answer every [`Allocator`] method themselves.
    V3(AllocatorFactoryV3),
}

impl AnyAllocatorFactory {
    /// Runs the factory (it catches the module's panics itself, see [`run_factory`]) and
    /// returns the instance as a plain [`Allocator`].
    pub fn create(
        self,
        options: &AllocatorOptions,
        parameters: &[Parameter],
    ) -> Result<Box<dyn Allocator>> {
        let parameters = RSlice::from_slice(parameters);
        match self {
            AnyAllocatorFactory::V1(f) => {
                f(options, parameters).into_result().map(|a| Box::new(a) as Box<dyn Allocator>)
            }
            AnyAllocatorFactory::V3(f) => {
                f(options, parameters).into_result().map(|a| Box::new(a) as Box<dyn Allocator>)
            }
        }
    }
}

/// A sorter module's factory, by the ABI of its library (host side).
#[derive(Copy, Clone)]
pub enum AnySorterFactory {
    /// ABI 1: its sorters keep the [`Sorter`] defaults of `sort_prefix` (one `sort`) and
    /// `keep_scalars_only` (`false`): the module is never asked either.
    V1(SorterFactoryV1),
    /// ABI 2: its sorters keep the [`Sorter`] default of `set_time` (nothing).
    V2(SorterFactoryV2),
    /// ABI 3: its sorters answer every [`Sorter`] method themselves.
    V3(SorterFactoryV3),
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
            AnySorterFactory::V3(f) => {
                f(config, parameters).into_result().map(|s| Box::new(s) as Box<dyn Sorter>)
            }
        }
    }
}
