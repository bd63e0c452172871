//! The master's registry (Mesos's `--registry`): what a restarted `serve` restores. With
//! `--work_dir DIR` (and `--registry replicated_log`, the default then) it is kept in
//! `DIR/registry.json`; with `--registry in_memory` nothing survives a restart.
//!
//! It holds what an operator set and what frameworks were told: quotas, weights, the sorters in
//! use, the maintenance schedule and the machines taken down for maintenance, agents marked
//! gone, and the frameworks subscribed over the scheduler API (id, `FrameworkInfo` with its
//! `failover_timeout`, principal) with those removed for good. Tasks, offers and the virtual
//! clock are not in it: as after a Mesos master failover, frameworks re-subscribe with their
//! ids and the agents (here, the scenario) come back.
//!
//! **Crash safety.** The registry is small (kilobytes) and changes at the rate of operator
//! calls and subscriptions, so each change writes it whole: to `registry.json.tmp`, `fsync`,
//! `rename` over `registry.json`, `fsync` of the directory. A rename is atomic on POSIX file
//! systems, so a process killed at any instant leaves either the old registry or the new one,
//! both complete. The master writes a change before it answers the request that made it
//! (operator calls, `POST /quota`, `/weights`, `/sorters`), so an acknowledged change is never
//! lost. A subscription is written right after `SUBSCRIBED` is sent; a master killed in between
//! still accepts the framework's re-subscription with that id (as a new framework, as Mesos
//! does after a failover). No database is needed for this: the file is readable, diffable JSON,
//! and the write is one syscall sequence (the choice is discussed in the README).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The file in `--work_dir`.
pub const FILE: &str = "registry.json";

/// The registry's format version; a newer one is refused.
pub const VERSION: u32 = 1;

/// A role's quota, as resource quantity text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QuotaText {
    /// Guarantees (`cpus:2;mem:1024`).
    pub guarantees: String,
    /// Limits.
    pub limits: String,
}

/// A framework subscribed over the scheduler API.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameworkEntry {
    /// Its framework id.
    pub id: String,
    /// Its `FrameworkInfo` as it subscribed (Mesos JSON), `failover_timeout` included.
    pub info: Value,
    /// The principal it subscribed as.
    pub principal: Option<String>,
}

/// Everything the registry holds. See the [module documentation](self). A field missing from
/// the file is empty.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    /// [`VERSION`].
    pub version: u32,
    /// Quotas by role.
    pub quotas: BTreeMap<String, QuotaText>,
    /// Weights by role.
    pub weights: BTreeMap<String, f64>,
    /// The role sorter in use.
    pub role_sorter: Option<String>,
    /// The framework sorter in use.
    pub framework_sorter: Option<String>,
    /// The maintenance schedule (Mesos's `maintenance::Schedule` JSON), if any.
    pub maintenance_schedule: Option<Value>,
    /// Machines taken down by `START_MAINTENANCE` (Mesos `MachineID` JSON).
    pub down_machines: Vec<Value>,
    /// Agents marked gone (`MARK_AGENT_GONE`): they do not come back.
    pub gone_agents: Vec<String>,
    /// Frameworks subscribed and not removed.
    pub frameworks: Vec<FrameworkEntry>,
    /// Frameworks torn down or past their failover timeout: they cannot come back.
    pub removed_frameworks: Vec<String>,
}

/// Where the registry lives.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    /// What was last written (or read), to skip writing what did not change.
    last: State,
    /// `DIR/registry.lock`, held (`flock`) as long as this master runs: a second master on
    /// the same work_dir refuses to start.
    _lock: std::fs::File,
}

/// The lock file beside the registry.
const LOCK: &str = "registry.lock";

/// Opens `path` for reading or writing without following a symbolic link (a link planted in
/// the work_dir cannot redirect the master's writes); `create` makes it exclusively.
fn open_no_follow(path: &Path, create: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.custom_flags(libc::O_NOFOLLOW);
    if create {
        options.write(true).create_new(true).mode(0o600);
    } else {
        options.read(true);
    }
    options.open(path)
}

/// Refuses a work_dir that another user owns or that others may write to (they could plant or
/// swap its files).
fn check_owner_and_mode(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta =
        std::fs::symlink_metadata(dir).map_err(|e| format!("--work_dir {}: {e}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!("--work_dir {}: not a directory (a link is refused)", dir.display()));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!(
            "--work_dir {}: owned by user {}, not by this master's user {me}",
            dir.display(),
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "--work_dir {}: others may write to it (mode {:o}); chmod go-w it",
            dir.display(),
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Takes the work_dir's lock, or says which master holds it.
fn lock(dir: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let path = dir.join(LOCK);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("the registry lock {}: {e}", path.display()))?;
    // SAFETY: the descriptor is open for the life of `file`; flock only locks it.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(format!(
            "--work_dir {}: another master uses this registry (its lock {} is held); stop it or give another --work_dir",
            dir.display(),
            path.display()
        ));
    }
    Ok(file)
}

impl Store {
    /// Opens the registry in `dir` (created if missing) and reads what it holds; an empty
    /// [`State`] when there is none yet. `Err` names the file and what is wrong with it.
    pub fn open(dir: &Path) -> Result<(Store, State), String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("--work_dir {}: cannot create it: {e}", dir.display()))?;
        check_owner_and_mode(dir)?;
        let lock = lock(dir)?;
        let path = dir.join(FILE);
        let read = open_no_follow(&path, false).and_then(|mut f| {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut f, &mut text).map(|_| text)
        });
        let state = match read {
            Ok(text) => {
                let state: State = serde_json::from_str(&text)
                    .map_err(|e| format!("the registry {}: {e}", path.display()))?;
                if state.version > VERSION {
                    return Err(format!(
                        "the registry {} has format version {}; this master reads up to {VERSION}",
                        path.display(),
                        state.version
                    ));
                }
                state
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                State { version: VERSION, ..State::default() }
            }
            Err(e) => return Err(format!("the registry {}: {e}", path.display())),
        };
        Ok((Store { dir: dir.to_owned(), last: state.clone(), _lock: lock }, state))
    }

    /// Writes `state` if it differs from what was last written, crash-safely (see the
    /// [module documentation](self)). `Ok(true)` when it wrote.
    pub fn save(&mut self, state: &State) -> Result<bool, String> {
        if *state == self.last {
            return Ok(false);
        }
        let path = self.dir.join(FILE);
        let tmp = self.dir.join(format!("{FILE}.tmp"));
        let text = serde_json::to_vec_pretty(state).expect("the registry serializes");
        let write = || -> std::io::Result<()> {
            // A leftover (or planted) temporary file goes first; the new one is made
            // exclusively, never through a link.
            match std::fs::remove_file(&tmp) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            let mut f = open_no_follow(&tmp, true)?;
            f.write_all(&text)?;
            f.write_all(b"\n")?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            std::fs::File::open(&self.dir)?.sync_all()
        };
        write().map_err(|e| format!("cannot write the registry {}: {e}", path.display()))?;
        self.last = state.clone();
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(test: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("registry-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_fresh_work_dir_holds_an_empty_registry() {
        let (_, state) = Store::open(&dir("fresh")).unwrap();
        assert_eq!(state, State { version: VERSION, ..State::default() });
    }

    #[test]
    fn what_is_saved_is_what_a_reopened_store_reads() {
        let d = dir("roundtrip");
        let (mut store, mut state) = Store::open(&d).unwrap();
        state.weights.insert("ml".into(), 3.0);
        state
            .quotas
            .insert("ml".into(), QuotaText { guarantees: "cpus:2".into(), limits: "".into() });
        state.gone_agents.push("a7".into());
        assert!(store.save(&state).unwrap());
        assert!(!store.save(&state).unwrap(), "unchanged: not written again");
        drop(store);
        let (_, read) = Store::open(&d).unwrap();
        assert_eq!(read, state);
        assert!(!d.join(format!("{FILE}.tmp")).exists());
    }

    #[test]
    fn a_second_store_on_the_same_work_dir_is_refused_while_the_first_is_open() {
        let d = dir("locked");
        let (first, _) = Store::open(&d).unwrap();
        let e = Store::open(&d).unwrap_err();
        assert!(e.contains("another master uses this registry"), "{e}");
        drop(first);
        assert!(Store::open(&d).is_ok(), "the lock goes with the master");
    }

    #[test]
    fn a_link_planted_as_the_temporary_file_redirects_nothing() {
        let d = dir("planted");
        let (mut store, mut state) = Store::open(&d).unwrap();
        let victim = std::env::temp_dir().join(format!("registry-victim-{}", std::process::id()));
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, d.join(format!("{FILE}.tmp"))).unwrap();
        state.weights.insert("ml".into(), 2.0);
        assert!(store.save(&state).unwrap());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        drop(store);
        assert_eq!(Store::open(&d).unwrap().1, state);
        let _ = std::fs::remove_file(victim);
    }

    #[test]
    fn a_work_dir_others_may_write_to_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = dir("open");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = Store::open(&d).unwrap_err();
        assert!(e.contains("others may write to it"), "{e}");
    }

    #[test]
    fn a_damaged_or_newer_registry_is_one_clear_error() {
        let d = dir("damaged");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(FILE), "{\"version\": 1, \"weights\": ").unwrap();
        let e = Store::open(&d).unwrap_err();
        assert!(e.starts_with("the registry ") && e.contains("registry.json"), "{e}");
        std::fs::write(d.join(FILE), "{\"version\": 99}").unwrap();
        assert!(Store::open(&d).unwrap_err().contains("format version 99"));
    }
}
