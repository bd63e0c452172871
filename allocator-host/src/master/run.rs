//! One allocation run: the allocator's offers pass the offer guard against the host's
//! records, go into the ledger and out as [`Event::Offer`]s; inverse offers are checked the
//! same way.

use std::sync::Arc;
use std::time::Instant;

use crate::guard::{AgentView, FrameworkView, OfferVerdict, check_inverse_offer, check_offer};
use allocator_api::{AgentId, Allocation};

use super::{Event, Master};

impl Master<'_> {
    /// Runs the allocator over `agents`; offers that pass the guard are recorded and emitted,
    /// followed by the inverse offers and an [`Event::AllocationRun`].
    pub(super) fn allocate(&mut self, agents: &[AgentId], periodic: bool) -> Result<(), String> {
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        let start = Instant::now();
        let r = self.call("allocate", |a| a.allocate(agents, periodic, &mut batch));
        let micros = start.elapsed().as_micros() as u64;
        r?;
        self.runs += 1;
        let mut offers = 0;
        let mut to_recover = Vec::new();
        for original in batch.offers.drain(..) {
            // The bad part is dropped (and given back to the allocator when it can be), logged
            // and counted.
            let Some(offer) = self.guard_offer(original, &mut to_recover) else { continue };
            self.ledger.add(offer.framework, offer.agent, &offer.role, &offer.resources);
            offers += 1;
            self.outbox.push(Event::Offer(Arc::new(offer)));
        }
        for dropped in to_recover {
            // Best effort: the allocator believes it offered these.
            let _ = self.engine.get().recover_resources(
                dropped.framework,
                dropped.agent,
                &dropped.role,
                &dropped.resources,
                None,
            );
        }
        for inv in batch.inverse_offers.drain(..) {
            self.guard_inverse_offer(inv.framework, inv.agent);
        }
        self.outbox.push(Event::AllocationRun { agents: agents.len(), offers, micros, periodic });
        self.batch = batch;
        Ok(())
    }

    /// Runs the allocator over every present agent, as an event-triggered run.
    pub(super) fn allocate_all(&mut self) -> Result<(), String> {
        let agents = self.all_agents();
        self.allocate(&agents, false)
    }

    /// Checks one offer against the host's records; returns the acceptable part (if any) and
    /// queues the dropped part of offers to known frameworks and agents for recovery.
    fn guard_offer(
        &mut self,
        offer: Allocation,
        to_recover: &mut Vec<Allocation>,
    ) -> Option<Allocation> {
        let framework = self.framework(offer.framework).map(|f| FrameworkView {
            active: f.active,
            roles: &f.info.roles,
            suppressed: &f.options.suppressed_roles,
        });
        let nothing = allocator_api::Resources::new();
        let used = self.ledger.used_ref(offer.agent).unwrap_or(&nothing);
        let agent = self.agents.get(offer.agent.index()).filter(|a| a.present).map(|a| AgentView {
            activated: a.activated,
            total: &a.total,
            used,
        });
        let module = &self.setup.allocator;
        match check_offer(&offer, framework, agent) {
            OfferVerdict::Refuse { reason, give_back } => {
                let resources = &offer.resources;
                self.guard.drop_offer(|| {
                    format!("dropping an offer from allocator '{module}' of {resources}: {reason}")
                });
                if let Some(resources) = give_back {
                    to_recover.push(Allocation { resources, ..offer });
                }
                None
            }
            OfferVerdict::Accept { offer: ok, dropped } => {
                if let Some(dropped) = dropped {
                    // Fields, not the name queries: `self.guard` is borrowed mutably below.
                    let fw = self
                        .framework_names
                        .get(offer.framework.index())
                        .map_or("?", String::as_str);
                    let agent =
                        self.agents.get(offer.agent.index()).map_or("?", |a| a.info.name.as_str());
                    let role = offer.role.as_str();
                    self.guard.drop_offer(|| {
                        format!("dropping {dropped} from an offer of allocator '{module}' to {fw} under role '{role}' on {agent}: more than is free there or reserved to a role it may not receive")
                    });
                    to_recover.push(Allocation { resources: dropped, ..offer.clone() });
                }
                (!ok.is_empty()).then_some(Allocation { resources: ok, ..offer })
            }
        }
    }

    /// Emits an inverse offer that the guard accepts: a known framework and agent, the agent
    /// has an unavailability, the framework holds something there.
    fn guard_inverse_offer(&mut self, framework: allocator_api::FrameworkId, agent: AgentId) {
        let framework_active = self.framework(framework).map(|f| f.active);
        let unavailability =
            self.agents.get(agent.index()).filter(|a| a.present).map(|a| a.unavailability);
        let holds = self.ledger.holds_any(framework, agent);
        match check_inverse_offer(framework_active, unavailability, holds) {
            Ok(unavailability) => {
                self.outbox.push(Event::InverseOffer { framework, agent, unavailability });
            }
            Err(reason) => {
                let module = &self.setup.allocator;
                self.guard.drop_offer(|| {
                    format!("dropping an inverse offer from allocator '{module}' to {framework} for {agent}: {reason}")
                });
            }
        }
    }
}
