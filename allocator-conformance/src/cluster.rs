//! The harness of the allocator checks: a [`Master`] (the host's master core, offer guard
//! included) driven through a list of [`Step`]s, with what it offered collected.
//!
//! No framework answers an offer: what is offered stays offered until a step gives it back
//! (`recover_resources`), as in a scenario file without simulated frameworks.

use allocator_api::{AllocatorOptions, Resources};
use allocator_host::master::{Command, Event, FailurePolicy, Master, Setup};
use allocator_host::registry::ModuleRegistry;

use crate::check::Check;

/// One step of a check.
// A check holds a few dozen steps, built once: boxing the command buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub(crate) enum Step {
    /// A change to the cluster ([`Master::apply`]).
    Command(Command),
    /// The clock moves on by this many seconds, making the periodic runs that fall due.
    Advance(f64),
    /// The clock moves on by one allocation interval (one periodic run).
    Tick,
}

impl From<Command> for Step {
    fn from(command: Command) -> Step {
        Step::Command(command)
    }
}

/// An offer as the checks read it, with names rather than handles.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Offer {
    /// The virtual time it was made.
    pub time: f64,
    /// The allocation run it came from: how many runs had ended before it (runs at the same
    /// time are told apart).
    pub run: usize,
    pub framework: String,
    pub role: String,
    pub agent: String,
    pub resources: Resources,
}

/// What happened in one run of a list of steps.
#[derive(Debug, Default)]
pub(crate) struct Run {
    pub offers: Vec<Offer>,
    /// Inverse offers as (time, framework, agent).
    pub inverse_offers: Vec<(f64, String, String)>,
    /// Durations of the periodic runs (time > 0), in milliseconds.
    pub periodic_ms: Vec<f64>,
    /// Offers the host's offer guard dropped.
    pub guard_dropped: u64,
    /// The first step that failed (a call the module refused, or a fault), with why.
    pub error: Option<String>,
    /// Every offer and inverse offer in order, for comparing two runs.
    pub stream: Vec<String>,
    /// The allocation runs that have ended (periodic or event-triggered).
    pub runs: usize,
    /// Each `recover_resources` step that gave something back, as (time, framework, agent):
    /// what a framework held there (offered since its last recover) was declined. A recover
    /// of an agent the framework was not offered declines nothing and is not listed.
    pub declined: Vec<(f64, String, String)>,
    /// For each entry of `declined`, how many offers had been made before it.
    pub declines_seen: Vec<usize>,
}

impl Run {
    /// The offers made on `agent`.
    pub fn on<'a>(&'a self, agent: &'a str) -> impl Iterator<Item = &'a Offer> + 'a {
        self.offers.iter().filter(move |o| o.agent == agent)
    }

    /// The offers made to `framework`.
    pub fn to<'a>(&'a self, framework: &'a str) -> impl Iterator<Item = &'a Offer> + 'a {
        self.offers.iter().filter(move |o| o.framework == framework)
    }

    /// Whether `framework` declined `agent` (gave back what it was offered there) at `time`.
    pub fn declined_at(&self, time: f64, framework: &str, agent: &str) -> bool {
        self.declined.iter().any(|(t, f, a)| *t == time && f == framework && a == agent)
    }

    /// Whether `framework` holds something on `agent` now: offered there after its last
    /// decline of it (nothing is launched in these runs).
    fn holds(&self, framework: &str, agent: &str) -> bool {
        let since = self
            .declined
            .iter()
            .rposition(|(_, f, a)| f == framework && a == agent)
            .map_or(0, |i| self.declines_seen[i]);
        self.offers[since..].iter().any(|o| o.framework == framework && o.agent == agent)
    }
}

/// Runs `steps` against `allocator` (a module name or `hierarchical`) with the built-in DRF
/// sorters, faults not contained (the module itself is under test).
pub(crate) fn run(registry: &ModuleRegistry, allocator: &str, seed: u64, steps: &[Step]) -> Run {
    let setup = Setup {
        options: AllocatorOptions { seed, ..Default::default() },
        on_module_failure: FailurePolicy::Stop,
        call_timeout_ms: Some(30_000.0),
        ..Setup::new(allocator, "drf", "drf")
    };
    let mut run = Run::default();
    let mut master = match Master::new(registry, setup) {
        Ok(m) => m,
        Err(e) => {
            run.error = Some(e);
            return run;
        }
    };
    for (i, step) in steps.iter().enumerate() {
        if let Step::Command(Command::RecoverResources {
            framework, agent, resources: None, ..
        }) = step
            && run.holds(framework, agent)
        {
            run.declined.push((master.now(), framework.clone(), agent.clone()));
            run.declines_seen.push(run.offers.len());
        }
        let result = match step {
            Step::Command(command) => master.apply(command).map(drop).map_err(String::from),
            Step::Advance(seconds) => advance(&mut master, *seconds, &mut run),
            Step::Tick => {
                let interval = master.allocation_interval();
                advance(&mut master, interval, &mut run)
            }
        };
        collect(&mut master, &mut run);
        if let Err(e) = result {
            run.error = Some(format!("event {i} ({step:?}): {e}"));
            break;
        }
    }
    run.guard_dropped = master.dropped_offers();
    run
}

/// Advances the clock, collecting the events of each step at the time they happen.
fn advance(master: &mut Master<'_>, seconds: f64, run: &mut Run) -> Result<(), String> {
    master.advance(seconds, &mut |m| {
        collect(m, run);
        Ok(())
    })
}

/// Moves the master's events into `run`.
fn collect(master: &mut Master<'_>, run: &mut Run) {
    for event in master.take_events() {
        match &event {
            Event::Offer(a) => {
                let offer = Offer {
                    time: master.now(),
                    run: run.runs,
                    framework: master.framework_name(a.framework).to_owned(),
                    role: a.role.to_string(),
                    agent: master.agent_name(a.agent).to_owned(),
                    resources: a.resources.clone(),
                };
                run.stream.push(format!("{offer:?}"));
                run.offers.push(offer);
            }
            Event::InverseOffer { framework, agent, .. } => {
                let (f, a) = (master.framework_name(*framework), master.agent_name(*agent));
                run.stream.push(format!("inverse offer to {f} on {a} at {}", master.now()));
                run.inverse_offers.push((master.now(), f.to_owned(), a.to_owned()));
            }
            Event::AllocationRun { micros, periodic: true, .. } if master.now() > 0.0 => {
                run.periodic_ms.push(*micros as f64 / 1000.0);
            }
            _ => {}
        }
        if let Event::AllocationRun { .. } = event {
            run.runs += 1;
        }
    }
}

/// `add_agent` of `resources` (resource text, SPEC section 3) named `name`.
pub(crate) fn agent(name: &str, resources: &str) -> Step {
    Step::Command(Command::add_agent(name, resources.parse().expect("valid resource text")))
}

/// `add_framework` `name` in `role`.
pub(crate) fn framework(name: &str, role: &str) -> Step {
    Step::Command(Command::add_framework(name, &[role]))
}

/// `recover_resources`: everything `fw` holds on `agent` comes back, with a refuse filter of
/// `refuse` seconds (`None`: the default filter). When `fw` holds nothing there (it was not
/// offered the agent) nothing is declined and no filter is made: a check judges a filter only
/// where [`Run::declined_at`] says something was declined.
pub(crate) fn recover(fw: &str, agent: &str, refuse: Option<f64>) -> Step {
    Step::Command(Command::RecoverResources {
        framework: fw.into(),
        agent: agent.into(),
        resources: None,
        role: None,
        refuse_seconds: refuse,
    })
}

/// Fails `name` when the run failed or the guard cut something, else judges it with `extra`.
pub(crate) fn verdict(
    name: &'static str,
    r: &Run,
    extra: impl FnOnce(&Run) -> Option<String>,
) -> Check {
    let failure = if let Some(e) = &r.error {
        Some(format!("the run failed: {e}"))
    } else if r.guard_dropped > 0 {
        Some(format!(
            "the offer guard had to drop {} offer(s) (over-allocation, another role's reservation, or an inactive framework)",
            r.guard_dropped
        ))
    } else {
        extra(r)
    };
    Check::new(name, failure)
}

/// Check `name` skipped, when the run stopped because the module refuses a call it need not
/// implement (`what` it refuses: "operations", "quotas"); `None` otherwise.
pub(crate) fn skipped_if_refused(name: &'static str, r: &Run, what: &str) -> Option<Check> {
    let e = r.error.as_deref().filter(|e| e.contains("is not supported by this module"))?;
    Some(Check { name, failure: None, skipped: Some(format!("it refuses {what}: {e}")) })
}
