//! What the export macros call inside a module library: boxing instances as boundary objects
//! (inside [`Guarded`]), running factories and `compatible` checks with panics contained, and
//! building the root module of each ABI.

use std::panic::{AssertUnwindSafe, catch_unwind};

use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{RResult, RSlice};

use super::guarded::{Guarded, contained_message, drop_payload};
use super::parameters::{Parameter, Parameters};
use super::v1::{
    AbiAllocator_TO, AbiSorter_TO, AllocatorBox, ModuleDescriptor, ModuleLibrary, ModuleLibraryRef,
    SorterBox,
};
use super::v2::{
    AbiSorterV2_TO, ModuleDescriptorV2, ModuleLibraryV2, ModuleLibraryV2Ref, SorterBoxV2,
};
use super::v3::{
    AbiAllocatorV3_TO, AbiSorterV3_TO, AllocatorBoxV3, ModuleDescriptorV3, ModuleLibraryV3,
    ModuleLibraryV3Ref, SorterBoxV3,
};
use crate::allocator::Allocator;
use crate::error::{ErrorKind, ModuleError};
use crate::logging::library_init;
use crate::sorter::Sorter;

/// Boxes a sorter as a boundary object (panics caught, see [`Guarded`]).
pub fn sorter_box<S: Sorter + 'static>(sorter: S) -> SorterBox {
    AbiSorter_TO::from_value(Guarded::new(sorter), abi_stable::sabi_trait::TD_Opaque)
}

/// Boxes a sorter as an ABI 2 boundary object (panics caught, see [`Guarded`]).
pub fn sorter_box_v2<S: Sorter + 'static>(sorter: S) -> SorterBoxV2 {
    AbiSorterV2_TO::from_value(Guarded::new(sorter), abi_stable::sabi_trait::TD_Opaque)
}

/// Boxes a sorter as an ABI 3 boundary object (panics caught, see [`Guarded`]).
pub fn sorter_box_v3<S: Sorter + 'static>(sorter: S) -> SorterBoxV3 {
    AbiSorterV3_TO::from_value(Guarded::new(sorter), abi_stable::sabi_trait::TD_Opaque)
}

/// Boxes an allocator as an ABI 3 boundary object (panics caught, see [`Guarded`]).
pub fn allocator_box_v3<A: Allocator + 'static>(allocator: A) -> AllocatorBoxV3 {
    AbiAllocatorV3_TO::from_value(Guarded::new(allocator), abi_stable::sabi_trait::TD_Opaque)
}

/// Boxes an allocator as an ABI 1 boundary object (panics caught, see [`Guarded`]).
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

/// Builds an ABI 3 library's root module from its descriptors (used by [`export_modules!`]).
///
/// [`export_modules!`]: crate::export_modules
pub fn build_library_v3(modules: Vec<ModuleDescriptorV3>) -> ModuleLibraryV3Ref {
    let modules: &'static [ModuleDescriptorV3] = Box::leak(modules.into_boxed_slice());
    ModuleLibraryV3 { init: library_init, modules: RSlice::from_slice(modules) }.leak_into_prefix()
}

/// Builds an ABI 2 library's root module from its descriptors (used by the hidden
/// `export_modules_abi2!`, which only tests and fixtures use).
pub fn build_library_v2(modules: Vec<ModuleDescriptorV2>) -> ModuleLibraryV2Ref {
    let modules: &'static [ModuleDescriptorV2] = Box::leak(modules.into_boxed_slice());
    ModuleLibraryV2 { init: library_init, modules: RSlice::from_slice(modules) }.leak_into_prefix()
}

/// Builds an ABI 1 library's root module from its descriptors (used by the hidden
/// `export_modules_abi1!`, which only tests and fixtures use).
pub fn build_library(modules: Vec<ModuleDescriptor>) -> ModuleLibraryRef {
    let modules: &'static [ModuleDescriptor] = Box::leak(modules.into_boxed_slice());
    ModuleLibrary { init: library_init, modules: RSlice::from_slice(modules) }.leak_into_prefix()
}
