//! Where a module's instances run: its manifest entry's `isolation` parameter, else the
//! registry's default (`--module_isolation`); and, for a library whose named modules are all
//! isolated, the check by a worker instead of mapping it here. See [`crate::isolation`].

use std::path::Path;

use crate::isolation::{ISOLATION_PARAMETER, Isolation, IsolationSettings, ProbeEntry, ProbeError};
use crate::manifest;

use super::ModuleRegistry;
use super::error::{LoadError, LoadErrorKind};
use super::library::{check_exports_module_header, check_regular_file};
use super::modules::{Described, LoadedModule, host_parameters};

impl ModuleRegistry {
    /// Sets how modules are isolated (`--module_isolation`, `--module_memory_limit_mb`): for
    /// instances created from now on. See [`crate::isolation`].
    // Public only for the workspace's own crates and tests; not promised.
    #[doc(hidden)]
    pub fn set_isolation(&mut self, settings: IsolationSettings) {
        self.isolator.settings = settings;
    }

    /// Where the instances of module `m` run: its manifest entry's `isolation` parameter, else
    /// the registry's default.
    // Public only for the workspace's own crates and tests; not promised.
    #[doc(hidden)]
    pub fn isolation_of(&self, m: &LoadedModule) -> Isolation {
        m.isolation.unwrap_or(self.isolator.settings.default)
    }

    /// `true` when every module `entry` names runs in a worker (its `isolation` parameter, or
    /// the registry's default) and the library is not mapped here already.
    pub(super) fn checks_in_worker(&self, entry: &manifest::LibraryEntry, path: &Path) -> bool {
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
    pub(super) fn probe(
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
            Err(ProbeError::Worker(reason)) => {
                Err(LoadErrorKind::Worker { path: path.display().to_string(), reason }
                    .in_manifest(label))
            }
        }
    }
}
