//! Quota (R18–R22): the one quota check, guarantees and limits, consumption, and the headroom
//! held back for unsatisfied guarantees.

use super::quota_arith::{add_quota_scalars, top_level};
use super::*;

/// Why a quota is refused. The master side (the scenario parser, hence the live master's
/// `POST /quota`) and the built-in allocator apply the same [`check_quota`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QuotaError {
    /// Quota on a nested role (`a/x`): Mesos's master refuses it too (MESOS-7402), and
    /// enforcing only top-level quotas would accept a limit and ignore it.
    #[error(
        "quota on nested role '{0}' is not supported: only top-level roles take quota, as in Mesos"
    )]
    NestedRole(String),
    /// A guarantee above the limit of the same resource.
    #[error("role '{role}': guarantee {name}:{guarantee} is above its limit {limit}")]
    GuaranteeAboveLimit {
        /// The role.
        role: String,
        /// The resource.
        name: String,
        /// Its guarantee.
        guarantee: allocator_api::Scalar,
        /// Its limit.
        limit: allocator_api::Scalar,
    },
}

/// Checks that `quota` may be set on `role`: a top-level role, no guarantee above its limit.
/// Removing a quota (the default quota) is checked the same way, as Mesos's master does.
pub fn check_quota(role: &str, quota: &Quota) -> std::result::Result<(), QuotaError> {
    if role.contains('/') {
        return Err(QuotaError::NestedRole(role.to_owned()));
    }
    for g in quota.guarantees.iter() {
        if quota.limits.has(&g.name) && quota.limits.get(&g.name) < g.value {
            return Err(QuotaError::GuaranteeAboveLimit {
                role: role.to_owned(),
                name: g.name.to_string(),
                guarantee: g.value,
                limit: quota.limits.get(&g.name),
            });
        }
    }
    Ok(())
}

impl HierarchicalAllocator {
    /// The role's quota limits, if it has any.
    pub(super) fn quota_limits(&self, role: &str) -> Option<&Quantities> {
        self.quotas.get(role).map(|q| &q.limits).filter(|l| !l.is_empty())
    }

    /// The quota roles' consumption and the headroom at the start of a run (R18–R20).
    pub(super) fn quota_bookkeeping(&self, run: &mut RunState) {
        for role in self.quotas.keys() {
            run.consumed.insert(role.clone(), Quantities::new());
        }
        let mut names: Vec<Name> = Vec::new();
        for agent in self.agents.values() {
            for r in agent.total.iter().filter(|r| r.is_scalar()) {
                if is_quota_resource(r) {
                    if !names.contains(&r.name) {
                        names.push(r.name);
                    }
                } else if !r.is_unreserved()
                    && let Some(c) = run.consumed.get_mut(top_level(&r.reservation))
                {
                    // Reservations count toward quota consumption whether allocated or not.
                    c.add_amount(r.name, r.value.quantity());
                }
            }
            for held in agent.allocated.iter() {
                if let Some(c) = run.consumed.get_mut(top_level(&held.role)) {
                    add_quota_scalars(c, &held.resources);
                }
            }
            add_quota_scalars(&mut run.available_headroom, &agent.free);
        }
        run.quota_names = names;
        for (role, quota) in &self.quotas {
            let unsatisfied = remaining(&quota.guarantees, &run.consumed[role]);
            run.required_headroom.add(&unsatisfied);
            if let Some(state) = self.roles.get(role).filter(|_| !role.contains('/')) {
                run.refresh_quota_status(role, state.client, quota);
            }
        }
    }

    /// Stage 1's offer (R18, R21): the agent chopped to the unsatisfied guarantee, plus the role's
    /// own reservations, non-scalars and revocable resources, plus extra scalars up to the limit
    /// and the surplus headroom; with the quantities of the part within the guarantee. `None`
    /// when no guaranteed resource fits.
    pub(super) fn guarantee_offer(
        &self,
        role: &str,
        stripped: &Resources,
        unsatisfied: &Quantities,
        run: &RunState,
    ) -> Option<(Resources, Quantities)> {
        let quota = quota_resources(stripped).scalars();
        let guarantees_offering = quota.shrink(unsatisfied, false);
        if guarantees_offering.is_empty() {
            return None;
        }
        let mut to_offer = guarantees_offering.clone();
        to_offer.add(&stripped.filter(|r| {
            !(is_quota_resource(r) && r.is_scalar()) && (r.reservation == role || r.is_unreserved())
        }));
        let mut additional = quota - &guarantees_offering;
        if let Some(limits) = self.quota_limits(role) {
            let mut used = run.consumed[role].clone();
            used.add(&guarantees_offering.scalar_quantities());
            additional = additional.shrink(&remaining(limits, &used), true);
        }
        if !run.required_headroom.is_zero() {
            additional = additional
                .shrink(&remaining(&run.available_headroom, &run.required_headroom), false);
        }
        to_offer.add(&additional);
        Some((to_offer, guarantees_offering.scalar_quantities()))
    }

    /// Stage 2's offer (R19, R20): every reservation allocatable to the role, non-scalars and
    /// revocable resources, plus unreserved non-revocable scalars up to the role's limit and, while
    /// guarantees need headroom, only from the surplus.
    pub(super) fn fair_share_offer<'a>(
        &self,
        role: &str,
        quota_role: bool,
        stripped: Cow<'a, Resources>,
        run: &RunState,
    ) -> Cow<'a, Resources> {
        let limits = if quota_role { self.quota_limits(role) } else { None };
        if limits.is_none() && run.required_headroom.is_zero() {
            return stripped;
        }
        let mut to_offer = stripped.filter(|r| !(is_quota_resource(r) && r.is_scalar()));
        let mut additional = quota_resources(&stripped).scalars();
        if let Some(limits) = limits {
            additional = additional.shrink(&remaining(limits, &run.consumed[role]), true);
        }
        if !run.required_headroom.is_zero() {
            let surplus = remaining(&run.available_headroom, &run.required_headroom);
            let held_back = additional.clone() - &additional.shrink(&surplus, false);
            if !held_back.is_empty() {
                log::debug!(
                    "holding back {held_back} from role '{role}' for unsatisfied quota guarantees"
                );
            }
            additional = additional.shrink(&surplus, false);
        }
        to_offer.add(&additional);
        Cow::Owned(to_offer)
    }
}

impl RunState {
    /// Recomputes whether quota role `role` (client `client`) still has an unsatisfied
    /// guarantee and whether it is saturated, keeping the counts in step.
    pub(super) fn refresh_quota_status(&mut self, role: &str, client: ClientId, quota: &Quota) {
        let i = client.index();
        let none = Quantities::new();
        let consumed = self.consumed.get(role).unwrap_or(&none);
        let g = &quota.guarantees;
        let unsatisfied = !g.is_empty() && g.iter().any(|q| consumed.get(&q.name) < q.value);
        if unsatisfied != self.unsatisfied[i] {
            self.unsatisfied[i] = unsatisfied;
            if unsatisfied {
                self.open_guarantees += 1;
            } else {
                self.open_guarantees -= 1;
            }
        }
        let limits = &quota.limits;
        let saturated = !limits.is_empty()
            && self.quota_names.iter().all(|n| limits.has(n) && consumed.get(n) >= limits.get(n));
        if saturated != self.saturated[i] {
            self.saturated[i] = saturated;
            if self.active[i] {
                if saturated {
                    self.open_fair -= 1;
                } else {
                    self.open_fair += 1;
                }
            }
        }
    }
}
