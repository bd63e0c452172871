//! The modules the registry knows: [`LoadedModule`] with its per-module parameters (the
//! manifest's, for its factory, and the host's `isolation`), and registering one manifest module
//! entry (name, presence in the library, descriptor checks, isolation, duplicates).

use std::path::{Path, PathBuf};

use allocator_api::abi::{AnyDescriptor, AnyFactory, ModuleKind, Parameter};

use crate::isolation::{ISOLATION_PARAMETER, Isolation, Probed};
use crate::manifest;

use super::ModuleRegistry;
use super::builtin::{BUILTIN_ALLOCATOR, BUILTIN_ALLOCATOR_ALIAS};
use super::error::{CreateError, LoadError, LoadErrorKind};
use super::library::check_descriptor;

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
    /// `None`: as the registry's
    /// [`IsolationSettings::default`](crate::isolation::IsolationSettings::default) says.
    // Public only for the workspace's own crates and tests; not promised.
    #[doc(hidden)]
    pub isolation: Option<Isolation>,
    /// The descriptor in the library mapped in this process; `None` when the library was
    /// checked in a worker only (an isolated module).
    pub(super) descriptor: Option<AnyDescriptor>,
}

impl LoadedModule {
    /// The module's factory, from the library mapped in this process.
    pub(super) fn factory(&self) -> Result<AnyFactory, CreateError> {
        self.descriptor.map(|d| d.factory).ok_or_else(|| {
            CreateError::Unavailable(format!(
                "module '{}' ({}) was loaded for a worker only (its library was checked there, never opened in this process), so it cannot run in-process",
                self.name,
                self.library.display()
            ))
        })
    }
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

/// A module of a library as the registry learns it: from the library mapped here, or from the
/// worker that checked it (without a descriptor then).
pub(super) struct Described {
    name: String,
    kind: ModuleKind,
    api_version: String,
    author: String,
    description: String,
    descriptor: Option<AnyDescriptor>,
}

impl Described {
    pub(super) fn mapped(d: AnyDescriptor) -> Described {
        Described {
            name: d.name.to_string(),
            kind: d.kind(),
            api_version: d.api_version.to_string(),
            author: d.author.to_string(),
            description: d.description.to_string(),
            descriptor: Some(d),
        }
    }

    pub(super) fn probed(p: Probed) -> Described {
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
pub(super) fn host_parameters(parameters: &[manifest::ParameterEntry]) -> Vec<Parameter> {
    parameters
        .iter()
        .filter(|p| p.key != ISOLATION_PARAMETER)
        .map(|p| Parameter { key: p.key.as_str().into(), value: p.value.as_str().into() })
        .collect()
}

impl ModuleRegistry {
    /// Registers one module entry of a library whose modules are `described`.
    pub(super) fn add_module(
        &mut self,
        module: &manifest::ModuleEntry,
        described: &[Described],
        path: &Path,
        label: &str,
    ) -> Result<(), LoadError> {
        let label = label.to_owned();
        let shown = path.display().to_string();
        let Some(name) = module.name.as_deref().filter(|n| !n.is_empty()) else {
            return Err(LoadErrorKind::NoModuleName { path: shown }.in_manifest(label));
        };
        let Some(found) = described.iter().find(|d| d.name == name) else {
            let available: Vec<&str> = described.iter().map(|d| d.name.as_str()).collect();
            return Err(LoadErrorKind::ModuleNotFound {
                path: shown,
                module: name.to_owned(),
                available: if available.is_empty() {
                    "no modules".into()
                } else {
                    available.join(", ")
                },
            }
            .in_manifest(label));
        };
        if found.kind == ModuleKind::ALLOCATOR
            && (name == BUILTIN_ALLOCATOR || name == BUILTIN_ALLOCATOR_ALIAS)
        {
            return Err(LoadErrorKind::ReservedName { path: shown, module: name.to_owned() }
                .in_manifest(label));
        }
        if let Some(descriptor) = &found.descriptor {
            // (A worker that checked the library has run these checks.)
            check_descriptor(descriptor, &label, &shown)?;
        }
        let isolation = match module.parameters.iter().rev().find(|p| p.key == ISOLATION_PARAMETER)
        {
            None => None,
            Some(p) => Some(p.value.parse::<Isolation>().map_err(|reason| {
                LoadErrorKind::BadIsolation { module: name.to_owned(), reason }.in_manifest(&label)
            })?),
        };
        let parameters = host_parameters(&module.parameters);
        if let Some(existing) = self.modules.get(name) {
            if existing.library != path {
                return Err(LoadErrorKind::DuplicateLibrary {
                    module: name.to_owned(),
                    first: existing.library.display().to_string(),
                    second: shown,
                }
                .in_manifest(label));
            }
            if existing.parameters != parameters || existing.isolation != isolation {
                return Err(LoadErrorKind::DuplicateParameters { module: name.to_owned() }
                    .in_manifest(label));
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
}
