//! What a long run has done so far (scenarios, the trace replay, the soak, benchmarks): the
//! work loop only stores numbers into shared atomics ([`Counters`]), so a single long event
//! (one `advance` making millions of allocation runs) still shows its progress to whoever
//! reads them (the binary's progress display), and [`describe`] says them in one line.

use std::sync::atomic::{AtomicU64, Ordering};

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

    /// The counters as they are now.
    pub fn snapshot(&self) -> Snapshot {
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
}
