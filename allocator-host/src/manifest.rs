//! The module manifest (SPEC section 2, Mesos's `--modules` format) and where it comes from.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A parsed manifest.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The libraries to load, in order.
    pub libraries: Vec<LibraryEntry>,
}

/// One library of a manifest.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LibraryEntry {
    /// A path to the library file (relative to the manifest's folder).
    pub file: Option<String>,
    /// A library name, expanded per platform (`foo` → `libfoo.so`) and searched for.
    pub name: Option<String>,
    /// The modules to take from it.
    #[serde(default)]
    pub modules: Vec<ModuleEntry>,
}

/// One module of a library entry.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModuleEntry {
    /// The module's name.
    pub name: Option<String>,
    /// Parameters passed to the module's factory.
    #[serde(default)]
    pub parameters: Vec<ParameterEntry>,
}

/// A `{"key": …, "value": …}` pair.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ParameterEntry {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
}

/// Where a manifest came from: relative `file` paths and `name` searches start from `base`.
#[derive(Clone, Debug, PartialEq)]
pub struct ManifestSource {
    /// How to name the manifest in messages (`inline JSON` or its path).
    pub label: String,
    /// The folder relative paths are resolved against.
    pub base: PathBuf,
}

impl fmt::Display for ManifestSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

/// A manifest that could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file could not be read.
    #[error("cannot read module manifest '{path}': {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The JSON is malformed or does not have the manifest's shape.
    #[error("malformed module manifest {source_label}: {message}")]
    Parse {
        /// The manifest's label.
        source_label: String,
        /// serde_json's message (with line and column).
        message: String,
    },
    /// `--modules_dir` could not be listed.
    #[error("cannot list --modules_dir '{path}': {source}")]
    Dir {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Parses manifest text; `label` names it in errors.
pub fn parse(text: &str, label: &str) -> Result<Manifest, ManifestError> {
    serde_json::from_str(text).map_err(|e| ManifestError::Parse {
        source_label: label.to_owned(),
        message: e.to_string(),
    })
}

/// Reads a `--modules` value: inline JSON, a path, or `file:///path`.
pub fn from_flag(value: &str) -> Result<(Manifest, ManifestSource), ManifestError> {
    let trimmed = value.trim_start();
    if trimmed.starts_with('{') {
        let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let manifest = parse(value, "inline JSON (--modules)")?;
        return Ok((manifest, ManifestSource { label: "inline JSON (--modules)".into(), base }));
    }
    let path = value.strip_prefix("file://").unwrap_or(value);
    from_file(Path::new(path))
}

/// Reads a manifest file.
pub fn from_file(path: &Path) -> Result<(Manifest, ManifestSource), ManifestError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| ManifestError::Read { path: path.to_owned(), source })?;
    let label = format!("'{}'", path.display());
    let manifest = parse(&text, &label)?;
    let base = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let base = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_owned());
    Ok((manifest, ManifestSource { label, base }))
}

/// The manifest files of a `--modules_dir`, in alphabetical order (regular files only).
pub fn dir_entries(dir: &Path) -> Result<Vec<PathBuf>, ManifestError> {
    let err = |source| ManifestError::Dir { path: dir.to_owned(), source };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(err)? {
        let entry = entry.map_err(err)?;
        if entry.file_type().map_err(err)?.is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mesos_manifest() {
        let m = parse(
            r#"{"libraries": [{"file": "libfoo.so", "modules": [{"name": "x",
               "parameters": [{"key": "k", "value": "v"}]}]}, {"name": "bar", "modules": [{"name": "y"}]}]}"#,
            "t",
        )
        .unwrap();
        assert_eq!(m.libraries.len(), 2);
        assert_eq!(m.libraries[0].modules[0].parameters[0].value, "v");
        assert_eq!(m.libraries[1].name.as_deref(), Some("bar"));
    }

    #[test]
    fn malformed_json_reports_line_and_column() {
        let e = parse("{\n  \"libraries\": [\n  }", "'m.json'").unwrap_err().to_string();
        assert!(e.starts_with("malformed module manifest 'm.json': "), "{e}");
        assert!(e.contains("line 3"), "{e}");
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let e = parse(r#"{"libraries": [], "extra": 1}"#, "t").unwrap_err().to_string();
        assert!(e.contains("unknown field `extra`"), "{e}");
    }
}
