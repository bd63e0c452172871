//! Finding a manifest entry's library file: `file`, or `name` searched in the manifest's folder,
//! the executable's folder and the platform's library search path.

use std::path::{Path, PathBuf};

use crate::manifest::{self, ManifestSource};

use super::ModuleRegistry;
use super::error::{LoadError, LoadErrorKind};
use super::library::check_regular_file;

impl ModuleRegistry {
    /// Finds the library file of an entry: `file` (relative to the manifest's folder) wins over
    /// `name`, which is expanded per platform and searched in the manifest's folder, the
    /// executable's folder, then the platform's library search path.
    pub(super) fn resolve(
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
                return Err(LoadErrorKind::NotFound {
                    name: file.to_owned(),
                    searched: full.display().to_string(),
                }
                .in_manifest(label));
            }
            check_regular_file(&full, &label)?;
            return Ok(std::fs::canonicalize(&full).unwrap_or(full));
        }
        let Some(name) = entry.name.as_deref().filter(|n| !n.is_empty()) else {
            return Err(LoadErrorKind::NoLibrary { index }.in_manifest(label));
        };
        if name.contains('/') || name.contains('\\') || name.contains("..") {
            return Err(LoadErrorKind::BadName { index, name: name.to_owned() }.in_manifest(label));
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
        Err(LoadErrorKind::NotFound { name: name.to_owned(), searched: searched.join(", ") }
            .in_manifest(label))
    }
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
