//! The one wall-clock loop: a master's virtual clock following the wall clock, with a queue of
//! requests handled between allocation runs.
//!
//! [`run`] is the loop every live master runs: [`MasterActor`](crate::actor::MasterActor)'s
//! thread (an embedder's commands and queries are its requests) and `allocator-master
//! serve` (HTTP requests; the scenario it plays, the registry and the event streams are its
//! wiring's duties). What differs between them is a [`Wiring`], the hook for what a client
//! does around the master; the loop owns when things happen:
//!
//! 1. [`Wiring::catch_up`] brings the master up to the wall clock ([`WallClock::virtual_now`]),
//!    delivering what happens on the way;
//! 2. [`Wiring::after_catch_up`] does the client's own duties (heartbeats, persistence);
//! 3. a request received on the last pass is [handled](Wiring::handle), and the loop starts
//!    over (so every request sees a master that has caught up);
//! 4. otherwise the loop ends when [`Wiring::finished`] says so, or waits for the next request
//!    until [`Wiring::wake_at`] (and at least every `poll`, for an interrupt flag).
//!
//! The loop ends with `Ok` when the wiring finishes, a request says [`Flow::Stop`], or every
//! sender of the queue is gone; with the error of a wiring call that fails.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The mapping between the wall clock and a master's virtual clock: virtual time `v0` at the
/// instant the clock was made, then `speed` virtual seconds per wall-clock second.
#[derive(Clone, Copy, Debug)]
pub struct WallClock {
    start: Instant,
    v0: f64,
    speed: f64,
}

impl WallClock {
    /// A clock at virtual time `v0` now. `Err` unless `speed` is a positive number.
    pub fn new(v0: f64, speed: f64) -> Result<WallClock, String> {
        if !(speed.is_finite() && speed > 0.0) {
            return Err(format!("the speed must be a positive number, not {speed}"));
        }
        Ok(WallClock { start: Instant::now(), v0, speed })
    }

    /// The virtual time at wall-clock instant `t`.
    pub fn virtual_at(&self, t: Instant) -> f64 {
        self.v0 + t.saturating_duration_since(self.start).as_secs_f64() * self.speed
    }

    /// The virtual time now.
    pub fn virtual_now(&self) -> f64 {
        self.virtual_at(Instant::now())
    }

    /// The wall-clock instant of virtual time `v` (the clock's start for a time before it;
    /// at most about 30 years on for one far ahead).
    pub fn wall_at(&self, v: f64) -> Instant {
        self.start + Duration::from_secs_f64(((v - self.v0) / self.speed).clamp(0.0, 1e9))
    }
}

/// What a request asks of the loop once handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Continue,
    /// End the loop (`Ok`).
    Stop,
}

/// What a client does around its master on the wall clock (see the
/// [module documentation](self) for when the loop calls each).
pub trait Wiring {
    /// What the loop's queue carries.
    type Request;

    /// Brings the master up to `clock`'s time, delivering its events on the way. `Err` ends
    /// the loop (a fault that stopped the master).
    fn catch_up(&mut self, clock: &WallClock) -> Result<(), String>;

    /// The client's own duties after each catch-up. `Err` ends the loop.
    fn after_catch_up(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// Handles one request, on a master that has just caught up. `Err` ends the loop.
    fn handle(&mut self, request: Self::Request) -> Result<Flow, String>;

    /// Whether the loop should end now (checked when no request is waiting).
    fn finished(&self) -> bool {
        false
    }

    /// When the loop must catch up again at the latest if no request comes (the next
    /// periodic allocation run, a task's end, a deadline).
    fn wake_at(&self, clock: &WallClock) -> Instant;
}

/// Runs `wiring` on `clock`, handling the requests of `queue`, until it ends (see the
/// [module documentation](self)); waits at most `poll` at a time when given.
pub fn run<W: Wiring>(
    wiring: &mut W,
    clock: &WallClock,
    queue: &Receiver<W::Request>,
    poll: Option<Duration>,
) -> Result<(), String> {
    let mut pending = None;
    loop {
        wiring.catch_up(clock)?;
        wiring.after_catch_up()?;
        if let Some(request) = pending.take() {
            if wiring.handle(request)? == Flow::Stop {
                return Ok(());
            }
            continue;
        }
        if wiring.finished() {
            return Ok(());
        }
        let now = Instant::now();
        let mut wake = wiring.wake_at(clock);
        if let Some(poll) = poll {
            wake = wake.min(now + poll);
        }
        match queue.recv_timeout(wake.saturating_duration_since(now)) {
            Ok(request) => pending = Some(request),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use super::{Flow, WallClock, Wiring, run};

    /// Records what the loop asked of it, in order.
    #[derive(Default)]
    struct Log {
        calls: Vec<String>,
        finish_after: Option<usize>,
    }

    impl Wiring for Log {
        type Request = &'static str;

        fn catch_up(&mut self, _: &WallClock) -> Result<(), String> {
            self.calls.push("catch_up".into());
            Ok(())
        }

        fn after_catch_up(&mut self) -> Result<(), String> {
            self.calls.push("duties".into());
            Ok(())
        }

        fn handle(&mut self, request: &'static str) -> Result<Flow, String> {
            self.calls.push(request.into());
            match request {
                "stop" => Ok(Flow::Stop),
                "fail" => Err("failed".into()),
                _ => Ok(Flow::Continue),
            }
        }

        fn finished(&self) -> bool {
            self.finish_after.is_some_and(|n| self.calls.len() >= n)
        }

        fn wake_at(&self, _: &WallClock) -> Instant {
            Instant::now() + Duration::from_secs(60)
        }
    }

    #[test]
    fn every_request_is_handled_after_a_catch_up_and_the_duties() {
        let (tx, rx) = mpsc::channel();
        tx.send("a").unwrap();
        tx.send("stop").unwrap();
        let mut log = Log::default();
        run(&mut log, &WallClock::new(0.0, 1.0).unwrap(), &rx, None).unwrap();
        let pass = ["catch_up", "duties"];
        let expected = [&pass[..], &pass, &["a"], &pass, &pass, &["stop"]].concat();
        assert_eq!(log.calls, expected);
    }

    #[test]
    fn the_loop_ends_when_the_queue_is_gone() {
        let (tx, rx) = mpsc::channel::<&'static str>();
        drop(tx);
        let mut log = Log::default();
        run(&mut log, &WallClock::new(0.0, 1.0).unwrap(), &rx, None).unwrap();
        assert_eq!(log.calls, ["catch_up", "duties"]);
    }

    #[test]
    fn a_failing_request_ends_the_loop_with_its_error() {
        let (tx, rx) = mpsc::channel();
        tx.send("fail").unwrap();
        let mut log = Log::default();
        let err = run(&mut log, &WallClock::new(0.0, 1.0).unwrap(), &rx, None).unwrap_err();
        assert_eq!(err, "failed");
    }

    #[test]
    fn a_finished_wiring_ends_the_loop_without_waiting() {
        let (_tx, rx) = mpsc::channel::<&'static str>();
        let mut log = Log { finish_after: Some(2), ..Log::default() };
        run(&mut log, &WallClock::new(0.0, 1.0).unwrap(), &rx, None).unwrap();
        assert_eq!(log.calls, ["catch_up", "duties"], "one pass, no wait for the wake");
    }

    #[test]
    fn the_clock_maps_virtual_time_at_its_speed() {
        let clock = WallClock::new(10.0, 4.0).unwrap();
        let later = clock.wall_at(14.0);
        assert!((clock.virtual_at(later) - 14.0).abs() < 1e-6);
        assert_eq!(clock.wall_at(5.0), clock.wall_at(10.0), "a time before the start is now");
        assert!(WallClock::new(0.0, 0.0).is_err() && WallClock::new(0.0, f64::NAN).is_err());
    }
}
