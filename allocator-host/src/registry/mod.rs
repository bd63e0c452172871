//! The module registry: loads module libraries named by manifests, checks them in Mesos's
//! order, and creates allocators and sorters by name (built-in or module).
//!
//! Libraries are loaded once (deduplicated by canonical path) and never unloaded, as
//! abi_stable requires. Loading is not transactional, as in Mesos: libraries loaded before an
//! error stay loaded.
//!
//! One concept a file; each file uses only those listed before it (and this one):
//!
//! * `error`: [`LoadError`] (with [`LoadErrorKind`]) and [`CreateError`];
//! * `library`: opening a library and its checks, in Mesos's order (one [`LoadErrorKind`]
//!   variant each), and the checks of each module's descriptor;
//! * `locate`: finding a manifest entry's library file;
//! * `modules`: [`LoadedModule`] and its per-module parameters; registering a module entry;
//! * `isolation_choice`: where a module's instances run, and which libraries a worker checks;
//! * `load`: loading manifests, entry by entry;
//! * `factories`: creating allocators and sorters by name (module or built-in).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use allocator_api::abi::LoadedLibrary;

use crate::isolation::Isolator;
use crate::watchdog::Watchdog;

mod builtin;
mod error;
mod factories;
mod isolation_choice;
mod library;
mod load;
mod locate;
mod modules;

pub use builtin::{BUILTIN_ALLOCATOR, BUILTIN_ALLOCATOR_ALIAS, BUILTIN_SORTER};
pub use error::{CreateError, LoadError, LoadErrorKind};
pub use modules::LoadedModule;

/// The loaded libraries and their modules. Created with [`ModuleRegistry::new`] (there is no
/// `Default`: every registry searches libraries next to the running executable).
pub struct ModuleRegistry {
    libraries: HashMap<PathBuf, LoadedLibrary>,
    modules: BTreeMap<String, LoadedModule>,
    exe_dir: Option<PathBuf>,
    watchdog: Watchdog,
    isolator: Isolator,
}

impl ModuleRegistry {
    /// An empty registry that searches `name` libraries next to the running executable.
    // No `Default`: `new` reads where the running executable is.
    #[allow(clippy::new_without_default)]
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

    /// The call budget and watchdog every module call runs under (factories, instances and
    /// their drops; see [`crate::watchdog`]).
    // Public only for the workspace's own crates and tests; not promised.
    #[doc(hidden)]
    pub fn watchdog(&self) -> &Watchdog {
        &self.watchdog
    }

    /// Every loaded module, by name.
    pub fn modules(&self) -> impl Iterator<Item = &LoadedModule> {
        self.modules.values()
    }

    /// The loaded module called `name`.
    pub fn module(&self, name: &str) -> Option<&LoadedModule> {
        self.modules.get(name)
    }
}
