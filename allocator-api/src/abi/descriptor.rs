//! What every module descriptor says, whichever ABI its library has: the module's kind and the
//! API version it was built against.

use abi_stable::StableAbi;

/// The interface version a module was built against, as recorded in its descriptor.
///
/// `1.1.0`: the plain [`Sorter`] trait gained two provided methods
/// ([`Sorter::sort_prefix`], [`Sorter::keep_scalars_only`]), so a module written against
/// `1.0.0` still compiles and keeps its meaning; the host loads every `1.x` module (see
/// [`API_MAJOR`]), whichever ABI its library has. The API version says what the Rust traits
/// are; the ABI version (`ABI_VERSION`, `ABI_VERSION_2`) says what crosses the boundary.
///
/// `1.2.0`: [`Allocator::update_quota`]'s provided method refuses a quota (`unsupported`)
/// instead of accepting and ignoring it, so that a module without quota support no longer
/// reports success for a quota it does not enforce; new helpers ([`RefuseFilter`],
/// [`AgentCapabilities::admit`], [`FrameworkOptions::min_allocatable_for`],
/// [`Resources::meets_minimum`]). A `1.1.0` module keeps the old default it was compiled with.
///
/// [`Sorter`]: crate::Sorter
/// [`Allocator::update_quota`]: crate::Allocator::update_quota
/// [`RefuseFilter`]: crate::RefuseFilter
/// [`AgentCapabilities::admit`]: crate::AgentCapabilities::admit
/// [`FrameworkOptions::min_allocatable_for`]: crate::FrameworkOptions::min_allocatable_for
/// [`Resources::meets_minimum`]: crate::Resources::meets_minimum
/// [`Sorter::sort_prefix`]: crate::Sorter::sort_prefix
/// [`Sorter::keep_scalars_only`]: crate::Sorter::keep_scalars_only
///
/// `1.3.0`: ABI 3's calls as provided methods of the plain traits ([`Allocator::request`]
/// with [`Request`], [`Allocator::explain`], [`Sorter::set_time`]); `request`'s default
/// flattens into [`Allocator::request_resources`], so a module that implements only the
/// older call keeps its meaning. Additive, hence a minor version: every `1.x` module still
/// compiles and loads.
///
/// [`Allocator::request`]: crate::Allocator::request
/// [`Allocator::explain`]: crate::Allocator::explain
/// [`Allocator::request_resources`]: crate::Allocator::request_resources
/// [`Request`]: crate::Request
/// [`Sorter::set_time`]: crate::Sorter::set_time
pub const API_VERSION: &str = "1.3.0";

/// The major version of [`API_VERSION`]: hosts load modules whose API major matches theirs.
pub const API_MAJOR: u32 = 1;

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
