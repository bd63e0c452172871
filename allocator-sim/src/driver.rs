//! The composition root: a [`Driver`] is the [master core](allocator_host::master) wired to
//! its clients (scenario events, simulated frameworks, and at most one live [`Client`] such as
//! frameworks over the scheduler API) and observers (the event stream, statistics,
//! expectations, explanations). Every master the binary runs — a scenario, the default
//! workload, `serve`, a plan's fork, the soak — is one.
//!
//! [`Driver::command`] applies a command ([`Master::apply`]) and [`Driver::advance`] moves the
//! clock ([`Master::advance`]); either then delivers the master's events: observers first
//! (each sees every event), then the simulated frameworks answer their offers, then the
//! live client; after an allocation run idle simulated
//! frameworks suppress their offers and the report takes a sample. [`Driver::apply`] takes a
//! scenario event: a command, a simulated framework's workload (`add_framework` with `tasks`,
//! `submit_task`), a clock event or an expectation.
//!
//! The simulated workload is this crate's alone: the master core sees a played framework's
//! `add_framework` as any other, and never sees a submitted task. The driver tells the
//! simulated frameworks itself, and puts the scenario event in the master's journal as a
//! [note](allocator_host::master::Note), so that plans and recordings replay it in its place.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use allocator_host::registry::ModuleRegistry;
use serde_json::Value;

use crate::allocator_scenario::{AllocatorScenario, Op};
use crate::clients::scenario::Expectations;
use crate::clients::simulated::SimulatedFrameworks;
use crate::observers::stats::{ExpectationCount, Stats};
use crate::output::EventStream;
use crate::recording::Recorder;
use crate::tasks::{Submission, TaskSpec};
use allocator_host::master::{Applied, Apply, ApplyError, Command, Event, Master, Note, Setup};

/// A run that could not go on: bad input the parser could not see (an unknown name), a call the
/// allocator refused, or a module fault. One line, naming the event.
#[derive(Debug, thiserror::Error)]
#[error("scenario '{file}': {location}: {message}")]
pub struct RunError {
    /// The scenario file.
    pub file: String,
    /// The event (`event 4 (remove_agent)`).
    pub location: String,
    /// What went wrong.
    pub message: String,
}

/// The outcome of a simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Expectations that held.
    pub passed: usize,
    /// Failed expectations, each as a readable diff.
    pub failures: Vec<String>,
    /// The human summary.
    pub summary: String,
    /// The JSON summary event.
    pub summary_json: Value,
}

/// A client of the master that lives outside the simulation (frameworks over the Mesos
/// scheduler API, a Kubernetes scheduler): it sees every batch of the master's events after
/// the observers and the simulated frameworks, and may apply commands in answer. At most one
/// is [attached](Driver::attach_client) to a [`Driver`].
pub trait Client: std::any::Any {
    /// Sees `events` (already seen by the observers) and answers them on `master`; an `Err`
    /// stops the run, as a refused command does.
    fn observe(&mut self, events: &[Event], master: &mut Master<'_>) -> Result<(), String>;
}

/// The master core wired to its clients and observers: every master the binary runs, simulated
/// or live. See the [module documentation](self).
pub struct Driver<'r> {
    master: Master<'r>,
    file: String,
    sims: SimulatedFrameworks,
    /// The live client, when one is attached (`serve`'s frameworks over the scheduler API).
    client: Option<Box<dyn Client>>,
    stats: Stats,
    expectations: Expectations,
    /// Where a long run reports how far it got.
    progress: Option<Arc<crate::progress::Counters>>,
    /// The role or framework `--explain` names, and the last run's offers it is told from.
    explain: Option<String>,
    last_run: crate::explain::LastRun,
    /// The set-up the master started with (a fork for a plan starts from it).
    initial_setup: Setup,
}

/// The observers and the framework client, borrowed together to deliver the master's events.
struct Deliverer<'a> {
    sims: &'a mut SimulatedFrameworks,
    last_run: &'a mut crate::explain::LastRun,
    explain: Option<&'a str>,
    client: Option<&'a mut (dyn Client + 'static)>,
    stats: &'a mut Stats,
    expectations: &'a mut Expectations,
    progress: Option<&'a crate::progress::Counters>,
    out: &'a mut EventStream,
}

impl<'r> Deliverer<'_> {
    /// Delivers every event waiting in the master's outbox, and those its clients' answers
    /// cause, until none is left: observers first, then the simulated frameworks answer their
    /// offers; after an allocation run idle frameworks suppress their offers and the report
    /// takes a sample.
    fn deliver(&mut self, master: &mut Master<'r>) -> Result<(), String> {
        let mut ran = false;
        while master.has_events() {
            let events = master.take_events();
            for event in &events {
                crate::observers::stream::write(event, master, self.out);
                self.stats.observe(event, master, self.sims);
                self.expectations.observe(event, master);
                self.last_run.observe(event, master);
                if let (Event::Clock { .. }, Some(p)) = (event, self.progress) {
                    p.set_clock(master.now(), master.runs());
                }
            }
            if self.sims.react(&events, master)? {
                ran = true;
                self.sims.suppress_idle(master)?;
            }
            if let Some(client) = self.client.as_deref_mut() {
                client.observe(&events, master)?;
            }
        }
        if ran {
            self.stats.sample(master, self.sims);
            if let Some(subject) = self.explain {
                self.out.emit(&crate::explain::explain(master, self.last_run, subject));
            }
        }
        Ok(())
    }
}

/// A client's answer that failed after its command was applied: [`ApplyError::Answer`], or
/// [`ApplyError::Stopped`] when it stopped the master.
fn deliver_error(master: &Master<'_>, message: String) -> ApplyError {
    match master.stopped() {
        Some(_) => ApplyError::Stopped(message),
        None => ApplyError::Answer(message),
    }
}

/// The wiring as an [`Apply`] (what the operator API drives): each command is applied and its
/// events delivered ([`Driver::command`]) before the next.
pub struct Applying<'a, 'r> {
    driver: &'a mut Driver<'r>,
    out: &'a mut EventStream,
}

impl<'r> Apply<'r> for Applying<'_, 'r> {
    fn master(&self) -> &Master<'r> {
        &self.driver.master
    }

    fn apply(&mut self, command: &Command) -> Result<Applied, ApplyError> {
        self.driver.command(command, self.out)
    }
}

impl<'a, 'r> Applying<'a, 'r> {
    /// The driver and the event stream the commands deliver their events to, for a client's
    /// own operations through this wiring.
    pub fn parts(&mut self) -> (&mut Driver<'r>, &mut EventStream) {
        (self.driver, self.out)
    }

    /// The driver inside.
    pub fn driver(&self) -> &Driver<'r> {
        self.driver
    }
}

impl<'r> Driver<'r> {
    /// This wiring as an [`Apply`] whose commands deliver their events to `out`.
    pub fn applying<'a>(&'a mut self, out: &'a mut EventStream) -> Applying<'a, 'r> {
        Applying { driver: self, out }
    }

    /// Creates the allocator named in `setup` (built-in or module) and an empty cluster.
    pub fn new(
        registry: &'r ModuleRegistry,
        setup: Setup,
        file: &str,
    ) -> Result<Driver<'r>, String> {
        Ok(Driver {
            initial_setup: setup.clone(),
            explain: None,
            last_run: crate::explain::LastRun::default(),
            master: Master::new(registry, setup)?,
            file: file.to_owned(),
            sims: SimulatedFrameworks::default(),
            client: None,
            stats: Stats::default(),
            expectations: Expectations::new(file),
            progress: None,
        })
    }

    /// The master core inside.
    pub fn master(&self) -> &Master<'r> {
        &self.master
    }

    /// The set-up the master started with (before any fallback or sorter switch): a fork
    /// replaying its journal starts from it.
    pub fn initial_setup(&self) -> &Setup {
        &self.initial_setup
    }

    /// Stops the run at its next step (between events, or between the allocation runs of one
    /// `advance`) once `flag` is non-zero; the summary then covers what was done.
    pub fn set_interrupt(&mut self, flag: Arc<AtomicUsize>) {
        self.sims.set_interrupt(flag.clone());
        self.master.set_interrupt(flag);
    }

    /// Reports events done, the virtual clock and the run count into `counters` as it goes.
    pub fn set_progress(&mut self, counters: Arc<crate::progress::Counters>) {
        self.sims.set_progress(counters.clone());
        self.progress = Some(counters);
    }

    /// Runs every event of `scenario`, then writes the summary.
    pub fn run(
        &mut self,
        scenario: &AllocatorScenario,
        out: &mut EventStream,
    ) -> Result<Outcome, RunError> {
        let total = scenario.events.len();
        self.expectations.set_offer_tracking(
            scenario.events.iter().any(|(_, op)| matches!(op, Op::ExpectOffers(_))),
        );
        for (index, (location, op)) in scenario.events.iter().enumerate() {
            if self.master.interrupted() {
                break;
            }
            self.apply(index, op, out).map_err(|message| RunError {
                file: self.file.clone(),
                location: location.clone(),
                message,
            })?;
            if let Some(p) = &self.progress {
                p.set_done(index as u64 + 1, total as u64);
            }
        }
        self.stats.sample(&self.master, &self.sims);
        let (summary, summary_json) = self.summary();
        out.emit(&summary_json);
        out.flush();
        Ok(Outcome {
            passed: self.expectations.passed(),
            failures: self.expectations.failures().to_vec(),
            summary,
            summary_json,
        })
    }

    /// Applies scenario event `index` (its position names it in an expectation's line): a
    /// command, a clock event, or an expectation. On an error the host's records are unchanged
    /// (the allocator refused before anything was recorded).
    pub fn apply(&mut self, index: usize, op: &Op, out: &mut EventStream) -> Result<(), String> {
        match op {
            Op::Command(command) => match self.command(command, out) {
                Ok(_) => Ok(()),
                // A call the module does not implement is its documented choice: say so, go on.
                Err(ApplyError::Unsupported(message)) => {
                    let allocator = &self.master.setup().allocator;
                    log::warn!(
                        "allocator '{allocator}' does not implement what event {index} needs: {message}; the run goes on without it"
                    );
                    Ok(())
                }
                Err(e) => Err(e.into()),
            },
            Op::Play { add, tasks } => self.play(add, tasks, out).map(drop).map_err(String::from),
            Op::SubmitTask { framework, task } => {
                self.submit_task(framework, task, out).map_err(String::from)
            }
            Op::Advance(seconds) => self.advance(*seconds, out),
            Op::Tick => self.advance(self.master.allocation_interval(), out),
            Op::ExpectOffers(_) | Op::ExpectInverseOffers(_) | Op::ExpectTasks { .. } => {
                self.expectations.check(index, op, &self.master, out).map(drop)
            }
        }
    }

    /// Applies `command` to the master ([`Master::apply`]), then delivers the master's events
    /// to its observers and clients. A client's answer that fails after the command was
    /// applied is [`ApplyError::Answer`] (or [`ApplyError::Stopped`] when it stopped the
    /// master).
    pub fn command(
        &mut self,
        command: &Command,
        out: &mut EventStream,
    ) -> Result<Applied, ApplyError> {
        let (master, mut deliverer) = self.deliverer(out);
        let applied = master.apply(command)?;
        deliverer.deliver(master).map_err(|message| deliver_error(master, message))?;
        Ok(applied)
    }

    /// Adds the framework of `add` (a [`Command::AddFramework`]) and has the simulated
    /// frameworks play it with `tasks` from its first offer on; the journal keeps the scenario
    /// event ([`Op::Play`]).
    pub fn play(
        &mut self,
        add: &Command,
        tasks: &TaskSpec,
        out: &mut EventStream,
    ) -> Result<Applied, ApplyError> {
        if !matches!(add, Command::AddFramework { .. }) {
            return Err(ApplyError::Invalid("a played framework is added by add_framework".into()));
        }
        let (master, mut deliverer) = self.deliverer(out);
        // The note is made only for a journal that keeps it.
        let applied = if master.journal_is_on() {
            master
                .apply_noted(add, Note::new(Op::Play { add: add.clone(), tasks: tasks.clone() }))?
        } else {
            master.apply(add)?
        };
        if let Applied::Framework(id) = applied {
            deliverer.sims.add(id, tasks.clone());
        }
        deliverer.deliver(master).map_err(|message| deliver_error(master, message))?;
        Ok(applied)
    }

    /// Queues `task` for `framework`, which the simulated frameworks must play (it was added
    /// with `tasks`); a framework that suppressed its offers revives them. The journal keeps
    /// the scenario event ([`Op::SubmitTask`]).
    pub fn submit_task(
        &mut self,
        framework: &str,
        task: &Submission,
        out: &mut EventStream,
    ) -> Result<(), ApplyError> {
        if let Some(reason) = self.master.stopped() {
            return Err(ApplyError::Stopped(reason.to_owned()));
        }
        let id = self.master.framework_id(framework).map_err(ApplyError::Invalid)?;
        if !self.sims.plays(id) {
            return Err(ApplyError::Invalid(format!(
                "framework '{framework}' is not simulated (add it with \"tasks\")"
            )));
        }
        if self.master.journal_is_on() {
            let note =
                Note::new(Op::SubmitTask { framework: framework.to_owned(), task: task.clone() });
            self.master.note(note);
        }
        let (master, mut deliverer) = self.deliverer(out);
        deliverer
            .sims
            .submit(master, id, task)
            .map_err(|message| deliver_error(master, message))?;
        deliverer.deliver(master).map_err(|message| deliver_error(master, message))
    }

    /// Advances the master's clock by `seconds` ([`Master::advance`]), delivering its events
    /// after each step.
    pub fn advance(&mut self, seconds: f64, out: &mut EventStream) -> Result<(), String> {
        let (master, mut deliverer) = self.deliverer(out);
        master.advance(seconds, &mut |m| deliverer.deliver(m))?;
        deliverer.deliver(master)
    }

    /// The master and, borrowed beside it, its observers and clients to deliver its events to.
    fn deliverer<'a>(
        &'a mut self,
        out: &'a mut EventStream,
    ) -> (&'a mut Master<'r>, Deliverer<'a>) {
        let Driver {
            master, sims, client, stats, expectations, progress, last_run, explain, ..
        } = self;
        let deliverer = Deliverer {
            sims,
            client: client.as_deref_mut(),
            last_run,
            explain: explain.as_deref(),
            stats,
            expectations,
            progress: progress.as_deref(),
            out,
        };
        (master, deliverer)
    }

    /// Keeps the journal of every command applied from now on (call it before the first), so
    /// that [`crate::plan::plan_live`] can fork the master; past
    /// [`allocator_host::master::journal::KEEP_LIMIT`] entries, plans are off (memory stays
    /// bounded).
    pub fn keep_history(&mut self) {
        self.master.keep_journal(allocator_host::master::journal::KEEP_LIMIT);
    }

    /// Writes every command applied from now on to `recorder` (`serve --record`); the clock
    /// between them becomes `advance` events.
    pub fn record_to(&mut self, recorder: Recorder) {
        self.master.record_journal_to(Box::new(recorder));
    }

    /// Ends the recording (if any) at the current virtual time.
    pub fn finish_recording(&mut self) -> std::io::Result<()> {
        self.master.finish_recording()
    }

    /// Attaches a live client (`serve`'s frameworks over the scheduler API): from now on it
    /// sees the master's events after the simulated frameworks. It replaces any client
    /// attached before.
    pub fn attach_client<C: Client>(&mut self, client: C) {
        self.client = Some(Box::new(client));
    }

    /// The attached client, when it is a `C`.
    pub fn client<C: Client>(&self) -> Option<&C> {
        let client: &dyn std::any::Any = self.client.as_deref()?;
        client.downcast_ref()
    }

    /// Runs `f` on the attached client (when it is a `C`) and the master, then delivers the
    /// master's events as [`apply`](Self::apply) does. `Ok(None)` when no `C` is attached.
    pub fn with_client<C: Client, R>(
        &mut self,
        out: &mut EventStream,
        f: impl FnOnce(&mut C, &mut Master<'r>) -> Result<R, String>,
    ) -> Result<Option<R>, String> {
        let (master, mut deliverer) = self.deliverer(out);
        let Some(client) = deliverer.client.as_deref_mut() else { return Ok(None) };
        let client: &mut dyn std::any::Any = client;
        let Some(client) = client.downcast_mut::<C>() else { return Ok(None) };
        let result = f(client, master)?;
        deliverer.deliver(master)?;
        Ok(Some(result))
    }

    /// The metrics, flat and named as Mesos names them; see [`Stats::metrics`].
    pub fn metrics(&self) -> serde_json::Map<String, Value> {
        self.stats.metrics(&self.master)
    }

    /// Keeps only the last `max` samples of the run's time series from now on (a live
    /// master's); see [`Stats::limit_history`].
    pub fn limit_history(&mut self, max: usize) {
        self.stats.limit_history(max);
    }

    /// The last `max` samples of each role's dominant share; see [`Stats::share_history`].
    pub fn share_history(&self, max: usize) -> Value {
        self.stats.share_history(max)
    }

    /// The human summary of the run so far.
    pub fn summary_text(&self) -> String {
        self.summary().0
    }

    /// The JSON summary event (SPEC section 5) of the run so far.
    pub fn summary_event(&self) -> Value {
        self.summary().1
    }

    fn summary(&self) -> (String, Value) {
        let count = ExpectationCount {
            passed: self.expectations.passed(),
            failed: self.expectations.failures().len(),
        };
        let (mut text, mut json) = self.stats.summary(&self.master, &self.sims, count);
        if let Some(subject) = &self.explain {
            let explanation = self.explanation(subject);
            text.push_str(&crate::explain::to_text(&explanation));
            json["explanation"] = explanation;
        }
        (text, json)
    }

    /// Adds an `explanation` event for `subject` (a role or a framework) after every
    /// allocation run, and its account to the summary (`--explain`).
    pub fn explain_each_run(&mut self, subject: &str) {
        self.explain = Some(subject.to_owned());
        self.enable_explanations();
    }

    /// Counts each run's offers per role and framework for explanations (off by default: then
    /// an offer costs one branch).
    pub fn enable_explanations(&mut self) {
        self.last_run.enable();
    }

    /// Why `subject` (a framework, or else a role) got what it got at the last run.
    pub fn explanation(&self, subject: &str) -> Value {
        crate::explain::explain(&self.master, &self.last_run, subject)
    }

    /// Why role `role` got what it got at the last run.
    pub fn explain_role(&self, role: &str) -> Value {
        crate::explain::explain_role(&self.master, &self.last_run, role)
    }

    /// Why framework `name` got what it got at the last run.
    pub fn explain_framework(&self, name: &str) -> Value {
        crate::explain::explain_framework(&self.master, &self.last_run, name)
    }

    /// Renders the report of the run so far as SVG.
    pub fn report_svg(&self, title: &str) -> Result<String, allocator_pictures::ReportError> {
        self.stats.report_svg(title, &self.master)
    }

    /// The offers made since the last call (or since tracking began), by framework, role and
    /// agent; needs [`set_offer_tracking`](Self::set_offer_tracking).
    pub fn take_offers(&mut self) -> crate::clients::scenario::Offers {
        self.expectations.take_offers()
    }

    /// Keeps offers for `expect_offers` when events are applied one by one with
    /// [`apply`](Self::apply) (`run` decides by itself from the scenario).
    pub fn set_offer_tracking(&mut self, on: bool) {
        self.expectations.set_offer_tracking(on);
    }

    /// The cluster as the host records it (`GET /state` of `serve`): the master's view, with
    /// each framework's running tasks and each simulated framework's queue and suppression.
    pub fn state(&self) -> Value {
        let mut state = self.master.state();
        if let Some(Value::Array(frameworks)) = state.get_mut("frameworks") {
            for v in frameworks {
                let Some(id) =
                    v["framework"].as_str().and_then(|n| self.master.framework_id(n).ok())
                else {
                    continue;
                };
                v["tasks_running"] = serde_json::json!(self.master.tasks_of(id).count());
                if let Some((queued, suppressed)) = self.sims.queue_state(id) {
                    v["tasks_queued"] = serde_json::json!(queued);
                    v["suppressed"] = serde_json::json!(suppressed);
                }
            }
        }
        state
    }
}
