//! Commands: every change to the cluster, as data, and [`Master::apply`], the one write path.
//!
//! Whatever drives a master — scenario events, simulated frameworks, frameworks over the
//! scheduler API, the operator API, a plan's replay, an embedder — builds a [`Command`] and
//! hands it to [`Master::apply`]. The master checks it, carries it out (the allocator first:
//! nothing is recorded when the allocator refuses), and notes it in its
//! [journal](super::journal) when the journal is on. Commands name agents and frameworks by
//! name, as scenario files do, except the answers to what the master itself issued (an offer,
//! a task), which name it by its handle; the journal keeps such an answer as the
//! `recover_resources` it amounts to.

use std::sync::Arc;

use allocator_api::{
    AgentCapabilities, AgentId, Allocation, Attribute, FrameworkCapabilities, FrameworkId,
    InverseOfferStatus, Operation, Quota, RString, Resources, RoleMinAllocatable, RoleQuota,
    Unavailability,
};

use super::agents::NewAgent;
use super::frameworks::NewFramework;
use super::workload::{Submission, TaskSpec};
use super::{Event, Master};

/// Resources frameworks already use on an agent when it is added: (framework name, role —
/// `None` for the framework's first role, which needs the framework known — resources).
pub type AgentUsed = Vec<(String, Option<String>, Resources)>;

/// One change to the cluster. See the [module documentation](self).
///
/// The variants that a scenario file can hold (SPEC section 4.1) carry the same fields as
/// the scenario event of the same name; [`AnswerOffer`](Command::AnswerOffer),
/// [`KillTask`](Command::KillTask) and [`RequestResources`](Command::RequestResources) come
/// from frameworks only.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Command {
    AddAgent {
        agent: String,
        resources: Resources,
        hostname: Option<String>,
        capabilities: Option<AgentCapabilities>,
        attributes: Vec<Attribute>,
        used: AgentUsed,
        unavailability: Option<Unavailability>,
    },
    RemoveAgent(String),
    ActivateAgent(String),
    DeactivateAgent(String),
    UpdateAgent {
        agent: String,
        resources: Option<Resources>,
        capabilities: Option<AgentCapabilities>,
        attributes: Option<Vec<Attribute>>,
    },
    AddResourceProvider {
        agent: String,
        resources: Resources,
        used: AgentUsed,
    },
    /// A framework; with `tasks`, one the master's simulated frameworks play
    /// ([`Event::FrameworkPlayed`]).
    AddFramework {
        framework: String,
        roles: Vec<String>,
        capabilities: FrameworkCapabilities,
        active: bool,
        used: Vec<(String, Resources)>,
        suppressed_roles: Vec<String>,
        min_allocatable: Vec<RoleMinAllocatable>,
        tasks: Option<TaskSpec>,
    },
    RemoveFramework(String),
    ActivateFramework(String),
    DeactivateFramework(String),
    UpdateFramework {
        framework: String,
        roles: Option<Vec<String>>,
        capabilities: Option<FrameworkCapabilities>,
        suppressed_roles: Option<Vec<String>>,
        min_allocatable: Option<Vec<RoleMinAllocatable>>,
    },
    /// What a framework gives back on an agent. Without a role, every role it holds there;
    /// without resources (`"all"`), all it holds (per role), otherwise the first role (in
    /// name order) holding them.
    RecoverResources {
        framework: String,
        agent: String,
        resources: Option<Resources>,
        role: Option<String>,
        refuse_seconds: Option<f64>,
    },
    /// A framework suppresses its offers in these roles (empty: all its roles).
    SuppressOffers(String, Vec<String>),
    /// A framework revives its offers in these roles (empty: all its roles), and the
    /// allocator runs over every agent.
    ReviveOffers(String, Vec<String>),
    UpdateQuota(String, Quota),
    UpdateWeights(Vec<(String, f64)>),
    UpdateWhitelist(Option<Vec<String>>),
    UpdateUnavailability(String, Option<Unavailability>),
    UpdateInverseOffer {
        agent: String,
        framework: String,
        status: Option<InverseOfferStatus>,
        refuse_seconds: Option<f64>,
    },
    UpdateAllocation {
        framework: String,
        agent: String,
        role: String,
        operations: Vec<Operation>,
    },
    UpdateAvailable {
        agent: String,
        operations: Vec<Operation>,
    },
    Recover {
        expected_agents: u32,
        quotas: Vec<RoleQuota>,
    },
    Pause,
    Resume,
    SetSorters {
        role_sorter: Option<String>,
        framework_sorter: Option<String>,
    },
    /// A task for a simulated framework's queue ([`Event::TaskSubmitted`]).
    SubmitTask {
        framework: String,
        task: Submission,
    },
    /// A framework's answer to `offer` (an [`Event::Offer`] it got): it launches `tasks`
    /// (resources and an optional duration, in seconds) on parts of it, one after another,
    /// and declines the rest with a refuse filter of `refuse_seconds`. Nothing changes when
    /// a task does not fit. Journaled as the `recover_resources` of the declined part.
    AnswerOffer {
        offer: Arc<Allocation>,
        tasks: Vec<(Resources, Option<f64>)>,
        refuse_seconds: f64,
    },
    /// A framework kills one of its running tasks: its resources go back to the allocator.
    /// Journaled as the `recover_resources` of the task's resources.
    KillTask {
        framework: FrameworkId,
        task: u64,
    },
    /// A framework asks for resources (Mesos's `REQUEST`), passed to the allocator. Not
    /// journaled: no scenario event carries it (the built-in allocator ignores it, as
    /// Mesos's does).
    RequestResources {
        framework: String,
        requests: Vec<Resources>,
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

    /// An active framework in `roles` with the `MULTI_ROLE` capability, holding nothing, not
    /// simulated. Set the other fields of [`Command::AddFramework`] to say more.
    pub fn add_framework(name: &str, roles: &[&str]) -> Command {
        Command::AddFramework {
            framework: name.to_owned(),
            roles: roles.iter().map(|r| (*r).to_owned()).collect(),
            capabilities: FrameworkCapabilities::MULTI_ROLE,
            active: true,
            used: vec![],
            suppressed_roles: vec![],
            min_allocatable: vec![],
            tasks: None,
        }
    }
}

/// Who applies a command, which decides whether the journal keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A client whose commands a replay must make again: scenario events, the operator and
    /// scheduler APIs, an embedder. Journaled.
    Client,
    /// The simulated frameworks answering their offers and suppressing or reviving them: a
    /// replay's own simulated frameworks do the same again, so these are not journaled (nor
    /// the ends of the tasks they launch).
    Simulated,
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
    fn apply(&mut self, command: &Command) -> Result<Applied, String>;
}

impl<'r> Apply<'r> for Master<'r> {
    fn master(&self) -> &Master<'r> {
        self
    }

    fn apply(&mut self, command: &Command) -> Result<Applied, String> {
        Master::apply(self, command)
    }
}

/// Mesos's role rules ([`allocator_api::roles::validate`]) for the roles a command names, so
/// that no client (the operator API, an embedder) gets a role in that a scenario could not.
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
    Ok(())
}

fn rstrings(list: &[String]) -> Vec<RString> {
    list.iter().map(|r| r.as_str().into()).collect()
}

impl Master<'_> {
    /// Applies `command` for a [client](Origin::Client): the one write path. See the
    /// [module documentation](self). On an error the master's records are unchanged (the
    /// allocator refused before anything was recorded) and nothing is journaled.
    pub fn apply(&mut self, command: &Command) -> Result<Applied, String> {
        self.apply_from(Origin::Client, command)
    }

    /// Applies `command` made by `origin` (which decides whether it is journaled).
    pub fn apply_from(&mut self, origin: Origin, command: &Command) -> Result<Applied, String> {
        let journal = origin == Origin::Client && self.journal.is_on();
        // An answer is journaled as what it amounts to, from what the master knew before it.
        let killed = match command {
            Command::KillTask { .. } if journal => self.journal_answer(command, 0),
            _ => None,
        };
        check_roles(command)?;
        let applied = self.execute(origin, command)?;
        if journal {
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
                tasks,
            } => {
                // The simulated frameworks learn of it before any offer it gets.
                let mark = self.outbox.len();
                let id = self.add_framework(NewFramework {
                    name: framework,
                    roles,
                    capabilities: *capabilities,
                    active: *active,
                    used,
                    suppressed_roles,
                    min_allocatable,
                })?;
                if let Some(spec) = tasks {
                    self.simulated.insert(id);
                    let event = Event::FrameworkPlayed { framework: id, tasks: spec.clone() };
                    self.outbox.insert(mark, event);
                }
                Ok(Applied::Framework(id))
            }
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
                // A simulated framework revives for the next periodic run (its task waits).
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
            C::SubmitTask { framework, task } => {
                let id = self.framework_id(framework)?;
                if !self.simulated.contains(&id) {
                    return Err(format!(
                        "framework '{framework}' is not simulated (add it with \"tasks\")"
                    ));
                }
                self.outbox.push(Event::TaskSubmitted { framework: id, task: task.clone() });
                Ok(Applied::Done)
            }
            C::AnswerOffer { offer, tasks, refuse_seconds } => {
                let journaled = origin == Origin::Client;
                self.answer_offer(offer, tasks, *refuse_seconds, journaled).map(Applied::Launched)
            }
            C::KillTask { framework, task } => {
                self.kill_task(*framework, *task).map(Applied::Killed)
            }
            C::RequestResources { framework, requests } => {
                done(self.request_resources(self.framework_id(framework)?, requests))
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
