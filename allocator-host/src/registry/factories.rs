//! Creating allocators and sorters by name: a loaded module of that name (in-process, watched
//! and checked, or in its worker when isolated), else the built-in of that name; sorter
//! factories for the built-in allocator; the built-in allocator in a worker beside isolated
//! sorter modules; and the raw instances a module worker creates.

use allocator_api::abi::{AnyFactory, AnySorterFactory, ModuleKind, Parameter};
use allocator_api::{Allocator, AllocatorOptions, ErrorKind, Sorter, SorterConfig};

use crate::guard::CheckedSorter;
use crate::isolation::{HostedSorter, Isolation};
use crate::watchdog::{Watchdog, WatchedAllocator, WatchedSorter};

use super::ModuleRegistry;
use super::builtin::{BUILTIN_ALLOCATOR, BUILTIN_ALLOCATOR_ALIAS, BUILTIN_SORTER};
use super::error::CreateError;
use super::modules::LoadedModule;

impl ModuleRegistry {
    /// The loaded modules of `kind`, for a message about a name of that kind.
    fn loaded_names(&self, kind: ModuleKind) -> String {
        let names: Vec<&str> =
            self.modules.iter().filter(|(_, m)| m.kind == kind).map(|(n, _)| n.as_str()).collect();
        if names.is_empty() { "none".into() } else { names.join(", ") }
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
            loaded: self.loaded_names(ModuleKind::SORTER),
        })
    }

    /// A factory for sorters called `name` (checked now, so that a bad name fails before any
    /// work): each call creates a fresh instance of the loaded module or of the built-in `drf`.
    // Public only for the workspace's own crates and tests; not promised.
    #[doc(hidden)]
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
            loaded: self.loaded_names(ModuleKind::SORTER),
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
    // Public only for the workspace's own crates and tests; not promised.
    #[doc(hidden)]
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
        self.create_allocator_module_with(name, options, &[])
    }

    /// [`create_allocator_module`](Self::create_allocator_module) with `extra` parameters after
    /// the manifest's: a module reading a key takes its last value
    /// ([`allocator_api::Parameters::get`]), so these override the manifest for this instance
    /// (how `allocator-master experiment` gives `FGD` each pod list's typical tasks).
    pub fn create_allocator_module_with(
        &self,
        name: &str,
        options: &AllocatorOptions,
        extra: &[Parameter],
    ) -> Result<Box<dyn Allocator>, CreateError> {
        let Some(m) = self.module_of_kind(name, ModuleKind::ALLOCATOR, "--allocator")? else {
            return Err(CreateError::Unknown {
                what: "allocator",
                name: name.to_owned(),
                builtin: format!("{BUILTIN_ALLOCATOR}, {BUILTIN_ALLOCATOR_ALIAS}"),
                loaded: self.loaded_names(ModuleKind::ALLOCATOR),
            });
        };
        let merged;
        let parameters = if extra.is_empty() {
            &m.parameters
        } else {
            merged = m.parameters.iter().chain(extra).cloned().collect::<Vec<_>>();
            &merged
        };
        if self.isolation_of(m) == Isolation::Process {
            return self
                .isolator
                .create_allocator(&m.name, &m.library, parameters, options, &self.watchdog)
                .map(|a| Box::new(a) as Box<dyn Allocator>)
                .map_err(|e| create_error("allocator", m, e));
        }
        let AnyFactory::Allocator(factory) = m.factory()? else { unreachable!("kind checked") };
        let label = format!("allocator '{}'", m.name);
        let created = self.watchdog.call(&label, &"create", || factory.create(options, parameters));
        match created {
            Ok(a) => Ok(Box::new(WatchedAllocator::new(a, &m.name, &self.watchdog))),
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
        factory.create(options, &m.parameters)
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
