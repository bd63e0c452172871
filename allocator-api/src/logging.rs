//! Log forwarding across the module boundary.
//!
//! Each module library has its own copy of the `log` crate's global logger, so a module's
//! `log::info!` would go nowhere. The host passes [`HostServices`] to each library's `init`
//! (see [`host_services`]); [`library_init`], which the export helpers install, sets a
//! forwarding logger inside the library that hands every record to the host's logger. Module
//! authors just use `allocator_api::log::info!` (or the `log` crate) as usual.

use std::sync::OnceLock;

use abi_stable::StableAbi;
use abi_stable::std_types::{RResult, RStr};
use log::{Level, LevelFilter, Log, Metadata, Record};

use crate::error::ModuleError;

/// One log record sent from a module to the host.
#[repr(C)]
#[derive(StableAbi)]
pub struct LogRecord<'a> {
    /// 1 = error, 2 = warn, 3 = info, 4 = debug, 5 = trace.
    pub level: u8,
    /// The record's target (by default the module path inside the module crate).
    pub target: RStr<'a>,
    /// The formatted message.
    pub message: RStr<'a>,
    /// The source file, if known (empty otherwise).
    pub file: RStr<'a>,
    /// The source line, or 0.
    pub line: u32,
}

/// What the host offers a module library: its logger.
///
/// Part of the boundary since ABI 1 (every root module's `init` takes it), so frozen like ABI
/// 1's types, as is [`LogRecord`]: a new service goes into a new type of a new ABI.
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct HostServices {
    /// Emits a record through the host's logger.
    pub log: extern "C" fn(record: &LogRecord<'_>),
    /// Whether the host's logger wants records of `level` for `target`.
    pub log_enabled: extern "C" fn(level: u8, target: RStr<'_>) -> bool,
    /// The most verbose level the host wants at all (0 = off … 5 = trace).
    pub max_level: u8,
}

fn level_to_u8(level: Level) -> u8 {
    level as usize as u8
}

fn u8_to_level(level: u8) -> Option<Level> {
    match level {
        1 => Some(Level::Error),
        2 => Some(Level::Warn),
        3 => Some(Level::Info),
        4 => Some(Level::Debug),
        5 => Some(Level::Trace),
        _ => None,
    }
}

fn filter_from_u8(level: u8) -> LevelFilter {
    u8_to_level(level).map_or(LevelFilter::Off, |l| l.to_level_filter())
}

/// The logger installed inside a module library: forwards to the host.
struct Forwarder(HostServices);

impl Log for Forwarder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        (self.0.log_enabled)(level_to_u8(metadata.level()), metadata.target().into())
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let message = record.args().to_string();
        let out = LogRecord {
            level: level_to_u8(record.level()),
            target: record.target().into(),
            message: message.as_str().into(),
            file: record.file().unwrap_or("").into(),
            line: record.line().unwrap_or(0),
        };
        (self.0.log)(&out);
    }

    fn flush(&self) {}
}

static INSTALLED: OnceLock<()> = OnceLock::new();

/// A library's `init`: installs the forwarding logger once (later calls are no-ops).
pub extern "C" fn library_init(host: HostServices) -> RResult<(), ModuleError> {
    INSTALLED.get_or_init(|| {
        if log::set_boxed_logger(Box::new(Forwarder(host))).is_ok() {
            log::set_max_level(filter_from_u8(host.max_level));
        }
    });
    RResult::ROk(())
}

extern "C" fn host_log(record: &LogRecord<'_>) {
    let Some(level) = u8_to_level(record.level) else { return };
    let file = record.file.as_str();
    log::logger().log(
        &Record::builder()
            .level(level)
            .target(record.target.as_str())
            .args(format_args!("{}", record.message.as_str()))
            .file(if file.is_empty() { None } else { Some(file) })
            .line(if record.line == 0 { None } else { Some(record.line) })
            .build(),
    );
}

extern "C" fn host_log_enabled(level: u8, target: RStr<'_>) -> bool {
    let Some(level) = u8_to_level(level) else { return false };
    log::logger().enabled(&Metadata::builder().level(level).target(target.as_str()).build())
}

/// The services a host passes to every library it loads: records from modules go to the
/// logger the host has installed (call this after installing it, e.g. after `env_logger::init`).
pub fn host_services() -> HostServices {
    let max = log::max_level();
    let max_level = match max.to_level() {
        Some(l) => level_to_u8(l),
        None => 0,
    };
    HostServices { log: host_log, log_enabled: host_log_enabled, max_level }
}
