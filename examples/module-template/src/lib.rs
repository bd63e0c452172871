//! A module crate to copy (see `README.md`): an allocator and a sorter that pass the host's
//! conformance suite, exported with `export_modules!`, and a `cargo test` that runs that suite
//! against the built library (`tests/conformance.rs`).
//!
//! * `template_first_fit` (allocator): in every allocation run, each candidate agent goes
//!   whole (what is free and allocatable to the role) to the next framework, in round-robin
//!   order, that may receive it. It keeps every rule an allocator owes the host: only what is
//!   free, only unreserved resources and the role's own (or its ancestors') reservations,
//!   nothing to inactive frameworks, suppressed roles or deactivated agents, refuse filters
//!   (SPEC 4.1, `Allocator::recover_resources`), min-allocatable sets, GPU filtering, and
//!   `used` lists counted once, the whitelist, pause and resume, and operations
//!   (`update_allocation`, `update_available`) applied to its books. It leaves out quota,
//!   weights, shared volumes and maintenance (their calls are ignored).
//! * `template_fifo` (sorter): active clients in the order they were added, with the
//!   allocation queries implemented.
//!
//! Replace the policy, keep the bookkeeping.

use std::collections::{BTreeMap, BTreeSet};

use allocator_api::{
    AgentAllocation, AgentId, AgentInfo, Allocation, Allocator, AllocatorOptions, ClientId,
    FrameworkCapabilities, FrameworkId, FrameworkInfo, FrameworkOptions, IdMap, ModuleError,
    OfferBatch, Operation, Quantities, RString, RVec, RefuseFilter, Resources, Result, Role,
    Sorter, Unavailability,
};

struct Agent {
    info: AgentInfo,
    total: Resources,
    free: Resources,
    active: bool,
}

struct Framework {
    info: FrameworkInfo,
    active: bool,
    suppressed: BTreeSet<Role>,
    /// Its min-allocatable sets per role.
    options: FrameworkOptions,
}

/// A refuse filter (the rule is in `Allocator::recover_resources`'s documentation).
struct Filter {
    framework: FrameworkId,
    role: Role,
    agent: AgentId,
    /// What was refused and for how long (the clamps and lifetime are `allocator-api`'s).
    filter: RefuseFilter,
}

impl Filter {
    fn blocks(&self, now: f64, periodic: bool, offer: &Resources) -> bool {
        self.filter.blocks(now, periodic, offer)
    }
}

/// The first-fit allocator.
pub struct FirstFit {
    options: AllocatorOptions,
    now: f64,
    agents: BTreeMap<AgentId, Agent>,
    frameworks: BTreeMap<FrameworkId, Framework>,
    /// What each framework holds (offered or in use) under each role on each agent. Entries
    /// may name frameworks not added yet (an agent's `used` after a failover).
    held: BTreeMap<(FrameworkId, AgentId, Role), Resources>,
    filters: Vec<Filter>,
    /// Where the round-robin over frameworks resumes.
    next: usize,
    /// Allocation is paused (`pause` until `resume`): `allocate` offers nothing.
    paused: bool,
    /// The hostnames that may be offered (`None`: every agent).
    whitelist: Option<BTreeSet<String>>,
}

fn rejected(call: &str, what: impl std::fmt::Display) -> ModuleError {
    ModuleError::rejected(format!("{call}: {what}"))
}

impl FirstFit {
    /// An allocator with the host's options (interval, min-allocatable sets, GPU filtering).
    pub fn new(options: &AllocatorOptions) -> FirstFit {
        FirstFit {
            options: options.clone(),
            now: 0.0,
            agents: BTreeMap::new(),
            frameworks: BTreeMap::new(),
            held: BTreeMap::new(),
            filters: Vec::new(),
            next: 0,
            paused: false,
            whitelist: None,
        }
    }

    fn framework_mut(&mut self, id: FrameworkId, call: &str) -> Result<&mut Framework> {
        self.frameworks.get_mut(&id).ok_or_else(|| rejected(call, format!("unknown {id}")))
    }

    fn agent_mut(&mut self, id: AgentId, call: &str) -> Result<&mut Agent> {
        self.agents.get_mut(&id).ok_or_else(|| rejected(call, format!("unknown {id}")))
    }

    /// What `framework` may be offered under `role` on `agent`, or nothing.
    fn offer_for(&self, fw: &Framework, role: Role, agent: &Agent, periodic: bool) -> Resources {
        let caps = fw.info.capabilities;
        let gpu_agent = agent.total.scalar("gpus").is_positive();
        if self.options.filter_gpu_resources
            && gpu_agent
            && !caps.has(FrameworkCapabilities::GPU_RESOURCES)
            || !agent.info.capabilities.admit(caps, &role)
        {
            return Resources::new();
        }
        let offer = agent.free.allocatable_to(&role).filter(|r| {
            !r.is_shared()
                && (!r.is_revocable() || caps.has(FrameworkCapabilities::REVOCABLE_RESOURCES))
                && (!r.is_refined_reservation()
                    || caps.has(FrameworkCapabilities::RESERVATION_REFINEMENT))
        });
        let min = fw.options.min_allocatable_for(&role, &self.options.min_allocatable_resources);
        let allocatable = offer.meets_minimum(min);
        let filtered = self.filters.iter().any(|f| {
            f.framework == fw.info.id
                && f.role == role
                && f.agent == agent.info.id
                && f.blocks(self.now, periodic, &offer)
        });
        if allocatable && !filtered { offer } else { Resources::new() }
    }
}

impl Allocator for FirstFit {
    fn set_time(&mut self, now: f64) -> Result<()> {
        self.now = now;
        // Forget filters that can no longer block anything.
        self.filters.retain(|f| !f.filter.expired(now));
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
            return Err(rejected("add_framework", format!("{} is already added", info.id)));
        }
        // What an agent already reported for this framework and role counts once: only the
        // rest is new. Check everything before changing anything.
        let mut new: BTreeMap<(AgentId, Role), Resources> = BTreeMap::new();
        for u in used.iter().filter(|u| self.agents.contains_key(&u.agent)) {
            let key = (info.id, u.agent, Role::from(&u.role));
            let reported = self.held.get(&key).cloned().unwrap_or_default();
            let extra = u.resources.clone() - &reported.intersection(&u.resources);
            new.entry((u.agent, key.2)).or_default().add(&extra);
        }
        for agent in self.agents.keys() {
            let mut want = Resources::new();
            for ((a, _), r) in &new {
                if a == agent {
                    want.add(r);
                }
            }
            if !self.agents[agent].free.contains(&want) {
                return Err(rejected(
                    "add_framework",
                    format!("{} uses {want} on {agent}, more than is free there", info.id),
                ));
            }
        }
        for ((agent, role), r) in new {
            self.agents.get_mut(&agent).expect("checked").free.subtract(&r);
            self.held.entry((info.id, agent, role)).or_default().add(&r);
        }
        let suppressed = options.suppressed_roles.iter().map(Role::from).collect();
        let options = options.clone();
        self.frameworks
            .insert(info.id, Framework { info: info.clone(), active, suppressed, options });
        Ok(())
    }

    fn remove_framework(&mut self, framework: FrameworkId) -> Result<()> {
        self.framework_mut(framework, "remove_framework")?;
        self.frameworks.remove(&framework);
        let keys: Vec<_> = self.held.keys().filter(|k| k.0 == framework).cloned().collect();
        for key in keys {
            let r = self.held.remove(&key).expect("listed");
            if let Some(a) = self.agents.get_mut(&key.1) {
                a.free.add(&r);
            }
        }
        self.filters.retain(|f| f.framework != framework);
        Ok(())
    }

    fn activate_framework(&mut self, framework: FrameworkId) -> Result<()> {
        self.framework_mut(framework, "activate_framework")?.active = true;
        Ok(())
    }

    fn deactivate_framework(&mut self, framework: FrameworkId) -> Result<()> {
        self.framework_mut(framework, "deactivate_framework")?.active = false;
        self.filters.retain(|f| f.framework != framework);
        Ok(())
    }

    fn update_framework(&mut self, info: &FrameworkInfo, options: &FrameworkOptions) -> Result<()> {
        let fw = self.framework_mut(info.id, "update_framework")?;
        fw.info = info.clone();
        fw.suppressed = options.suppressed_roles.iter().map(Role::from).collect();
        fw.options = options.clone();
        self.filters.retain(|f| f.framework != info.id || info.has_role(f.role));
        Ok(())
    }

    fn add_agent(
        &mut self,
        info: &AgentInfo,
        _unavailability: Option<&Unavailability>,
        total: &Resources,
        used: &[Allocation],
    ) -> Result<()> {
        if self.agents.contains_key(&info.id) {
            return Err(rejected("add_agent", format!("{} is already added", info.id)));
        }
        let mut in_use = Resources::new();
        for u in used {
            in_use.add(&u.resources);
        }
        if !total.contains(&in_use) {
            return Err(rejected(
                "add_agent",
                format!("{} uses {in_use}, more than its total {total}", info.id),
            ));
        }
        for u in used {
            // The framework may not be added yet: its share starts counting when it is.
            self.held
                .entry((u.framework, info.id, Role::from(&u.role)))
                .or_default()
                .add(&u.resources);
        }
        let free = total.clone() - &in_use;
        self.agents.insert(
            info.id,
            Agent { info: info.clone(), total: total.clone(), free, active: true },
        );
        Ok(())
    }

    fn remove_agent(&mut self, agent: AgentId) -> Result<()> {
        self.agent_mut(agent, "remove_agent")?;
        self.agents.remove(&agent);
        self.held.retain(|k, _| k.1 != agent);
        self.filters.retain(|f| f.agent != agent);
        Ok(())
    }

    fn update_agent(&mut self, info: &AgentInfo, total: Option<&Resources>) -> Result<()> {
        let a = self.agent_mut(info.id, "update_agent")?;
        let attributes_changed = a.info.attributes != info.attributes;
        a.info = info.clone();
        if let Some(total) = total {
            a.total = total.clone();
        }
        let mut free = a.total.clone();
        for ((_, agent, _), r) in &self.held {
            if *agent == info.id {
                free.subtract(r);
            }
        }
        self.agents.get_mut(&info.id).expect("checked").free = free;
        if attributes_changed {
            self.filters.retain(|f| f.agent != info.id);
        }
        Ok(())
    }

    fn activate_agent(&mut self, agent: AgentId) -> Result<()> {
        self.agent_mut(agent, "activate_agent")?.active = true;
        Ok(())
    }

    fn deactivate_agent(&mut self, agent: AgentId) -> Result<()> {
        self.agent_mut(agent, "deactivate_agent")?.active = false;
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
        if !self.frameworks.contains_key(&framework) || !self.agents.contains_key(&agent) {
            return Ok(()); // removed: everything it held went with it
        }
        let role = Role::from(role);
        let key = (framework, agent, role);
        let held = self.held.get(&key).cloned().unwrap_or_default();
        if !held.contains(resources) {
            return Err(rejected(
                "recover_resources",
                format!("{framework} holds {held} under '{role}' on {agent}, not {resources}"),
            ));
        }
        let left = held - resources;
        if left.is_empty() {
            self.held.remove(&key);
        } else {
            self.held.insert(key, left);
        }
        self.agents.get_mut(&agent).expect("checked").free.add(resources);
        let interval = self.options.allocation_interval;
        if let Some(filter) =
            RefuseFilter::new(resources.clone(), refuse_seconds, self.now, interval)
        {
            self.filters.push(Filter { framework, role, agent, filter });
        }
        Ok(())
    }

    /// Operations (reserve, create a volume, …) on what a framework holds: the held resources
    /// and the agent's total change, what is free does not. All or nothing. A module may
    /// instead refuse operations (the trait's default answers `unsupported`); one that accepts
    /// them must apply them, or its books disagree with the host's from then on.
    fn update_allocation(
        &mut self,
        framework: FrameworkId,
        agent: AgentId,
        role: &str,
        operations: &[Operation],
    ) -> Result<()> {
        let key = (framework, agent, Role::from(role));
        let held = self.held.get(&key).cloned().unwrap_or_default();
        let total = &self.agent_mut(agent, "update_allocation")?.total;
        let (held, total) = Operation::apply_all(operations, &held, total)
            .map_err(|e| rejected("update_allocation", e))?;
        self.held.insert(key, held);
        self.agent_mut(agent, "update_allocation")?.total = total;
        Ok(())
    }

    /// Operations on an agent's free resources: the free resources and the total change.
    fn update_available(&mut self, agent: AgentId, operations: &[Operation]) -> Result<()> {
        let a = self.agent_mut(agent, "update_available")?;
        (a.free, a.total) = Operation::apply_all(operations, &a.free, &a.total)
            .map_err(|e| rejected("update_available", e))?;
        Ok(())
    }

    fn suppress_offers(&mut self, framework: FrameworkId, roles: &[RString]) -> Result<()> {
        let fw = self.framework_mut(framework, "suppress_offers")?;
        let roles: Vec<Role> = if roles.is_empty() {
            fw.info.role_iter().collect()
        } else {
            roles.iter().map(Role::from).collect()
        };
        fw.suppressed.extend(roles);
        Ok(())
    }

    fn revive_offers(&mut self, framework: FrameworkId, roles: &[RString]) -> Result<()> {
        let fw = self.framework_mut(framework, "revive_offers")?;
        let roles: Vec<Role> = if roles.is_empty() {
            fw.info.role_iter().collect()
        } else {
            roles.iter().map(Role::from).collect()
        };
        for role in &roles {
            fw.suppressed.remove(role);
        }
        self.filters.retain(|f| f.framework != framework || !roles.contains(&f.role));
        Ok(())
    }

    /// The host keeps calling `allocate` while paused: the module must offer nothing.
    fn pause(&mut self) -> Result<()> {
        self.paused = true;
        Ok(())
    }

    fn resume(&mut self) -> Result<()> {
        self.paused = false;
        Ok(())
    }

    /// The host does not filter agents by the whitelist: the module must.
    fn update_whitelist(&mut self, hostnames: Option<&[RString]>) -> Result<()> {
        self.whitelist = hostnames.map(|h| h.iter().map(|s| s.to_string()).collect());
        Ok(())
    }

    fn allocate(&mut self, agents: &[AgentId], periodic: bool, out: &mut OfferBatch) -> Result<()> {
        if self.paused {
            return Ok(());
        }
        // Every (framework, role) that may receive offers, in a stable order.
        let eligible: Vec<(FrameworkId, Role)> = self
            .frameworks
            .values()
            .filter(|f| f.active)
            .flat_map(|f| {
                f.info.role_iter().filter(|r| !f.suppressed.contains(r)).map(|r| (f.info.id, r))
            })
            .collect();
        if eligible.is_empty() {
            return Ok(());
        }
        let mut candidates = agents.to_vec();
        candidates.sort();
        candidates.dedup();
        for agent_id in candidates {
            let listed = |a: &&Agent| {
                self.whitelist.as_ref().is_none_or(|w| w.contains(a.info.hostname.as_str()))
            };
            let Some(agent) = self.agents.get(&agent_id).filter(|a| a.active).filter(listed) else {
                continue;
            };
            if agent.free.is_empty() {
                continue;
            }
            for i in 0..eligible.len() {
                let (fw_id, role) = eligible[(self.next + i) % eligible.len()];
                let offer = self.offer_for(&self.frameworks[&fw_id], role, agent, periodic);
                if offer.is_empty() {
                    continue;
                }
                self.next = (self.next + i + 1) % eligible.len();
                self.agents.get_mut(&agent_id).expect("present").free.subtract(&offer);
                self.held.entry((fw_id, agent_id, role)).or_default().add(&offer);
                out.offers.push(Allocation::new(fw_id, agent_id, role, offer));
                break;
            }
        }
        Ok(())
    }
}

/// The FIFO sorter: active clients in the order they were added.
#[derive(Default)]
pub struct Fifo {
    /// Clients in order of addition, with their path and whether they are active.
    clients: Vec<(ClientId, String, bool)>,
    allocations: IdMap<ClientId, BTreeMap<AgentId, Resources>>,
}

impl Fifo {
    fn position(&self, client: ClientId, call: &str) -> Result<usize> {
        self.clients
            .iter()
            .position(|c| c.0 == client)
            .ok_or_else(|| rejected(call, format!("unknown {client}")))
    }

    fn held_mut(&mut self, client: ClientId, agent: AgentId) -> &mut Resources {
        self.allocations.entry(client).or_default().entry(agent).or_default()
    }
}

impl Sorter for Fifo {
    fn add(&mut self, client: ClientId, path: &str) -> Result<()> {
        if self.clients.iter().any(|c| c.0 == client || c.1 == path) {
            return Err(rejected("add", format!("{client} ({path}) is already present")));
        }
        self.clients.push((client, path.to_owned(), false));
        Ok(())
    }

    fn remove(&mut self, client: ClientId) -> Result<()> {
        let i = self.position(client, "remove")?;
        self.clients.remove(i);
        self.allocations.remove(&client);
        Ok(())
    }

    fn activate(&mut self, client: ClientId) -> Result<()> {
        let i = self.position(client, "activate")?;
        self.clients[i].2 = true;
        Ok(())
    }

    fn deactivate(&mut self, client: ClientId) -> Result<()> {
        let i = self.position(client, "deactivate")?;
        self.clients[i].2 = false;
        Ok(())
    }

    fn allocated(&mut self, client: ClientId, agent: AgentId, resources: &Resources) -> Result<()> {
        self.position(client, "allocated")?;
        self.held_mut(client, agent).add(resources);
        Ok(())
    }

    fn update(
        &mut self,
        client: ClientId,
        agent: AgentId,
        old: &Resources,
        new: &Resources,
    ) -> Result<()> {
        self.position(client, "update")?;
        let held = self.held_mut(client, agent);
        held.subtract(old);
        held.add(new);
        Ok(())
    }

    fn unallocated(
        &mut self,
        client: ClientId,
        agent: AgentId,
        resources: &Resources,
    ) -> Result<()> {
        self.position(client, "unallocated")?;
        self.held_mut(client, agent).subtract(resources);
        Ok(())
    }

    fn allocation(&self, client: ClientId, out: &mut RVec<AgentAllocation>) -> Result<()> {
        out.clear();
        if let Some(by_agent) = self.allocations.get(&client) {
            out.extend(
                by_agent
                    .iter()
                    .filter(|(_, r)| !r.is_empty())
                    .map(|(a, r)| AgentAllocation { agent: *a, resources: r.clone() }),
            );
        }
        Ok(())
    }

    fn allocation_on(&self, client: ClientId, agent: AgentId, out: &mut Resources) -> Result<()> {
        out.clear();
        if let Some(r) = self.allocations.get(&client).and_then(|m| m.get(&agent)) {
            out.add(r);
        }
        Ok(())
    }

    fn allocation_scalar_quantities(
        &self,
        client: Option<ClientId>,
        out: &mut Quantities,
    ) -> Result<()> {
        out.clear();
        for (c, by_agent) in &self.allocations {
            if client.is_none_or(|wanted| wanted == *c) {
                for r in by_agent.values() {
                    r.add_scalar_quantities_to(out);
                }
            }
        }
        Ok(())
    }

    fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()> {
        out.clear();
        out.extend(self.clients.iter().filter(|c| c.2).map(|c| c.0));
        Ok(())
    }

    fn contains(&self, client: ClientId) -> bool {
        self.clients.iter().any(|c| c.0 == client)
    }

    fn count(&self) -> usize {
        self.clients.len()
    }
}

allocator_api::export_modules! {
    allocator {
        name: "template_first_fit",
        author: "Example Org <infra@example.org>",
        description: "each agent whole to the next framework in round-robin order",
        create: |options, _params| Ok::<_, String>(FirstFit::new(options)),
    },
    sorter {
        name: "template_fifo",
        author: "Example Org <infra@example.org>",
        description: "first come, first served",
        create: |_config, _params| Ok::<_, String>(Fifo::default()),
    },
}
