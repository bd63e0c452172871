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
//! Quota (R18–R22) follows Mesos 1.12: stage 1 serves guarantees, stage 2 shares fairly up to
//! limits, and both hold back the headroom still required by unsatisfied guarantees. Only
//! top-level roles take quota; quota on a nested role is refused, as Mesos's master refuses it.
//!
//! One concept a file: this file holds the allocator's state and its public queries;
//! `state.rs` the bookkeeping of agents, frameworks and roles (sorters kept in step);
//! `offer_filters.rs` refuse filters; `quota.rs` quota and headroom; `run.rs` the allocation run
//! with its stages; `calls.rs` the `Allocator` entry points.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use allocator_api::rng::Rng;

use crate::guard::SortWalk;
use allocator_api::{
    AgentCapabilities, AgentId, AgentInfo, Allocation, Allocator, AllocatorOptions, ClientId,
    FrameworkCapabilities, FrameworkId, FrameworkInfo, FrameworkOptions, IdMap, IdSet,
    InverseOffer, InverseOfferStatus, InverseOfferStatusEntry, ModuleError, Name, OfferBatch,
    Operation, Quantities, Quota, RString, RVec, Resources, Result, Role, RoleQuota, RoleWeight,
    Sorter, SorterConfig, Unavailability,
};

/// Creates sorters for the allocator (the role sorter once, a framework sorter per role).
pub type SorterFactory =
    Box<dyn Fn(&SorterConfig) -> std::result::Result<Box<dyn Sorter>, String> + Send>;

mod calls;
mod ledger;
mod offer_filters;
mod prefetch;
mod quota;
mod quota_arith;
mod run;
mod state;
#[cfg(test)]
mod tests;

use allocator_api::filters::clamp_refuse_seconds;
use ledger::Ledger;
pub use quota::{QuotaError, check_quota};
use quota_arith::{is_quota_resource, quota_resources, remaining, saturating_sub};
use run::RunState;
use state::{framework_path, info_roles, sorter_error};

use offer_filters::{AgentFilters, Blocked, OfferFilter, RefusedResources, RoleId, RoleNames};

/// `true` when `free` covers every non-shared entry of `res`.
fn covers_unshared(free: &Resources, res: &Resources) -> bool {
    res.iter().filter(|r| !r.is_shared()).all(|r| free.contains_resource(r))
}

const EPSILON: f64 = 1e-9;

#[derive(Debug)]
struct Agent {
    info: AgentInfo,
    total: Resources,
    /// Offered or allocated, per framework and role.
    allocated: Ledger,
    /// `total` minus everything allocated (non-shared only).
    free: Resources,
    /// `free` plus everything allocated is exactly `total` (non-shared): nothing allocated
    /// exceeded what was free when it was taken. Then a release adds back to `free` what a
    /// recomputation would give; otherwise (an agent over-allocated by a shrinking update or by
    /// `used` beyond its total) a release recomputes `free`.
    free_exact: bool,
    /// `total` holds a shared resource (a shared persistent volume); set with `free` by
    /// [`recompute_free`](Agent::recompute_free), which follows every change of `total`, so
    /// the run's checks read a flag instead of the entries.
    total_has_shared: bool,
    activated: bool,
    has_gpu: bool,
    maintenance: Option<Unavailability>,
    /// Roles whose every candidate framework was found blocked here (see [`Blocked`]);
    /// cleared whenever what the agent may offer changes.
    blocked: Vec<Blocked>,
    /// The refuse filters frameworks made on this agent (any framework, any role).
    offer_filters: AgentFilters,
}

impl Agent {
    /// `free` = `total` minus everything allocated (non-shared), and whether that is exact
    /// (see `free_exact`).
    fn recompute_free(&mut self) {
        self.blocked.clear();
        let mut free = self.total.filter(|r| !r.is_shared());
        let mut exact = true;
        for held in self.allocated.iter() {
            exact = exact && covers_unshared(&free, &held.resources);
            free.subtract(&held.resources);
        }
        self.free = free;
        self.free_exact = exact;
        self.total_has_shared = self.total.iter().any(|r| r.is_shared());
    }

    /// Takes the non-shared part of `res` from `free` (allocated outside a run: `used`
    /// resources); `free_exact` no longer holds when `free` did not cover it.
    fn take_free(&mut self, res: &Resources) {
        self.blocked.clear();
        self.free_exact = self.free_exact && covers_unshared(&self.free, res);
        self.free.subtract(&res.filter(|r| !r.is_shared()));
    }

    /// Gives `res` (just released from an allocation on this agent) back to `free`: added back
    /// while `free_exact` holds (the same value a recomputation gives, without going over every
    /// allocation), recomputed otherwise, so availability never exceeds total minus allocated
    /// (R14).
    fn release_free(&mut self, res: &Resources) {
        if !self.free_exact {
            self.recompute_free();
            return;
        }
        self.blocked.clear();
        if res.iter().any(|r| r.is_shared()) {
            self.free.add(&res.filter(|r| !r.is_shared()));
        } else {
            self.free.add(res);
        }
        #[cfg(debug_assertions)]
        {
            let added_back = self.free.clone();
            self.recompute_free();
            debug_assert_eq!(added_back, self.free, "free added back != free recomputed");
        }
    }

    /// Starts loading what a run reads of this agent's heap: its free resources and its
    /// ledger ([`prefetch`]).
    fn prefetch_heap(&self) {
        prefetch::prefetch_slice(self.free.iter().as_slice());
        self.allocated.prefetch();
    }

    /// `true` when nothing at all may be offered (no free resource and no shared volume).
    fn nothing_available(&self) -> bool {
        self.free.is_empty() && !self.total_has_shared
    }

    /// What `role` may be offered: free resources allocatable to it, plus shared volumes
    /// allocatable to it that were not offered yet in this run (`shared_offered`).
    fn available_to(&self, role: &str, shared_offered: Option<&Resources>) -> Resources {
        let mut a = if self.free.iter().all(|r| r.is_allocatable_to(role)) {
            self.free.clone()
        } else {
            self.free.allocatable_to(role)
        };
        if self.total_has_shared {
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
    /// How many refuse filters the framework has (on the agents' lists): removing them scans
    /// the agents only while some are left.
    refuse_filters: usize,
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
    /// Role names by role-sorter client (interned, so the hot path copies a pointer).
    role_by_client: IdMap<ClientId, Role>,
    next_role_client: u32,
    /// No filter expires before this time (a lower bound; `expire_filters` scans from then).
    earliest_expiry: f64,
    /// Bumped by every change that can unblock a framework on an agent other than the agent's
    /// own resources changing or a filter expiring (frameworks, their roles, activity,
    /// capabilities and options, removed filters): a [`Blocked`] record of an older generation
    /// is void.
    blocked_generation: u64,
    /// The one shared copy of each value refuse filters refer to.
    refused: RefusedResources,
    /// The role names refuse filters refer to, by interned id.
    role_names: RoleNames,
    /// The interned id of each tracked role's name, by role-sorter client index.
    role_name_ids: Vec<RoleId>,
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
        let mut role_sorter = make_role_sorter(&sorter_config)?;
        // The allocator keeps its own ledger per agent and never asks a sorter what a client
        // holds there (see `Sorter::keep_scalars_only`).
        role_sorter.keep_scalars_only();
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
            blocked_generation: 0,
            refused: RefusedResources::default(),
            role_names: RoleNames::default(),
            role_name_ids: Vec::new(),
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

    /// The number of frameworks the allocation runs' walks have considered so far, over the
    /// allocator's life: every framework a walk took from its role's order and checked (filtered
    /// or granted), not those of a role skipped as blocked (see `Blocked`). Benchmarks divide a
    /// run's time by the run's share of it: the cost per (agent × framework considered).
    pub fn frameworks_considered(&self) -> u64 {
        self.fw_walk.visits()
    }

    /// The number of unexpired refuse filters per role (Mesos's
    /// `allocator/mesos/offer_filters/roles/<role>/active`); roles without one are absent.
    pub fn active_offer_filters(&self) -> BTreeMap<String, usize> {
        let mut by_id = vec![0usize; self.role_names.len()];
        for agent in self.agents.values() {
            for f in agent.offer_filters.all().iter().filter(|f| f.active(self.now, false)) {
                by_id[f.role.0 as usize] += 1;
            }
        }
        by_id
            .into_iter()
            .enumerate()
            .filter(|(_, n)| *n > 0)
            .map(|(id, n)| (self.role_names.name(RoleId(id as u32)).to_string(), n))
            .collect()
    }

    /// Replaces both kinds of sorter, rebuilding them from the allocator's own records of agents,
    /// roles, weights, frameworks and allocations: no allocation is lost or duplicated.
    pub fn replace_sorters(
        &mut self,
        make_role_sorter: SorterFactory,
        make_framework_sorter: SorterFactory,
    ) -> std::result::Result<(), String> {
        let mut role_sorter = make_role_sorter(&self.sorter_config)?;
        role_sorter.keep_scalars_only();
        let mut fresh: BTreeMap<String, Box<dyn Sorter>> = BTreeMap::new();
        for role in self.roles.keys() {
            let mut sorter = make_framework_sorter(&self.sorter_config)?;
            sorter.keep_scalars_only();
            fresh.insert(role.clone(), sorter);
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
            for held in agent.allocated.iter() {
                let (fw, role, res) = (held.framework, held.role.as_str(), &held.resources);
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
        self.unblock();
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
            for held in agent.allocated.iter() {
                out.push(Allocation {
                    framework: held.framework,
                    agent: *agent_id,
                    role: held.role.into(),
                    resources: held.resources.clone(),
                });
            }
        }
        out
    }

    /// What `framework` holds on every agent, as (agent, role, resources), by agent, then role
    /// text.
    fn holdings_of(&self, framework: FrameworkId) -> Vec<(AgentId, Role, Resources)> {
        let mut held: Vec<(AgentId, Role, Resources)> = self
            .agents
            .iter()
            .flat_map(|(a, agent)| {
                agent.allocated.of(framework).map(|h| (*a, h.role, h.resources.clone()))
            })
            .collect();
        held.sort_by_key(|h| (h.0, h.1));
        held
    }

    /// An agent's total and what is allocated on it, for invariant checks.
    pub fn agent_ledger(&self, agent: AgentId) -> Option<(Resources, Resources)> {
        let a = self.agents.get(&agent)?;
        let mut used = Resources::new();
        for held in a.allocated.iter() {
            used.add(&held.resources);
        }
        Some((a.total.clone(), used))
    }
}
