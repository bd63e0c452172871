//! SIGINT and SIGTERM: stop a long run cleanly, keeping what it did.
//!
//! [`install`] registers both signals; the first one only sets a flag that the run loops poll
//! (the simulation between events and between allocation runs, `serve`'s master loop, the
//! soak and the benchmarks), so the run ends at the next step and prints its summary so far.
//! A second signal while the first is being handled ends the process at once with the shell's
//! code for it (130 for SIGINT, 143 for SIGTERM).

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use signal_hook::consts::{SIGINT, SIGTERM};

static RECEIVED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// Registers the handlers (once per process; later calls return the same flag).
pub fn install() -> Arc<AtomicUsize> {
    RECEIVED
        .get_or_init(|| {
            let flag = Arc::new(AtomicUsize::new(0));
            for signal in [SIGINT, SIGTERM] {
                // A second signal after the first ends the process with 128 + signal.
                let first = Arc::new(std::sync::atomic::AtomicBool::new(false));
                let registered = signal_hook::flag::register_conditional_shutdown(
                    signal,
                    128 + signal,
                    first.clone(),
                )
                .and_then(|_| signal_hook::flag::register(signal, first))
                .and_then(|_| {
                    signal_hook::flag::register_usize(signal, flag.clone(), signal as usize)
                });
                if let Err(e) = registered {
                    log::warn!("cannot handle signal {signal}: {e}");
                }
            }
            flag
        })
        .clone()
}

/// The signal that asked the run to stop, if one did.
pub fn requested() -> Option<i32> {
    let n = RECEIVED.get()?.load(Ordering::Relaxed);
    (n != 0).then_some(n as i32)
}

/// The name of a signal this module handles.
pub fn name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// The exit code of a run that `signal` stopped before its end (the shell's 128 + signal).
pub fn exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(u8::MAX)
}
