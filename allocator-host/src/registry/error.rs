//! The registry's two error types: why a manifest, library or module could not be loaded
//! ([`LoadError`], one variant per check), and why an allocator or sorter could not be created
//! ([`CreateError`]).

use allocator_api::abi::ModuleKind;

use crate::manifest::ManifestError;

/// Why a manifest or one of its libraries or modules could not be loaded. Every message names
/// the manifest, the library and the module concerned.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The manifest could not be read or parsed.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// `--modules` and `--modules_dir` were both given.
    #[error("only one of --modules or --modules_dir should be specified")]
    BothFlags,
    /// A library entry has neither `file` nor `name`.
    #[error(
        "manifest {manifest}: library entry #{index}: library name or path not provided (give \"file\" or \"name\")"
    )]
    NoLibrary {
        /// The manifest.
        manifest: String,
        /// The entry's index (0-based).
        index: usize,
    },
    /// A library `name` is not a bare name (it holds a path separator or `..`).
    #[error(
        "manifest {manifest}: library entry #{index}: library name '{name}' is not a bare library name (no '/', '\\' or '..'; give a path as \"file\")"
    )]
    BadName {
        /// The manifest.
        manifest: String,
        /// The entry's index (0-based).
        index: usize,
        /// The name as given.
        name: String,
    },
    /// The library path is not a regular file (a FIFO, device, socket or directory).
    #[error(
        "manifest {manifest}: '{path}' is not a regular file ({kind}); a module library must be one"
    )]
    NotRegularFile {
        /// The manifest.
        manifest: String,
        /// The path.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// The library file was not found.
    #[error("manifest {manifest}: library '{name}' not found (searched: {searched})")]
    NotFound {
        /// The manifest.
        manifest: String,
        /// The name or file from the manifest.
        name: String,
        /// The places searched.
        searched: String,
    },
    /// The library exists but could not be opened.
    #[error("manifest {manifest}: cannot open library '{path}': {reason}")]
    Open {
        /// The manifest.
        manifest: String,
        /// The library path.
        path: String,
        /// The loader's message.
        reason: String,
    },
    /// The library is not a module library of this system.
    #[error("manifest {manifest}: '{path}' is not a module library of this system ({reason})")]
    NotModuleLibrary {
        /// The manifest.
        manifest: String,
        /// The library path.
        path: String,
        /// What was missing.
        reason: String,
    },
    /// The library was built against an incompatible interface version.
    #[error(
        "manifest {manifest}: library '{path}' was built against module interface {found}, but this host supports {expected}"
    )]
    IncompatibleVersion {
        /// The manifest.
        manifest: String,
        /// The library path.
        path: String,
        /// The library's version.
        found: String,
        /// The host's version.
        expected: String,
    },
    /// The library's type layouts differ from the host's.
    #[error(
        "manifest {manifest}: library '{path}' has type layouts incompatible with this host: {reason}"
    )]
    Layout {
        /// The manifest.
        manifest: String,
        /// The library path.
        path: String,
        /// A summary of the layout checker's findings.
        reason: String,
    },
    /// The library's root module failed or panicked while initialising.
    #[error("manifest {manifest}: library '{path}' failed to initialise: {reason}")]
    Init {
        /// The manifest.
        manifest: String,
        /// The library path.
        path: String,
        /// Why.
        reason: String,
    },
    /// A module entry has no name.
    #[error("manifest {manifest}: module name not provided with library '{path}'")]
    NoModuleName {
        /// The manifest.
        manifest: String,
        /// The library path.
        path: String,
    },
    /// The library does not contain the named module.
    #[error(
        "manifest {manifest}: module '{module}' not found in library '{path}' (it has: {available})"
    )]
    ModuleNotFound {
        /// The manifest.
        manifest: String,
        /// The library path.
        path: String,
        /// The module name.
        module: String,
        /// The names the library has.
        available: String,
    },
    /// The module was built against another API major version.
    #[error(
        "manifest {manifest}: module '{module}' in '{path}' was built against module API {found}, but this host supports {expected}"
    )]
    ApiVersion {
        /// The manifest.
        manifest: String,
        /// The library path.
        path: String,
        /// The module name.
        module: String,
        /// The module's API version.
        found: String,
        /// The host's API version.
        expected: String,
    },
    /// The module's compatibility check said no.
    #[error(
        "manifest {manifest}: module '{module}' in '{path}' has determined it is incompatible with this host"
    )]
    Incompatible {
        /// The manifest.
        manifest: String,
        /// The library path.
        path: String,
        /// The module name.
        module: String,
    },
    /// Two libraries export a module of the same name.
    #[error(
        "manifest {manifest}: module '{module}' appears in two different module libraries: '{first}' and '{second}'"
    )]
    DuplicateLibrary {
        /// The manifest.
        manifest: String,
        /// The module name.
        module: String,
        /// The library loaded first.
        first: String,
        /// The library loaded now.
        second: String,
    },
    /// An allocator module has the built-in allocator's name, which always selects the
    /// built-in: the module could never be used.
    #[error(
        "manifest {manifest}: allocator module '{module}' in '{path}' has the built-in allocator's name ('hierarchical' and 'HierarchicalDRF' always select the built-in); rename the module"
    )]
    ReservedName {
        /// The manifest.
        manifest: String,
        /// The library path.
        path: String,
        /// The module name.
        module: String,
    },
    /// A module's `isolation` parameter is neither `none` nor `process`.
    #[error("manifest {manifest}: module '{module}': parameter 'isolation': {reason}")]
    BadIsolation {
        /// The manifest.
        manifest: String,
        /// The module name.
        module: String,
        /// What is wrong with the value.
        reason: String,
    },
    /// A worker that checked an isolated library refused it: the line is the one this
    /// registry writes for a library it opens itself.
    #[error("{0}")]
    Checked(String),
    /// The worker that was to check an isolated library died or hung doing it (a load-time
    /// constructor that aborts), or could not be started.
    #[error("manifest {manifest}: library '{path}' could not be checked in a worker: {reason}")]
    Worker {
        /// The manifest.
        manifest: String,
        /// The library path.
        path: String,
        /// Why (`worker for module 'm' killed by SIGABRT during load`).
        reason: String,
    },
    /// The same module was listed again with different parameters.
    #[error("manifest {manifest}: module '{module}' is already loaded with different parameters")]
    DuplicateParameters {
        /// The manifest.
        manifest: String,
        /// The module name.
        module: String,
    },
}

/// Why an allocator or sorter could not be created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// No built-in and no loaded module has that name.
    #[error(
        "{what} '{name}' is neither built in nor a loaded module (built in: {builtin}; loaded modules: {loaded})"
    )]
    Unknown {
        /// `allocator` or `sorter`.
        what: &'static str,
        /// The requested name.
        name: String,
        /// The built-in names.
        builtin: String,
        /// The loaded module names.
        loaded: String,
    },
    /// The module is of the other kind.
    #[error(
        "module '{name}' ({library}) is of kind '{actual}', but {flag} needs a module of kind '{expected}'"
    )]
    WrongKind {
        /// The module name.
        name: String,
        /// Its library.
        library: String,
        /// Its kind.
        actual: ModuleKind,
        /// The kind needed.
        expected: ModuleKind,
        /// The flag the name came from.
        flag: String,
    },
    /// The factory returned an error.
    #[error("failed to create {what} '{name}' ({library}): {message}")]
    Factory {
        /// `allocator` or `sorter`.
        what: &'static str,
        /// The module name.
        name: String,
        /// Its library.
        library: String,
        /// The factory's message, as is.
        message: String,
    },
    /// The factory panicked (caught inside the module).
    #[error("failed to create {what} '{name}' ({library}): the module panicked: {message}")]
    Panicked {
        /// `allocator` or `sorter`.
        what: &'static str,
        /// The module name.
        name: String,
        /// Its library.
        library: String,
        /// The panic message.
        message: String,
    },
    /// The requested built-in does not exist yet.
    #[error("{0}")]
    Unavailable(String),
    /// The built-in allocator could not be created in the worker that runs it beside its
    /// isolated sorter modules: the worker's line (a sorter factory's failure, as it reads
    /// in-process), or why the worker could not be started or died.
    #[error("{0}")]
    InWorker(String),
}
