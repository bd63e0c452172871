//! A master on the wall clock, for a program that embeds this crate: [`MasterActor`] owns a
//! [`Master`] on a thread of its own, as Mesos's master process owns its allocator.
//!
//! The embedder gets everything the `allocator-master` binary gets, because it is the same
//! core: the allocator and sorters named by [`Setup`] (built-in or modules, isolated or not),
//! the offer guard, fault containment (fallback to the built-in, restart, stop), the ledger,
//! the journal.
//!
//! * [`MasterActor::spawn`] creates the master from a [`ModuleRegistry`] and a [`Setup`] on
//!   its thread and returns the actor and a receiver of the master's [`Event`]s (offers,
//!   inverse offers, allocation runs, task ends, …), sent as they happen.
//! * [`MasterHandle`] is cloneable and `Send`. [`MasterHandle::apply`] puts a [`Command`] on
//!   the actor's queue and waits for its result, [`MasterHandle::submit`] does not wait (a
//!   refusal is logged and counted); [`MasterHandle::query`] runs a closure on the master and
//!   returns its answer; [`MasterHandle::metrics`] is the metric snapshot. Everything is
//!   processed in FIFO order, so each caller's commands keep their order.
//! * The virtual clock follows the wall clock (times [`ActorOptions::speed`]): before each
//!   command the master catches up with it, and the thread wakes when the next periodic
//!   allocation run or task end is due. This is the one wall-clock loop,
//!   [`wall_clock::run`](crate::wall_clock::run), which `allocator-master serve` runs too.
//!   A framework answers an offer with [`Command::AnswerOffer`].
//! * [`MasterActor::shutdown`] processes every message queued before it (no acknowledged
//!   command is lost), delivers the events they produce and joins the thread. Dropping every
//!   handle and the actor has the same effect. Under `FailurePolicy::Stop` a module fault
//!   stops the master; the actor's thread then ends and `shutdown` returns the reason.
//!
//! `examples/embed-master` is a complete embedder, and `allocator-host/tests/actor.rs` the
//! behaviour in tests.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::master::metrics::{MetricMap, push_sample, write_master_metrics};
use crate::master::{Applied, ApplyError, Command, Event, Master, Setup};
use crate::registry::ModuleRegistry;
use crate::wall_clock::{Flow, WallClock, Wiring};

/// How the actor runs its master.
#[derive(Clone, Debug)]
pub struct ActorOptions {
    /// Virtual seconds per wall-clock second (1: the master's clock is the wall clock).
    pub speed: f64,
    /// Keep the journal of applied commands in memory, up to this many entries (see
    /// [`Master::keep_journal`]); `None`: no journal.
    pub journal: Option<usize>,
}

impl Default for ActorOptions {
    fn default() -> ActorOptions {
        ActorOptions { speed: 1.0, journal: None }
    }
}

/// Why the actor could not answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ActorError {
    /// The master did not apply the command; [`ApplyError`] says why (and whether the master
    /// has stopped); nothing changed.
    #[error("{0}")]
    Refused(ApplyError),
    /// The master's thread has ended (shut down, stopped by a module fault, or a query's
    /// closure panicked): the command or query was not carried out.
    #[error("the master has stopped")]
    Stopped,
}

type Query = Box<dyn for<'m, 'r> FnOnce(&'m Master<'r>) + Send>;
type Reply = Sender<Result<Applied, ApplyError>>;

enum Message {
    Apply(Box<Command>, Option<Reply>),
    Query(Query),
    Metrics(Sender<MetricMap>),
    Shutdown,
}

/// A [`Master`] on its own thread. See the [module documentation](self).
pub struct MasterActor {
    handle: MasterHandle,
    thread: Option<JoinHandle<Result<(), String>>>,
}

/// A cloneable, `Send` handle to a [`MasterActor`]'s master.
#[derive(Clone)]
pub struct MasterHandle {
    tx: Sender<Message>,
}

impl MasterActor {
    /// Starts the master thread: it creates the master named by `setup` from `registry` (which
    /// it keeps for the master's life) and runs it on the wall clock. `Err` when the master
    /// cannot be created (an unknown module, a module's factory refusing its options) or the
    /// thread cannot start.
    pub fn spawn(
        registry: ModuleRegistry,
        setup: Setup,
        options: ActorOptions,
    ) -> Result<(MasterActor, Receiver<Event>), String> {
        // Checks the speed before the thread starts.
        WallClock::new(0.0, options.speed)?;
        let (tx, rx) = mpsc::channel();
        let (events_tx, events_rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
        let thread = std::thread::Builder::new()
            .name("master".into())
            .spawn(move || {
                let mut master = match Master::new(&registry, setup) {
                    Ok(m) => m,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.clone()));
                        return Err(e);
                    }
                };
                if let Some(limit) = options.journal {
                    master.keep_journal(limit);
                }
                let clock = WallClock::new(master.now(), options.speed)?;
                let _ = ready_tx.send(Ok(()));
                let mut live = Live::new(master, events_tx);
                crate::wall_clock::run(&mut live, &clock, &rx, None)?;
                live.fatal()
            })
            .map_err(|e| format!("cannot start the master thread: {e}"))?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => return Err("the master thread ended while starting".into()),
        }
        let actor = MasterActor { handle: MasterHandle { tx }, thread: Some(thread) };
        Ok((actor, events_rx))
    }

    /// A handle to the master; clone it into every thread that talks to it.
    pub fn handle(&self) -> MasterHandle {
        self.handle.clone()
    }

    /// Processes every message queued before this call, delivers the events they produce and
    /// joins the master thread. `Err` with the reason when a module fault stopped the master
    /// (`FailurePolicy::Stop`) or its thread panicked.
    pub fn shutdown(mut self) -> Result<(), String> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), String> {
        let _ = self.handle.tx.send(Message::Shutdown);
        match self.thread.take().map(JoinHandle::join) {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(reason))) => Err(reason),
            Some(Err(_)) => Err("the master thread panicked".into()),
        }
    }
}

impl Drop for MasterActor {
    fn drop(&mut self) {
        if let Err(reason) = self.stop() {
            log::error!("master stopped: {reason}");
        }
    }
}

impl MasterHandle {
    /// Applies `command` ([`Master::apply`]) once the messages queued before it are processed,
    /// and waits for its result.
    pub fn apply(&self, command: Command) -> Result<Applied, ActorError> {
        let (reply, answer) = mpsc::channel();
        self.tx
            .send(Message::Apply(Box::new(command), Some(reply)))
            .map_err(|_| ActorError::Stopped)?;
        match answer.recv() {
            Ok(result) => result.map_err(ActorError::Refused),
            Err(_) => Err(ActorError::Stopped),
        }
    }

    /// Queues `command` and returns at once. A refusal is logged (a warning naming the
    /// command) and counted in the `master/commands_refused` metric; use [`apply`](Self::apply)
    /// when the caller needs the answer. `Err` only when the master has stopped.
    pub fn submit(&self, command: Command) -> Result<(), ActorError> {
        self.tx.send(Message::Apply(Box::new(command), None)).map_err(|_| ActorError::Stopped)
    }

    /// Runs `f` on the master once the messages queued before it are processed, and returns
    /// its answer. `f` sees the master between commands, never in the middle of one.
    pub fn query<T, F>(&self, f: F) -> Result<T, ActorError>
    where
        T: Send + 'static,
        F: for<'m, 'r> FnOnce(&'m Master<'r>) -> T + Send + 'static,
    {
        let (reply, answer) = mpsc::channel();
        let query: Query = Box::new(move |master| {
            let _ = reply.send(f(master));
        });
        self.tx.send(Message::Query(query)).map_err(|_| ActorError::Stopped)?;
        answer.recv().map_err(|_| ActorError::Stopped)
    }

    /// The master's metrics, as `/metrics/snapshot` serves them ([`crate::master::metrics`]), plus
    /// `master/commands_applied` and `master/commands_refused`.
    pub fn metrics(&self) -> Result<MetricMap, ActorError> {
        let (reply, answer) = mpsc::channel();
        self.tx.send(Message::Metrics(reply)).map_err(|_| ActorError::Stopped)?;
        answer.recv().map_err(|_| ActorError::Stopped)
    }
}

/// The master thread's state: the master and where its events go.
struct Live<'r> {
    master: Master<'r>,
    events: Sender<Event>,
    run_ms: Vec<f64>,
    applied: u64,
    refused: u64,
}

impl<'r> Live<'r> {
    fn new(master: Master<'r>, events: Sender<Event>) -> Live<'r> {
        Live { master, events, run_ms: Vec::new(), applied: 0, refused: 0 }
    }

    /// Sends the events waiting in the master's outbox.
    fn deliver(&mut self) {
        send_events(&mut self.master, &self.events, &mut self.run_ms);
    }

    /// `Err` (the thread ends) once a module fault under `FailurePolicy::Stop` stopped the
    /// master.
    fn fatal(&self) -> Result<(), String> {
        match self.master.stopped() {
            Some(reason) => Err(reason.to_owned()),
            None => Ok(()),
        }
    }

    fn apply(&mut self, command: &Command, reply: Option<Reply>) {
        let result = self.master.apply(command);
        self.deliver();
        match &result {
            Ok(_) => self.applied += 1,
            Err(e) => {
                self.refused += 1;
                if reply.is_none() {
                    log::warn!("master refused {}: {e}", command_name(command));
                }
            }
        }
        if let Some(reply) = reply {
            let _ = reply.send(result);
        }
    }

    fn metrics(&self) -> MetricMap {
        let mut m = MetricMap::new();
        write_master_metrics(&mut m, &self.master, [], &self.run_ms);
        m.insert("master/commands_applied".into(), serde_json::json!(self.applied));
        m.insert("master/commands_refused".into(), serde_json::json!(self.refused));
        m
    }
}

impl Wiring for Live<'_> {
    type Request = Message;

    /// Advances the virtual clock to the wall clock's time, delivering what happens on the
    /// way; `Err` once the master has stopped.
    fn catch_up(&mut self, clock: &WallClock) -> Result<(), String> {
        let seconds = clock.virtual_now() - self.master.now();
        if seconds > 0.0 {
            let Live { master, events, run_ms, .. } = self;
            let result = master.advance(seconds, &mut |m| {
                send_events(m, events, run_ms);
                Ok(())
            });
            if let Err(e) = result {
                log::error!("advancing the clock: {e}");
            }
            self.deliver();
        }
        self.fatal()
    }

    fn handle(&mut self, message: Message) -> Result<Flow, String> {
        match message {
            Message::Apply(command, reply) => self.apply(&command, reply),
            Message::Query(query) => {
                let master = &self.master;
                if std::panic::catch_unwind(AssertUnwindSafe(|| query(master))).is_err() {
                    log::error!("a query's closure panicked; the master goes on");
                }
            }
            Message::Metrics(reply) => {
                let _ = reply.send(self.metrics());
            }
            Message::Shutdown => return Ok(Flow::Stop),
        }
        Ok(Flow::Continue)
    }

    /// When the next periodic allocation run or task end is due.
    fn wake_at(&self, clock: &WallClock) -> Instant {
        clock.wall_at(self.master.next_due())
    }
}

/// Sends the master's waiting events to the embedder (whose receiver may be gone: then they
/// are dropped), noting allocation run times for the metrics.
fn send_events(master: &mut Master<'_>, events: &Sender<Event>, run_ms: &mut Vec<f64>) {
    for event in master.take_events() {
        if let Event::AllocationRun { micros, .. } = event {
            push_sample(run_ms, micros as f64 / 1e3);
        }
        let _ = events.send(event);
    }
}

/// A command's name for a log line (its variant, in the scenario's snake case).
fn command_name(command: &Command) -> String {
    let debug = format!("{command:?}");
    let variant = debug.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("command");
    let mut name = String::new();
    for (i, c) in variant.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_lowercase());
    }
    name
}
