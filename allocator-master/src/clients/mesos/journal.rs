//! What the connected frameworks applied to the master, as scenario events (SPEC 6.3), for
//! `serve --record` and for plans.
//!
//! Every master command the scheduler API client makes goes through one of the methods here,
//! which makes it and, when the journal is kept, notes it as the scenario event that makes the
//! same command on replay: a framework subscribing is `add_framework` (inactive, then
//! `activate_framework`), a declined offer or the unused part of an accepted one is
//! `recover_resources` with the call's filter, a task that finishes or is killed is
//! `recover_resources` of its resources without a filter (a finish placed before the
//! allocation run of its instant, where the master applies it), `RESERVE` and its kin are
//! `update_allocation`, and so on. A launch needs no event: what a framework does not give
//! back stays allocated to it, in the replay as live.
//!
//! Not recorded: `REQUEST` (no scenario event carries it; the built-in allocator ignores it,
//! as Mesos's does), and the allocator's `transition_offered_to_allocated` notice of a launch.

use allocator_api::{AgentId as ApiAgentId, Allocation, FrameworkId as ApiFrameworkId, Resources};

use super::MesosFrameworks;
use crate::allocator_scenario::Op;
use crate::master::Master;
use crate::recording::Applied;

impl MesosFrameworks {
    /// Keeps, from now on, the scenario event of each master command made
    /// ([`take_journal`](Self::take_journal) hands them over).
    pub fn keep_journal(&mut self) {
        self.journal.get_or_insert_with(Vec::new);
    }

    /// The master commands made since the last call, as scenario events, in order.
    pub fn take_journal(&mut self) -> Vec<Applied> {
        self.journal.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Notes `op` (made only when the journal is kept) as applied now.
    pub(super) fn journal(&mut self, master: &Master<'_>, op: impl FnOnce() -> Op) {
        if let Some(journal) = &mut self.journal {
            journal.push(Applied { at: master.now(), before_run: false, op: op() });
        }
    }

    /// A framework's answer to an offer ([`Master::answer_offer`]): the tasks launched stay
    /// allocated, the rest goes back with `refuse_seconds`.
    pub(super) fn answer(
        &mut self,
        fw: &str,
        master: &mut Master<'_>,
        offer: &Allocation,
        tasks: &[(Resources, Option<f64>)],
        refuse_seconds: f64,
    ) -> Result<Vec<u64>, String> {
        let ids = master.answer_offer(offer, tasks, refuse_seconds)?;
        if self.journal.is_some() {
            let mut rest = offer.resources.clone();
            for (r, _) in tasks {
                rest.subtract(r);
            }
            if !rest.is_empty() {
                let role = offer.role.as_str();
                self.journal_recover(master, fw, offer.agent, role, rest, Some(refuse_seconds));
            }
        }
        Ok(ids)
    }

    /// Resources a framework holds go back to the allocator ([`Master::recover_resources`]).
    pub(super) fn recover(
        &mut self,
        fw: &str,
        master: &mut Master<'_>,
        offer: &Allocation,
        refuse_seconds: Option<f64>,
    ) -> Result<(), String> {
        let targets = [(offer.role.to_string(), offer.resources.clone())];
        master.recover_resources(offer.framework, offer.agent, &targets, refuse_seconds)?;
        let (role, resources) = (offer.role.as_str(), offer.resources.clone());
        self.journal_recover(master, fw, offer.agent, role, resources, refuse_seconds);
        Ok(())
    }

    /// A running task of `fw` is killed ([`Master::kill_task`]).
    pub(super) fn kill_task(
        &mut self,
        fw: &str,
        master: &mut Master<'_>,
        id: ApiFrameworkId,
        task: u64,
    ) -> Result<(), String> {
        let held = master.task(id, task).map(|t| (t.agent, t.role.clone(), t.resources.clone()));
        if master.kill_task(id, task)?
            && let Some((agent, role, resources)) = held
        {
            self.journal_recover(master, fw, agent, &role, resources, None);
        }
        Ok(())
    }

    /// A task of `fw` finished in the master (which gave its resources back to the
    /// allocator before the allocation run of the same instant).
    pub(super) fn journal_finished(
        &mut self,
        fw: &str,
        master: &Master<'_>,
        agent: &str,
        (role, resources): (String, Resources),
    ) {
        let Ok(agent) = master.agent_id(agent) else { return };
        self.journal_recover(master, fw, agent, &role, resources, None);
        if let Some(last) = self.journal.as_mut().and_then(|j| j.last_mut()) {
            last.before_run = true;
        }
    }

    /// Notes `recover_resources` of `resources` held by `fw` in `role` on `agent`.
    fn journal_recover(
        &mut self,
        master: &Master<'_>,
        fw: &str,
        agent: ApiAgentId,
        role: &str,
        resources: Resources,
        refuse_seconds: Option<f64>,
    ) {
        let Some(journal) = &mut self.journal else { return };
        journal.push(Applied {
            at: master.now(),
            before_run: false,
            op: Op::RecoverResources {
                framework: fw.to_owned(),
                agent: master.agent_name(agent).to_owned(),
                resources: Some(resources),
                role: Some(role.to_owned()),
                refuse_seconds,
            },
        });
    }
}
