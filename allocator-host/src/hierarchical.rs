//! The built-in allocator `hierarchical` (alias `HierarchicalDRF`): Mesos's hierarchical
//! allocator over any pair of sorters.
//!
//! It keeps agents, frameworks, a role sorter holding only roles with tracked frameworks, and
//! one framework sorter per role, and implements the allocation run of
//! `../shared/reference/mesos-allocator.md` section 3 (rules R1–R17, R23–R25): candidate
//! agents shuffled with the seeded generator; for each agent, roles in role-sorter order and
//! frameworks in their role's sorter order; the first eligible framework gets everything
//! allocatable to the role on that agent, after the capability gates, the incapable-resource
//! strip, the min-allocatable check and the refuse filters; sorters are updated at once, so later
//! agents in the same run see every grant.
//!
//! Quota (R18–R22) is not implemented yet: `update_quota` and `recover`'s quotas are
//! recorded but do not change offers.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use allocator_api::rng::Rng;

use crate::guard::SortWalk;
use allocator_api::{
    AgentCapabilities, AgentId, AgentInfo, Allocation, Allocator, AllocatorOptions, ClientId,
    FrameworkCapabilities, FrameworkId, FrameworkInfo, FrameworkOptions, IdMap, IdSet,
    InverseOffer, InverseOfferStatus, InverseOfferStatusEntry, ModuleError, Name, OfferBatch,
    Operation, Quantities, Quota, RString, RVec, Resources, Result, RoleQuota, RoleWeight, Sorter,
    SorterConfig, Unavailability,
};

/// Creates sorters for the allocator (the role sorter once, a framework sorter per role).
pub type SorterFactory =
    Box<dyn Fn(&SorterConfig) -> std::result::Result<Box<dyn Sorter>, String> + Send>;

const FILTER_MAX_SECONDS: f64 = 365.0 * 24.0 * 3600.0;
const DEFAULT_REFUSE_SECONDS: f64 = 5.0;
const EPSILON: f64 = 1e-9;

/// A refuse filter (Mesos rule R5/R6).
#[derive(Clone, Debug)]
struct OfferFilter {
    resources: Resources,
    /// Blocks every run before this time.
    expires: f64,
    /// Also blocks the periodic run at this time (the first after the filter was made).
    first_periodic: f64,
}

impl OfferFilter {
    fn active(&self, now: f64, periodic: bool) -> bool {
        now < self.expires - EPSILON || (periodic && (now - self.first_periodic).abs() < EPSILON)
    }

    fn expired(&self, now: f64) -> bool {
        now >= self.expires - EPSILON && now > self.first_periodic + EPSILON
    }
}

#[derive(Debug)]
struct Agent {
    info: AgentInfo,
    total: Resources,
    /// Offered or allocated, per framework and role.
    allocated: BTreeMap<FrameworkId, BTreeMap<String, Resources>>,
    /// `total` minus everything allocated (non-shared only).
    free: Resources,
    activated: bool,
    has_gpu: bool,
    maintenance: Option<Unavailability>,
}

impl Agent {
    fn recompute_free(&mut self) {
        let mut free = self.total.filter(|r| !r.is_shared());
        for roles in self.allocated.values() {
            for res in roles.values() {
                free.subtract(res);
            }
        }
        self.free = free;
    }

    /// `true` when nothing at all may be offered (no free resource and no shared volume).
    fn nothing_available(&self) -> bool {
        self.free.is_empty() && !self.total.iter().any(|r| r.is_shared())
    }

    /// What `role` may be offered: free resources allocatable to it, plus shared volumes
    /// allocatable to it that were not offered yet in this run (`shared_offered`).
    fn available_to(&self, role: &str, shared_offered: Option<&Resources>) -> Resources {
        let mut a = if self.free.iter().all(|r| r.is_allocatable_to(role)) {
            self.free.clone()
        } else {
            self.free.allocatable_to(role)
        };
        if self.total.iter().any(|r| r.is_shared()) {
            let mut shared = self.total.filter(|r| r.is_shared() && r.is_allocatable_to(role));
            if let Some(offered) = shared_offered {
                shared.subtract(offered);
            }
            a.add(&shared);
        }
        a
    }
}

#[derive(Debug)]
struct Framework {
    info: FrameworkInfo,
    active: bool,
    suppressed: BTreeSet<String>,
    min_allocatable: HashMap<String, Vec<Quantities>>,
    /// Refuse filters by agent, then role.
    offer_filters: IdMap<AgentId, BTreeMap<String, Vec<OfferFilter>>>,
    inverse_filters: IdMap<AgentId, f64>,
}

impl Framework {
    fn roles(&self) -> impl Iterator<Item = &str> {
        self.info.roles.iter().map(RString::as_str)
    }

    fn has(&self, cap: FrameworkCapabilities) -> bool {
        self.info.capabilities.has(cap)
    }
}

struct RoleState {
    client: ClientId,
    sorter: Box<dyn Sorter>,
    frameworks: BTreeSet<FrameworkId>,
}

/// Mesos's hierarchical allocator over pluggable sorters. See the [module docs](self).
pub struct HierarchicalAllocator {
    options: AllocatorOptions,
    sorter_config: SorterConfig,
    now: f64,
    rng: Rng,
    paused: bool,
    /// Agents by id, hashed (one probe per lookup on the hot path); iteration that must be
    /// ordered sorts the ids first.
    agents: IdMap<AgentId, Agent>,
    frameworks: IdMap<FrameworkId, Framework>,
    role_sorter: Box<dyn Sorter>,
    roles: BTreeMap<String, RoleState>,
    /// Role names by role-sorter client (shared, so the hot path clones a pointer).
    role_by_client: IdMap<ClientId, std::sync::Arc<str>>,
    next_role_client: u32,
    /// No filter expires before this time (a lower bound; `expire_filters` scans from then).
    earliest_expiry: f64,
    weights: HashMap<String, f64>,
    quotas: BTreeMap<String, Quota>,
    whitelist: Option<HashSet<String>>,
    make_role_sorter: SorterFactory,
    make_framework_sorter: SorterFactory,
    outstanding_inverse: IdSet<(AgentId, FrameworkId)>,
    inverse_statuses: BTreeMap<(AgentId, FrameworkId), (InverseOfferStatus, f64)>,
    recovery: Option<(usize, f64)>,
    role_buf: RVec<ClientId>,
    fw_buf: RVec<ClientId>,
    /// Check each client visited in a sort answer (crate::guard::SortWalk).
    role_walk: SortWalk,
    fw_walk: SortWalk,
}

fn sorter_error(what: &str, e: ModuleError) -> ModuleError {
    ModuleError::failed(format!("{what}: {e}"))
}

impl HierarchicalAllocator {
    /// A new allocator with sorters from the given factories.
    pub fn new(
        options: &AllocatorOptions,
        make_role_sorter: SorterFactory,
        make_framework_sorter: SorterFactory,
    ) -> std::result::Result<HierarchicalAllocator, String> {
        let sorter_config = SorterConfig {
            fairness_excluded_resource_names: options.fairness_excluded_resource_names.clone(),
            seed: options.seed,
        };
        let role_sorter = make_role_sorter(&sorter_config)?;
        Ok(HierarchicalAllocator {
            options: options.clone(),
            sorter_config,
            now: 0.0,
            rng: Rng::new(options.seed),
            paused: false,
            agents: IdMap::default(),
            frameworks: IdMap::default(),
            role_sorter,
            roles: BTreeMap::new(),
            role_by_client: IdMap::default(),
            next_role_client: 0,
            earliest_expiry: f64::INFINITY,
            weights: HashMap::new(),
            quotas: BTreeMap::new(),
            whitelist: None,
            make_role_sorter,
            make_framework_sorter,
            outstanding_inverse: IdSet::default(),
            inverse_statuses: BTreeMap::new(),
            recovery: None,
            role_buf: RVec::new(),
            fw_buf: RVec::new(),
            role_walk: SortWalk::default(),
            fw_walk: SortWalk::default(),
        })
    }

    /// The number of unexpired refuse filters per role (Mesos's
    /// `allocator/mesos/offer_filters/roles/<role>/active`); roles without one are absent.
    pub fn active_offer_filters(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for fw in self.frameworks.values() {
            for by_role in fw.offer_filters.values() {
                for (role, filters) in by_role {
                    let n = filters.iter().filter(|f| f.active(self.now, false)).count();
                    if n > 0 {
                        *counts.entry(role.clone()).or_default() += n;
                    }
                }
            }
        }
        counts
    }

    /// Replaces both kinds of sorter, rebuilding them from the allocator's own records of agents,
    /// roles, weights, frameworks and allocations: no allocation is lost or duplicated.
    pub fn replace_sorters(
        &mut self,
        make_role_sorter: SorterFactory,
        make_framework_sorter: SorterFactory,
    ) -> std::result::Result<(), String> {
        let mut role_sorter = make_role_sorter(&self.sorter_config)?;
        let mut fresh: BTreeMap<String, Box<dyn Sorter>> = BTreeMap::new();
        for role in self.roles.keys() {
            fresh.insert(role.clone(), make_framework_sorter(&self.sorter_config)?);
        }
        let fail = |e: ModuleError| e.to_string();
        for (id, agent) in &self.agents {
            let q = agent.total.scalar_quantities();
            role_sorter.add_agent(*id, &q).map_err(fail)?;
            for s in fresh.values_mut() {
                s.add_agent(*id, &q).map_err(fail)?;
            }
        }
        for (path, w) in &self.weights {
            role_sorter.update_weight(path, *w).map_err(fail)?;
        }
        for (role, state) in &self.roles {
            role_sorter.add(state.client, role).map_err(fail)?;
            role_sorter.activate(state.client).map_err(fail)?;
            let fs = fresh.get_mut(role).expect("created above");
            for fw in &state.frameworks {
                let framework = &self.frameworks[fw];
                fs.add(ClientId(fw.0), &framework_path(*fw)).map_err(fail)?;
                if framework.active && !framework.suppressed.contains(role) {
                    fs.activate(ClientId(fw.0)).map_err(fail)?;
                }
            }
        }
        for (agent_id, agent) in &self.agents {
            for (fw, roles) in &agent.allocated {
                for (role, res) in roles {
                    if let Some(state) = self.roles.get(role) {
                        role_sorter.allocated(state.client, *agent_id, res).map_err(fail)?;
                        fresh
                            .get_mut(role)
                            .expect("role tracked")
                            .allocated(ClientId(fw.0), *agent_id, res)
                            .map_err(fail)?;
                    }
                }
            }
        }
        self.role_sorter = role_sorter;
        for (role, sorter) in fresh {
            self.roles.get_mut(&role).expect("role tracked").sorter = sorter;
        }
        self.make_role_sorter = make_role_sorter;
        self.make_framework_sorter = make_framework_sorter;
        Ok(())
    }

    /// The weighted dominant share of each tracked role, for reports (from the role sorter).
    pub fn role_shares(&self) -> Vec<(String, f64)> {
        self.roles
            .iter()
            .map(|(r, s)| (r.clone(), self.role_sorter.dominant_share(s.client).unwrap_or(0.0)))
            .collect()
    }

    /// What each framework holds per role and agent (offered or allocated).
    pub fn allocations(&self) -> Vec<Allocation> {
        let mut out = Vec::new();
        let mut ids: Vec<&AgentId> = self.agents.keys().collect();
        ids.sort();
        for agent_id in ids {
            let agent = &self.agents[agent_id];
            for (fw, roles) in &agent.allocated {
                for (role, res) in roles {
                    out.push(Allocation {
                        framework: *fw,
                        agent: *agent_id,
                        role: role.as_str().into(),
                        resources: res.clone(),
                    });
                }
            }
        }
        out
    }

    /// An agent's total and what is allocated on it, for invariant checks.
    pub fn agent_ledger(&self, agent: AgentId) -> Option<(Resources, Resources)> {
        let a = self.agents.get(&agent)?;
        let mut used = Resources::new();
        for roles in a.allocated.values() {
            for r in roles.values() {
                used.add(r);
            }
        }
        Some((a.total.clone(), used))
    }

    fn framework(&self, id: FrameworkId, call: &str) -> Result<&Framework> {
        self.frameworks
            .get(&id)
            .ok_or_else(|| ModuleError::rejected(format!("{call}: unknown {id}")))
    }

    fn agent(&self, id: AgentId, call: &str) -> Result<&Agent> {
        self.agents.get(&id).ok_or_else(|| ModuleError::rejected(format!("{call}: unknown {id}")))
    }

    fn set_agent_activated(&mut self, agent: AgentId, activated: bool, call: &str) -> Result<()> {
        self.agents
            .get_mut(&agent)
            .ok_or_else(|| ModuleError::rejected(format!("{call}: unknown {agent}")))?
            .activated = activated;
        Ok(())
    }

    /// Tells every sorter that `agent`'s total is now `q` (sorters take a change as remove + add).
    fn resize_agent_in_sorters(&mut self, agent: AgentId, q: &Quantities) -> Result<()> {
        self.role_sorter
            .remove_agent(agent)
            .map_err(|e| sorter_error("role sorter remove_agent", e))?;
        self.role_sorter
            .add_agent(agent, q)
            .map_err(|e| sorter_error("role sorter add_agent", e))?;
        for state in self.roles.values_mut() {
            state
                .sorter
                .remove_agent(agent)
                .map_err(|e| sorter_error("framework sorter remove_agent", e))?;
            state
                .sorter
                .add_agent(agent, q)
                .map_err(|e| sorter_error("framework sorter add_agent", e))?;
        }
        Ok(())
    }

    /// Tracks `fw` under `role`, adding the role to the role sorter and creating its framework
    /// sorter on first use.
    fn track_framework_under_role(&mut self, fw: FrameworkId, role: &str) -> Result<()> {
        if !self.roles.contains_key(role) {
            let client = ClientId(self.next_role_client);
            self.next_role_client += 1;
            self.role_sorter.add(client, role).map_err(|e| sorter_error("role sorter add", e))?;
            self.role_sorter
                .activate(client)
                .map_err(|e| sorter_error("role sorter activate", e))?;
            let mut sorter =
                (self.make_framework_sorter)(&self.sorter_config).map_err(ModuleError::failed)?;
            for (id, agent) in &self.agents {
                sorter
                    .add_agent(*id, &agent.total.scalar_quantities())
                    .map_err(|e| sorter_error("framework sorter add_agent", e))?;
            }
            self.role_by_client.insert(client, role.into());
            self.roles
                .insert(role.to_owned(), RoleState { client, sorter, frameworks: BTreeSet::new() });
        }
        let state = self.roles.get_mut(role).expect("just ensured");
        if state.frameworks.insert(fw) {
            state
                .sorter
                .add(ClientId(fw.0), &framework_path(fw))
                .map_err(|e| sorter_error("framework sorter add", e))?;
            if let Some(f) = self.frameworks.get(&fw)
                && f.active
                && !f.suppressed.contains(role)
            {
                state
                    .sorter
                    .activate(ClientId(fw.0))
                    .map_err(|e| sorter_error("framework sorter activate", e))?;
            }
        }
        Ok(())
    }

    /// Untracks `fw` under `role` when it neither subscribes to the role nor holds resources
    /// under it; removes the role when no framework is left.
    fn try_untrack_framework_under_role(&mut self, fw: FrameworkId, role: &str) -> Result<()> {
        // Cheap test first: a subscribed framework stays tracked whatever it holds.
        if self.frameworks.get(&fw).is_some_and(|f| f.roles().any(|r| r == role)) {
            return Ok(());
        }
        let holds = self
            .agents
            .values()
            .any(|a| a.allocated.get(&fw).is_some_and(|m| m.contains_key(role)));
        if holds {
            return Ok(());
        }
        let Some(state) = self.roles.get_mut(role) else { return Ok(()) };
        if state.frameworks.remove(&fw) {
            state
                .sorter
                .remove(ClientId(fw.0))
                .map_err(|e| sorter_error("framework sorter remove", e))?;
        }
        if state.frameworks.is_empty() {
            let state = self.roles.remove(role).expect("present");
            self.role_by_client.remove(&state.client);
            self.role_sorter
                .remove(state.client)
                .map_err(|e| sorter_error("role sorter remove", e))?;
        }
        Ok(())
    }

    fn track_allocated(
        &mut self,
        agent: AgentId,
        fw: FrameworkId,
        role: &str,
        res: &Resources,
    ) -> Result<()> {
        if res.is_empty() {
            return Ok(());
        }
        self.track_framework_under_role(fw, role)?;
        let state = self.roles.get_mut(role).expect("tracked");
        self.role_sorter
            .allocated(state.client, agent, res)
            .map_err(|e| sorter_error("role sorter allocated", e))?;
        state
            .sorter
            .allocated(ClientId(fw.0), agent, res)
            .map_err(|e| sorter_error("framework sorter allocated", e))
    }

    fn untrack_allocated(
        &mut self,
        agent: AgentId,
        fw: FrameworkId,
        role: &str,
        res: &Resources,
    ) -> Result<()> {
        if res.is_empty() {
            return Ok(());
        }
        if let Some(state) = self.roles.get_mut(role) {
            self.role_sorter
                .unallocated(state.client, agent, res)
                .map_err(|e| sorter_error("role sorter unallocated", e))?;
            if state.frameworks.contains(&fw) {
                state
                    .sorter
                    .unallocated(ClientId(fw.0), agent, res)
                    .map_err(|e| sorter_error("framework sorter unallocated", e))?;
            }
        }
        Ok(())
    }

    fn set_framework_activity(&mut self, fw: FrameworkId, role: &str, active: bool) -> Result<()> {
        if let Some(state) = self.roles.get_mut(role)
            && state.frameworks.contains(&fw)
        {
            let r = if active {
                state.sorter.activate(ClientId(fw.0))
            } else {
                state.sorter.deactivate(ClientId(fw.0))
            };
            r.map_err(|e| sorter_error("framework sorter (de)activate", e))?;
        }
        Ok(())
    }

    /// Mesos's `allocatable`: the framework's per-role sets if it has them (empty: anything),
    /// else the global ones (empty: anything); true when the resources contain any one set.
    fn allocatable(&self, fw: &Framework, role: &str, res: &Resources) -> bool {
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
    fn strip_incapable<'a>(fw: &Framework, res: &'a Resources) -> Cow<'a, Resources> {
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

    /// Rule 3.3g.
    fn is_filtered(
        &self,
        fw: &Framework,
        role: &str,
        agent_id: AgentId,
        agent: &Agent,
        offer: &Resources,
        periodic: bool,
    ) -> bool {
        let caps = agent.info.capabilities;
        if fw.has(FrameworkCapabilities::MULTI_ROLE) && !caps.has(AgentCapabilities::MULTI_ROLE) {
            return true;
        }
        if role.contains('/') && !caps.has(AgentCapabilities::HIERARCHICAL_ROLE) {
            return true;
        }
        fw.offer_filters.get(&agent_id).and_then(|m| m.get(role)).is_some_and(|fs| {
            fs.iter().any(|f| f.active(self.now, periodic) && f.resources.contains(offer))
        })
    }

    /// Drops expired offer and inverse-offer filters. Skipped (no scan) until the earliest
    /// time any filter can expire.
    fn expire_filters(&mut self) {
        let now = self.now;
        if now < self.earliest_expiry - 2.0 * EPSILON {
            return;
        }
        let mut earliest = f64::INFINITY;
        for fw in self.frameworks.values_mut() {
            fw.offer_filters.retain(|_, by_role| {
                by_role.retain(|_, fs| {
                    fs.retain(|f| !f.expired(now));
                    for f in fs.iter() {
                        earliest = earliest.min(f.expires.max(f.first_periodic));
                    }
                    !fs.is_empty()
                });
                !by_role.is_empty()
            });
            fw.inverse_filters.retain(|_, until| now < *until - EPSILON);
            for until in fw.inverse_filters.values() {
                earliest = earliest.min(*until);
            }
        }
        self.earliest_expiry = earliest;
    }

    fn first_periodic_after(&self, c: f64) -> f64 {
        let interval = self.options.allocation_interval;
        if interval <= 0.0 {
            return c;
        }
        ((c / interval + EPSILON).floor() + 1.0) * interval
    }

    fn check_recovery(&mut self) {
        if let Some((expected, deadline)) = self.recovery
            && (self.agents.len() >= expected || self.now >= deadline - EPSILON)
        {
            self.recovery = None;
            self.paused = false;
            log::info!("allocator recovery finished with {} agents", self.agents.len());
        }
    }

    fn run(&mut self, candidates: &[AgentId], periodic: bool, out: &mut OfferBatch) -> Result<()> {
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
        // Roles with no active, unsuppressed framework stay so for the whole run: find them
        // once, and skip the run entirely when no role can receive anything.
        let mut buf = std::mem::take(&mut self.fw_buf);
        for state in self.roles.values_mut() {
            state.sorter.sort(&mut buf).map_err(|e| sorter_error("framework sorter sort", e))?;
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
            for agent_id in agents.iter().copied() {
                if run.open_guarantees == 0 {
                    break;
                }
                self.offer_agent(agent_id, Stage::Guarantees, periodic, &mut run)?;
            }
            self.rng.shuffle(&mut agents);
        }
        // Stage 2: fair share up to limits (R19, R20).
        for agent_id in agents.iter().copied() {
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
            out.offers.push(Allocation {
                framework: o.0,
                agent: o.3,
                role: (*o.2).into(),
                resources,
            });
        }
        self.generate_inverse_offers(&agents, out);
        Ok(())
    }

    /// The role's quota limits, if it has any.
    fn quota_limits(&self, role: &str) -> Option<&Quantities> {
        self.quotas.get(role).map(|q| &q.limits).filter(|l| !l.is_empty())
    }

    /// The quota roles' consumption and the headroom at the start of a run (R18–R20).
    fn quota_bookkeeping(&self, run: &mut RunState) {
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
            for roles in agent.allocated.values() {
                for (role, res) in roles {
                    if let Some(c) = run.consumed.get_mut(top_level(role)) {
                        add_quota_scalars(c, res);
                    }
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

    /// Offers one agent to roles in role-sorter order and their frameworks in framework-sorter
    /// order, applying the per-framework checks of section 3.3 and the stage's rules.
    fn offer_agent(
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
            && !agent.total.iter().any(|r| r.is_shared());
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
            let Some(role_name) = self.role_by_client.get(&role_client).cloned() else { continue };
            let role: &str = &role_name;
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
            let mut fw_order = std::mem::take(&mut self.fw_buf);
            self.roles
                .get_mut(role)
                .expect("role in sorter")
                .sorter
                .sort(&mut fw_order)
                .map_err(|e| sorter_error("framework sorter sort", e))?;
            if fw_order.is_empty() {
                self.fw_buf = fw_order;
                continue; // no active, unsuppressed framework in this role
            }
            // (b) what the role may get here; recomputed only after a grant.
            let mut available =
                self.agents[&agent_id].available_to(role, run.shared_offered.get(&agent_id));
            if available.is_empty() {
                self.fw_buf = fw_order;
                continue;
            }
            self.fw_walk.begin();
            for &fw_client in fw_order.iter() {
                if available.is_empty() || (stage == Stage::Guarantees && unsatisfied.is_zero()) {
                    break;
                }
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
                if self.is_filtered(fw, role, agent_id, agent, &available, periodic) {
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
                let to_offer = match stage {
                    Stage::Guarantees => {
                        let Some(t) = self.guarantee_offer(role, &stripped, &unsatisfied, run)
                        else {
                            continue;
                        };
                        Cow::Owned(t)
                    }
                    Stage::FairShare => self.fair_share_offer(role, quota_role, stripped, run),
                };
                // (f) min-allocatable (R17)
                if !self.allocatable(fw, role, &to_offer) {
                    continue;
                }
                // (g) capability and refuse filters (R5, R6, R24)
                if self.is_filtered(fw, role, agent_id, agent, &to_offer, periodic) {
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
                    let increase = quota_resources(&to_offer).scalar_quantities();
                    if quota_role {
                        run.consumed.get_mut(role).expect("quota role").add(&increase);
                        run.refresh_quota_status(role, role_client, &self.quotas[role]);
                    }
                    if stage == Stage::Guarantees {
                        unsatisfied = saturating_sub(&unsatisfied, &increase);
                        run.required_headroom = saturating_sub(&run.required_headroom, &increase);
                    }
                    run.available_headroom = saturating_sub(&run.available_headroom, &increase);
                }
                let has_shared = to_offer.iter().any(|r| r.is_shared());
                let agent = self.agents.get_mut(&agent_id).expect("candidate");
                if has_shared {
                    agent.free.subtract(&to_offer.filter(|r| !r.is_shared()));
                    run.shared_offered.entry(agent_id).or_default().add(&to_offer.shared());
                } else {
                    agent.free.subtract(&to_offer);
                }
                let held = agent.allocated.entry(fw_id).or_default();
                match held.get_mut(role) {
                    Some(h) => h.add(&to_offer),
                    None => {
                        held.insert(role.to_owned(), to_offer.clone());
                    }
                }
                available = agent.available_to(role, run.shared_offered.get(&agent_id));
                self.track_allocated(agent_id, fw_id, role, &to_offer)?;
                match run.offer_index.entry((fw_id, role_client, agent_id)) {
                    std::collections::hash_map::Entry::Occupied(e) => {
                        run.offers[*e.get()].4.add(&to_offer)
                    }
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert(run.offers.len());
                        run.offers.push((
                            fw_id,
                            role_client,
                            role_name.clone(),
                            agent_id,
                            to_offer,
                        ));
                    }
                }
            }
            self.fw_buf = fw_order;
        }
        self.role_buf = role_order;
        Ok(())
    }

    /// Stage 1's offer (R18, R21): the agent chopped to the unsatisfied guarantee, plus the role's
    /// own reservations, non-scalars and revocable resources, plus extra scalars up to the limit
    /// and the surplus headroom. `None` when no guaranteed resource fits.
    fn guarantee_offer(
        &self,
        role: &str,
        stripped: &Resources,
        unsatisfied: &Quantities,
        run: &RunState,
    ) -> Option<Resources> {
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
        Some(to_offer)
    }

    /// Stage 2's offer (R19, R20): every reservation allocatable to the role, non-scalars and
    /// revocable resources, plus unreserved non-revocable scalars up to the role's limit and, while
    /// guarantees need headroom, only from the surplus.
    fn fair_share_offer<'a>(
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

    /// R23: one inverse offer per run to each active framework holding resources on an agent
    /// under maintenance, unless one is outstanding or filtered.
    fn generate_inverse_offers(&mut self, agents: &[AgentId], out: &mut OfferBatch) {
        let mut sorted = agents.to_vec();
        sorted.sort();
        for agent_id in sorted {
            let agent = &self.agents[&agent_id];
            let Some(unavailability) = agent.maintenance else { continue };
            for fw_id in agent.allocated.keys() {
                let Some(fw) = self.frameworks.get(fw_id) else { continue };
                if !fw.active
                    || self.outstanding_inverse.contains(&(agent_id, *fw_id))
                    || fw.inverse_filters.contains_key(&agent_id)
                {
                    continue;
                }
                self.outstanding_inverse.insert((agent_id, *fw_id));
                out.inverse_offers.push(InverseOffer {
                    framework: *fw_id,
                    agent: agent_id,
                    unavailability,
                });
            }
        }
    }

    fn release(
        &mut self,
        agent_id: AgentId,
        fw: FrameworkId,
        role: &str,
        res: &Resources,
    ) -> Result<()> {
        let agent = self.agents.get_mut(&agent_id).expect("checked");
        let held = agent.allocated.get_mut(&fw).and_then(|m| m.get_mut(role)).expect("checked");
        held.subtract(res);
        if held.is_empty() {
            let roles = agent.allocated.get_mut(&fw).expect("present");
            roles.remove(role);
            if roles.is_empty() {
                agent.allocated.remove(&fw);
            }
        }
        // Recomputed rather than added back: after a shrinking update_agent the agent may be
        // over-allocated, and availability never exceeds total minus allocated (R14).
        agent.recompute_free();
        self.untrack_allocated(agent_id, fw, role, res)?;
        self.try_untrack_framework_under_role(fw, role)
    }
}

/// The two stages of an allocation run.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Stage {
    /// Stage 1: quota guarantees.
    Guarantees,
    /// Stage 2: fair share up to limits.
    FairShare,
}

impl RunState {
    /// Recomputes whether quota role `role` (client `client`) still has an unsatisfied
    /// guarantee and whether it is saturated, keeping the counts in step.
    fn refresh_quota_status(&mut self, role: &str, client: ClientId, quota: &Quota) {
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

/// Bookkeeping of one allocation run.
#[derive(Default)]
struct RunState {
    /// Offers made so far (framework, role, agent, resources), one per framework, role and
    /// agent; `offer_index` finds an entry to add to.
    offers: Vec<(FrameworkId, ClientId, std::sync::Arc<str>, AgentId, Resources)>,
    offer_index: IdMap<(FrameworkId, ClientId, AgentId), usize>,
    /// Per role client: the role has an active, unsuppressed framework at the start of the run.
    active: Vec<bool>,
    /// Per role client: a quota role whose guarantee is not met yet (stage 1's candidates).
    unsatisfied: Vec<bool>,
    /// The number of roles marked in `unsatisfied`.
    open_guarantees: usize,
    /// Per role client: a quota role at its limit for every quota resource in the cluster, so an
    /// agent with only unreserved, non-revocable scalars has nothing for it.
    saturated: Vec<bool>,
    /// Active roles not marked in `saturated`.
    open_fair: usize,
    /// Names of the quota resources (unreserved, non-revocable scalars) in the cluster.
    quota_names: Vec<Name>,
    shared_offered: IdMap<AgentId, Resources>,
    /// Per top-level quota role: quota consumption (allocated unreserved non-revocable scalars of
    /// the role and its subroles, plus all their reservations).
    consumed: HashMap<String, Quantities>,
    required_headroom: Quantities,
    available_headroom: Quantities,
}

/// A framework's client path in its role's framework sorter: its id, zero-padded so that path
/// order (the last DRF tie-break) is the order in which frameworks were first seen, as Mesos's
/// framework ids order by registration. Names are for display only: they need not be unique
/// and may contain `/`.
fn framework_path(fw: FrameworkId) -> String {
    format!("{:010}", fw.0)
}

/// The top-level role of a role path (`a` for `a/b/c`).
fn top_level(role: &str) -> &str {
    role.split('/').next().unwrap_or(role)
}

/// What counts toward quota: unreserved, non-revocable, non-shared resources.
fn is_quota_resource(r: &allocator_api::Resource) -> bool {
    r.is_unreserved() && !r.is_revocable() && !r.is_shared()
}

/// Adds the quota scalars of `res` (see [`is_quota_resource`]) to `out`, without allocating.
fn add_quota_scalars(out: &mut Quantities, res: &Resources) {
    for r in res.iter().filter(|r| is_quota_resource(r) && r.is_scalar()) {
        out.add_amount(r.name, r.value.quantity());
    }
}

/// The entries of `res` that count toward quota.
fn quota_resources(res: &Resources) -> Resources {
    res.filter(is_quota_resource)
}

/// For every name in `bound`: what is left of it after `used` (never negative; zeros kept, so a
/// used-up limit still limits).
fn remaining(bound: &Quantities, used: &Quantities) -> Quantities {
    let mut out = Quantities::new();
    for q in bound.iter() {
        out.set(q.name, q.value.saturating_sub(used.get(&q.name)));
    }
    out
}

/// `a - b` per name, saturating at zero (zeros kept).
fn saturating_sub(a: &Quantities, b: &Quantities) -> Quantities {
    remaining(a, b)
}

fn clamp_refuse(seconds: f64) -> Option<f64> {
    if seconds == 0.0 || seconds.is_nan() {
        None
    } else if seconds < 0.0 {
        Some(DEFAULT_REFUSE_SECONDS)
    } else {
        Some(seconds.min(FILTER_MAX_SECONDS))
    }
}

fn info_roles(info: &FrameworkInfo) -> Vec<String> {
    info.roles.iter().map(|r| r.to_string()).collect()
}

impl Allocator for HierarchicalAllocator {
    fn set_time(&mut self, now: f64) -> Result<()> {
        if now + EPSILON < self.now {
            return Err(ModuleError::rejected(format!(
                "set_time: time went back from {} to {now}",
                self.now
            )));
        }
        self.now = now;
        self.check_recovery();
        Ok(())
    }

    fn recover(&mut self, expected_agents: u32, quotas: &[RoleQuota]) -> Result<()> {
        if quotas.is_empty() {
            return Ok(());
        }
        for q in quotas {
            self.quotas.insert(q.role.to_string(), q.quota.clone());
        }
        let expected = (f64::from(expected_agents) * self.options.agent_recovery_factor) as usize;
        if expected > 0 {
            self.paused = true;
            self.recovery = Some((expected, self.now + self.options.recovery_timeout));
            log::info!(
                "allocator paused until {expected} agents are back or {}s pass",
                self.options.recovery_timeout
            );
        }
        Ok(())
    }

    fn add_framework(
        &mut self,
        info: &FrameworkInfo,
        used: &[Allocation],
        active: bool,
        options: &FrameworkOptions,
    ) -> Result<()> {
        if self.frameworks.contains_key(&info.id) {
            return Err(ModuleError::rejected(format!(
                "add_framework: {} ({}) already added",
                info.id, info.name
            )));
        }
        // Validate `used` before changing anything.
        let mut extra: HashMap<AgentId, Resources> = HashMap::new();
        for u in used.iter().filter(|u| self.agents.contains_key(&u.agent)) {
            let agent = &self.agents[&u.agent];
            let recorded = agent
                .allocated
                .get(&info.id)
                .and_then(|m| m.get(u.role.as_str()))
                .cloned()
                .unwrap_or_default();
            let missing = u.resources.clone() - &recorded;
            let need = extra.entry(u.agent).or_default();
            need.add(&missing.filter(|r| !r.is_shared()));
            if !agent.free.contains(need) {
                return Err(ModuleError::rejected(format!(
                    "add_framework: {} uses {} on {} ({}), more than is free there ({})",
                    info.name, u.resources, u.agent, agent.info.name, agent.free
                )));
            }
        }
        let framework = Framework {
            info: info.clone(),
            active,
            suppressed: options.suppressed_roles.iter().map(|r| r.to_string()).collect(),
            min_allocatable: options
                .min_allocatable_resources
                .iter()
                .map(|m| (m.role.to_string(), m.sets.to_vec()))
                .collect(),
            offer_filters: IdMap::default(),
            inverse_filters: IdMap::default(),
        };
        self.frameworks.insert(info.id, framework);
        for role in info_roles(info) {
            self.track_framework_under_role(info.id, &role)?;
        }
        for u in used {
            let Some(agent) = self.agents.get_mut(&u.agent) else { continue };
            let slot =
                agent.allocated.entry(info.id).or_default().entry(u.role.to_string()).or_default();
            let missing = u.resources.clone() - slot;
            slot.add(&missing);
            agent.free.subtract(&missing.filter(|r| !r.is_shared()));
            self.track_allocated(u.agent, info.id, &u.role, &u.resources)?;
        }
        Ok(())
    }

    fn remove_framework(&mut self, framework: FrameworkId) -> Result<()> {
        self.framework(framework, "remove_framework")?;
        let holdings: Vec<(AgentId, String, Resources)> =
            self.agents
                .iter()
                .flat_map(|(a, agent)| {
                    agent.allocated.get(&framework).into_iter().flat_map(move |m| {
                        m.iter().map(move |(r, res)| (*a, r.clone(), res.clone()))
                    })
                })
                .collect();
        let roles: Vec<String> = self
            .roles
            .iter()
            .filter(|(_, s)| s.frameworks.contains(&framework))
            .map(|(r, _)| r.clone())
            .collect();
        self.frameworks.remove(&framework);
        for (agent, role, res) in holdings {
            self.release(agent, framework, &role, &res)?;
        }
        for role in roles {
            self.try_untrack_framework_under_role(framework, &role)?;
        }
        self.outstanding_inverse.retain(|(_, f)| *f != framework);
        self.inverse_statuses.retain(|(_, f), _| *f != framework);
        Ok(())
    }

    fn activate_framework(&mut self, framework: FrameworkId) -> Result<()> {
        let fw = self.framework(framework, "activate_framework")?;
        let roles: Vec<String> =
            fw.roles().filter(|r| !fw.suppressed.contains(*r)).map(str::to_owned).collect();
        self.frameworks.get_mut(&framework).expect("checked").active = true;
        for role in roles {
            self.set_framework_activity(framework, &role, true)?;
        }
        Ok(())
    }

    fn deactivate_framework(&mut self, framework: FrameworkId) -> Result<()> {
        let tracked: Vec<String> = self
            .roles
            .iter()
            .filter(|(_, s)| s.frameworks.contains(&framework))
            .map(|(r, _)| r.clone())
            .collect();
        let fw = self.frameworks.get_mut(&framework).ok_or_else(|| {
            ModuleError::rejected(format!("deactivate_framework: unknown {framework}"))
        })?;
        fw.active = false;
        fw.offer_filters.clear();
        fw.inverse_filters.clear();
        for role in tracked {
            self.set_framework_activity(framework, &role, false)?;
        }
        Ok(())
    }

    fn update_framework(&mut self, info: &FrameworkInfo, options: &FrameworkOptions) -> Result<()> {
        let old = self.framework(info.id, "update_framework")?;
        let old_roles: BTreeSet<String> = old.roles().map(str::to_owned).collect();
        let new_roles: BTreeSet<String> = info_roles(info).into_iter().collect();
        let suppressed: BTreeSet<String> =
            options.suppressed_roles.iter().map(|r| r.to_string()).collect();
        {
            let fw = self.frameworks.get_mut(&info.id).expect("checked");
            fw.info = info.clone();
            fw.suppressed = suppressed.clone();
            fw.min_allocatable = options
                .min_allocatable_resources
                .iter()
                .map(|m| (m.role.to_string(), m.sets.to_vec()))
                .collect();
            for by_role in fw.offer_filters.values_mut() {
                by_role.retain(|role, _| new_roles.contains(role));
            }
            fw.offer_filters.retain(|_, by_role| !by_role.is_empty());
        }
        for role in new_roles.difference(&old_roles) {
            self.track_framework_under_role(info.id, role)?;
        }
        for role in old_roles.difference(&new_roles) {
            self.set_framework_activity(info.id, role, false)?;
            self.try_untrack_framework_under_role(info.id, role)?;
        }
        let active = self.frameworks[&info.id].active;
        for role in &new_roles {
            self.set_framework_activity(info.id, role, active && !suppressed.contains(role))?;
        }
        Ok(())
    }

    fn add_agent(
        &mut self,
        info: &AgentInfo,
        unavailability: Option<&Unavailability>,
        total: &Resources,
        used: &[Allocation],
    ) -> Result<()> {
        if self.agents.contains_key(&info.id) {
            return Err(ModuleError::rejected(format!(
                "add_agent: {} ({}) already added",
                info.id, info.name
            )));
        }
        let mut used_total = Resources::new();
        for u in used {
            used_total.add(&u.resources.filter(|r| !r.is_shared()));
        }
        if !total.contains(&used_total) {
            return Err(ModuleError::rejected(format!(
                "add_agent: {} uses {used_total}, more than its total {total}",
                info.name
            )));
        }
        let mut agent = Agent {
            info: info.clone(),
            total: total.clone(),
            allocated: BTreeMap::new(),
            free: Resources::new(),
            activated: true,
            has_gpu: total.scalar("gpus").is_positive(),
            maintenance: unavailability.copied(),
        };
        for u in used {
            agent
                .allocated
                .entry(u.framework)
                .or_default()
                .entry(u.role.to_string())
                .or_default()
                .add(&u.resources);
        }
        agent.recompute_free();
        let q = total.scalar_quantities();
        self.role_sorter
            .add_agent(info.id, &q)
            .map_err(|e| sorter_error("role sorter add_agent", e))?;
        for state in self.roles.values_mut() {
            state
                .sorter
                .add_agent(info.id, &q)
                .map_err(|e| sorter_error("framework sorter add_agent", e))?;
        }
        self.agents.insert(info.id, agent);
        for u in used {
            if self.frameworks.contains_key(&u.framework) {
                self.track_allocated(info.id, u.framework, &u.role, &u.resources)?;
            }
        }
        self.check_recovery();
        Ok(())
    }

    fn remove_agent(&mut self, agent: AgentId) -> Result<()> {
        let a = self.agent(agent, "remove_agent")?;
        let holdings: Vec<(FrameworkId, String, Resources)> = a
            .allocated
            .iter()
            .flat_map(|(f, m)| m.iter().map(move |(r, res)| (*f, r.clone(), res.clone())))
            .collect();
        for (fw, role, res) in holdings {
            if self.frameworks.contains_key(&fw) {
                self.release(agent, fw, &role, &res)?;
            }
        }
        self.role_sorter
            .remove_agent(agent)
            .map_err(|e| sorter_error("role sorter remove_agent", e))?;
        for state in self.roles.values_mut() {
            state
                .sorter
                .remove_agent(agent)
                .map_err(|e| sorter_error("framework sorter remove_agent", e))?;
        }
        for fw in self.frameworks.values_mut() {
            fw.offer_filters.remove(&agent);
            fw.inverse_filters.remove(&agent);
        }
        self.outstanding_inverse.retain(|(a, _)| *a != agent);
        self.inverse_statuses.retain(|(a, _), _| *a != agent);
        self.agents.remove(&agent);
        Ok(())
    }

    fn update_agent(&mut self, info: &AgentInfo, total: Option<&Resources>) -> Result<()> {
        let old = self.agent(info.id, "update_agent")?;
        let attributes_changed = old.info.attributes != info.attributes;
        let total_changed = total.is_some_and(|t| *t != old.total);
        if attributes_changed {
            for fw in self.frameworks.values_mut() {
                fw.offer_filters.remove(&info.id);
                fw.inverse_filters.remove(&info.id);
            }
        }
        let agent = self.agents.get_mut(&info.id).expect("checked");
        agent.info = info.clone();
        if let (true, Some(t)) = (total_changed, total) {
            agent.total = t.clone();
            agent.has_gpu = t.scalar("gpus").is_positive();
            agent.recompute_free();
            let q = t.scalar_quantities();
            self.resize_agent_in_sorters(info.id, &q)?;
        }
        Ok(())
    }

    fn add_resource_provider(
        &mut self,
        agent: AgentId,
        total: &Resources,
        used: &[Allocation],
    ) -> Result<()> {
        let a = self.agent(agent, "add_resource_provider")?;
        let mut info = a.info.clone();
        let new_total = a.total.clone() + total;
        info.capabilities = info.capabilities.with(AgentCapabilities::RESOURCE_PROVIDER);
        self.update_agent(&info, Some(&new_total))?;
        for u in used {
            if self.frameworks.contains_key(&u.framework) {
                let a = self.agents.get_mut(&agent).expect("checked");
                a.allocated
                    .entry(u.framework)
                    .or_default()
                    .entry(u.role.to_string())
                    .or_default()
                    .add(&u.resources);
                a.free.subtract(&u.resources.filter(|r| !r.is_shared()));
                self.track_allocated(agent, u.framework, &u.role, &u.resources)?;
            }
        }
        Ok(())
    }

    fn activate_agent(&mut self, agent: AgentId) -> Result<()> {
        self.set_agent_activated(agent, true, "activate_agent")
    }

    fn deactivate_agent(&mut self, agent: AgentId) -> Result<()> {
        self.set_agent_activated(agent, false, "deactivate_agent")
    }

    fn update_whitelist(&mut self, hostnames: Option<&[RString]>) -> Result<()> {
        self.whitelist = hostnames.map(|h| h.iter().map(|s| s.to_string()).collect());
        Ok(())
    }

    fn request_resources(&mut self, framework: FrameworkId, requests: &[Resources]) -> Result<()> {
        log::info!("received resource requests from {framework}: {requests:?} (advisory; ignored)");
        Ok(())
    }

    fn update_allocation(
        &mut self,
        framework: FrameworkId,
        agent: AgentId,
        role: &str,
        operations: &[Operation],
    ) -> Result<()> {
        self.framework(framework, "update_allocation")?;
        let a = self.agent(agent, "update_allocation")?;
        let held =
            a.allocated.get(&framework).and_then(|m| m.get(role)).cloned().unwrap_or_default();
        // Apply to copies first: all operations or none.
        let (mut new_held, mut total) = (held.clone(), a.total.clone());
        for op in operations {
            let (consumed, converted) = op
                .conversion()
                .map_err(|e| ModuleError::rejected(format!("update_allocation: {e}")))?;
            new_held = op.apply(&new_held).map_err(|e| {
                ModuleError::rejected(format!(
                    "update_allocation: {framework} under role '{role}' on {agent}: {e}"
                ))
            })?;
            total = total - &consumed + &converted;
        }
        let a = self.agents.get_mut(&agent).expect("checked");
        a.total = total;
        a.allocated.entry(framework).or_default().insert(role.to_owned(), new_held.clone());
        a.recompute_free();
        if let Some(state) = self.roles.get_mut(role) {
            self.role_sorter
                .update(state.client, agent, &held, &new_held)
                .map_err(|e| sorter_error("role sorter update", e))?;
            if state.frameworks.contains(&framework) {
                state
                    .sorter
                    .update(ClientId(framework.0), agent, &held, &new_held)
                    .map_err(|e| sorter_error("framework sorter update", e))?;
            }
        }
        Ok(())
    }

    fn update_available(&mut self, agent: AgentId, operations: &[Operation]) -> Result<()> {
        let a = self.agent(agent, "update_available")?;
        let (mut free, mut total) = (a.free.clone(), a.total.clone());
        for op in operations {
            let (consumed, converted) = op
                .conversion()
                .map_err(|e| ModuleError::rejected(format!("update_available: {e}")))?;
            free = op
                .apply(&free)
                .map_err(|e| ModuleError::rejected(format!("update_available on {agent}: {e}")))?;
            total = total - &consumed + &converted;
        }
        let q_changed = total.scalar_quantities() != self.agents[&agent].total.scalar_quantities();
        let a = self.agents.get_mut(&agent).expect("checked");
        a.total = total;
        a.recompute_free();
        if q_changed {
            let q = a.total.scalar_quantities();
            self.resize_agent_in_sorters(agent, &q)?;
        }
        Ok(())
    }

    fn update_unavailability(
        &mut self,
        agent: AgentId,
        unavailability: Option<&Unavailability>,
    ) -> Result<()> {
        let a = self.agents.get_mut(&agent).ok_or_else(|| {
            ModuleError::rejected(format!("update_unavailability: unknown {agent}"))
        })?;
        a.maintenance = unavailability.copied();
        for fw in self.frameworks.values_mut() {
            fw.inverse_filters.remove(&agent);
        }
        self.outstanding_inverse.retain(|(a, _)| *a != agent);
        self.inverse_statuses.retain(|(a, _), _| *a != agent);
        Ok(())
    }

    fn update_inverse_offer(
        &mut self,
        agent: AgentId,
        framework: FrameworkId,
        status: Option<InverseOfferStatus>,
        refuse_seconds: Option<f64>,
    ) -> Result<()> {
        self.agent(agent, "update_inverse_offer")?;
        self.framework(framework, "update_inverse_offer")?;
        self.outstanding_inverse.remove(&(agent, framework));
        if let Some(s) = status {
            self.inverse_statuses.insert((agent, framework), (s, self.now));
        }
        if let Some(t) = refuse_seconds.and_then(clamp_refuse) {
            let until = self.now + t;
            self.earliest_expiry = self.earliest_expiry.min(until);
            self.frameworks
                .get_mut(&framework)
                .expect("checked")
                .inverse_filters
                .insert(agent, until);
        }
        Ok(())
    }

    fn inverse_offer_statuses(&self, out: &mut RVec<InverseOfferStatusEntry>) -> Result<()> {
        out.clear();
        for ((agent, framework), (status, timestamp)) in &self.inverse_statuses {
            out.push(InverseOfferStatusEntry {
                agent: *agent,
                framework: *framework,
                status: *status,
                timestamp: *timestamp,
            });
        }
        Ok(())
    }

    fn recover_resources(
        &mut self,
        framework: FrameworkId,
        agent: AgentId,
        role: &str,
        resources: &Resources,
        refuse_seconds: Option<f64>,
    ) -> Result<()> {
        if resources.is_empty() {
            return Ok(());
        }
        // Mesos: resources of removed frameworks or agents were recovered when they went.
        if !self.frameworks.contains_key(&framework) || !self.agents.contains_key(&agent) {
            log::debug!("recover_resources for unknown {framework} or {agent}: already recovered");
            return Ok(());
        }
        let none = Resources::new();
        let held = self.agents[&agent]
            .allocated
            .get(&framework)
            .and_then(|m| m.get(role))
            .unwrap_or(&none);
        if !held.contains(resources) {
            return Err(ModuleError::rejected(format!(
                "recover_resources: {framework} holds {held} under role '{role}' on {agent}, cannot recover {resources}"
            )));
        }
        self.release(agent, framework, role, resources)?;
        if let Some(t) = refuse_seconds.and_then(clamp_refuse) {
            let lifetime = t.max(self.options.allocation_interval);
            let filter = OfferFilter {
                resources: resources.clone(),
                expires: self.now + lifetime,
                first_periodic: self.first_periodic_after(self.now),
            };
            self.earliest_expiry =
                self.earliest_expiry.min(filter.expires.max(filter.first_periodic));
            self.frameworks
                .get_mut(&framework)
                .expect("checked")
                .offer_filters
                .entry(agent)
                .or_default()
                .entry(role.to_owned())
                .or_default()
                .push(filter);
        }
        Ok(())
    }

    fn suppress_offers(&mut self, framework: FrameworkId, roles: &[RString]) -> Result<()> {
        let fw = self.framework(framework, "suppress_offers")?;
        let roles: Vec<String> = if roles.is_empty() {
            fw.roles().map(str::to_owned).collect()
        } else {
            roles.iter().map(|r| r.to_string()).collect()
        };
        for role in roles {
            self.frameworks.get_mut(&framework).expect("checked").suppressed.insert(role.clone());
            self.set_framework_activity(framework, &role, false)?;
        }
        Ok(())
    }

    fn revive_offers(&mut self, framework: FrameworkId, roles: &[RString]) -> Result<()> {
        let fw = self.framework(framework, "revive_offers")?;
        let roles: Vec<String> = if roles.is_empty() {
            fw.roles().map(str::to_owned).collect()
        } else {
            roles.iter().map(|r| r.to_string()).collect()
        };
        let fw = self.frameworks.get_mut(&framework).expect("checked");
        fw.inverse_filters.clear();
        let active = fw.active;
        for role in &roles {
            for by_role in fw.offer_filters.values_mut() {
                by_role.remove(role);
            }
            fw.offer_filters.retain(|_, by_role| !by_role.is_empty());
            fw.suppressed.remove(role);
        }
        for role in roles {
            self.set_framework_activity(framework, &role, active)?;
        }
        Ok(())
    }

    fn update_quota(&mut self, role: &str, quota: &Quota) -> Result<()> {
        for g in quota.guarantees.iter() {
            if quota.limits.has(&g.name) && quota.limits.get(&g.name) < g.value {
                return Err(ModuleError::rejected(format!(
                    "update_quota: role '{role}': guarantee {}:{} is above its limit {}",
                    g.name,
                    g.value,
                    quota.limits.get(&g.name)
                )));
            }
        }
        if quota.guarantees.is_empty() && quota.limits.is_empty() {
            self.quotas.remove(role);
        } else {
            self.quotas.insert(role.to_owned(), quota.clone());
        }
        Ok(())
    }

    fn update_weights(&mut self, weights: &[RoleWeight]) -> Result<()> {
        for w in weights {
            if !(w.weight.is_finite() && w.weight > 0.0) {
                return Err(ModuleError::rejected(format!(
                    "update_weights: weight of '{}' must be positive, got {}",
                    w.role, w.weight
                )));
            }
        }
        for w in weights {
            self.weights.insert(w.role.to_string(), w.weight);
            self.role_sorter
                .update_weight(&w.role, w.weight)
                .map_err(|e| sorter_error("role sorter update_weight", e))?;
        }
        Ok(())
    }

    fn pause(&mut self) -> Result<()> {
        self.paused = true;
        Ok(())
    }

    fn resume(&mut self) -> Result<()> {
        self.paused = false;
        self.recovery = None;
        Ok(())
    }

    fn allocate(&mut self, agents: &[AgentId], periodic: bool, out: &mut OfferBatch) -> Result<()> {
        self.check_recovery();
        if self.paused {
            return Ok(());
        }
        self.expire_filters();
        self.run(agents, periodic, out)
    }
}

#[cfg(test)]
mod tests {
    use allocator_api::{AgentCapabilities, FrameworkCapabilities};

    use super::*;

    fn drf() -> SorterFactory {
        Box::new(|c: &SorterConfig| Ok(Box::new(drf_sorter::create(c)) as Box<dyn Sorter>))
    }

    #[test]
    fn inverse_offer_statuses_are_queryable() {
        let mut a = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
        let agent = AgentInfo {
            id: AgentId(0),
            name: "a1".into(),
            hostname: "a1".into(),
            attributes: RVec::new(),
            capabilities: AgentCapabilities::all(),
        };
        let fw = FrameworkInfo {
            id: FrameworkId(0),
            name: "f1".into(),
            roles: vec![RString::from("r1")].into(),
            capabilities: FrameworkCapabilities::MULTI_ROLE,
        };
        a.add_framework(&fw, &[], true, &FrameworkOptions::default()).unwrap();
        a.add_agent(&agent, None, &"cpus:1;mem:64".parse().unwrap(), &[]).unwrap();
        a.set_time(3.0).unwrap();
        a.update_inverse_offer(AgentId(0), FrameworkId(0), Some(InverseOfferStatus::ACCEPT), None)
            .unwrap();
        let mut out = RVec::new();
        a.inverse_offer_statuses(&mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].status, InverseOfferStatus::ACCEPT);
        assert_eq!(out[0].timestamp, 3.0);
        a.update_unavailability(AgentId(0), None).unwrap();
        a.inverse_offer_statuses(&mut out).unwrap();
        assert!(out.is_empty(), "clearing maintenance clears the statuses");
    }

    #[test]
    fn a_guarantee_above_its_limit_is_refused() {
        let mut a = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
        let quota = Quota {
            guarantees: Quantities::parse("cpus:4").unwrap(),
            limits: Quantities::parse("cpus:2").unwrap(),
        };
        let e = a.update_quota("q", &quota).unwrap_err();
        assert_eq!(e.kind, allocator_api::ErrorKind::REJECTED);
        assert!(e.message.contains("above its limit"), "{e}");
    }
}
