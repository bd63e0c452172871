//! The master's registry (Mesos's `--registry`): what a restarted `serve` restores. With
//! `--work_dir DIR` (and `--registry replicated_log`, the default then) it is kept in
//! `DIR/registry.json` (a snapshot) and `DIR/registry.log` (the changes since); with
//! `--registry in_memory` nothing survives a restart.
//!
//! It holds what an operator set and what frameworks were told: quotas, weights, the sorters in
//! use, the maintenance schedule and the machines taken down for maintenance, agents marked
//! gone, and the frameworks subscribed over the scheduler API (id, `FrameworkInfo` with its
//! `failover_timeout`, principal) with those removed for good. Tasks, offers and the virtual
//! clock are not in it: as after a Mesos master failover, frameworks re-subscribe with their
//! ids and the agents (here, the scenario) come back.
//!
//! **Writes cost what changed.** The registry is a map of keys (`weight/ROLE`, `quota/ROLE`,
//! `framework/ID`, …; [`State`] is its typed view). A change appends one line to
//! `registry.log` — the keys it sets, with their values, and the keys it removes — and
//! `fsync`s it: a weight change writes a few dozen bytes whatever the frameworks hold. When the
//! log outgrows the snapshot (and 1 MiB), the snapshot is rewritten whole — to
//! `registry.json.tmp`, `fsync`, `rename` over `registry.json`, `fsync` of the directory — and
//! the log emptied.
//!
//! **Crash safety.** The master writes a change before it answers the request that made it
//! (operator calls, `POST /quota`, `/weights`, `/sorters`), so an acknowledged change is never
//! lost. A rename is atomic on POSIX file systems, so the snapshot is always the old one or the
//! new one, both complete; a log line is one write, and the one a killed master left torn (the
//! last) is dropped when the registry is read: it was never acknowledged. A crash between a
//! snapshot and the emptying of the log replays the log over the new snapshot, which changes
//! nothing (a line sets values, it does not add to them). A subscription is written right after
//! `SUBSCRIBED` is sent; a master killed in between still accepts the framework's
//! re-subscription with that id (as a new framework, as Mesos does after a failover). No
//! database is needed for this: both files are readable JSON, and each write is one syscall
//! sequence (the choice, and what it costs, are in `docs/operators/registry.md` and BENCHMARKS.md).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The snapshot in `--work_dir`.
pub const FILE: &str = "registry.json";

/// The changes since the snapshot, one line each, in `--work_dir`.
pub const LOG: &str = "registry.log";

/// The log is folded into the snapshot once it is larger than this and than the snapshot.
const COMPACT_AFTER: u64 = 1 << 20;

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

/// The registry as keys and values: what the log changes.
type Keyed = BTreeMap<String, Value>;

impl State {
    /// The registry as keys and values.
    fn keyed(&self) -> Keyed {
        fn json<T: Serialize>(v: &T) -> Value {
            serde_json::to_value(v).expect("the registry's values serialize")
        }
        let mut k = Keyed::new();
        for (role, q) in &self.quotas {
            k.insert(format!("quota/{role}"), json(q));
        }
        for (role, w) in &self.weights {
            k.insert(format!("weight/{role}"), json(w));
        }
        if let Some(s) = &self.role_sorter {
            k.insert("role_sorter".into(), json(s));
        }
        if let Some(s) = &self.framework_sorter {
            k.insert("framework_sorter".into(), json(s));
        }
        if let Some(s) = &self.maintenance_schedule {
            k.insert("maintenance_schedule".into(), s.clone());
        }
        if !self.down_machines.is_empty() {
            k.insert("down_machines".into(), json(&self.down_machines));
        }
        for agent in &self.gone_agents {
            k.insert(format!("gone_agent/{agent}"), Value::Bool(true));
        }
        for f in &self.frameworks {
            k.insert(format!("framework/{}", f.id), json(f));
        }
        for id in &self.removed_frameworks {
            k.insert(format!("removed_framework/{id}"), Value::Bool(true));
        }
        k
    }

    /// The registry from its keys; `Err` names a key whose value cannot be read.
    fn from_keyed(version: u32, keyed: Keyed) -> Result<State, String> {
        fn read<T: serde::de::DeserializeOwned>(key: &str, v: Value) -> Result<T, String> {
            serde_json::from_value(v).map_err(|e| format!("key '{key}': {e}"))
        }
        let mut state = State { version, ..State::default() };
        for (key, value) in keyed {
            let (kind, name) = key.split_once('/').unwrap_or((key.as_str(), ""));
            let name = name.to_owned();
            match kind {
                "quota" => _ = state.quotas.insert(name, read(&key, value)?),
                "weight" => _ = state.weights.insert(name, read(&key, value)?),
                "role_sorter" => state.role_sorter = Some(read(&key, value)?),
                "framework_sorter" => state.framework_sorter = Some(read(&key, value)?),
                "maintenance_schedule" => state.maintenance_schedule = Some(value),
                "down_machines" => state.down_machines = read(&key, value)?,
                "gone_agent" => state.gone_agents.push(name),
                "framework" => state.frameworks.push(read(&key, value)?),
                "removed_framework" => state.removed_frameworks.push(name),
                _ => return Err(format!("unknown key '{key}'")),
            }
        }
        Ok(state)
    }
}

/// One line of the log: the keys a change sets and those it removes.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Change {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    set: Keyed,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    del: Vec<String>,
}

/// Whether `key` is one of the frameworks' (which [`Store::save_sections`] may leave out).
fn is_framework_key(key: &str) -> bool {
    key.starts_with("framework/") || key.starts_with("removed_framework/")
}

impl Change {
    /// What turns the keys of `old` that `within` keeps into `new`.
    fn between(old: &Keyed, new: &Keyed, within: impl Fn(&str) -> bool) -> Change {
        let set = new.iter().filter(|(k, v)| old.get(*k) != Some(*v));
        let del = old.keys().filter(|k| within(k) && !new.contains_key(*k));
        Change {
            set: set.map(|(k, v)| (k.clone(), v.clone())).collect(),
            del: del.cloned().collect(),
        }
    }

    fn is_empty(&self) -> bool {
        self.set.is_empty() && self.del.is_empty()
    }

    fn apply(&self, to: &mut Keyed) {
        to.extend(self.set.iter().map(|(k, v)| (k.clone(), v.clone())));
        for key in &self.del {
            to.remove(key);
        }
    }
}

/// Where the registry lives.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    /// The registry's format version as read.
    version: u32,
    /// What was last written (or read), as keys.
    last_keyed: Keyed,
    /// `DIR/registry.log`, open for appending.
    log: std::fs::File,
    /// Its size, and the snapshot's: when to fold the log into the snapshot.
    log_bytes: u64,
    snapshot_bytes: u64,
    /// [`COMPACT_AFTER`] (smaller in tests).
    compact_after: u64,
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
        let snapshot_bytes = read.as_ref().map_or(0, |t| t.len() as u64);
        let snapshot = match read {
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
        let log_path = dir.join(LOG);
        let mut log = open_log(&log_path)
            .map_err(|e| format!("the registry log {}: {e}", log_path.display()))?;
        let mut keyed = snapshot.keyed();
        let log_bytes = replay(&mut log, &mut keyed)
            .map_err(|e| format!("the registry log {}: {e}", log_path.display()))?;
        let state = State::from_keyed(snapshot.version, keyed.clone())
            .map_err(|e| format!("the registry log {}: {e}", log_path.display()))?;
        let store = Store {
            dir: dir.to_owned(),
            version: state.version,
            last_keyed: keyed,
            log,
            log_bytes,
            snapshot_bytes,
            compact_after: COMPACT_AFTER,
            _lock: lock,
        };
        Ok((store, state))
    }

    /// Writes what changed in `state` since what was last written, crash-safely (see the
    /// [module documentation](self)): one line appended to the log, and now and then the
    /// snapshot rewritten. `Ok(true)` when it wrote.
    pub fn save(&mut self, state: &State) -> Result<bool, String> {
        self.save_sections(state, true)
    }

    /// [`save`](Self::save), where `frameworks` says whether `state`'s frameworks (and
    /// removed frameworks) are given: when not, those last written stay, and what it costs
    /// does not grow with them (`serve` knows when they change).
    pub fn save_sections(&mut self, state: &State, frameworks: bool) -> Result<bool, String> {
        let keyed = state.keyed();
        let change =
            Change::between(&self.last_keyed, &keyed, |k| frameworks || !is_framework_key(k));
        if change.is_empty() {
            return Ok(false);
        }
        let mut line = serde_json::to_vec(&change).expect("a change serializes");
        line.push(b'\n');
        let log_path = self.dir.join(LOG);
        let append = |log: &mut std::fs::File| -> std::io::Result<()> {
            log.write_all(&line)?;
            log.sync_data()
        };
        append(&mut self.log)
            .map_err(|e| format!("cannot write the registry log {}: {e}", log_path.display()))?;
        self.log_bytes += line.len() as u64;
        change.apply(&mut self.last_keyed);
        if self.log_bytes > self.compact_after && self.log_bytes > self.snapshot_bytes {
            self.compact()?;
        }
        Ok(true)
    }

    /// Rewrites the snapshot whole and empties the log (see the [module documentation](self)).
    fn compact(&mut self) -> Result<(), String> {
        let state = State::from_keyed(self.version.max(VERSION), self.last_keyed.clone())?;
        let path = self.dir.join(FILE);
        let tmp = self.dir.join(format!("{FILE}.tmp"));
        let text = serde_json::to_vec_pretty(&state).expect("the registry serializes");
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
        self.snapshot_bytes = text.len() as u64 + 1;
        let log_path = self.dir.join(LOG);
        let empty = |log: &mut std::fs::File| -> std::io::Result<()> {
            log.set_len(0)?;
            log.sync_all()
        };
        empty(&mut self.log)
            .map_err(|e| format!("cannot empty the registry log {}: {e}", log_path.display()))?;
        self.log_bytes = 0;
        Ok(())
    }
}

/// Opens (or creates) the log for appending, never through a link.
fn open_log(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(path)
}

/// Applies every line of `log` to `keyed`; returns the log's size. A last line that does not
/// read (a write a killed master left torn: it was never acknowledged) is dropped, and cut
/// off the file so that the next line starts clean; any other bad line is an error.
fn replay(log: &mut std::fs::File, keyed: &mut Keyed) -> Result<u64, String> {
    use std::io::{BufRead, BufReader, Seek};
    let mut reader = BufReader::new(&mut *log);
    let mut good = 0u64;
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        number += 1;
        let complete = line.last() == Some(&b'\n');
        match serde_json::from_slice::<Change>(&line) {
            Ok(change) if complete => {
                change.apply(keyed);
                good += n as u64;
            }
            Err(e) if complete && !reader.fill_buf().map_err(|e| e.to_string())?.is_empty() => {
                return Err(format!("line {number}: {e}"));
            }
            _ => {
                log::warn!(
                    "registry log: line {number} was torn by a crash (never acknowledged); dropped"
                );
                break;
            }
        }
    }
    drop(reader);
    if log.metadata().map_err(|e| e.to_string())?.len() > good {
        log.set_len(good).map_err(|e| e.to_string())?;
        log.sync_all().map_err(|e| e.to_string())?;
    }
    log.seek(std::io::SeekFrom::End(0)).map_err(|e| e.to_string())?;
    Ok(good)
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
        store.compact_after = 0;
        assert!(store.save(&state).unwrap());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        drop(store);
        assert_eq!(Store::open(&d).unwrap().1, state);
        let _ = std::fs::remove_file(victim);
    }

    #[test]
    fn a_link_planted_as_the_log_is_refused_at_start() {
        let d = dir("planted-log");
        std::fs::create_dir_all(&d).unwrap();
        let victim =
            std::env::temp_dir().join(format!("registry-log-victim-{}", std::process::id()));
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, d.join(LOG)).unwrap();
        let e = Store::open(&d).unwrap_err();
        assert!(e.contains("registry.log"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        let _ = std::fs::remove_file(victim);
    }

    /// A registry with `n` frameworks whose `FrameworkInfo`s are about `bytes` long.
    fn with_frameworks(n: usize, bytes: usize) -> State {
        let frameworks = (0..n)
            .map(|i| FrameworkEntry {
                id: format!("fw-{i:04}"),
                info: serde_json::json!({"name": "x".repeat(bytes), "user": "u"}),
                principal: None,
            })
            .collect();
        State { version: VERSION, frameworks, ..State::default() }
    }

    #[test]
    fn a_change_writes_what_changed_not_the_registry() {
        let d = dir("o-change");
        let (mut store, _) = Store::open(&d).unwrap();
        let mut state = with_frameworks(100, 10_000);
        assert!(store.save(&state).unwrap());
        let before = std::fs::metadata(d.join(LOG)).unwrap().len();
        assert!(before > 1_000_000, "the frameworks are in the log: {before} bytes");
        state.weights.insert("ml".into(), 3.0);
        assert!(store.save(&state).unwrap());
        let grown = std::fs::metadata(d.join(LOG)).unwrap().len() - before;
        assert!(grown < 100, "a weight change appended {grown} bytes");
        drop(store);
        assert_eq!(Store::open(&d).unwrap().1, state);
    }

    #[test]
    fn frameworks_left_out_of_a_save_stay_as_last_written() {
        let d = dir("sections");
        let (mut store, _) = Store::open(&d).unwrap();
        let mut state = with_frameworks(3, 10);
        assert!(store.save(&state).unwrap());
        let mut without = State { version: VERSION, ..State::default() };
        without.weights.insert("ml".into(), 2.0);
        assert!(store.save_sections(&without, false).unwrap());
        assert!(!store.save_sections(&without, false).unwrap(), "nothing changed");
        drop(store);
        state.weights.insert("ml".into(), 2.0);
        assert_eq!(Store::open(&d).unwrap().1, state);
    }

    #[test]
    fn a_log_line_torn_by_a_crash_is_dropped_and_the_log_goes_on() {
        let d = dir("torn");
        let (mut store, mut state) = Store::open(&d).unwrap();
        state.weights.insert("ml".into(), 2.0);
        assert!(store.save(&state).unwrap());
        drop(store);
        let mut log = std::fs::OpenOptions::new().append(true).open(d.join(LOG)).unwrap();
        log.write_all(br#"{"set": {"weight/ml": 5"#).unwrap();
        drop(log);
        let (mut store, read) = Store::open(&d).unwrap();
        assert_eq!(read, state, "the torn change was never acknowledged");
        state.weights.insert("ml".into(), 4.0);
        assert!(store.save(&state).unwrap());
        drop(store);
        assert_eq!(Store::open(&d).unwrap().1, state);
    }

    #[test]
    fn a_damaged_line_before_the_last_is_one_clear_error() {
        let d = dir("damaged-log");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(LOG), "{\"set\": 1}\n{\"set\": {}}\n").unwrap();
        let e = Store::open(&d).unwrap_err();
        assert!(e.contains("registry.log") && e.contains("line 1"), "{e}");
    }

    #[test]
    fn the_log_is_folded_into_the_snapshot_and_nothing_is_lost() {
        let d = dir("compact");
        let (mut store, _) = Store::open(&d).unwrap();
        store.compact_after = 1_000;
        let mut state = with_frameworks(5, 100);
        for i in 0..50 {
            state.weights.insert(format!("r{i}"), f64::from(i) + 1.0);
            state.frameworks.pop();
            assert!(store.save(&state).unwrap());
        }
        assert!(std::fs::metadata(d.join(LOG)).unwrap().len() < 2_000, "the log was folded");
        assert!(std::fs::metadata(d.join(FILE)).unwrap().len() > 0);
        drop(store);
        assert_eq!(Store::open(&d).unwrap().1, state);
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
