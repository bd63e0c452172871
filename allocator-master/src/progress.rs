//! Signs of life for long runs (scenarios, the trace replay, the soak, benchmarks).
//!
//! The work loop only stores numbers into shared atomics ([`Counters`]); a watcher thread
//! draws them on stderr: an `indicatif` bar when stderr is a terminal, otherwise one plain line
//! every [`PLAIN_EVERY`]. Nothing is shown for runs shorter than [`QUIET_FOR`], so quick
//! commands and tests print nothing extra. Because the watcher reads atomics, a single long
//! event (one `advance` making millions of allocation runs) still shows its progress.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use allocator_sim::progress::{Counters, describe};

/// Runs shorter than this show no progress at all.
pub const QUIET_FOR: Duration = Duration::from_secs(2);
/// How often a plain progress line is written when stderr is not a terminal.
pub const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// A progress display for one long run; dropping it (or [`finish`](Progress::finish)) clears
/// the bar.
pub struct Progress {
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    watcher: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts watching a run called `what` (`"scenario x.json"`, `"soak"`); `unit` names the
    /// steps counted by [`Counters::set_done`] (`"events"`, `"runs"`).
    pub fn start(what: &str, unit: &'static str) -> Progress {
        let counters = Arc::new(Counters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let watcher = {
            let (counters, stop, what) = (counters.clone(), stop.clone(), what.to_owned());
            std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || watch(&what, unit, &counters, &stop))
                .ok()
        };
        Progress { counters, stop, watcher }
    }

    /// The counters the run writes to.
    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// Stops the display and clears the bar.
    pub fn finish(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(w) = self.watcher.take() {
            w.thread().unpark();
            let _ = w.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.shut_down();
    }
}

fn watch(what: &str, unit: &'static str, counters: &Counters, stop: &AtomicBool) {
    let started = Instant::now();
    let wait = |d: Duration| {
        let until = Instant::now() + d;
        while !stop.load(Ordering::SeqCst) && Instant::now() < until {
            std::thread::park_timeout(until.saturating_duration_since(Instant::now()));
        }
        !stop.load(Ordering::SeqCst)
    };
    if !wait(QUIET_FOR) {
        return;
    }
    if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(0);
        let style = indicatif::ProgressStyle::with_template(
            "{prefix} [{elapsed_precise}, about {eta} left] {wide_bar} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(what.to_owned());
        loop {
            let snapshot = counters.snapshot();
            bar.set_length(snapshot.total.max(1));
            bar.set_position(snapshot.done);
            bar.set_message(describe(unit, snapshot));
            if !wait(Duration::from_millis(100)) {
                break;
            }
        }
        bar.finish_and_clear();
    } else {
        loop {
            let snapshot = counters.snapshot();
            let said = describe(unit, snapshot);
            let elapsed = started.elapsed().as_secs_f64();
            let left = match (snapshot.done, snapshot.total) {
                (done, total) if done > 0 && total > done => {
                    format!(", about {:.0} s left", elapsed / done as f64 * (total - done) as f64)
                }
                _ => String::new(),
            };
            eprintln!(
                "{what}: {} ({elapsed:.0} s{left})",
                if said.is_empty() { "running" } else { said.as_str() },
            );
            if !wait(PLAIN_EVERY) {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_shows_nothing_and_finishes_at_once() {
        let start = Instant::now();
        let p = Progress::start("test", "events");
        p.counters().set_done(1, 1);
        p.finish();
        assert!(start.elapsed() < QUIET_FOR);
    }
}
