//! Commands: every change to the cluster, as data, and [`Master::apply`], the one write path.
//!
//! Whatever drives a master — a simulation's scenario events and frameworks, frameworks over
//! the scheduler API, the operator API, a plan's replay, an embedder — builds a [`Command`] and
//! hands it to [`Master::apply`]. The master checks it, carries it out (the allocator first:
//! nothing is recorded when the allocator refuses), and notes it in its
//! [journal](super::journal) when the journal is on. Commands name agents and frameworks by
//! name, as scenario files do, except the answers to what the master itself issued (an offer,
//! a task), which name it by its handle; the journal keeps such an answer as the
//! `recover_resources` it amounts to.

use std::sync::Arc;

use allocator_api::{
    AgentCapabilities, AgentId, Allocation, Attribute, FrameworkCapabilities, FrameworkId,
    InverseOfferStatus, Operation, Quota, RString, Request, Resources, RoleMinAllocatable,
    RoleQuota, Unavailability,
};

use super::agents::NewAgent;
use super::frameworks::NewFramework;
use super::note::Note;
use super::{ApplyError, Master};

/// Resources frameworks already use on an agent when it is added: (framework name, role —
/// `None` for the framework's first role, which needs the framework known — resources).
pub type AgentUsed = Vec<(String, Option<String>, Resources)>;

/// One change to the cluster. See the [module documentation](self).
///
/// The variants that a scenario file can hold (SPEC section 4.1) carry the same fields as
/// the scenario event of the same name; [`AnswerOffer`](Command::AnswerOffer),
/// [`KillTask`](Command::KillTask) and [`RequestResources`](Command::RequestResources) come
/// from frameworks only.
///
/// What holds for every command ([`Master::apply`]):
///
/// * **Refusals.** A command is refused (`Err`, with a one-line reason) when it names an agent
///   or framework the master does not have present (`unknown agent 'a'`,
///   `unknown framework 'f'`), when a role it names breaks Mesos's role rules
///   ([`allocator_api::roles::validate`]; the roles of `AddFramework`, `UpdateFramework`,
///   `UpdateWeights` and `UpdateQuota`), or when the allocator refuses the call it makes
///   (`the allocator refused <call>: <reason>`). The allocator is called before anything is
///   recorded, so a refused command leaves the master's records as they were and is not
///   journaled. The exceptions are where a command makes a second allocator call after the
///   first took effect: the allocation run of a command that makes one (the change stays,
///   unjournaled, and the error is the run's), and the calls named under `RecoverResources` and `AnswerOffer`.
/// * **Faults.** A module that fails (panics, reports a failure, or, isolated, dies in its
///   worker or does not answer within the call timeout) is handled by the [failure policy](super::FailurePolicy):
///   under `Fallback` and `Restart` the call is repeated on the replacement and the command
///   goes on; under `Stop` the command fails with the reason, and so does every later one
///   ([`Master::stopped`]).
/// * **Allocation runs.** Where a command "runs the allocator", it makes one event-triggered
///   allocation run: each offer that passes the offer guard is recorded and emitted as an
///   [`Event::Offer`](super::Event::Offer), then the accepted inverse offers ([`Event::InverseOffer`](super::Event::InverseOffer)), then one
///   [`Event::AllocationRun`](super::Event::AllocationRun). Other commands wait for the next run (the periodic one of
///   [`Master::advance`], or one another command triggers).
/// * **The journal.** Commands from a client ([`Origin::Client`]) are journaled as they are,
///   except as `AnswerOffer`, `KillTask` and `RequestResources` say.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Adds an agent and runs the allocator over it; answers [`Applied::Agent`] with its id.
    /// A name seen before and removed gets its old id back.
    ///
    /// Refused when an agent of that name is present, or when an entry of `used` gives no
    /// role for a framework not added yet.
    AddAgent {
        /// Its name (the agent id in Mesos's terms), by which later commands name it.
        agent: String,
        /// Its total resources.
        resources: Resources,
        /// Its hostname, which the [whitelist](Command::UpdateWhitelist) matches; `None`: its
        /// name.
        hostname: Option<String>,
        /// What it supports; `None`: every capability.
        capabilities: Option<AgentCapabilities>,
        /// Its attributes (which simulated tasks' constraints match).
        attributes: Vec<Attribute>,
        /// What frameworks already use on it (an agent that comes back to a master after a
        /// failover), recorded as theirs. A framework may be named before it is added; the
        /// role `None` stands for the framework's first role, and needs it added already.
        used: AgentUsed,
        /// Its maintenance window, if one is scheduled already.
        unavailability: Option<Unavailability>,
    },
    /// Removes an agent: what frameworks held on it is gone (not given back to anyone), each
    /// task on it ends ([`Event::TaskEnded`](super::Event::TaskEnded) with [`TaskEnd::AgentRemoved`](super::TaskEnd::AgentRemoved)),
    /// then [`Event::AgentRemoved`](super::Event::AgentRemoved): offers of its resources are void from then on.
    RemoveAgent(
        /// The agent's name.
        String,
    ),
    /// Activates an agent: its resources may be offered again, from the next allocation run
    /// (this command makes none).
    ActivateAgent(
        /// The agent's name.
        String,
    ),
    /// Deactivates an agent: nothing on it is offered until it is activated. What frameworks
    /// hold there stays theirs.
    DeactivateAgent(
        /// The agent's name.
        String,
    ),
    /// Changes an agent's total, capabilities or attributes, and runs the allocator over it
    /// when anything changed. A total smaller than what frameworks hold there is taken as
    /// given (Mesos's rule R14): the agent is then over-committed
    /// ([`Master::overcommitted_agents`]) until resources come back.
    UpdateAgent {
        /// The agent's name.
        agent: String,
        /// Its new total; `None`: unchanged.
        resources: Option<Resources>,
        /// Its new capabilities; `None`: unchanged.
        capabilities: Option<AgentCapabilities>,
        /// Its new attributes (the whole list); `None`: unchanged.
        attributes: Option<Vec<Attribute>>,
    },
    /// Adds a resource provider's resources to an agent's total, with what frameworks already
    /// use of them. Makes no allocation run. Refused when `used` names a framework that is
    /// not present.
    AddResourceProvider {
        /// The agent's name.
        agent: String,
        /// The resources added to its total.
        resources: Resources,
        /// What present frameworks already use of them, as for [`Command::AddAgent`]
        /// (`None` role: the framework's first role).
        used: AgentUsed,
    },
    /// Adds a framework; when it is active, runs the allocator over every agent. Answers
    /// [`Applied::Framework`] with its id.
    ///
    /// Refused when a framework of that name is present, when `roles` is empty, or when
    /// `used` names an agent that is not present.
    AddFramework {
        /// Its name (the framework id in Mesos's terms), by which later commands name it.
        framework: String,
        /// Its roles, at least one; each must pass Mesos's role rules.
        roles: Vec<String>,
        /// What it supports (`MULTI_ROLE`, `GPU_RESOURCES`, …).
        capabilities: FrameworkCapabilities,
        /// Whether it starts active (connected); an inactive framework gets no offers until
        /// [activated](Command::ActivateFramework).
        active: bool,
        /// What it already uses, per agent name, under its first role (merged with what an
        /// agent's `used` recorded for it).
        used: Vec<(String, Resources)>,
        /// Roles it starts suppressed in: no offers in them until it revives them.
        suppressed_roles: Vec<String>,
        /// Its `min_allocatable_resources`, per role: the smallest offer it wants there.
        min_allocatable: Vec<RoleMinAllocatable>,
    },
    /// Removes a framework: what it held is dropped from the master's records (the allocator
    /// takes it back), and each of its tasks ends ([`Event::TaskEnded`](super::Event::TaskEnded) with
    /// [`TaskEnd::FrameworkRemoved`](super::TaskEnd::FrameworkRemoved)). Makes no allocation run.
    RemoveFramework(
        /// The framework's name.
        String,
    ),
    /// Activates a framework and runs the allocator over every agent.
    ActivateFramework(
        /// The framework's name.
        String,
    ),
    /// Deactivates a framework: it gets no offers until it is activated. What it holds stays
    /// its own.
    DeactivateFramework(
        /// The framework's name.
        String,
    ),
    /// Changes a framework's roles, capabilities, suppressed roles or
    /// `min_allocatable_resources`. Makes no allocation run. Refused when `roles` is given
    /// empty.
    UpdateFramework {
        /// The framework's name.
        framework: String,
        /// Its new roles (the whole list, at least one); `None`: unchanged.
        roles: Option<Vec<String>>,
        /// Its new capabilities; `None`: unchanged.
        capabilities: Option<FrameworkCapabilities>,
        /// The roles it is suppressed in (the whole list); `None`: unchanged.
        suppressed_roles: Option<Vec<String>>,
        /// Its new `min_allocatable_resources` (the whole list); `None`: unchanged.
        min_allocatable: Option<Vec<RoleMinAllocatable>>,
    },
    /// What a framework gives back on an agent. Without a role, every role it holds there;
    /// without resources (`"all"`), all it holds (per role), otherwise the first role (in
    /// name order) holding them. Its tasks there that no longer fit in what it still holds
    /// end ([`Event::TaskEnded`](super::Event::TaskEnded) with [`TaskEnd::ResourcesRecovered`](super::TaskEnd::ResourcesRecovered); the
    /// first launched keep theirs). Makes no allocation run.
    ///
    /// Refused when `resources` are given and no role in question holds them all. Giving back
    /// per role is one allocator call each: when a later one is refused, the roles before it
    /// are given back already.
    RecoverResources {
        /// The framework's name.
        framework: String,
        /// The agent's name.
        agent: String,
        /// What it gives back; `None`: all it holds there (in the roles in question).
        resources: Option<Resources>,
        /// The role it gives back from; `None`: any role it holds there.
        role: Option<String>,
        /// The refuse filter: for this many seconds the framework is not offered these
        /// resources on this agent again. `None`: the allocator's default filter.
        refuse_seconds: Option<f64>,
    },
    /// A framework suppresses its offers: it gets none in these roles until it revives them.
    /// Makes no allocation run.
    SuppressOffers(
        /// The framework's name.
        String,
        /// The roles; empty: all its roles.
        Vec<String>,
    ),
    /// A framework revives its offers in these roles (the built-in allocator drops its refuse
    /// filters in them, and its inverse-offer filters). From a client, runs the allocator over
    /// every agent; as a [derived](Origin::Derived) command, the next periodic run serves it.
    ReviveOffers(
        /// The framework's name.
        String,
        /// The roles; empty: all its roles.
        Vec<String>,
    ),
    /// Sets a role's quota (guarantees and limits), replacing the one it had. Makes no
    /// allocation run.
    UpdateQuota(
        /// The role; it must pass Mesos's role rules.
        String,
        /// Its quota.
        Quota,
    ),
    /// Sets role weights; roles not named keep theirs. Makes no allocation run.
    UpdateWeights(
        /// (role, weight) pairs; each role must pass Mesos's role rules.
        Vec<(String, f64)>,
    ),
    /// Sets the whitelist: only agents whose hostname is on it are offered. Makes no
    /// allocation run.
    UpdateWhitelist(
        /// The hostnames; `None` clears the whitelist (every agent may be offered).
        Option<Vec<String>>,
    ),
    /// Schedules or cancels an agent's maintenance, and runs the allocator over it: the
    /// frameworks holding resources there get inverse offers ([`Event::InverseOffer`](super::Event::InverseOffer)).
    UpdateUnavailability(
        /// The agent's name.
        String,
        /// The maintenance window; `None` cancels it.
        Option<Unavailability>,
    ),
    /// A framework's answer to an inverse offer for an agent, passed to the allocator; the
    /// master records nothing of it. Makes no allocation run.
    UpdateInverseOffer {
        /// The agent's name.
        agent: String,
        /// The framework's name.
        framework: String,
        /// Its answer (accepted or declined); `None`: no answer.
        status: Option<InverseOfferStatus>,
        /// The refuse filter: for this many seconds the framework gets no inverse offer for
        /// this agent. `None`: none.
        refuse_seconds: Option<f64>,
    },
    /// Applies operations (reserve, unreserve, create or destroy a volume, …) to what a
    /// framework holds on an agent under a role; the agent's total changes with what they
    /// convert. Makes no allocation run. Refused, before the allocator is called, when an
    /// operation is malformed or does not apply to what the framework holds there.
    UpdateAllocation {
        /// The framework's name.
        framework: String,
        /// The agent's name.
        agent: String,
        /// The role the resources are allocated to.
        role: String,
        /// The operations, in order.
        operations: Vec<Operation>,
    },
    /// Applies operations to an agent's unallocated resources (an operator's reservation or
    /// volume); the agent's total changes with what they convert. Makes no allocation run.
    /// Refused, before the allocator is called, when an operation is malformed (a reservation
    /// without a role, a volume without an id, …).
    UpdateAvailable {
        /// The agent's name.
        agent: String,
        /// The operations, in order.
        operations: Vec<Operation>,
    },
    /// Recovery after a master failover: how many agents are expected back (the allocator
    /// may hold back offers until they are) and the quotas to restore, which the master
    /// records as [`UpdateQuota`](Command::UpdateQuota) would.
    Recover {
        /// The agents expected to come back.
        expected_agents: u32,
        /// The quotas to restore.
        quotas: Vec<RoleQuota>,
    },
    /// Pauses allocation: runs make no offers until [`Resume`](Command::Resume). The clock
    /// and its periodic runs go on.
    Pause,
    /// Resumes allocation; offers come from the next allocation run (this command makes
    /// none).
    Resume,
    /// Switches the built-in allocator's sorters, each rebuilt from the allocator's records
    /// (nothing allocated is lost). Makes no allocation run. Refused when the allocator is a
    /// module, or the built-in runs in the worker of isolated sorter modules, and when a name
    /// is neither a loaded sorter module nor the built-in `drf`.
    SetSorters {
        /// The role sorter's name; `None`: unchanged.
        role_sorter: Option<String>,
        /// The framework sorter's name (the same for every role); `None`: unchanged.
        framework_sorter: Option<String>,
    },
    /// A framework's answer to `offer` (an [`Event::Offer`](super::Event::Offer) it got): it launches `tasks`
    /// (resources and an optional duration, in seconds) on parts of it, one after another,
    /// and declines the rest with a refuse filter of `refuse_seconds`. Nothing changes when
    /// a task does not fit. Journaled as the `recover_resources` of the declined part.
    ///
    /// Answers [`Applied::Launched`] with the tasks' ids, in order; each launch is an
    /// [`Event::TaskLaunched`](super::Event::TaskLaunched), and a task with a duration ends
    /// ([`TaskEnd::Finished`](super::TaskEnd::Finished)) when [`Master::advance`] reaches its end, its
    /// resources going back to the allocator. An interrupted master
    /// ([`Master::set_interrupt`]) launches the tasks so far and declines the rest. The offer
    /// must be one the master made and the framework has not answered yet: the master checks
    /// only that the tasks fit in it. The tasks are recorded before the allocator is told,
    /// so a refusal by the allocator then leaves them launched.
    AnswerOffer {
        /// The offer answered, as the master emitted it.
        offer: Arc<Allocation>,
        /// The tasks to launch on it: (resources, seconds it runs or `None` for ever).
        tasks: Vec<(Resources, Option<f64>)>,
        /// The refuse filter for what is declined: for this many seconds the framework is
        /// not offered it on this agent again.
        refuse_seconds: f64,
    },
    /// A framework kills one of its running tasks: its resources go back to the allocator
    /// (with no refuse filter) and the task ends ([`Event::TaskEnded`](super::Event::TaskEnded) with
    /// [`TaskEnd::Killed`](super::TaskEnd::Killed)). Answers [`Applied::Killed`]: `false`, and
    /// nothing changes, when no such task runs. Journaled as the `recover_resources` of the
    /// task's resources.
    KillTask {
        /// The framework, by its handle.
        framework: FrameworkId,
        /// The task's id, as [`Event::TaskLaunched`](super::Event::TaskLaunched) gave it.
        task: u64,
    },
    /// A framework states its demand (Mesos's `REQUEST`), replacing what it stated before (an
    /// empty list withdraws it); passed to the allocator's
    /// [`request`](allocator_api::Allocator::request) after the host's checks (a request
    /// without a role gets the framework's first role; a role it is not subscribed to or an
    /// invalid request refuses the call). The master records nothing. Not journaled: the
    /// clients that state requests (simulated frameworks, the scheduler API) state them again
    /// when replayed or restarted (the built-in allocator ignores them, as Mesos's does).
    RequestResources {
        /// The framework's name.
        framework: String,
        /// What it asks for: tasks of a shape, how many, under which role, all or nothing
        /// or not.
        requests: Vec<Request>,
    },
}

impl Command {
    /// An agent with `resources` and nothing else: no hostname (its name is used), the
    /// default capabilities, no attributes, nothing used, available. Set the other fields of
    /// [`Command::AddAgent`] to say more.
    pub fn add_agent(name: &str, resources: Resources) -> Command {
        Command::AddAgent {
            agent: name.to_owned(),
            resources,
            hostname: None,
            capabilities: None,
            attributes: vec![],
            used: vec![],
            unavailability: None,
        }
    }

    /// An active framework in `roles` with the `MULTI_ROLE` capability, holding nothing. Set the other fields of [`Command::AddFramework`] to say more.
    pub fn add_framework(name: &str, roles: &[&str]) -> Command {
        Command::AddFramework {
            framework: name.to_owned(),
            roles: roles.iter().map(|r| (*r).to_owned()).collect(),
            capabilities: FrameworkCapabilities::MULTI_ROLE,
            active: true,
            used: vec![],
            suppressed_roles: vec![],
            min_allocatable: vec![],
        }
    }
}

/// Who applies a command, which decides whether the journal keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A client whose commands a replay must make again: scenario events, the operator and
    /// scheduler APIs, an embedder. Journaled.
    Client,
    /// A client's own reaction to the master's events, which a replay of the journal makes
    /// again by itself (a simulation's frameworks answering their offers, stating their
    /// demand, suppressing or reviving them): not journaled, nor the ends of the tasks it
    /// launches. A revive from it waits for the next periodic run (a reaction between runs
    /// is served by the next one) instead of running the allocator at once.
    Derived,
}

/// What applying a command produced, for the client that made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// Done; nothing to hand back.
    Done,
    /// The agent added.
    Agent(AgentId),
    /// The framework added.
    Framework(FrameworkId),
    /// The tasks an offer's answer launched, in order.
    Launched(Vec<u64>),
    /// Whether the task to kill was running.
    Killed(bool),
}

/// Something that applies commands to a master: the master itself, or a wiring that also
/// delivers the master's events to its observers and clients after each command. Clients that
/// make several commands in a row (the operator API) take one, so that each command's
/// consequences are delivered before the next, as for scenario events.
pub trait Apply<'r> {
    /// The master, for queries.
    fn master(&self) -> &Master<'r>;
    /// Applies one command ([`Master::apply`]).
    fn apply(&mut self, command: &Command) -> Result<Applied, ApplyError>;
}

impl<'r> Apply<'r> for Master<'r> {
    fn master(&self) -> &Master<'r> {
        self
    }

    fn apply(&mut self, command: &Command) -> Result<Applied, ApplyError> {
        Master::apply(self, command)
    }
}

/// Mesos's role rules ([`allocator_api::roles::validate`]) for the roles a command names, so
/// that no client (the operator API, an embedder) gets a role in that a scenario could not;
/// and no quota on the default role `*`, as Mesos.
fn check_roles(command: &Command) -> Result<(), String> {
    let roles: Vec<&str> = match command {
        Command::AddFramework { roles, .. } => roles.iter().map(String::as_str).collect(),
        Command::UpdateFramework { roles: Some(roles), .. } => {
            roles.iter().map(String::as_str).collect()
        }
        Command::UpdateWeights(weights) => weights.iter().map(|(r, _)| r.as_str()).collect(),
        Command::UpdateQuota(role, _) => vec![role.as_str()],
        _ => return Ok(()),
    };
    for role in roles {
        allocator_api::roles::validate(role).map_err(|e| e.to_string())?;
    }
    if let Command::UpdateQuota(role, _) = command
        && role == "*"
    {
        return Err("quota is not allowed on the default role '*' (Mesos refuses it)".into());
    }
    Ok(())
}

fn rstrings(list: &[String]) -> Vec<RString> {
    list.iter().map(|r| r.as_str().into()).collect()
}

impl Master<'_> {
    /// Applies `command` for a [client](Origin::Client): the one write path. See the
    /// [module documentation](self). On an error the master's records are unchanged (the
    /// allocator refused before anything was recorded) and nothing is journaled.
    pub fn apply(&mut self, command: &Command) -> Result<Applied, ApplyError> {
        self.apply_from(Origin::Client, command)
    }

    /// Applies `command` made by `origin` (which decides whether it is journaled).
    pub fn apply_from(&mut self, origin: Origin, command: &Command) -> Result<Applied, ApplyError> {
        self.apply_journaled(origin, command, None)
    }

    /// Applies `command` for a client, as [`apply`](Self::apply) does, but journals `note`
    /// (the client's own, fuller record of what it did; see [`journal::Note`](super::journal::Note))
    /// in its place. Nothing is journaled when the command is refused.
    pub fn apply_noted(&mut self, command: &Command, note: Note) -> Result<Applied, ApplyError> {
        self.apply_journaled(Origin::Client, command, Some(note))
    }

    /// Journals `note` at the current virtual time (when the journal is on): something a
    /// client did that the master does not see, and a replay must do again.
    pub fn note(&mut self, note: Note) {
        self.journal.noted(self.now, note);
    }

    fn apply_journaled(
        &mut self,
        origin: Origin,
        command: &Command,
        note: Option<Note>,
    ) -> Result<Applied, ApplyError> {
        if let Some(reason) = &self.stopped {
            return Err(ApplyError::Stopped(reason.clone()));
        }
        let journal = origin == Origin::Client && self.journal.is_on();
        // An answer is journaled as what it amounts to, from what the master knew before it.
        let killed = match command {
            Command::KillTask { .. } if journal && note.is_none() => {
                self.journal_answer(command, 0)
            }
            _ => None,
        };
        check_roles(command).map_err(ApplyError::Invalid)?;
        self.allocator_failed = false;
        self.allocator_unsupported = false;
        let applied = self.execute(origin, command).map_err(|message| self.apply_error(message))?;
        if let (true, Some(note)) = (journal, note) {
            self.journal.noted(self.now, note);
        } else if journal {
            match (command, &applied) {
                (Command::AnswerOffer { .. }, Applied::Launched(ids)) => {
                    if let Some(recover) = self.journal_answer(command, ids.len()) {
                        self.journal.applied(self.now, recover);
                    }
                }
                (Command::AnswerOffer { .. }, _) => {}
                (Command::KillTask { .. }, _) => {
                    if let (Some(recover), Applied::Killed(true)) = (killed, &applied) {
                        self.journal.applied(self.now, recover);
                    }
                }
                (Command::RequestResources { .. }, _) => {}
                _ => self.journal.applied(self.now, command.clone()),
            }
        }
        Ok(applied)
    }

    /// Tells why `execute` failed: the master stopped, the allocator refused or failed a call,
    /// or else the command itself was at fault.
    fn apply_error(&self, message: String) -> ApplyError {
        if self.stopped.is_some() {
            ApplyError::Stopped(message)
        } else if self.allocator_unsupported {
            ApplyError::Unsupported(message)
        } else if self.allocator_failed {
            ApplyError::Refused(message)
        } else {
            ApplyError::Invalid(message)
        }
    }

    /// What an answer to an offer (of which `launched` tasks were launched) or a task kill
    /// amounts to in the journal: the `recover_resources` of what goes back (with the answer's
    /// filter); `None` when nothing does. A kill is translated before it is applied (the task
    /// is gone after), an answer after.
    fn journal_answer(&self, command: &Command, launched: usize) -> Option<Command> {
        let (framework, agent, role, resources, refuse_seconds) = match command {
            Command::AnswerOffer { offer, tasks, refuse_seconds } => {
                let mut rest = offer.resources.clone();
                for (r, _) in &tasks[..launched.min(tasks.len())] {
                    rest.subtract(r);
                }
                (offer.framework, offer.agent, offer.role.to_string(), rest, Some(*refuse_seconds))
            }
            Command::KillTask { framework, task } => {
                let t = self.task(*framework, *task)?;
                (*framework, t.agent, t.role.clone(), t.resources.clone(), None)
            }
            _ => return None,
        };
        if resources.is_empty() {
            return None;
        }
        Some(Command::RecoverResources {
            framework: self.framework_name(framework).to_owned(),
            agent: self.agent_name(agent).to_owned(),
            resources: Some(resources),
            role: Some(role),
            refuse_seconds,
        })
    }

    /// Carries out one command.
    fn execute(&mut self, origin: Origin, command: &Command) -> Result<Applied, String> {
        use Command as C;
        let done = |r: Result<(), String>| r.map(|()| Applied::Done);
        match command {
            C::AddAgent {
                agent,
                resources,
                hostname,
                capabilities,
                attributes,
                used,
                unavailability,
            } => self
                .add_agent(NewAgent {
                    name: agent,
                    resources,
                    hostname: hostname.as_deref(),
                    capabilities: *capabilities,
                    attributes,
                    used,
                    unavailability: *unavailability,
                })
                .map(Applied::Agent),
            C::RemoveAgent(name) => done(self.remove_agent(self.agent_id(name)?)),
            C::ActivateAgent(name) => done(self.activate_agent(self.agent_id(name)?)),
            C::DeactivateAgent(name) => done(self.deactivate_agent(self.agent_id(name)?)),
            C::UpdateAgent { agent, resources, capabilities, attributes } => {
                done(self.update_agent(
                    self.agent_id(agent)?,
                    resources.as_ref(),
                    *capabilities,
                    attributes.as_deref(),
                ))
            }
            C::AddResourceProvider { agent, resources, used } => {
                done(self.add_resource_provider(self.agent_id(agent)?, resources, used))
            }
            C::AddFramework {
                framework,
                roles,
                capabilities,
                active,
                used,
                suppressed_roles,
                min_allocatable,
            } => self
                .add_framework(NewFramework {
                    name: framework,
                    roles,
                    capabilities: *capabilities,
                    active: *active,
                    used,
                    suppressed_roles,
                    min_allocatable,
                })
                .map(Applied::Framework),
            C::RemoveFramework(name) => done(self.remove_framework(self.framework_id(name)?)),
            C::ActivateFramework(name) => done(self.activate_framework(self.framework_id(name)?)),
            C::DeactivateFramework(name) => {
                done(self.deactivate_framework(self.framework_id(name)?))
            }
            C::UpdateFramework {
                framework,
                roles,
                capabilities,
                suppressed_roles,
                min_allocatable,
            } => done(self.update_framework(
                self.framework_id(framework)?,
                roles.as_deref(),
                *capabilities,
                suppressed_roles.as_deref(),
                min_allocatable.as_deref(),
            )),
            C::RecoverResources { framework, agent, resources, role, refuse_seconds } => {
                done(self.recover_named(
                    framework,
                    agent,
                    resources.as_ref(),
                    role.as_deref(),
                    *refuse_seconds,
                ))
            }
            C::SuppressOffers(name, roles) => {
                done(self.suppress_offers(self.framework_id(name)?, &rstrings(roles)))
            }
            C::ReviveOffers(name, roles) => {
                // A derived revive waits for the next periodic run.
                let now = origin == Origin::Client;
                done(self.revive_offers(self.framework_id(name)?, &rstrings(roles), now))
            }
            C::UpdateQuota(role, quota) => done(self.update_quota(role, quota)),
            C::UpdateWeights(weights) => done(self.update_weights(weights)),
            C::UpdateWhitelist(hosts) => done(self.update_whitelist(hosts.as_deref())),
            C::UpdateUnavailability(agent, u) => {
                done(self.update_unavailability(self.agent_id(agent)?, *u))
            }
            C::UpdateInverseOffer { agent, framework, status, refuse_seconds } => {
                done(self.update_inverse_offer(
                    self.agent_id(agent)?,
                    self.framework_id(framework)?,
                    *status,
                    *refuse_seconds,
                ))
            }
            C::UpdateAllocation { framework, agent, role, operations } => {
                done(self.update_allocation(
                    self.framework_id(framework)?,
                    self.agent_id(agent)?,
                    role,
                    operations,
                ))
            }
            C::UpdateAvailable { agent, operations } => {
                done(self.update_available(self.agent_id(agent)?, operations))
            }
            C::Recover { expected_agents, quotas } => done(self.recover(*expected_agents, quotas)),
            C::Pause => done(self.pause()),
            C::Resume => done(self.resume()),
            C::SetSorters { role_sorter, framework_sorter } => {
                done(self.set_sorters(role_sorter.as_deref(), framework_sorter.as_deref()))
            }
            C::AnswerOffer { offer, tasks, refuse_seconds } => {
                let journaled = origin == Origin::Client;
                self.answer_offer(offer, tasks, *refuse_seconds, journaled).map(Applied::Launched)
            }
            C::KillTask { framework, task } => {
                self.kill_task(*framework, *task).map(Applied::Killed)
            }
            C::RequestResources { framework, requests } => {
                done(self.request(self.framework_id(framework)?, requests))
            }
        }
    }

    /// `recover_resources` by name: what a framework gives back on an agent. Without a role,
    /// every role it holds there; without resources, all it holds (per role), otherwise the
    /// first role (in name order) holding them.
    fn recover_named(
        &mut self,
        framework: &str,
        agent: &str,
        resources: Option<&Resources>,
        role: Option<&str>,
        refuse_seconds: Option<f64>,
    ) -> Result<(), String> {
        let fw = self.framework_id(framework)?;
        let agent_id = self.agent_id(agent)?;
        let held = self.held_on(fw, agent_id);
        let held_in = |r: &str| held.get(r).cloned().unwrap_or_default();
        let roles: Vec<String> = match role {
            Some(r) => vec![r.to_owned()],
            None => held.keys().cloned().collect(),
        };
        let mut targets: Vec<(String, Resources)> = Vec::new();
        match resources {
            None => {
                for r in roles {
                    let h = held_in(&r);
                    if !h.is_empty() {
                        targets.push((r, h));
                    }
                }
            }
            Some(res) => {
                let r = roles.into_iter().find(|r| held_in(r).contains(res)).ok_or_else(|| {
                    format!(
                        "framework '{framework}' does not hold {res} on agent '{agent}'{}",
                        role.map(|r| format!(" under role '{r}'")).unwrap_or_default()
                    )
                })?;
                targets.push((r, res.clone()));
            }
        }
        self.recover_resources(fw, agent_id, &targets, refuse_seconds)
    }
}
