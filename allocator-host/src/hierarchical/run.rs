//! The allocation run (reference section 3): candidate agents, the two stages, the role and
//! framework orders, the gates and filters an offer passes, and inverse offers for maintenance.

use super::*;

/// How many clients of a framework order a walk reads first; it reads twice as many each
/// time it needs more.
const FIRST_READ: usize = 8;

/// The two stages of an allocation run.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(super) enum Stage {
    /// Stage 1: quota guarantees.
    Guarantees,
    /// Stage 2: fair share up to limits.
    FairShare,
}

impl HierarchicalAllocator {
    /// Mesos's `allocatable`: the framework's per-role sets if it has them (empty: anything),
    /// else the global ones (empty: anything); true when the resources contain any one set.
    pub(super) fn allocatable(&self, fw: &Framework, role: &str, res: &Resources) -> bool {
        if res.is_empty() {
            return false;
        }
        let sets = fw
            .min_allocatable
            .get(role)
            .map_or(self.options.min_allocatable_resources.as_slice(), Vec::as_slice);
        sets.is_empty() || sets.iter().any(|q| res.contains_quantities(q))
    }

    /// Rule 3.3e: drop what the framework cannot receive (borrowing when nothing is dropped).
    pub(super) fn strip_incapable<'a>(fw: &Framework, res: &'a Resources) -> Cow<'a, Resources> {
        let shared = fw.has(FrameworkCapabilities::SHARED_RESOURCES);
        let revocable = fw.has(FrameworkCapabilities::REVOCABLE_RESOURCES);
        let refinement = fw.has(FrameworkCapabilities::RESERVATION_REFINEMENT);
        let keep = |r: &allocator_api::Resource| {
            (shared || !r.is_shared())
                && (revocable || !r.is_revocable())
                && (refinement || !r.is_refined_reservation())
        };
        if res.iter().all(keep) { Cow::Borrowed(res) } else { Cow::Owned(res.filter(keep)) }
    }

    pub(super) fn check_recovery(&mut self) {
        if let Some((expected, deadline)) = self.recovery
            && (self.agents.len() >= expected || self.now >= deadline - EPSILON)
        {
            self.recovery = None;
            self.paused = false;
            log::info!("allocator recovery finished with {} agents", self.agents.len());
        }
    }

    pub(super) fn run(
        &mut self,
        candidates: &[AgentId],
        periodic: bool,
        out: &mut OfferBatch,
    ) -> Result<()> {
        let mut agents: Vec<AgentId> = candidates
            .iter()
            .copied()
            .filter(|id| {
                self.agents.get(id).is_some_and(|a| {
                    a.activated
                        && self
                            .whitelist
                            .as_ref()
                            .is_none_or(|w| w.contains(a.info.hostname.as_str()))
                })
            })
            .collect();
        agents.sort();
        agents.dedup();
        self.rng.shuffle(&mut agents);

        let mut run = RunState {
            active: vec![false; self.next_role_client as usize],
            unsatisfied: vec![false; self.next_role_client as usize],
            saturated: vec![false; self.next_role_client as usize],
            ..RunState::default()
        };
        // Every sorter hears the run's time before its first order of the run.
        self.role_sorter.set_time(self.now).map_err(|e| sorter_error("role sorter set_time", e))?;
        for state in self.roles.values_mut() {
            state
                .sorter
                .set_time(self.now)
                .map_err(|e| sorter_error("framework sorter set_time", e))?;
        }
        // Roles with no active, unsuppressed framework stay so for the whole run: find them
        // once, and skip the run entirely when no role can receive anything.
        let mut buf = std::mem::take(&mut self.fw_buf);
        for state in self.roles.values_mut() {
            // Whether the order is empty: its first client is enough.
            state
                .sorter
                .sort_prefix(1, &mut buf)
                .map_err(|e| sorter_error("framework sorter sort", e))?;
            if !buf.is_empty() {
                run.active[state.client.index()] = true;
                run.open_fair += 1;
            }
        }
        self.fw_buf = buf;
        if run.open_fair == 0 {
            self.generate_inverse_offers(&agents, out);
            return Ok(());
        }
        if !self.quotas.is_empty() {
            self.quota_bookkeeping(&mut run);
            // Stage 1: quota guarantees (R18), then the agents are shuffled again.
            for (k, agent_id) in agents.iter().copied().enumerate() {
                if run.open_guarantees == 0 {
                    break;
                }
                self.prefetch_ahead(&agents, k);
                self.offer_agent(agent_id, Stage::Guarantees, periodic, &mut run)?;
            }
            self.rng.shuffle(&mut agents);
        }
        // Stage 2: fair share up to limits (R19, R20).
        for (k, agent_id) in agents.iter().copied().enumerate() {
            self.prefetch_ahead(&agents, k);
            self.offer_agent(agent_id, Stage::FairShare, periodic, &mut run)?;
        }
        // Offers go out by framework, role name and agent, whatever order they were made in:
        // roles are ranked by name once (the role map is ordered by name), then the sort
        // compares integers only.
        let mut rank = vec![0u32; self.next_role_client as usize];
        for (r, state) in self.roles.values().enumerate() {
            rank[state.client.index()] = r as u32;
        }
        let mut offers = std::mem::take(&mut run.offers);
        // One integer per offer: framework, role rank, agent, index, most significant first.
        let mut keys: Vec<u128> = offers
            .iter()
            .enumerate()
            .map(|(i, o)| {
                (u128::from(o.0.0) << 96)
                    | (u128::from(rank[o.1.index()]) << 64)
                    | (u128::from(o.3.0) << 32)
                    | i as u128
            })
            .collect();
        keys.sort_unstable();
        for key in keys {
            let o = &mut offers[(key & u128::from(u32::MAX)) as usize];
            let resources = std::mem::take(&mut o.4);
            out.offers.push(Allocation { framework: o.0, agent: o.3, role: o.2.into(), resources });
        }
        self.generate_inverse_offers(&agents, out);
        Ok(())
    }

    /// Starts loading the records of the agents visited after `agents[k]`: two ahead, the
    /// agent's record; one ahead (its record loaded by then), its free resources and ledger.
    fn prefetch_ahead(&self, agents: &[AgentId], k: usize) {
        if let Some(a) = agents.get(k + 2).and_then(|id| self.agents.get(id)) {
            prefetch::prefetch(a, std::mem::size_of::<Agent>());
        }
        if let Some(a) = agents.get(k + 1).and_then(|id| self.agents.get(id)) {
            a.prefetch_heap();
        }
    }

    /// Offers one agent to roles in role-sorter order and their frameworks in framework-sorter
    /// order, applying the per-framework checks of section 3.3 and the stage's rules.
    // Longer than 150 lines on purpose: this is Mesos's nested role/framework walk for one
    // agent, and its steps (a)–(g) share the borrowed sort buffers, the walk checks of sort
    // output and the early exits of both loops; the steps with names of their own (the
    // guarantee and fair-share amounts, charge_quota, grant, the filter checks) are functions
    // already, and splitting the loops apart would thread a dozen locals through.
    pub(super) fn offer_agent(
        &mut self,
        agent_id: AgentId,
        stage: Stage,
        periodic: bool,
        run: &mut RunState,
    ) -> Result<()> {
        let agent = &self.agents[&agent_id];
        if agent.nothing_available() {
            return Ok(()); // R14
        }
        // An agent with only unreserved, non-revocable scalars has nothing for a saturated
        // role: with every active role saturated, there is nothing to do here.
        let plain = agent.free.iter().all(|r| is_quota_resource(r) && r.is_scalar())
            && !agent.total_has_shared;
        match stage {
            Stage::Guarantees if run.open_guarantees == 0 => return Ok(()),
            Stage::FairShare if plain && run.open_fair == 0 => return Ok(()),
            _ => {}
        }
        let mut role_order = std::mem::take(&mut self.role_buf);
        self.role_sorter.sort(&mut role_order).map_err(|e| sorter_error("role sorter sort", e))?;
        self.role_walk.begin();
        for &role_client in role_order.iter() {
            let known = self.role_by_client.contains_key(&role_client);
            if let Err(e) = self.role_walk.visit(&|| "role sorter".into(), role_client, known) {
                self.role_buf = role_order;
                return Err(e);
            }
            let i = role_client.index();
            let skip = match stage {
                Stage::Guarantees => !run.unsatisfied.get(i).copied().unwrap_or(false),
                Stage::FairShare => plain && run.saturated.get(i).copied().unwrap_or(false),
            };
            if skip || !run.active.get(i).copied().unwrap_or(false) {
                continue;
            }
            let Some(&role_name) = self.role_by_client.get(&role_client) else { continue };
            let role: &str = role_name.as_str();
            // The role's interned name, as refuse filters record it.
            let role_id = self.role_name_ids[i];
            if self.agents[&agent_id].nothing_available() {
                break;
            }
            let quota_role = !role.contains('/') && self.quotas.contains_key(role);
            let mut unsatisfied = Quantities::new();
            if stage == Stage::Guarantees {
                let Some(guarantees) = self
                    .quotas
                    .get(role)
                    .map(|q| &q.guarantees)
                    .filter(|g| quota_role && !g.is_empty())
                else {
                    continue;
                };
                unsatisfied = remaining(guarantees, &run.consumed[role]);
                if unsatisfied.is_zero() {
                    continue;
                }
            }
            // The framework order is read a prefix at a time (FrameworkOrder): an agent taken
            // by the k-th framework costs O(k), not O(frameworks in the role).
            let mut fw_order = std::mem::take(&mut self.fw_buf);
            let mut complete = self.read_order(role, FIRST_READ, &mut fw_order)?;
            if fw_order.is_empty() {
                self.fw_buf = fw_order;
                continue; // no active, unsuppressed framework in this role
            }
            // Every candidate of the role was blocked here before, and nothing that could
            // unblock one has happened since (offer_filters::Blocked).
            if offer_filters::is_blocked(
                &self.agents[&agent_id].blocked,
                role_client,
                self.blocked_generation,
                self.now,
            ) {
                self.fw_buf = fw_order;
                continue;
            }
            // (b) what the role may get here; recomputed only after a grant.
            let mut available =
                self.agents[&agent_id].available_to(role, run.shared_offered.get(&agent_id));
            if available.is_empty() {
                self.fw_buf = fw_order;
                continue;
            }
            // Whether every candidate so far was blocked before any quota rule, and until when
            // that holds (offer_filters::Blocked); a walk cut short records nothing.
            let mut blocked_until = Some(f64::INFINITY);
            let mut walked = true;
            self.fw_walk.begin();
            let mut next = 0;
            while next < fw_order.len() || !complete {
                if available.is_empty() || (stage == Stage::Guarantees && unsatisfied.is_zero()) {
                    walked = false;
                    break;
                }
                if next == fw_order.len() {
                    // More of the same order: the sorter has not changed since the walk began.
                    let len = 2 * next.max(FIRST_READ);
                    complete = match self.read_order(role, len, &mut fw_order) {
                        Ok(c) => c,
                        Err(e) => {
                            self.role_buf = role_order;
                            return Err(e);
                        }
                    };
                    if next >= fw_order.len() {
                        break; // no more after all (only a sorter at odds with its answer)
                    }
                }
                let fw_client = fw_order[next];
                next += 1;
                let fw_id = FrameworkId(fw_client.0);
                let fw = self
                    .frameworks
                    .get(&fw_id)
                    .filter(|f| f.active && !f.suppressed.contains(role));
                let sorter = || format!("framework sorter of role '{role}'");
                if let Err(e) = self.fw_walk.visit(&sorter, fw_client, fw.is_some()) {
                    self.fw_buf = fw_order;
                    self.role_buf = role_order;
                    return Err(e);
                }
                let Some(fw) = fw else { continue };
                let agent = &self.agents[&agent_id];
                // (c) quick exit
                if !self.allocatable(fw, role, &available) {
                    continue;
                }
                // A refuse filter covering everything available covers any offer made from it
                // (R6): skip the work below.
                if let Some(t) = self.filtered_until(fw, role, role_id, agent, &available, periodic)
                {
                    blocked_until = blocked_until.map(|u: f64| u.min(t));
                    continue;
                }
                // (d) GPU gate (R24)
                if self.options.filter_gpu_resources
                    && agent.has_gpu
                    && !fw.has(FrameworkCapabilities::GPU_RESOURCES)
                {
                    continue;
                }
                // (e) strip what the framework cannot receive
                let stripped = Self::strip_incapable(fw, &available);
                if stripped.is_empty() {
                    continue;
                }
                // This candidate reaches the quota rules: the role is not blocked here.
                blocked_until = None;
                // In stage 1, also the part of the offer within the guarantee.
                let mut within_guarantee = Quantities::new();
                let to_offer = match stage {
                    Stage::Guarantees => {
                        let Some((t, within)) =
                            self.guarantee_offer(role, &stripped, &unsatisfied, run)
                        else {
                            continue;
                        };
                        within_guarantee = within;
                        Cow::Owned(t)
                    }
                    Stage::FairShare => self.fair_share_offer(role, quota_role, stripped, run),
                };
                // (f) min-allocatable (R17)
                if !self.allocatable(fw, role, &to_offer) {
                    continue;
                }
                // (g) capability and refuse filters (R5, R6, R24). An offer of everything
                // available was checked with the same framework, role, agent and time above
                // (`filtered_until`): only a smaller offer needs the check again.
                if matches!(to_offer, Cow::Owned(_))
                    && self.is_filtered(fw, role, role_id, agent, &to_offer, periodic)
                {
                    continue;
                }
                let to_offer = match to_offer {
                    // The whole of what was available: move it rather than clone it (it is
                    // recomputed below).
                    Cow::Borrowed(_) => std::mem::take(&mut available),
                    Cow::Owned(r) => r,
                };
                if !self.quotas.is_empty() {
                    // Quota bookkeeping (R18–R20); without quotas there is nothing to track.
                    let stage1 = (stage == Stage::Guarantees)
                        .then_some((&within_guarantee, &mut unsatisfied));
                    self.charge_quota(role, role_client, &to_offer, stage1, run);
                }
                let left = self.take_from_agent(agent_id, fw_id, role_name, &to_offer, run);
                let walk_ends =
                    left.is_empty() || (stage == Stage::Guarantees && unsatisfied.is_zero());
                if !complete && !walk_ends {
                    // The walk goes on after this grant, which moves the framework in its
                    // sorter: read the rest of the order as it stands before the move.
                    complete = match self.read_order(role, usize::MAX, &mut fw_order) {
                        Ok(c) => c,
                        Err(e) => {
                            self.role_buf = role_order;
                            return Err(e);
                        }
                    };
                }
                self.grant(agent_id, fw_id, role_client, role_name, to_offer, run)?;
                available = left;
            }
            self.fw_buf = fw_order;
            if let (true, Some(until)) = (walked, blocked_until) {
                self.record_blocked(agent_id, role_client, until);
            }
        }
        self.role_buf = role_order;
        Ok(())
    }

    /// Reads the first `len` clients of `role`'s framework order into `out`
    /// ([`Sorter::sort_prefix`]); `true` when that is the whole order.
    fn read_order(&mut self, role: &str, len: usize, out: &mut RVec<ClientId>) -> Result<bool> {
        self.roles
            .get_mut(role)
            .expect("role in sorter")
            .sorter
            .sort_prefix(len, out)
            .map_err(|e| sorter_error("framework sorter sort", e))
    }

    /// Records that every candidate of `role` is blocked on `agent_id` for runs before `until`
    /// (offer_filters::Blocked). Not for an agent with shared resources: what a role may get
    /// there also depends on what the run offered before.
    fn record_blocked(&mut self, agent_id: AgentId, role: ClientId, until: f64) {
        let generation = self.blocked_generation;
        let agent = self.agents.get_mut(&agent_id).expect("candidate");
        if until <= self.now || agent.total_has_shared {
            return;
        }
        agent.blocked.retain(|b| b.role != role);
        agent.blocked.push(Blocked { role, generation, until });
    }

    /// Charges an offer to quota (R18–R20): the role's consumption, and the headroom; in stage
    /// 1 (`stage1`: the part of the offer within the guarantee, and the guarantee still
    /// unsatisfied) also what is still owed.
    fn charge_quota(
        &self,
        role: &str,
        role_client: ClientId,
        to_offer: &Resources,
        stage1: Option<(&Quantities, &mut Quantities)>,
        run: &mut RunState,
    ) {
        let increase = quota_resources(to_offer).scalar_quantities();
        if !role.contains('/') && self.quotas.contains_key(role) {
            run.consumed.get_mut(role).expect("quota role").add(&increase);
            run.refresh_quota_status(role, role_client, &self.quotas[role]);
        }
        if let Some((within_guarantee, unsatisfied)) = stage1 {
            *unsatisfied = saturating_sub(unsatisfied, &increase);
            // Only the part within the guarantee was being held for it; what stage 1 adds
            // beyond it came from the surplus, and the headroom still required for other roles
            // stays held (Mesos: `requiredHeadroom -= guaranteesOffering`,
            // `availableHeadroom -=` the whole offer).
            run.required_headroom = saturating_sub(&run.required_headroom, within_guarantee);
        }
        run.available_headroom = saturating_sub(&run.available_headroom, &increase);
    }

    /// The agent's side of granting `to_offer` on `agent_id` to framework `fw_id` under `role`:
    /// its free and held resources. Returns what the role may still get on the agent. The
    /// sorters and the run's offers follow in [`grant`](Self::grant).
    fn take_from_agent(
        &mut self,
        agent_id: AgentId,
        fw_id: FrameworkId,
        role: Role,
        to_offer: &Resources,
        run: &mut RunState,
    ) -> Resources {
        let has_shared = to_offer.iter().any(|r| r.is_shared());
        let agent = self.agents.get_mut(&agent_id).expect("candidate");
        agent.blocked.clear();
        if has_shared {
            agent.free.subtract(&to_offer.filter(|r| !r.is_shared()));
            run.shared_offered.entry(agent_id).or_default().add(&to_offer.shared());
        } else {
            agent.free.subtract(to_offer);
        }
        agent.allocated.add(fw_id, role, to_offer);
        agent.available_to(&role, run.shared_offered.get(&agent_id))
    }

    /// Grants `to_offer` (already taken from the agent by
    /// [`take_from_agent`](Self::take_from_agent)) to framework `fw_id` under role `role_name`
    /// (client `role_client`): the sorters and the run's offers (one per framework, role and
    /// agent).
    fn grant(
        &mut self,
        agent_id: AgentId,
        fw_id: FrameworkId,
        role_client: ClientId,
        role_name: Role,
        to_offer: Resources,
        run: &mut RunState,
    ) -> Result<()> {
        let role: &str = role_name.as_str();
        self.track_allocated(agent_id, fw_id, role, &to_offer)?;
        if self.quotas.is_empty() {
            // One stage: each agent is walked once and each role's walk visits a framework at
            // most once (`SortWalk`), so no (framework, role, agent) is granted twice in a run.
            run.offers.push((fw_id, role_client, role_name, agent_id, to_offer));
            return Ok(());
        }
        // Stage 2 may add to what stage 1 granted on the same agent.
        match run.offer_index.entry((fw_id, role_client, agent_id)) {
            std::collections::hash_map::Entry::Occupied(e) => run.offers[*e.get()].4.add(&to_offer),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(run.offers.len());
                run.offers.push((fw_id, role_client, role_name, agent_id, to_offer));
            }
        }
        Ok(())
    }

    /// R23: one inverse offer per run to each active framework holding resources on an agent
    /// under maintenance, unless one is outstanding or filtered.
    pub(super) fn generate_inverse_offers(&mut self, agents: &[AgentId], out: &mut OfferBatch) {
        // Most runs have no agent under maintenance: no sorted copy then.
        if !agents.iter().any(|id| self.agents.get(id).is_some_and(|a| a.maintenance.is_some())) {
            return;
        }
        let mut sorted = agents.to_vec();
        sorted.sort();
        for agent_id in sorted {
            let agent = &self.agents[&agent_id];
            let Some(unavailability) = agent.maintenance else { continue };
            for fw_id in agent.allocated.frameworks() {
                let Some(fw) = self.frameworks.get(&fw_id) else { continue };
                if !fw.active
                    || self.outstanding_inverse.contains(&(agent_id, fw_id))
                    || fw.inverse_filters.contains_key(&agent_id)
                {
                    continue;
                }
                self.outstanding_inverse.insert((agent_id, fw_id));
                out.inverse_offers.push(InverseOffer {
                    framework: fw_id,
                    agent: agent_id,
                    unavailability,
                });
            }
        }
    }
}

/// Bookkeeping of one allocation run.
#[derive(Default)]
pub(super) struct RunState {
    /// Offers made so far (framework, role client, role, agent, resources), one per framework,
    /// role and agent; `offer_index` finds an entry to add to (kept only with quotas, when a
    /// run has two stages: with one, no offer is ever added to).
    pub(super) offers: Vec<(FrameworkId, ClientId, Role, AgentId, Resources)>,
    pub(super) offer_index: IdMap<(FrameworkId, ClientId, AgentId), usize>,
    /// Per role client: the role has an active, unsuppressed framework at the start of the run.
    pub(super) active: Vec<bool>,
    /// Per role client: a quota role whose guarantee is not met yet (stage 1's candidates).
    pub(super) unsatisfied: Vec<bool>,
    /// The number of roles marked in `unsatisfied`.
    pub(super) open_guarantees: usize,
    /// Per role client: a quota role at its limit for every quota resource in the cluster, so an
    /// agent with only unreserved, non-revocable scalars has nothing for it.
    pub(super) saturated: Vec<bool>,
    /// Active roles not marked in `saturated`.
    pub(super) open_fair: usize,
    /// Names of the quota resources (unreserved, non-revocable scalars) in the cluster.
    pub(super) quota_names: Vec<Name>,
    pub(super) shared_offered: IdMap<AgentId, Resources>,
    /// Per top-level quota role: quota consumption (allocated unreserved non-revocable scalars of
    /// the role and its subroles, plus all their reservations).
    pub(super) consumed: HashMap<String, Quantities>,
    pub(super) required_headroom: Quantities,
    pub(super) available_headroom: Quantities,
}
