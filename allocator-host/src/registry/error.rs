//! The registry's error types: why a manifest, library or module could not be loaded
//! ([`LoadError`]; for an entry of a manifest, [`LoadErrorKind`], one variant per check), and
//! why an allocator or sorter could not be created ([`CreateError`]).

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
    /// A library or module entry of a manifest was refused: `manifest {manifest}: {kind}`.
    #[error("manifest {manifest}: {kind}")]
    Entry {
        /// The manifest (its path, or how an inline one was given).
        manifest: String,
        /// What was refused, and why.
        kind: LoadErrorKind,
    },
    /// A worker that checked an isolated library refused it: the line is the one this
    /// registry writes for a library it opens itself.
    #[error("{0}")]
    Checked(String),
}

/// Why a library or module entry of a manifest was refused (one variant per check), as
/// [`LoadError::Entry`] carries it: the message without the manifest.
#[derive(Debug, thiserror::Error)]
pub enum LoadErrorKind {
    /// A library entry has neither `file` nor `name`.
    #[error(
        "library entry #{index}: library name or path not provided (give \"file\" or \"name\")"
    )]
    NoLibrary {
        /// The entry's index (0-based).
        index: usize,
    },
    /// A library `name` is not a bare name (it holds a path separator or `..`).
    #[error(
        "library entry #{index}: library name '{name}' is not a bare library name (no '/', '\\' or '..'; give a path as \"file\")"
    )]
    BadName {
        /// The entry's index (0-based).
        index: usize,
        /// The name as given.
        name: String,
    },
    /// The library path is not a regular file (a FIFO, device, socket or directory).
    #[error("'{path}' is not a regular file ({kind}); a module library must be one")]
    NotRegularFile {
        /// The path.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// The library file was not found.
    #[error("library '{name}' not found (searched: {searched})")]
    NotFound {
        /// The name or file from the manifest.
        name: String,
        /// The places searched.
        searched: String,
    },
    /// The library exists but could not be opened.
    #[error("cannot open library '{path}': {reason}")]
    Open {
        /// The library path.
        path: String,
        /// The loader's message.
        reason: String,
    },
    /// The library is not a module library of this system.
    #[error("'{path}' is not a module library of this system ({reason})")]
    NotModuleLibrary {
        /// The library path.
        path: String,
        /// What was missing.
        reason: String,
    },
    /// The library was built against an incompatible interface version.
    #[error(
        "library '{path}' was built against module interface {found}, but this host supports {expected}"
    )]
    IncompatibleVersion {
        /// The library path.
        path: String,
        /// The library's version.
        found: String,
        /// The host's version.
        expected: String,
    },
    /// The library's type layouts differ from the host's.
    #[error("library '{path}' has type layouts incompatible with this host: {reason}")]
    Layout {
        /// The library path.
        path: String,
        /// A summary of the layout checker's findings.
        reason: String,
    },
    /// The library's root module failed or panicked while initialising.
    #[error("library '{path}' failed to initialise: {reason}")]
    Init {
        /// The library path.
        path: String,
        /// Why.
        reason: String,
    },
    /// A module entry has no name.
    #[error("module name not provided with library '{path}'")]
    NoModuleName {
        /// The library path.
        path: String,
    },
    /// The library does not contain the named module.
    #[error("module '{module}' not found in library '{path}' (it has: {available})")]
    ModuleNotFound {
        /// The library path.
        path: String,
        /// The module name.
        module: String,
        /// The names the library has.
        available: String,
    },
    /// The module was built against another API major version.
    #[error(
        "module '{module}' in '{path}' was built against module API {found}, but this host supports {expected}"
    )]
    ApiVersion {
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
    #[error("module '{module}' in '{path}' has determined it is incompatible with this host")]
    Incompatible {
        /// The library path.
        path: String,
        /// The module name.
        module: String,
    },
    /// Two libraries export a module of the same name.
    #[error(
        "module '{module}' appears in two different module libraries: '{first}' and '{second}'"
    )]
    DuplicateLibrary {
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
        "allocator module '{module}' in '{path}' has the built-in allocator's name ('hierarchical' and 'HierarchicalDRF' always select the built-in); rename the module"
    )]
    ReservedName {
        /// The library path.
        path: String,
        /// The module name.
        module: String,
    },
    /// A module's `isolation` parameter is neither `none` nor `process`.
    #[error("module '{module}': parameter 'isolation': {reason}")]
    BadIsolation {
        /// The module name.
        module: String,
        /// What is wrong with the value.
        reason: String,
    },
    /// The worker that was to check an isolated library died or hung doing it (a load-time
    /// constructor that aborts), or could not be started.
    #[error("library '{path}' could not be checked in a worker: {reason}")]
    Worker {
        /// The library path.
        path: String,
        /// Why (`worker for module 'm' killed by SIGABRT during load`).
        reason: String,
    },
    /// The same module was listed again with different parameters.
    #[error("module '{module}' is already loaded with different parameters")]
    DuplicateParameters {
        /// The module name.
        module: String,
    },
}

impl LoadErrorKind {
    /// This refusal, in `manifest`.
    pub(super) fn in_manifest(self, manifest: impl Into<String>) -> LoadError {
        LoadError::Entry { manifest: manifest.into(), kind: self }
    }
}

/// Why an allocator or sorter could not be created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// No built-in and no loaded module has that name.
    #[error(
        "{what} '{name}' is neither built in nor a loaded module (built in: {builtin}; loaded {what} modules: {loaded})"
    )]
    Unknown {
        /// `allocator` or `sorter`.
        what: &'static str,
        /// The requested name.
        name: String,
        /// The built-in names.
        builtin: String,
        /// The loaded modules of the kind asked for.
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

#[cfg(test)]
mod tests {
    use super::{LoadError, LoadErrorKind as K};

    fn line(kind: K) -> String {
        kind.in_manifest("m.json").to_string()
    }

    #[test]
    fn every_refusal_of_an_entry_reads_manifest_then_the_check() {
        let p = || "/lib/x.so".to_owned();
        let s = |t: &str| t.to_owned();
        let cases = [
            (
                K::NoLibrary { index: 2 },
                "manifest m.json: library entry #2: library name or path not provided (give \"file\" or \"name\")",
            ),
            (
                K::BadName { index: 0, name: s("../x") },
                "manifest m.json: library entry #0: library name '../x' is not a bare library name (no '/', '\\' or '..'; give a path as \"file\")",
            ),
            (
                K::NotRegularFile { path: p(), kind: "a FIFO" },
                "manifest m.json: '/lib/x.so' is not a regular file (a FIFO); a module library must be one",
            ),
            (
                K::NotFound { name: s("x"), searched: s("a, b") },
                "manifest m.json: library 'x' not found (searched: a, b)",
            ),
            (
                K::Open { path: p(), reason: s("denied") },
                "manifest m.json: cannot open library '/lib/x.so': denied",
            ),
            (
                K::NotModuleLibrary { path: p(), reason: s("r") },
                "manifest m.json: '/lib/x.so' is not a module library of this system (r)",
            ),
            (
                K::IncompatibleVersion { path: p(), found: s("ABI 9"), expected: s("ABI 1") },
                "manifest m.json: library '/lib/x.so' was built against module interface ABI 9, but this host supports ABI 1",
            ),
            (
                K::Layout { path: p(), reason: s("r") },
                "manifest m.json: library '/lib/x.so' has type layouts incompatible with this host: r",
            ),
            (
                K::Init { path: p(), reason: s("r") },
                "manifest m.json: library '/lib/x.so' failed to initialise: r",
            ),
            (
                K::NoModuleName { path: p() },
                "manifest m.json: module name not provided with library '/lib/x.so'",
            ),
            (
                K::ModuleNotFound { path: p(), module: s("m"), available: s("a, b") },
                "manifest m.json: module 'm' not found in library '/lib/x.so' (it has: a, b)",
            ),
            (
                K::ApiVersion { path: p(), module: s("m"), found: s("2.0.0"), expected: s("1.x") },
                "manifest m.json: module 'm' in '/lib/x.so' was built against module API 2.0.0, but this host supports 1.x",
            ),
            (
                K::Incompatible { path: p(), module: s("m") },
                "manifest m.json: module 'm' in '/lib/x.so' has determined it is incompatible with this host",
            ),
            (
                K::DuplicateLibrary { module: s("m"), first: s("a.so"), second: s("b.so") },
                "manifest m.json: module 'm' appears in two different module libraries: 'a.so' and 'b.so'",
            ),
            (
                K::ReservedName { path: p(), module: s("hierarchical") },
                "manifest m.json: allocator module 'hierarchical' in '/lib/x.so' has the built-in allocator's name ('hierarchical' and 'HierarchicalDRF' always select the built-in); rename the module",
            ),
            (
                K::BadIsolation { module: s("m"), reason: s("r") },
                "manifest m.json: module 'm': parameter 'isolation': r",
            ),
            (
                K::Worker { path: p(), reason: s("r") },
                "manifest m.json: library '/lib/x.so' could not be checked in a worker: r",
            ),
            (
                K::DuplicateParameters { module: s("m") },
                "manifest m.json: module 'm' is already loaded with different parameters",
            ),
        ];
        for (kind, expected) in cases {
            assert_eq!(line(kind), expected);
        }
        assert_eq!(
            LoadError::BothFlags.to_string(),
            "only one of --modules or --modules_dir should be specified"
        );
    }
}
