//! The names of the built-ins, which modules cannot take over (an allocator module) or which
//! they hide (a sorter module named `drf`).

/// The name of the built-in allocator (and its legacy alias).
pub const BUILTIN_ALLOCATOR: &str = "hierarchical";
/// Mesos's legacy name for the built-in allocator.
pub const BUILTIN_ALLOCATOR_ALIAS: &str = "HierarchicalDRF";
/// The name of the built-in sorter.
pub const BUILTIN_SORTER: &str = "drf";
