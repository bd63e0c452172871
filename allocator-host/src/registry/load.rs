//! Loading manifests: from the `--modules` / `--modules_dir` flags, each library entry in order
//! — find its file, check it here (or in a worker, when its modules are all isolated), then
//! register the modules the entry names — stopping at the first error.

use std::path::Path;

use crate::manifest::{self, Manifest, ManifestSource};

use super::ModuleRegistry;
use super::error::LoadError;
use super::modules::Described;

impl ModuleRegistry {
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
    /// opened here: a worker process checks it and reports its modules, so that nothing in it
    /// runs in this process.
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
}
