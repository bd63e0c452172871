//! Opening a module library and its checks, in Mesos's order: a regular file; one that exports
//! the module header (read from the file, before anything maps it); abi_stable's checks
//! (header, ABI version, type layouts) and the root module; the library's `init`. Then, for
//! each module the manifest names, its descriptor's checks (API major version, the module's own
//! `compatible`). Each refusal is one [`LoadErrorKind`] variant, one line.

use std::path::Path;

use abi_stable::library::{LibraryError, RootModuleError, lib_header_from_path};
use allocator_api::abi::{
    ABI_VERSION, ABI_VERSION_2, ABI_VERSION_3, API_MAJOR, AnyDescriptor, LoadedLibrary,
    ModuleLibraryRef, ModuleLibraryV2Ref, ModuleLibraryV3Ref,
};

use super::ModuleRegistry;
use super::error::{LoadError, LoadErrorKind};

/// Refuses anything that is not a regular file (following links) before it is opened.
pub(super) fn check_regular_file(path: &Path, label: &str) -> Result<(), LoadError> {
    let kind = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => return Ok(()),
        Ok(m) => file_kind(&m.file_type()),
        Err(_) => "missing or unreadable",
    };
    Err(LoadErrorKind::NotRegularFile { path: path.display().to_string(), kind }.in_manifest(label))
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
pub(super) fn check_exports_module_header(path: &Path, label: &str) -> Result<(), LoadError> {
    use object::read::{Object, ObjectSymbol};
    let open = |reason: String| {
        LoadErrorKind::Open { path: path.display().to_string(), reason }.in_manifest(label)
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
        Err(LoadErrorKind::NotModuleLibrary {
            path: path.display().to_string(),
            reason: "it exports no allocator module header; build it with allocator_api::export_modules!"
                .into(),
        }
        .in_manifest(label))
    }
}

impl ModuleRegistry {
    /// Opens a library once, reads the ABI version its header records, runs abi_stable's checks
    /// against the matching root module type (ABI 1, 2 or 3) and the library's `init`.
    pub(super) fn open(&mut self, path: &Path, label: &str) -> Result<LoadedLibrary, LoadError> {
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
            Ok(3) => header.init_root_module::<ModuleLibraryV3Ref>().map(LoadedLibrary::V3),
            Ok(_) => {
                return Err(LoadErrorKind::IncompatibleVersion {
                    path: shown,
                    found: format!("ABI {}", version.version),
                    expected: supported_abis(),
                }
                .in_manifest(label));
            }
            Err(e) => Err(LibraryError::ParseVersionError(e)),
        }
        .map_err(|e| library_error(e, label, &shown))?;
        if let abi_stable::std_types::RResult::RErr(e) =
            (library.init())(allocator_api::logging::host_services())
        {
            return Err(
                LoadErrorKind::Init { path: shown, reason: e.to_string() }.in_manifest(label)
            );
        }
        self.libraries.insert(path.to_owned(), library);
        Ok(library)
    }
}

/// The module ABIs this host loads, as error messages name them.
fn supported_abis() -> String {
    format!("ABI {ABI_VERSION}, ABI {ABI_VERSION_2} or ABI {ABI_VERSION_3}")
}

/// Turns abi_stable's loading errors into one-line [`LoadError`]s.
fn library_error(e: LibraryError, label: &str, path: &str) -> LoadError {
    library_error_kind(e, path).in_manifest(label)
}

/// What [`library_error`] says, without the manifest.
fn library_error_kind(e: LibraryError, path: &str) -> LoadErrorKind {
    let path = path.to_owned();
    match e {
        LibraryError::OpenError { err, .. } => LoadErrorKind::Open { path, reason: err.to_string() },
        LibraryError::GetSymbolError { .. } => LoadErrorKind::NotModuleLibrary {
            path,
            reason: "it exports no allocator module header; build it with allocator_api::export_modules!".into(),
        },
        LibraryError::InvalidAbiHeader(h) => LoadErrorKind::NotModuleLibrary {
            path,
            reason: format!("it was built with an incompatible abi_stable ({h:?})"),
        },
        LibraryError::IncompatibleVersionNumber { expected_version, actual_version, .. } => {
            LoadErrorKind::IncompatibleVersion {
                path,
                found: actual_version.to_string(),
                expected: expected_version.to_string(),
            }
        }
        LibraryError::ParseVersionError(v) => LoadErrorKind::IncompatibleVersion {
            path,
            found: format!("an unparsable version ({v:?})"),
            expected: supported_abis(),
        },
        LibraryError::AbiInstability(err) => {
            LoadErrorKind::Layout { path, reason: summarize_layout_error(&err.to_string()) }
        }
        LibraryError::InvalidCAbi { .. } => {
            LoadErrorKind::Layout { path, reason: "the C ABI self-test failed".into() }
        }
        LibraryError::RootModule { err, .. } => {
            let reason = match err {
                RootModuleError::Unwound => "its root module panicked while loading".to_owned(),
                RootModuleError::Returned(e) => e.to_string(),
            };
            LoadErrorKind::Init { path, reason }
        }
        LibraryError::Many(errors) => match errors.into_iter().next() {
            Some(first) => library_error_kind(first, &path),
            None => LoadErrorKind::Init { path, reason: "unknown loading error".into() },
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

/// The checks of one module's descriptor, once its library is open: the API major version,
/// then the module's own `compatible`.
pub(super) fn check_descriptor(
    d: &AnyDescriptor,
    label: &str,
    path: &str,
) -> Result<(), LoadError> {
    let name = d.name.to_string();
    let major = d.api_version.as_str().split('.').next().and_then(|m| m.parse::<u32>().ok());
    if major != Some(API_MAJOR) {
        return Err(LoadErrorKind::ApiVersion {
            path: path.to_owned(),
            module: name,
            found: d.api_version.to_string(),
            expected: format!("{API_MAJOR}.x"),
        }
        .in_manifest(label));
    }
    if let abi_stable::std_types::ROption::RSome(check) = d.compatible
        && !check()
    {
        return Err(
            LoadErrorKind::Incompatible { path: path.to_owned(), module: name }.in_manifest(label)
        );
    }
    Ok(())
}
