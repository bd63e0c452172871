//! Signs of life for long runs (scenarios, the trace replay, the soak, benchmarks).
//!
//! The work loop only stores numbers into shared atomics ([`Counters`]); a watcher thread
//! draws them on stderr: an `indicatif` bar when stderr is a terminal, otherwise one plain line
//! every [`PLAIN_EVERY`]. Nothing is shown for runs shorter than [`QUIET_FOR`], so quick
//! commands and tests print nothing extra. Because the watcher reads atomics, a single long
//! event (one `advance` making millions of allocation runs) still shows its progress.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Runs shorter than this show no progress at all.
pub const QUIET_FOR: Duration = Duration::from_secs(2);
/// How often a plain progress line is written when stderr is not a terminal.
pub const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// What a long run has done so far, written by the run and read by the watcher.
#[derive(Debug, Default)]
pub struct Counters {
    done: AtomicU64,
    total: AtomicU64,
    /// The virtual clock, as `f64` bits (0 when the run has no clock).
    clock_bits: AtomicU64,
    runs: AtomicU64,
    /// Tasks launched from the offer being answered (one offer can hold millions).
    tasks: AtomicU64,
}

impl Counters {
    /// Steps done out of `total` (events, runs, measurements; 0: not known in advance).
    pub fn set_done(&self, done: u64, total: u64) {
        self.done.store(done, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
    }

    /// The virtual clock and the number of allocation runs so far.
    pub fn set_clock(&self, seconds: f64, runs: u64) {
        self.clock_bits.store(seconds.to_bits(), Ordering::Relaxed);
        self.runs.store(runs, Ordering::Relaxed);
    }

    /// Tasks launched so far from the offer being answered.
    pub fn set_tasks(&self, tasks: u64) {
        self.tasks.store(tasks, Ordering::Relaxed);
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            done: self.done.load(Ordering::Relaxed),
            total: self.total.load(Ordering::Relaxed),
            clock: f64::from_bits(self.clock_bits.load(Ordering::Relaxed)),
            runs: self.runs.load(Ordering::Relaxed),
            tasks: self.tasks.load(Ordering::Relaxed),
        }
    }
}

/// The counters read at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Steps done.
    pub done: u64,
    /// Steps in all (0: not known).
    pub total: u64,
    /// The virtual clock, seconds.
    pub clock: f64,
    /// Allocation runs so far.
    pub runs: u64,
    /// Tasks launched from the offer being answered.
    pub tasks: u64,
}

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

/// One line describing the counters (`1234/5000 events · clock 812.0 s · 812 allocation runs`).
pub fn describe(unit: &str, s: Snapshot) -> String {
    let Snapshot { done, total, clock, runs, tasks } = s;
    let mut parts = Vec::new();
    if total > 0 {
        parts.push(format!("{done}/{total} {unit}"));
    } else if done > 0 {
        parts.push(format!("{done} {unit}"));
    }
    if clock > 0.0 {
        parts.push(format!("clock {clock:.1} s"));
    }
    if runs > 0 {
        parts.push(format!("{runs} allocation runs"));
    }
    if tasks > 0 {
        parts.push(format!("{tasks} tasks launched from the current offer"));
    }
    parts.join(" · ")
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
    fn a_description_names_steps_clock_and_runs() {
        let s = Snapshot { done: 3, total: 10, clock: 12.5, runs: 12, tasks: 0 };
        assert_eq!(describe("events", s), "3/10 events · clock 12.5 s · 12 allocation runs");
    }

    #[test]
    fn a_description_leaves_out_what_a_run_does_not_have() {
        let s = Snapshot { done: 5, total: 100, ..Snapshot::default() };
        assert_eq!(describe("runs", s), "5/100 runs");
    }

    #[test]
    fn a_short_run_shows_nothing_and_finishes_at_once() {
        let start = Instant::now();
        let p = Progress::start("test", "events");
        p.counters().set_done(1, 1);
        p.finish();
        assert!(start.elapsed() < QUIET_FOR);
    }
}
