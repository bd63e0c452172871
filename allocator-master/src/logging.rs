//! The binary's log: `env_logger` (`RUST_LOG`, default `warn`) to stderr, or to
//! `DIR/allocator-master.log` with `--log_dir DIR` (Mesos's flag; the file is never opened
//! through a link), and a verbosity an operator
//! raises for a while with the operator API's `SET_LOGGING_LEVEL`, as Mesos's glog `--v`.
//!
//! Mesos's logging level is glog's verbosity: 0 is the default, higher is chattier. Here level
//! 0 is what `RUST_LOG` (or `warn`) says, 1 adds `info`, 2 `debug` and 3 or more `trace`, for
//! every module; after the `duration` the call gave, the level goes back to 0
//! ([`expire`], called on each pass of the master loop).

use std::fs::OpenOptions;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use log::{LevelFilter, Log, Metadata, Record};

/// The level `SET_LOGGING_LEVEL` set (0: none).
static LEVEL: AtomicU32 = AtomicU32::new(0);
/// When it goes back to 0.
static UNTIL: Mutex<Option<Instant>> = Mutex::new(None);
/// `RUST_LOG`'s most verbose level: the global filter at level 0.
static BASE: Mutex<LevelFilter> = Mutex::new(LevelFilter::Warn);

/// The log file's name in `--log_dir`.
pub const FILE: &str = "allocator-master.log";

/// `RUST_LOG`'s filter, and everything for a raised level, to the same place.
struct Logger {
    base: env_logger::Logger,
    verbose: env_logger::Logger,
}

impl Log for Logger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.base.enabled(metadata) || metadata.level() <= raised()
    }

    fn log(&self, record: &Record<'_>) {
        if self.base.matches(record) {
            self.base.log(record);
        } else if record.level() <= raised() {
            self.verbose.log(record);
        }
    }

    fn flush(&self) {
        self.base.flush();
        self.verbose.flush();
    }
}

/// The level filter `SET_LOGGING_LEVEL` adds.
fn raised() -> LevelFilter {
    match LEVEL.load(Ordering::Relaxed) {
        0 => LevelFilter::Off,
        1 => LevelFilter::Info,
        2 => LevelFilter::Debug,
        _ => LevelFilter::Trace,
    }
}

/// Installs the log: to `DIR/allocator-master.log` (appended) when `log_dir` is given, else to
/// stderr. `Err` when the file cannot be opened.
pub fn init(log_dir: Option<&Path>) -> Result<(), String> {
    let file = log_dir.map(open_log).transpose()?;
    let builder = |filter: Option<LevelFilter>| -> Result<env_logger::Builder, String> {
        let env = env_logger::Env::default().default_filter_or("warn");
        let mut b = env_logger::Builder::from_env(env);
        b.format_timestamp_millis();
        if let Some(f) = filter {
            b.filter_level(f);
        }
        if let Some(file) = &file {
            // Both loggers append to the one file opened.
            let file = file.try_clone().map_err(|e| format!("--log_dir: {e}"))?;
            b.target(env_logger::Target::Pipe(Box::new(file)));
        }
        Ok(b)
    };
    let base = builder(None)?.build();
    let verbose = builder(Some(LevelFilter::Trace))?.build();
    let max = base.filter();
    if log::set_boxed_logger(Box::new(Logger { base, verbose })).is_ok() {
        *BASE.lock().unwrap_or_else(|e| e.into_inner()) = max;
        log::set_max_level(max);
    }
    Ok(())
}

/// Opens `DIR/allocator-master.log` for appending, creating `dir` if needed; never through a
/// link planted in the directory (it would redirect the log).
fn open_log(dir: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("--log_dir {}: cannot create it: {e}", dir.display()))?;
    let path = dir.join(FILE);
    OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o640)
        .open(&path)
        .map_err(|e| format!("--log_dir: cannot open {}: {e}", path.display()))
}

/// Mesos's logging level now (`GET_LOGGING_LEVEL`).
pub fn level() -> u32 {
    LEVEL.load(Ordering::Relaxed)
}

/// Raises (or lowers) the level to `level` until `until` (`SET_LOGGING_LEVEL`); 0 goes back to
/// `RUST_LOG`'s at once.
pub fn set_level(level: u32, until: Instant) {
    LEVEL.store(level, Ordering::Relaxed);
    *UNTIL.lock().unwrap_or_else(|e| e.into_inner()) = (level > 0).then_some(until);
    let base = *BASE.lock().unwrap_or_else(|e| e.into_inner());
    log::set_max_level(base.max(raised()));
}

/// Puts the level back to 0 once its duration is over.
pub fn expire() {
    let mut until = UNTIL.lock().unwrap_or_else(|e| e.into_inner());
    if until.is_some_and(|u| Instant::now() >= u) {
        *until = None;
        LEVEL.store(0, Ordering::Relaxed);
        log::set_max_level(*BASE.lock().unwrap_or_else(|e| e.into_inner()));
    }
}
