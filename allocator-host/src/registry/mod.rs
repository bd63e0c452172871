//! The module registry: loads module libraries named by manifests, checks them in Mesos's
//! order, and creates allocators and sorters by name (built-in or module).
//!
//! Libraries are loaded once (deduplicated by canonical path) and never unloaded, as
//! abi_stable requires. Loading is not transactional, as in Mesos: libraries loaded before an
//! error stay loaded.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use abi_stable::library::{LibraryError, RootModuleError, lib_header_from_path};
use allocator_api::abi::{
    ABI_VERSION, ABI_VERSION_2, API_MAJOR, AnyDescriptor, AnyFactory, AnySorterFactory,
    LoadedLibrary, ModuleKind, ModuleLibraryRef, ModuleLibraryV2Ref, Parameter,
};
use allocator_api::{Allocator, AllocatorOptions, ErrorKind, Sorter, SorterConfig};

use crate::guard::CheckedSorter;
use crate::isolation::{
    HostedSorter, ISOLATION_PARAMETER, Isolation, IsolationSettings, Isolator, ProbeEntry,
    ProbeError, Probed,
};
use crate::manifest::{self, Manifest, ManifestError, ManifestSource};
use crate::watchdog::{Watchdog, WatchedAllocator, WatchedSorter};

/// The name of the built-in allocator (and its legacy alias).
pub const BUILTIN_ALLOCATOR: &str = "hierarchical";
/// Mesos's legacy name for the built-in allocator.
pub const BUILTIN_ALLOCATOR_ALIAS: &str = "HierarchicalDRF";
/// The name of the built-in sorter.
pub const BUILTIN_SORTER: &str = "drf";

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

/// A module the registry knows.
#[derive(Clone)]
pub struct LoadedModule {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: ModuleKind,
    /// The library file it came from.
    pub library: PathBuf,
    /// The API version it was built against.
    pub api_version: String,
    /// Its author.
    pub author: String,
    /// Its description.
    pub description: String,
    /// The manifest parameters for its factory (without the host's `isolation` parameter).
    pub parameters: Vec<Parameter>,
    /// Where its instances run, when its manifest entry says (`isolation` parameter);
    /// `None`: as the registry's [`IsolationSettings::default`] says.
    pub isolation: Option<Isolation>,
    /// The descriptor in the library mapped in this process; `None` when the library was
    /// checked in a worker only (an isolated module).
    descriptor: Option<AnyDescriptor>,
}

impl LoadedModule {
    /// The module's factory, from the library mapped in this process.
    fn factory(&self) -> Result<AnyFactory, CreateError> {
        self.descriptor.map(|d| d.factory).ok_or_else(|| {
            CreateError::Unavailable(format!(
                "module '{}' ({}) was loaded for a worker only (its library was checked there, never opened in this process), so it cannot run in-process",
                self.name,
                self.library.display()
            ))
        })
    }
}

/// A module of a library as the registry learns it: from the library mapped here, or from the
/// worker that checked it (without a descriptor then).
struct Described {
    name: String,
    kind: ModuleKind,
    api_version: String,
    author: String,
    description: String,
    descriptor: Option<AnyDescriptor>,
}

impl Described {
    fn mapped(d: AnyDescriptor) -> Described {
        Described {
            name: d.name.to_string(),
            kind: d.kind(),
            api_version: d.api_version.to_string(),
            author: d.author.to_string(),
            description: d.description.to_string(),
            descriptor: Some(d),
        }
    }

    fn probed(p: Probed) -> Described {
        Described {
            name: p.name,
            kind: p.kind,
            api_version: p.api_version,
            author: p.author,
            description: p.description,
            descriptor: None,
        }
    }
}

/// A manifest entry's parameters for the module's factory: the host's `isolation` left out.
fn host_parameters(parameters: &[manifest::ParameterEntry]) -> Vec<Parameter> {
    parameters
        .iter()
        .filter(|p| p.key != ISOLATION_PARAMETER)
        .map(|p| Parameter { key: p.key.as_str().into(), value: p.value.as_str().into() })
        .collect()
}

impl std::fmt::Debug for LoadedModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedModule")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("library", &self.library)
            .finish_non_exhaustive()
    }
}

/// The loaded libraries and their modules.
#[derive(Default)]
pub struct ModuleRegistry {
    libraries: HashMap<PathBuf, LoadedLibrary>,
    modules: BTreeMap<String, LoadedModule>,
    exe_dir: Option<PathBuf>,
    watchdog: Watchdog,
    isolator: Isolator,
}

impl ModuleRegistry {
    /// An empty registry that searches `name` libraries next to the running executable.
    pub fn new() -> ModuleRegistry {
        let exe_dir = std::env::current_exe().ok().and_then(|p| p.parent().map(Path::to_owned));
        ModuleRegistry {
            libraries: HashMap::new(),
            modules: BTreeMap::new(),
            exe_dir,
            watchdog: Watchdog::default(),
            isolator: Isolator::default(),
        }
    }

    /// Sets how modules are isolated (`--module_isolation`, `--module_memory_limit_mb`): for
    /// instances created from now on. See [`crate::isolation`].
    pub fn set_isolation(&mut self, settings: IsolationSettings) {
        self.isolator.settings = settings;
    }

    /// Where the instances of module `m` run: its manifest entry's `isolation` parameter, else
    /// the registry's default.
    pub fn isolation_of(&self, m: &LoadedModule) -> Isolation {
        m.isolation.unwrap_or(self.isolator.settings.default)
    }

    /// The call budget and watchdog every module call runs under (factories, instances and
    /// their drops; see [`crate::watchdog`]).
    pub fn watchdog(&self) -> &Watchdog {
        &self.watchdog
    }

    /// Overrides the executable folder used when resolving `name` entries.
    pub fn with_exe_dir(mut self, dir: Option<PathBuf>) -> ModuleRegistry {
        self.exe_dir = dir;
        self
    }

    /// Loads from the `--modules` / `--modules_dir` flags (at most one may be given).
    pub fn load_flags(
        &mut self,
        modules: Option<&str>,
        modules_dir: Option<&Path>,
    ) -> Result<(), LoadError> {
        match (modules, modules_dir) {
            (Some(_), Some(_)) => Err(LoadError::BothFlags),
            (Some(value), None) => {
                let (m, source) = manifest::from_flag(value)?;
                self.load_manifest(&m, &source)
            }
            (None, Some(dir)) => {
                for file in manifest::dir_entries(dir)? {
                    let (m, source) = manifest::from_file(&file)?;
                    self.load_manifest(&m, &source)?;
                }
                Ok(())
            }
            (None, None) => Ok(()),
        }
    }

    /// Loads every library and module of `manifest`, in order, stopping at the first error.
    ///
    /// A library whose modules (as this manifest entry names them) are all isolated is not
    /// opened here: a worker checks it and reports its modules (see [`crate::isolation`]), so
    /// that nothing in it runs in this process.
    pub fn load_manifest(
        &mut self,
        manifest: &Manifest,
        source: &ManifestSource,
    ) -> Result<(), LoadError> {
        let label = source.label.clone();
        for (index, entry) in manifest.libraries.iter().enumerate() {
            let path = self.resolve(entry, index, source)?;
            let described = if self.checks_in_worker(entry, &path) {
                self.probe(entry, &path, &label)?
            } else {
                let library = self.open(&path, &label)?;
                library.modules().into_iter().map(Described::mapped).collect()
            };
            for module in &entry.modules {
                self.add_module(module, &described, &path, &label)?;
            }
        }
        Ok(())
    }

    /// `true` when every module `entry` names runs in a worker (its `isolation` parameter, or
    /// the registry's default) and the library is not mapped here already.
    fn checks_in_worker(&self, entry: &manifest::LibraryEntry, path: &Path) -> bool {
        !self.libraries.contains_key(path)
            && !entry.modules.is_empty()
            && entry.modules.iter().all(|m| {
                let isolation =
                    match m.parameters.iter().rev().find(|p| p.key == ISOLATION_PARAMETER) {
                        None => Some(self.isolator.settings.default),
                        // A bad value is refused, as today, by `add_module` after a local open.
                        Some(p) => p.value.parse::<Isolation>().ok(),
                    };
                isolation == Some(Isolation::Process)
            })
    }

    /// The modules of `entry`'s library, as a worker that checked it reports them; the checks
    /// that read the file without mapping it run here first.
    fn probe(
        &self,
        entry: &manifest::LibraryEntry,
        path: &Path,
        label: &str,
    ) -> Result<Vec<Described>, LoadError> {
        check_regular_file(path, label)?;
        check_exports_module_header(path, label)?;
        let entries: Vec<ProbeEntry> = (entry.modules.iter())
            .map(|m| ProbeEntry {
                name: m.name.clone(),
                parameters: host_parameters(&m.parameters),
            })
            .collect();
        match self.isolator.probe(path, label, &entries, &self.watchdog) {
            Ok(modules) => Ok(modules.into_iter().map(Described::probed).collect()),
            Err(ProbeError::Refused(line)) => Err(LoadError::Checked(line)),
            Err(ProbeError::Worker(reason)) => Err(LoadError::Worker {
                manifest: label.to_owned(),
                path: path.display().to_string(),
                reason,
            }),
        }
    }

    /// Registers one module entry of a library whose modules are `described`.
    fn add_module(
        &mut self,
        module: &manifest::ModuleEntry,
        described: &[Described],
        path: &Path,
        label: &str,
    ) -> Result<(), LoadError> {
        let label = label.to_owned();
        let shown = path.display().to_string();
        let Some(name) = module.name.as_deref().filter(|n| !n.is_empty()) else {
            return Err(LoadError::NoModuleName { manifest: label, path: shown });
        };
        let Some(found) = described.iter().find(|d| d.name == name) else {
            let available: Vec<&str> = described.iter().map(|d| d.name.as_str()).collect();
            return Err(LoadError::ModuleNotFound {
                manifest: label,
                path: shown,
                module: name.to_owned(),
                available: if available.is_empty() {
                    "no modules".into()
                } else {
                    available.join(", ")
                },
            });
        };
        if let Some(descriptor) = &found.descriptor {
            // (A worker that checked the library has run these checks.)
            check_descriptor(descriptor, &label, &shown)?;
        }
        let isolation = match module.parameters.iter().rev().find(|p| p.key == ISOLATION_PARAMETER)
        {
            None => None,
            Some(p) => Some(p.value.parse::<Isolation>().map_err(|reason| {
                LoadError::BadIsolation { manifest: label.clone(), module: name.to_owned(), reason }
            })?),
        };
        let parameters = host_parameters(&module.parameters);
        if let Some(existing) = self.modules.get(name) {
            if existing.library != path {
                return Err(LoadError::DuplicateLibrary {
                    manifest: label,
                    module: name.to_owned(),
                    first: existing.library.display().to_string(),
                    second: shown,
                });
            }
            if existing.parameters != parameters || existing.isolation != isolation {
                return Err(LoadError::DuplicateParameters {
                    manifest: label,
                    module: name.to_owned(),
                });
            }
            return Ok(()); // identical reload: a no-op
        }
        log::info!(
            "loaded {} module '{}' from {} (API {}, by {}){}",
            found.kind,
            name,
            shown,
            found.api_version,
            found.author,
            if found.descriptor.is_none() { "; checked in a worker" } else { "" }
        );
        self.modules.insert(
            name.to_owned(),
            LoadedModule {
                name: name.to_owned(),
                kind: found.kind,
                library: path.to_owned(),
                api_version: found.api_version.clone(),
                author: found.author.clone(),
                description: found.description.clone(),
                parameters,
                isolation,
                descriptor: found.descriptor,
            },
        );
        Ok(())
    }

    /// Finds the library file of an entry: `file` (relative to the manifest's folder) wins over
    /// `name`, which is expanded per platform and searched in the manifest's folder, the
    /// executable's folder, then the platform's library search path.
    fn resolve(
        &self,
        entry: &manifest::LibraryEntry,
        index: usize,
        source: &ManifestSource,
    ) -> Result<PathBuf, LoadError> {
        let label = source.label.clone();
        if let Some(file) = entry.file.as_deref().filter(|f| !f.is_empty()) {
            let p = Path::new(file);
            let full = if p.is_absolute() { p.to_owned() } else { source.base.join(p) };
            if std::fs::metadata(&full).is_err() {
                return Err(LoadError::NotFound {
                    manifest: label,
                    name: file.to_owned(),
                    searched: full.display().to_string(),
                });
            }
            check_regular_file(&full, &label)?;
            return Ok(std::fs::canonicalize(&full).unwrap_or(full));
        }
        let Some(name) = entry.name.as_deref().filter(|n| !n.is_empty()) else {
            return Err(LoadError::NoLibrary { manifest: label, index });
        };
        if name.contains('/') || name.contains('\\') || name.contains("..") {
            return Err(LoadError::BadName { manifest: label, index, name: name.to_owned() });
        }
        let filename = libloading::library_filename(name);
        let mut searched = Vec::new();
        let mut dirs = vec![source.base.clone()];
        dirs.extend(self.exe_dir.clone());
        for dir in dirs {
            let candidate = dir.join(&filename);
            if std::fs::metadata(&candidate).is_ok() {
                check_regular_file(&candidate, &label)?;
                return Ok(std::fs::canonicalize(&candidate).unwrap_or(candidate));
            }
            searched.push(candidate.display().to_string());
        }
        // Last: the platform's library search path, searched here (not by the dynamic loader)
        // so that the file is checked before anything maps it.
        for dir in platform_search_dirs() {
            let candidate = dir.join(&filename);
            if std::fs::metadata(&candidate).is_ok() {
                check_regular_file(&candidate, &label)?;
                return Ok(std::fs::canonicalize(&candidate).unwrap_or(candidate));
            }
        }
        searched.push(format!(
            "{} on the platform library search path ({})",
            filename.to_string_lossy(),
            platform_search_vars()
        ));
        Err(LoadError::NotFound {
            manifest: label,
            name: name.to_owned(),
            searched: searched.join(", "),
        })
    }

    /// Opens a library once, reads the ABI version its header records, runs abi_stable's checks
    /// against the matching root module type (ABI 1 or 2) and the library's `init`.
    fn open(&mut self, path: &Path, label: &str) -> Result<LoadedLibrary, LoadError> {
        if let Some(lib) = self.libraries.get(path) {
            return Ok(*lib);
        }
        let shown = path.display().to_string();
        // Read before mapping: a library that does not export the module header is refused
        // before the system loader runs any of its code.
        check_regular_file(path, label)?;
        check_exports_module_header(path, label)?;
        let header = lib_header_from_path(path).map_err(|e| library_error(e, label, &shown))?;
        let version = header.version_strings();
        let library = match version.parsed().map(|v| v.major) {
            Ok(1) => header.init_root_module::<ModuleLibraryRef>().map(LoadedLibrary::V1),
            Ok(2) => header.init_root_module::<ModuleLibraryV2Ref>().map(LoadedLibrary::V2),
            Ok(_) => {
                return Err(LoadError::IncompatibleVersion {
                    manifest: label.to_owned(),
                    path: shown,
                    found: format!("ABI {}", version.version),
                    expected: supported_abis(),
                });
            }
            Err(e) => Err(LibraryError::ParseVersionError(e)),
        }
        .map_err(|e| library_error(e, label, &shown))?;
        if let abi_stable::std_types::RResult::RErr(e) =
            (library.init())(allocator_api::logging::host_services())
        {
            return Err(LoadError::Init {
                manifest: label.to_owned(),
                path: shown,
                reason: e.to_string(),
            });
        }
        self.libraries.insert(path.to_owned(), library);
        Ok(library)
    }

    /// Every loaded module, by name.
    pub fn modules(&self) -> impl Iterator<Item = &LoadedModule> {
        self.modules.values()
    }

    /// The loaded module called `name`.
    pub fn module(&self, name: &str) -> Option<&LoadedModule> {
        self.modules.get(name)
    }

    fn loaded_names(&self) -> String {
        if self.modules.is_empty() {
            "none".into()
        } else {
            self.modules.keys().cloned().collect::<Vec<_>>().join(", ")
        }
    }

    fn module_of_kind(
        &self,
        name: &str,
        kind: ModuleKind,
        flag: &str,
    ) -> Result<Option<&LoadedModule>, CreateError> {
        match self.modules.get(name) {
            None => Ok(None),
            Some(m) if m.kind != kind => Err(CreateError::WrongKind {
                name: name.to_owned(),
                library: m.library.display().to_string(),
                actual: m.kind,
                expected: kind,
                flag: flag.to_owned(),
            }),
            Some(m) => Ok(Some(m)),
        }
    }

    /// Describes which implementation `name` selects for a sorter (`built-in` or the library).
    pub fn describe_sorter(&self, name: &str) -> String {
        match self.modules.get(name) {
            Some(m) => format!("module '{}' from {}", name, m.library.display()),
            None if name == BUILTIN_SORTER => "built-in drf".into(),
            None => format!("unknown sorter '{name}'"),
        }
    }

    /// Creates the sorter called `name` for `flag`: a loaded sorter module of that name, else
    /// the built-in `drf`.
    pub fn create_sorter(
        &self,
        name: &str,
        flag: &str,
        config: &SorterConfig,
    ) -> Result<Box<dyn Sorter>, CreateError> {
        if let Some(m) = self.module_of_kind(name, ModuleKind::SORTER, flag)? {
            if self.isolation_of(m) == Isolation::Process {
                return self
                    .isolator
                    .create_sorter(
                        &m.name,
                        &m.library,
                        &m.parameters,
                        config,
                        &self.watchdog,
                        false,
                    )
                    .map(|s| Box::new(CheckedSorter::new(Box::new(s), &m.name)) as Box<dyn Sorter>)
                    .map_err(|e| create_error("sorter", m, e));
            }
            let AnyFactory::Sorter(factory) = m.factory()? else { unreachable!("kind checked") };
            return self.new_sorter(m, factory, config).map_err(|e| create_error("sorter", m, e));
        }
        if name == BUILTIN_SORTER {
            return Ok(Box::new(drf_sorter::create(config)));
        }
        Err(CreateError::Unknown {
            what: "sorter",
            name: name.to_owned(),
            builtin: BUILTIN_SORTER.into(),
            loaded: self.loaded_names(),
        })
    }

    /// A factory for sorters called `name` (checked now, so that a bad name fails before any
    /// work): each call creates a fresh instance of the loaded module or of the built-in `drf`.
    pub fn sorter_factory(
        &self,
        name: &str,
        flag: &str,
    ) -> Result<crate::hierarchical::SorterFactory, CreateError> {
        if let Some(m) = self.module_of_kind(name, ModuleKind::SORTER, flag)? {
            let module = m.clone();
            let watchdog = self.watchdog.clone();
            if self.isolation_of(m) == Isolation::Process {
                let isolator = self.isolator.clone();
                return Ok(Box::new(move |config: &SorterConfig| {
                    let m = &module;
                    let sorter = isolator
                        .create_sorter(&m.name, &m.library, &m.parameters, config, &watchdog, true)
                        .map_err(|e| create_error("sorter", m, e).to_string())?;
                    Ok(Box::new(CheckedSorter::length_only(Box::new(sorter), &m.name))
                        as Box<dyn Sorter>)
                }));
            }
            let AnyFactory::Sorter(factory) = m.factory()? else { unreachable!("kind checked") };
            return Ok(Box::new(move |config: &SorterConfig| {
                // For the built-in allocator, which checks each client as it walks an answer.
                let label = format!("sorter '{}'", module.name);
                let created =
                    watchdog.call(&label, &"create", || factory.create(config, &module.parameters));
                let sorter = created.map_err(|e| create_error("sorter", &module, e).to_string())?;
                let watched = WatchedSorter::new(sorter, &module.name, &watchdog);
                Ok(Box::new(CheckedSorter::length_only(Box::new(watched), &module.name))
                    as Box<dyn Sorter>)
            }));
        }
        if name == BUILTIN_SORTER {
            return Ok(Box::new(|config: &SorterConfig| {
                Ok(Box::new(drf_sorter::create(config)) as Box<dyn Sorter>)
            }));
        }
        Err(CreateError::Unknown {
            what: "sorter",
            name: name.to_owned(),
            builtin: BUILTIN_SORTER.into(),
            loaded: self.loaded_names(),
        })
    }

    /// The built-in allocator with `options`, in a worker process, when one of the sorters its
    /// `role_sorter` and `framework_sorter` name is an isolated sorter module; `Ok(None)` when
    /// neither is (the caller creates the built-in in-process then, with
    /// [`sorter_factory`](Self::sorter_factory)).
    ///
    /// The worker loads every sorter module of the two (an in-process one too: it then runs
    /// in the worker beside the isolated one) and runs the built-in allocator there, calling
    /// them in-process: one round trip per allocator call, where sorters isolated one by one
    /// cost one or more per sorter call. The allocator in the worker is a plain
    /// [`Allocator`]: the host learns of a sorter's fault as a fault of the allocator call
    /// it happened in (`worker for the built-in allocator with sorter module 'x' killed by
    /// SIGSEGV during allocate`). See [`crate::isolation`].
    pub fn create_builtin_in_worker(
        &self,
        options: &AllocatorOptions,
    ) -> Result<Option<Box<dyn Allocator>>, CreateError> {
        let mut sorters: Vec<&LoadedModule> = Vec::new();
        for (name, flag) in [
            (&options.role_sorter, "--role_sorter"),
            (&options.framework_sorter, "--framework_sorter"),
        ] {
            if let Some(m) = self.module_of_kind(name, ModuleKind::SORTER, flag)?
                && !sorters.iter().any(|s| s.name == m.name)
            {
                sorters.push(m);
            }
        }
        if !sorters.iter().any(|m| self.isolation_of(m) == Isolation::Process) {
            return Ok(None);
        }
        let hosted: Vec<HostedSorter> = sorters
            .iter()
            .map(|m| HostedSorter {
                module: m.name.clone(),
                library: m.library.clone(),
                parameters: m.parameters.clone(),
            })
            .collect();
        match self.isolator.create_builtin(&hosted, options, &self.watchdog) {
            Ok(a) => Ok(Some(Box::new(a))),
            Err(e) => Err(CreateError::InWorker(e.message.to_string())),
        }
    }

    /// Creates the allocator module called `name` (`--allocator`). The built-in allocator is
    /// created by the caller; this only handles modules.
    pub fn create_allocator_module(
        &self,
        name: &str,
        options: &AllocatorOptions,
    ) -> Result<Box<dyn Allocator>, CreateError> {
        let Some(m) = self.module_of_kind(name, ModuleKind::ALLOCATOR, "--allocator")? else {
            return Err(CreateError::Unknown {
                what: "allocator",
                name: name.to_owned(),
                builtin: format!("{BUILTIN_ALLOCATOR}, {BUILTIN_ALLOCATOR_ALIAS}"),
                loaded: self.loaded_names(),
            });
        };
        if self.isolation_of(m) == Isolation::Process {
            return self
                .isolator
                .create_allocator(&m.name, &m.library, &m.parameters, options, &self.watchdog)
                .map(|a| Box::new(a) as Box<dyn Allocator>)
                .map_err(|e| create_error("allocator", m, e));
        }
        let AnyFactory::Allocator(factory) = m.factory()? else { unreachable!("kind checked") };
        let label = format!("allocator '{}'", m.name);
        let created = self
            .watchdog
            .call(&label, &"create", || factory(options, m.parameters.as_slice().into()));
        match created.into_result() {
            Ok(a) => Ok(Box::new(WatchedAllocator::new(Box::new(a), &m.name, &self.watchdog))),
            Err(e) => Err(create_error("allocator", m, e)),
        }
    }

    /// An instance of allocator module `name`, straight from its factory (no watchdog, no
    /// isolation): for the module worker, which is the isolation.
    pub(crate) fn raw_allocator(
        &self,
        name: &str,
        options: &AllocatorOptions,
    ) -> Result<Box<dyn Allocator>, allocator_api::ModuleError> {
        let m = self.modules.get(name).ok_or_else(|| unknown_in_worker(name))?;
        let Some(AnyFactory::Allocator(factory)) = m.descriptor.map(|d| d.factory) else {
            return Err(unknown_in_worker(name));
        };
        let allocator = factory(options, m.parameters.as_slice().into()).into_result()?;
        Ok(Box::new(allocator))
    }

    /// An instance of sorter module `name`, straight from its factory (see
    /// [`raw_allocator`](Self::raw_allocator)).
    pub(crate) fn raw_sorter(
        &self,
        name: &str,
        config: &SorterConfig,
    ) -> Result<Box<dyn Sorter>, allocator_api::ModuleError> {
        let m = self.modules.get(name).ok_or_else(|| unknown_in_worker(name))?;
        let Some(AnyFactory::Sorter(factory)) = m.descriptor.map(|d| d.factory) else {
            return Err(unknown_in_worker(name));
        };
        factory.create(config, &m.parameters)
    }

    fn new_sorter(
        &self,
        m: &LoadedModule,
        factory: AnySorterFactory,
        config: &SorterConfig,
    ) -> Result<Box<dyn Sorter>, allocator_api::ModuleError> {
        checked_sorter(&self.watchdog, m, factory, config)
    }
}

/// Creates a sorter module's instance under the watchdog, watched and with its sort output
/// checked (see [`CheckedSorter`]).
fn checked_sorter(
    watchdog: &Watchdog,
    m: &LoadedModule,
    factory: AnySorterFactory,
    config: &SorterConfig,
) -> Result<Box<dyn Sorter>, allocator_api::ModuleError> {
    let label = format!("sorter '{}'", m.name);
    let sorter = watchdog.call(&label, &"create", || factory.create(config, &m.parameters))?;
    let watched = WatchedSorter::new(sorter, &m.name, watchdog);
    Ok(Box::new(CheckedSorter::new(Box::new(watched), &m.name)))
}

fn unknown_in_worker(name: &str) -> allocator_api::ModuleError {
    allocator_api::ModuleError::failed(format!("the worker has no module '{name}' of that kind"))
}

fn create_error(
    what: &'static str,
    m: &LoadedModule,
    e: allocator_api::ModuleError,
) -> CreateError {
    let library = m.library.display().to_string();
    let name = m.name.clone();
    if e.kind == ErrorKind::PANICKED {
        let message = e.message.as_str().strip_prefix("create: ").unwrap_or(&e.message).to_owned();
        CreateError::Panicked { what, name, library, message }
    } else {
        CreateError::Factory { what, name, library, message: e.message.to_string() }
    }
}

fn check_descriptor(d: &AnyDescriptor, label: &str, path: &str) -> Result<(), LoadError> {
    let name = d.name.to_string();
    let major = d.api_version.as_str().split('.').next().and_then(|m| m.parse::<u32>().ok());
    if major != Some(API_MAJOR) {
        return Err(LoadError::ApiVersion {
            manifest: label.to_owned(),
            path: path.to_owned(),
            module: name,
            found: d.api_version.to_string(),
            expected: format!("{API_MAJOR}.x"),
        });
    }
    if let abi_stable::std_types::ROption::RSome(check) = d.compatible
        && !check()
    {
        return Err(LoadError::Incompatible {
            manifest: label.to_owned(),
            path: path.to_owned(),
            module: name,
        });
    }
    Ok(())
}

fn platform_search_vars() -> &'static str {
    if cfg!(target_os = "macos") {
        "DYLD_LIBRARY_PATH, the system folders"
    } else {
        "LD_LIBRARY_PATH, the system folders"
    }
}

/// The folders of the platform's library search path, in the loader's order: the
/// environment variable, then the usual system folders (ld.so.cache is not read).
fn platform_search_dirs() -> Vec<PathBuf> {
    let var = if cfg!(target_os = "macos") { "DYLD_LIBRARY_PATH" } else { "LD_LIBRARY_PATH" };
    let mut dirs: Vec<PathBuf> = std::env::var_os(var)
        .map(|v| std::env::split_paths(&v).filter(|p| p.is_absolute()).collect())
        .unwrap_or_default();
    let system: &[&str] = if cfg!(target_os = "macos") {
        &["/usr/local/lib", "/usr/lib"]
    } else {
        &[
            "/usr/local/lib",
            "/lib",
            "/usr/lib",
            "/lib64",
            "/usr/lib64",
            "/lib/x86_64-linux-gnu",
            "/usr/lib/x86_64-linux-gnu",
            "/lib/aarch64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
        ]
    };
    dirs.extend(system.iter().map(PathBuf::from));
    dirs
}

/// Refuses anything that is not a regular file (following links) before it is opened.
fn check_regular_file(path: &Path, label: &str) -> Result<(), LoadError> {
    let kind = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => return Ok(()),
        Ok(m) => file_kind(&m.file_type()),
        Err(_) => "missing or unreadable",
    };
    Err(LoadError::NotRegularFile {
        manifest: label.to_owned(),
        path: path.display().to_string(),
        kind,
    })
}

fn file_kind(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    if t.is_dir() { "a directory" } else { "not a regular file" }
}

/// Reads a library's export table (ELF or Mach-O) without mapping it, and checks that it exports
/// the module header symbol.
fn check_exports_module_header(path: &Path, label: &str) -> Result<(), LoadError> {
    use object::read::{Object, ObjectSymbol};
    let open = |reason: String| LoadError::Open {
        manifest: label.to_owned(),
        path: path.display().to_string(),
        reason,
    };
    let data = std::fs::read(path).map_err(|e| open(e.to_string()))?;
    let file = object::File::parse(&*data)
        .map_err(|e| open(format!("it is not a shared library this host can read ({e})")))?;
    let wanted = allocator_api::abi::ROOT_SYMBOL.as_bytes();
    let matches = |name: &[u8]| name == wanted || name.strip_prefix(b"_") == Some(wanted);
    // ELF: the dynamic symbol table; Mach-O: the symbol table (exports are its global
    // definitions, with a leading underscore).
    let exported = file
        .dynamic_symbols()
        .chain(file.symbols())
        .any(|s| s.is_definition() && s.is_global() && s.name_bytes().is_ok_and(matches));
    if exported {
        Ok(())
    } else {
        Err(LoadError::NotModuleLibrary {
            manifest: label.to_owned(),
            path: path.display().to_string(),
            reason: "it exports no allocator module header; build it with allocator_api::export_modules!"
                .into(),
        })
    }
}

/// The module ABIs this host loads, as error messages name them.
fn supported_abis() -> String {
    format!("ABI {ABI_VERSION} or ABI {ABI_VERSION_2}")
}

/// Turns abi_stable's loading errors into one-line [`LoadError`]s.
fn library_error(e: LibraryError, label: &str, path: &str) -> LoadError {
    let manifest = label.to_owned();
    let path = path.to_owned();
    match e {
        LibraryError::OpenError { err, .. } => LoadError::Open { manifest, path, reason: err.to_string() },
        LibraryError::GetSymbolError { .. } => LoadError::NotModuleLibrary {
            manifest,
            path,
            reason: "it exports no allocator module header; build it with allocator_api::export_modules!".into(),
        },
        LibraryError::InvalidAbiHeader(h) => LoadError::NotModuleLibrary {
            manifest,
            path,
            reason: format!("it was built with an incompatible abi_stable ({h:?})"),
        },
        LibraryError::IncompatibleVersionNumber { expected_version, actual_version, .. } => {
            LoadError::IncompatibleVersion {
                manifest,
                path,
                found: actual_version.to_string(),
                expected: expected_version.to_string(),
            }
        }
        LibraryError::ParseVersionError(v) => LoadError::IncompatibleVersion {
            manifest,
            path,
            found: format!("an unparsable version ({v:?})"),
            expected: supported_abis(),
        },
        LibraryError::AbiInstability(err) => {
            LoadError::Layout { manifest, path, reason: summarize_layout_error(&err.to_string()) }
        }
        LibraryError::InvalidCAbi { .. } => {
            LoadError::Layout { manifest, path, reason: "the C ABI self-test failed".into() }
        }
        LibraryError::RootModule { err, .. } => {
            let reason = match err {
                RootModuleError::Unwound => "its root module panicked while loading".to_owned(),
                RootModuleError::Returned(e) => e.to_string(),
            };
            LoadError::Init { manifest, path, reason }
        }
        LibraryError::Many(errors) => match errors.into_iter().next() {
            Some(first) => library_error(first, label, &path),
            None => LoadError::Init { manifest, path, reason: "unknown loading error".into() },
        },
    }
}

/// abi_stable's layout report is about a thousand lines; keep the distinct `Error:` lines.
fn summarize_layout_error(report: &str) -> String {
    // abi_stable's report spreads each difference over several lines; the first "Error:" line
    // names the kind of difference, which is what an operator can act on.
    let first = report
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("Error:"))
        .map(|l| l.trim_start_matches("Error:").trim())
        .filter(|l| !l.is_empty())
        .unwrap_or("layouts differ");
    format!("{first}; it was built against a different allocator-api, rebuild it against this one")
}
