//! [`PlacementAllocator`]: the bookkeeping every placement allocator needs, written once, with
//! the policy plugged in.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use allocator_api::resources::{DEVICE_MILLI, Demand, Device, GpuAsk, device_entries, lowest_free};
use allocator_api::{
    AgentId, AgentInfo, Allocation, Allocator, AllocatorOptions, Constraint, ExplainEntry,
    ExplainSubject, FrameworkCapabilities, FrameworkId, FrameworkInfo, FrameworkOptions, GroupId,
    IdMap, ModuleError, OfferBatch, Operation, Quantities, RString, RVec, RefuseFilter, Request,
    Resources, Result, RoleWeight, Unavailability,
};

use crate::fairness::RoleOrder;
use crate::node::{Ask, Node, Shape, copies_that_fit, count_task, task_shape};
use crate::order::rank;

/// A placement policy: scores the agents that can take a task and picks the device of a share.
pub trait Placement: Send {
    /// The score of a node that can take `ask` ([`Node::fits`]); the highest wins, and among
    /// equal scores the agent first in the per-seed order ([`crate::order`]). Called once per
    /// feasible agent, in the host's candidate order.
    fn score(&mut self, node: &Node, ask: &Ask) -> i64;

    /// The device the share that `ask` asks for ([`GpuAsk::Share`]) goes to on the chosen
    /// node (one with room for it). The default is the tightest fit
    /// ([`allocator_api::resources::tightest_fit`]).
    fn share_device(&mut self, node: &Node, ask: &Ask) -> Option<usize> {
        allocator_api::resources::tightest_fit(&node.gpus, ask.gpu.per_device())
    }

    /// A framework stated a new task, `ask` (once per task: asks a framework restates while
    /// they are outstanding are not new), before it is placed: for policies that learn from
    /// the demand they see. The default does nothing.
    fn requested(&mut self, ask: &Ask) {
        let _ = ask;
    }

    /// The score of `node` for one member of a group being placed all or nothing (a gang: a
    /// request whose `min_count` is above 1, or requests sharing a group), given where the
    /// group's earlier members went and how many are left ([`Members`]). Called instead of
    /// [`score`](Self::score) for every member. The default scores the member as a lone task;
    /// a policy that keeps gangs together raises the score of agents in `group.placed`, or of
    /// agents with room for the rest ([`Node::copies`]).
    fn score_member(&mut self, node: &Node, ask: &Ask, group: &Members<'_>) -> i64 {
        let _ = group;
        self.score(node, ask)
    }

    /// Whether the policy picks a lone task's agent by its place in the list of agents that
    /// can take it ([`pick`](Self::pick)) instead of by scores. The default is no.
    fn picks(&self) -> bool {
        false
    }

    /// For a policy that [`picks`](Self::picks): the index of the winner among the
    /// `feasible` (≥ 1) agents that can take `ask`, listed in the order the agents were added
    /// (the FGD artifact's `Random` draws one index over its feasible-node list). The
    /// default takes the first.
    fn pick(&mut self, feasible: usize, ask: &Ask) -> usize {
        let _ = (feasible, ask);
        0
    }
}

/// How ties between equal scores are broken (the module parameter `tie_break`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TieBreak {
    /// `seeded` (the default): a random agent order drawn once per seed ([`crate::order`]);
    /// the parameter `order_seed` (an integer) draws it from that seed instead of the host's.
    Seeded,
    /// `name`: the agent whose name is smallest (byte order) wins, as the FGD artifact's
    /// scheduler does (its node names start with a per-seed random prefix).
    Name,
}

/// A group being placed, as a policy sees it when scoring one of its members
/// ([`Placement::score_member`]).
#[derive(Clone, Copy, Debug)]
pub struct Members<'a> {
    /// The agents the group's members took so far in this attempt, one entry per member, in
    /// placement order.
    pub placed: &'a [AgentId],
    /// The group's tasks still to place, this one included.
    pub left: u32,
}

/// One outstanding request of a framework, as placement works through it.
#[derive(Clone, Debug)]
struct Outstanding {
    /// One task's ask.
    ask: Ask,
    /// The role its tasks run under.
    role: String,
    /// Tasks still to place.
    left: u32,
    /// The fewest tasks placed at once (1: each on its own).
    min: u32,
    /// The group it is placed with, all or nothing.
    group: Option<GroupId>,
    /// Conditions on the agents.
    constraints: Vec<Constraint>,
    /// Tasks still to try in the current run (set at the start of each run).
    todo: u32,
}

impl Outstanding {
    /// Placed all or nothing with others (its group) or `min` at once.
    fn grouped(&self) -> bool {
        self.group.is_some() || self.min > 1
    }
}

/// What one step of a run places: a lone task, or a group's members all or nothing.
#[derive(Debug)]
enum Unit {
    /// One task of the framework's request at this index.
    Task(usize),
    /// Members: (request index, tasks), placed together or not at all.
    Group(Vec<(usize, u32)>),
}

struct Agent {
    id: AgentId,
    node: Node,
    info: AgentInfo,
    total: Resources,
    free: Resources,
    /// `free`'s unreserved amounts by name, kept with `node` by [`PlacementAllocator::refresh`]:
    /// what an ask's other resources ([`Ask`]'s `other`) are checked against, without walking
    /// `free` once per candidate.
    unreserved: Quantities,
    devices: Vec<Device>,
    active: bool,
    rank: u64,
    /// When it was added (0, 1, …): the order [`Placement::pick`] lists agents in.
    seq: u64,
}

struct Framework {
    info: FrameworkInfo,
    active: bool,
    suppressed: BTreeSet<String>,
    /// Its min-allocatable sets per role.
    options: FrameworkOptions,
    filters: BTreeMap<(AgentId, String), RefuseFilter>,
    /// Its outstanding requests, in the order it stated them.
    requests: Vec<Outstanding>,
    /// The roles it is counted under in the role order.
    counted: Vec<String>,
}

impl Framework {
    fn blocked(
        &self,
        agent: AgentId,
        role: &str,
        offer: &Resources,
        now: f64,
        periodic: bool,
    ) -> bool {
        self.filters.get(&(agent, role.to_owned())).is_some_and(|f| f.blocks(now, periodic, offer))
    }
}

/// An allocator that places each **stated demand** ([`Allocator::request`]) where its policy
/// scores best, offering exactly that slice: the agent's CPUs and memory asked, and the GPU
/// device(s) chosen by the sharing rule (a share on one device, whole GPUs on fully free
/// ones). Frameworks that state nothing are offered like a plain allocator: every candidate
/// agent's free resources, in the per-seed agent order, to the frameworks in turn.
///
/// Requests: a `request` call **replaces** the framework's outstanding requests (an empty list
/// withdraws them). At each allocation run, each active framework's requests are placed in the
/// order it stated them, one step at a time, the framework whose next step's role is first in
/// weighted DRF order first: a step is one task, or a **group** placed all or nothing — a
/// request's first `min_count` tasks when that is above 1 (all of a gang), or every request
/// sharing a `group` (each its `min_count`). A group's members are placed one by one, each on
/// the agent the policy scores best given the members placed before it
/// ([`Placement::score_member`]); when one cannot be placed, every member placed in the attempt
/// is taken back (nothing of the group is offered) and the group waits for a later run. A
/// placed task is done; one no agent can take now stays outstanding until it is replaced. A
/// framework with outstanding requests is offered nothing else.
///
/// Placement uses unreserved, non-revocable resources only, and only GPUs carried as devices
/// (`gpus[ID]`); it honours each request's role and constraints, GPU filtering, the whitelist,
/// pause, inactive agents and frameworks, and skips agents where the framework has a refuse
/// filter in force. Plain offers hold at least one of the minimum allocatable sets
/// (`AllocatorOptions`); a placement is what the framework asked for, whatever its size. A
/// suppressed role gets neither plain offers nor placements (the host's guard refuses any
/// offer under a suppressed role); its requests stay outstanding until it revives, as they do
/// while the framework is inactive.
pub struct PlacementAllocator<P> {
    policy: P,
    options: AllocatorOptions,
    now: f64,
    paused: bool,
    whitelist: Option<BTreeSet<String>>,
    /// The agents, in no particular order; `index` finds one by handle.
    agents: Vec<Agent>,
    index: IdMap<AgentId, usize>,
    /// The last candidate list `allocate` got, and where those agents are in `agents`.
    candidates: (Vec<AgentId>, Vec<usize>),
    /// `candidates` must be recomputed (agents were added or removed).
    stale: bool,
    frameworks: BTreeMap<FrameworkId, Framework>,
    /// What each framework holds (offered or in use) on each agent, by role.
    held: BTreeMap<(FrameworkId, AgentId, String), Resources>,
    /// Where the plain offers' turn over frameworks resumes.
    turn: usize,
    /// The GPU tasks each framework has on each agent, by shape (their sum per agent is
    /// [`Node::gpu_tasks`]).
    tasks: BTreeMap<(FrameworkId, AgentId), Vec<(GpuAsk, u32)>>,
    /// Whose requests are placed first: roles by weighted DRF.
    roles: RoleOrder,
    /// How ties are broken.
    tie_break: TieBreak,
    /// The seed of the [`TieBreak::Seeded`] order.
    order_seed: u64,
    /// Under [`TieBreak::Name`], ranks must be recomputed (agents were added).
    ranks_stale: bool,
    /// Agents added so far.
    added: u64,
}

/// Whether `agent` is closed to `fw` under `role` whatever is free there: GPU gating (R24)
/// and agent capabilities (R15, R16).
fn gated(options: &AllocatorOptions, fw: &Framework, agent: &Agent, role: &str) -> bool {
    let caps = fw.info.capabilities;
    // Cheapest test first: a framework with GPU_RESOURCES never needs the agent's GPU count.
    options.filter_gpu_resources
        && !caps.has(FrameworkCapabilities::GPU_RESOURCES)
        && agent.total.scalar("gpus").is_positive()
        || !agent.info.capabilities.admit(caps, role)
}

/// The unreserved amounts of `free`, by name (every entry, whatever its flags, as a count for
/// ranges and sets): what an ask's other resources must fit in, into `out`.
fn unreserved_into(free: &Resources, out: &mut Quantities) {
    out.clear();
    for r in free.iter().filter(|r| r.is_unreserved()) {
        out.add_amount(r.name, r.value.quantity());
    }
}

/// Whether `have` holds every amount of `want` (absent counts as zero): `Quantities::contains`
/// by a linear scan with [`Name`](allocator_api::resources::Name)'s identity-first equality,
/// which tells the few distinct names an agent has apart without comparing their text (this
/// runs for every candidate agent of every placed task).
fn holds(have: &Quantities, want: &Quantities) -> bool {
    want.iter().all(|w| {
        let amount = have.iter().find(|h| h.name == w.name).map(|h| h.value);
        amount.unwrap_or(allocator_api::Scalar::ZERO) >= w.value
    })
}

fn offerable(a: &Agent, whitelist: Option<&BTreeSet<String>>) -> bool {
    a.active && whitelist.is_none_or(|w| w.contains(a.info.hostname.as_str()))
}

fn unknown(what: &str, id: impl std::fmt::Display) -> ModuleError {
    ModuleError::rejected(format!("{what}: unknown {id}"))
}

impl<P: Placement> PlacementAllocator<P> {
    /// An allocator placing by `policy`, with the host's options (the seed orders ties).
    pub fn new(policy: P, options: &AllocatorOptions) -> PlacementAllocator<P> {
        PlacementAllocator {
            policy,
            options: options.clone(),
            now: 0.0,
            paused: false,
            whitelist: None,
            agents: Vec::new(),
            index: IdMap::default(),
            candidates: (Vec::new(), Vec::new()),
            stale: true,
            frameworks: BTreeMap::new(),
            held: BTreeMap::new(),
            turn: 0,
            tasks: BTreeMap::new(),
            roles: RoleOrder::new(
                &options
                    .fairness_excluded_resource_names
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>(),
            ),
            tie_break: TieBreak::Seeded,
            order_seed: options.seed,
            ranks_stale: false,
            added: 0,
        }
    }

    /// Applies the tie-break parameters every placement module accepts: `tie_break`
    /// (`seeded`, the default, or `name`; see [`TieBreak`]) and `order_seed` (the seed of the
    /// `seeded` order, by default the host's `--seed`). Call it before agents are added.
    pub fn with_parameters(
        mut self,
        params: allocator_api::Parameters<'_>,
    ) -> std::result::Result<Self, String> {
        self.tie_break = match params.get("tie_break") {
            None | Some("seeded") => TieBreak::Seeded,
            Some("name") => TieBreak::Name,
            Some(other) => {
                return Err(format!("parameter 'tie_break' = '{other}': expected seeded or name"));
            }
        };
        self.order_seed = params.parse_or("order_seed", self.options.seed)?;
        Ok(self)
    }

    /// The tie-break in use.
    pub fn tie_break(&self) -> TieBreak {
        self.tie_break
    }

    /// Under [`TieBreak::Name`]: ranks agents by name after agents were added.
    fn rerank(&mut self) {
        if !self.ranks_stale {
            return;
        }
        self.ranks_stale = false;
        let mut by_name: Vec<usize> = (0..self.agents.len()).collect();
        by_name.sort_by(|&a, &b| self.agents[a].info.name.cmp(&self.agents[b].info.name));
        for (r, i) in by_name.into_iter().enumerate() {
            self.agents[i].rank = r as u64;
        }
    }

    /// The policy.
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// The policy's view of an agent.
    pub fn node(&self, agent: AgentId) -> Option<&Node> {
        self.index.get(&agent).map(|&i| &self.agents[i].node)
    }

    fn agent_mut(&mut self, agent: AgentId) -> Option<&mut Agent> {
        self.index.get(&agent).map(|&i| &mut self.agents[i])
    }

    fn agent(&self, agent: AgentId) -> Option<&Agent> {
        self.index.get(&agent).map(|&i| &self.agents[i])
    }

    fn refresh(&mut self, agent: AgentId) {
        if let Some(a) = self.agent_mut(agent) {
            a.node.refresh(&a.free, &a.devices, &a.info);
            unreserved_into(&a.free, &mut a.unreserved);
        }
    }

    /// Where the candidate agents are in `agents` (known ones only), cached between runs; the
    /// caller gives the list back with [`Self::return_slots`].
    fn candidate_slots(&mut self, agents: &[AgentId]) -> Vec<usize> {
        if self.stale || self.candidates.0 != agents {
            self.candidates.0 = agents.to_vec();
            self.candidates.1 =
                agents.iter().filter_map(|id| self.index.get(id).copied()).collect();
            self.stale = false;
        }
        std::mem::take(&mut self.candidates.1)
    }

    fn return_slots(&mut self, slots: Vec<usize>) {
        self.candidates.1 = slots;
    }

    fn hold(&mut self, fw: FrameworkId, agent: AgentId, role: &str, r: &Resources) {
        self.held.entry((fw, agent, role.to_owned())).or_default().add(r);
        // Cannot fail: the role is counted before anything is held under it, and the agent
        // is in the pool while it is known.
        let _ = self.roles.allocated(role, agent, r);
    }

    /// `fw` gives back `r` on `agent` under `role` (it holds it).
    fn release(&mut self, fw: FrameworkId, agent: AgentId, role: &str, r: &Resources) {
        let key = (fw, agent, role.to_owned());
        if let Some(held) = self.held.get_mut(&key) {
            held.subtract(r);
            if held.is_empty() {
                self.held.remove(&key);
            }
        }
        let _ = self.roles.unallocated(role, agent, r);
    }

    /// The best agent for the task `t` (of framework `fw`) among the agents at `slots`, in a
    /// periodic run or not; `group`, for a group member, the group as the policy sees it.
    fn choose(
        &mut self,
        fw: FrameworkId,
        t: &Outstanding,
        slots: &[usize],
        periodic: bool,
        group: Option<&Members<'_>>,
    ) -> Option<AgentId> {
        self.rerank();
        let (role, ask) = (t.role.as_str(), &t.ask);
        let f = &self.frameworks[&fw];
        // The agents this framework refused for this role, in agent order (the filters' key
        // order): looked up per candidate without building a key each time.
        let refused: Vec<AgentId> = f
            .filters
            .iter()
            .filter(|((_, r), x)| r == role && x.in_force(self.now, periodic))
            .map(|((a, _), _)| *a)
            .collect();
        let filtered = |a: &Agent| !refused.is_empty() && refused.binary_search(&a.id).is_ok();
        let can_take = |a: &Agent| {
            a.node.fits(ask)
                && offerable(a, self.whitelist.as_ref())
                && !gated(&self.options, f, a, role)
                && holds(&a.unreserved, &ask.other)
                && !filtered(a)
                && (t.constraints.is_empty() || a.info.meets_all(&t.constraints))
        };
        if group.is_none() && self.policy.picks() {
            let mut feasible: Vec<(u64, AgentId)> = slots
                .iter()
                .map(|&slot| &self.agents[slot])
                .filter(|a| can_take(a))
                .map(|a| (a.seq, a.id))
                .collect();
            if feasible.is_empty() {
                return None;
            }
            feasible.sort_unstable();
            let k = self.policy.pick(feasible.len(), ask).min(feasible.len() - 1);
            return Some(feasible[k].1);
        }
        let mut best: Option<(i64, u64, AgentId)> = None;
        for &slot in slots {
            let a = &self.agents[slot];
            if !can_take(a) {
                continue;
            }
            let score = match group {
                None => self.policy.score(&a.node, ask),
                Some(members) => self.policy.score_member(&a.node, ask, members),
            };
            let better = match best {
                None => true,
                Some((s, r, _)) => score > s || (score == s && a.rank < r),
            };
            if better {
                best = Some((score, a.rank, a.id));
            }
        }
        best.map(|(_, _, id)| id)
    }

    /// The slice of `agent` that `ask` takes there (it fits).
    fn slice(&mut self, agent: AgentId, ask: &Ask) -> Option<Resources> {
        let slot = *self.index.get(&agent)?;
        let (a, policy) = (&self.agents[slot], &mut self.policy);
        let node = &a.node;
        let chosen: Vec<usize> = match ask.gpu {
            GpuAsk::None => Vec::new(),
            GpuAsk::Share(m) => {
                let fits = |i: &usize| node.gpus.get(*i).is_some_and(|&f| f >= m);
                vec![policy.share_device(node, ask).filter(fits)?]
            }
            GpuAsk::Whole(k) => {
                let mut picks = Vec::new();
                lowest_free(&node.gpus, k, &mut picks).then_some(picks)?
            }
        };
        let pooled = a.free.filter(|r| {
            r.is_unreserved() && !r.is_gpu_device() && !r.is_revocable() && r.is_scalar()
        });
        let want = ask.demand.resources.scalar_quantities();
        let mut out = pooled.shrink(&want, false);
        if out.scalar_quantities() != want {
            return None;
        }
        out.add(&ask.demand.resources.filter(|r| !r.is_scalar()));
        if !a.free.contains(&out) {
            return None;
        }
        out.add(&device_entries(&a.devices, &chosen, ask.gpu.per_device().min(DEVICE_MILLI)));
        Some(out)
    }

    fn offer(
        &mut self,
        out: &mut OfferBatch,
        fw: FrameworkId,
        agent: AgentId,
        role: &str,
        r: Resources,
    ) {
        if let Some(a) = self.agent_mut(agent) {
            a.free.subtract(&r);
        }
        self.hold(fw, agent, role, &r);
        self.refresh(agent);
        match out
            .offers
            .iter_mut()
            .find(|o| o.framework == fw && o.agent == agent && o.role.as_str() == role)
        {
            Some(o) => o.resources.add(&r),
            None => out.offers.push(Allocation::new(fw, agent, role, r)),
        }
    }

    /// Takes back `r`, offered to `fw` on `agent` under `role` in this run as one task of GPU
    /// shape `shape` (a group that could not be placed whole).
    fn unoffer(
        &mut self,
        out: &mut OfferBatch,
        fw: FrameworkId,
        agent: AgentId,
        role: &str,
        r: &Resources,
        shape: allocator_api::resources::GpuAsk,
    ) {
        if let Some(i) = out
            .offers
            .iter()
            .position(|o| o.framework == fw && o.agent == agent && o.role.as_str() == role)
        {
            let o = &mut out.offers[i];
            o.resources.subtract(r);
            if o.resources.is_empty() {
                out.offers.remove(i);
            }
        }
        if let Some(a) = self.agent_mut(agent) {
            a.free.add(r);
        }
        self.release(fw, agent, role, r);
        self.refresh(agent);
        self.count_task(fw, agent, shape, false);
    }

    /// Places one task of `t` for `fw` (a group member when `group` is given): offers the
    /// slice and returns where, with a copy of the slice for a group member (to take it back
    /// if the group cannot be placed whole); `None` when no agent can take it now.
    fn place_one(
        &mut self,
        out: &mut OfferBatch,
        fw: FrameworkId,
        t: &Outstanding,
        slots: &[usize],
        periodic: bool,
        group: Option<&Members<'_>>,
    ) -> Option<(AgentId, Option<Resources>)> {
        let agent = self.choose(fw, t, slots, periodic, group)?;
        let slice = self.slice(agent, &t.ask)?;
        let copy = group.map(|_| slice.clone());
        self.offer(out, fw, agent, &t.role, slice);
        self.count_task(fw, agent, t.ask.gpu, true);
        Some((agent, copy))
    }

    /// Places a group's members (request index, tasks) of `fw`'s `requests` all or nothing;
    /// whether it did. On failure everything placed in the attempt is taken back.
    fn place_group(
        &mut self,
        out: &mut OfferBatch,
        fw: FrameworkId,
        requests: &[Outstanding],
        members: &[(usize, u32)],
        slots: &[usize],
        periodic: bool,
    ) -> bool {
        let mut agents: Vec<AgentId> = Vec::new();
        let mut slices: Vec<(usize, Resources)> = Vec::new();
        let mut left: u32 = members.iter().map(|m| m.1).sum();
        for &(i, n) in members {
            for _ in 0..n {
                let group = Members { placed: &agents, left };
                left -= 1;
                match self.place_one(out, fw, &requests[i], slots, periodic, Some(&group)) {
                    Some((agent, slice)) => {
                        agents.push(agent);
                        slices.push((i, slice.expect("kept for a group member")));
                    }
                    None => {
                        for (agent, (i, slice)) in agents.iter().zip(&slices).rev() {
                            let t = &requests[*i];
                            self.unoffer(out, fw, *agent, &t.role, slice, t.ask.gpu);
                        }
                        return false;
                    }
                }
            }
        }
        true
    }

    /// The next step of `requests` to try in this run (the first request with tasks to try):
    /// a lone task, or the group the request belongs to (each member's `min_count` tasks); a
    /// group with a member that has nothing to try (its role suppressed, or tried already) is
    /// not placed in this run.
    fn next_unit(requests: &[Outstanding]) -> Option<Unit> {
        // Requests of groups that cannot be placed in this run, passed over.
        let mut blocked: Vec<usize> = Vec::new();
        loop {
            let i = (0..requests.len()).find(|k| requests[*k].todo > 0 && !blocked.contains(k))?;
            let head = &requests[i];
            if !head.grouped() {
                return Some(Unit::Task(i));
            }
            let members: Vec<(usize, u32)> = match head.group {
                None => vec![(i, head.min.min(head.left))],
                Some(g) => requests
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.group == Some(g) && r.left > 0)
                    .map(|(k, r)| (k, r.min.clamp(1, r.left)))
                    .collect(),
            };
            if members.iter().all(|&(k, n)| requests[k].todo >= n && !blocked.contains(&k)) {
                return Some(Unit::Group(members));
            }
            blocked.extend(members.iter().map(|m| m.0));
        }
    }

    /// Places the outstanding requests of every active framework, one step at a time: each
    /// time, the next step (in the order the framework stated its requests) of a framework (by
    /// id) whose step's role is first in DRF order. A lone task no agent can take now is not
    /// tried again in this run, nor is another of the same shape, role and constraints; a group
    /// that cannot be placed whole is not tried again in this run. What is not placed stays
    /// outstanding.
    fn place_requests(&mut self, slots: &[usize], periodic: bool, out: &mut OfferBatch) {
        let mut pending: BTreeMap<FrameworkId, Vec<Outstanding>> = BTreeMap::new();
        for (id, f) in self.frameworks.iter_mut() {
            if !f.active || f.requests.is_empty() {
                continue;
            }
            let mut requests = std::mem::take(&mut f.requests);
            for r in &mut requests {
                r.todo = if f.suppressed.contains(&r.role) { 0 } else { r.left };
            }
            pending.insert(*id, requests);
        }
        let mut failed: BTreeMap<FrameworkId, Vec<(Ask, String, Vec<Constraint>)>> =
            BTreeMap::new();
        let mut order = Vec::new();
        let mut steps: Vec<(FrameworkId, Unit)> = Vec::new();
        loop {
            steps.clear();
            steps.extend(
                pending.iter().filter_map(|(id, reqs)| Some((*id, Self::next_unit(reqs)?))),
            );
            if steps.is_empty() {
                break;
            }
            if self.roles.sorted(&mut order).is_err() {
                order.clear(); // cannot happen (every framework's roles are counted): by id
            }
            // The step to take: of the first role in DRF order with one.
            let role_of = |(id, unit): &(FrameworkId, Unit)| {
                let i = match unit {
                    Unit::Task(i) => *i,
                    Unit::Group(m) => m[0].0,
                };
                pending[id][i].role.as_str()
            };
            let pick = order
                .iter()
                .find_map(|role| steps.iter().position(|step| role_of(step) == role.as_str()))
                .unwrap_or(0);
            let (fw, unit) = steps.swap_remove(pick);
            let mut requests = pending.remove(&fw).expect("listed");
            match unit {
                Unit::Task(i) => {
                    requests[i].todo -= 1;
                    let t = &requests[i];
                    let tried = failed.entry(fw).or_default();
                    let same = |(a, r, c): &(Ask, String, Vec<Constraint>)| {
                        *a == t.ask && *r == t.role && *c == t.constraints
                    };
                    if !tried.iter().any(same) {
                        if self.place_one(out, fw, t, slots, periodic, None).is_some() {
                            requests[i].left -= 1;
                        } else {
                            let key = (t.ask.clone(), t.role.clone(), t.constraints.clone());
                            failed.entry(fw).or_default().push(key);
                        }
                    }
                }
                Unit::Group(members) => {
                    let placed = self.place_group(out, fw, &requests, &members, slots, periodic);
                    for &(i, n) in &members {
                        let t = &mut requests[i];
                        if placed {
                            // The group is formed: what is left of a request goes one by one.
                            t.left -= n;
                            t.todo = t.todo.saturating_sub(n);
                            t.min = 1;
                            t.group = None;
                        } else {
                            t.todo = 0;
                        }
                    }
                }
            }
            pending.insert(fw, requests);
        }
        for (fw, mut requests) in pending {
            requests.retain(|r| r.left > 0);
            if let Some(f) = self.frameworks.get_mut(&fw) {
                f.requests = requests;
            }
        }
    }

    /// Why `r`, an outstanding request of `f`, waits: how many of its tasks fit now on the
    /// agents it may use, and on how many agents.
    fn explain_request(&self, f: &Framework, r: &Outstanding) -> ExplainEntry {
        let wanted = if r.grouped() { r.min.min(r.left) } else { 1 };
        let (mut fit, mut agents) = (0u32, 0u32);
        for a in &self.agents {
            if !offerable(a, self.whitelist.as_ref())
                || gated(&self.options, f, a, &r.role)
                || !a.info.meets_all(&r.constraints)
            {
                continue;
            }
            let here = copies_that_fit(&a.node, &r.ask, r.left);
            if here > 0 {
                fit += here;
                agents += 1;
            }
        }
        let shape = r.ask.demand.to_request();
        let numbers = [
            ("left", f64::from(r.left)),
            ("wanted_at_once", f64::from(wanted)),
            ("fit_now", f64::from(fit.min(r.left))),
            ("agents", f64::from(agents)),
        ];
        if r.grouped() {
            let missing = wanted.saturating_sub(fit);
            ExplainEntry::new(
                "gang_waiting",
                format!(
                    "{} of '{}' waits for {wanted} tasks of ({shape}) at once: {} fit now on {agents} agent(s), {missing} missing",
                    f.info.name,
                    r.role,
                    fit.min(wanted)
                ),
                &numbers,
            )
        } else {
            ExplainEntry::new(
                "request_waiting",
                format!(
                    "{} of '{}' has {} task(s) of ({shape}) outstanding: {} fit now on {agents} agent(s)",
                    f.info.name,
                    r.role,
                    r.left,
                    fit.min(r.left)
                ),
                &numbers,
            )
        }
    }

    /// Offers the candidates' free resources to active frameworks without requests, in turn.
    fn plain_offers(
        &mut self,
        fws: &[FrameworkId],
        slots: &[usize],
        periodic: bool,
        out: &mut OfferBatch,
    ) {
        if fws.is_empty() {
            return;
        }
        self.rerank();
        let mut order: Vec<(u64, AgentId)> = slots
            .iter()
            .map(|&i| &self.agents[i])
            .filter(|a| offerable(a, self.whitelist.as_ref()))
            .map(|a| (a.rank, a.id))
            .collect();
        order.sort_unstable();
        for (_, agent) in order {
            'frameworks: for k in 0..fws.len() {
                let fw = fws[(self.turn + k) % fws.len()];
                let f = &self.frameworks[&fw];
                let Some(a) = self.agent(agent) else { break };
                for role in f.info.roles.iter().map(RString::as_str) {
                    if f.suppressed.contains(role) || gated(&self.options, f, a, role) {
                        continue;
                    }
                    let mut offer = a.free.allocatable_to(role);
                    if !f.info.capabilities.has(FrameworkCapabilities::REVOCABLE_RESOURCES) {
                        offer = offer.non_revocable();
                    }
                    if !f.info.capabilities.has(FrameworkCapabilities::RESERVATION_REFINEMENT) {
                        offer = offer.filter(|r| !r.is_refined_reservation());
                    }
                    let min = f
                        .options
                        .min_allocatable_for(role, &self.options.min_allocatable_resources);
                    if !offer.meets_minimum(min)
                        || f.blocked(agent, role, &offer, self.now, periodic)
                    {
                        continue;
                    }
                    let role = role.to_owned();
                    self.offer(out, fw, agent, &role, offer);
                    self.turn = (self.turn + k + 1) % fws.len();
                    break 'frameworks;
                }
            }
        }
    }

    /// Records an agent's new total after operations (its devices and its place in the pool
    /// with it).
    fn set_total(&mut self, agent: AgentId, total: Resources) -> Result<()> {
        let a = self.agent_mut(agent).expect("checked by the caller");
        total.gpu_devices_into(&mut a.devices);
        a.total = total.clone();
        self.roles.remove_agent(agent)?;
        self.roles.add_agent(agent, &total)?;
        self.refresh(agent);
        Ok(())
    }

    /// Counts `fw` under each of its roles not counted yet (a role stays counted until the
    /// framework is removed).
    fn count_roles(&mut self, fw: FrameworkId) -> Result<()> {
        let Some(f) = self.frameworks.get_mut(&fw) else { return Ok(()) };
        for role in f.info.roles.iter().map(RString::as_str) {
            if !f.counted.iter().any(|r| r == role) {
                self.roles.add_user(role)?;
                f.counted.push(role.to_owned());
            }
        }
        Ok(())
    }

    /// Adds or removes one GPU task of `shape` that `fw` has on `agent` (removing one it does
    /// not have does nothing).
    fn count_task(&mut self, fw: FrameworkId, agent: AgentId, shape: GpuAsk, add: bool) {
        if shape == GpuAsk::None {
            return;
        }
        let mine = self.tasks.entry((fw, agent)).or_default();
        let counted = count_task(mine, shape, add);
        if mine.is_empty() {
            self.tasks.remove(&(fw, agent));
        }
        if let (true, Some(a)) = (counted, self.agent_mut(agent)) {
            count_task(&mut a.node.gpu_tasks, shape, add);
        }
    }

    fn record_used(&mut self, used: &[Allocation], skip_known: bool) {
        for u in used {
            let key = (u.framework, u.agent, u.role.to_string());
            if skip_known && self.held.contains_key(&key) {
                continue;
            }
            let Some(a) = self.agent_mut(u.agent) else { continue };
            a.free.subtract(&u.resources);
            self.hold(u.framework, u.agent, &u.role, &u.resources);
            self.refresh(u.agent);
        }
    }
}

impl<P: Placement> Allocator for PlacementAllocator<P> {
    fn set_time(&mut self, now: f64) -> Result<()> {
        self.now = now;
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
            return Err(ModuleError::rejected(format!("add_framework: {} is present", info.id)));
        }
        let suppressed = options.suppressed_roles.iter().map(|r| r.to_string()).collect();
        self.frameworks.insert(
            info.id,
            Framework {
                info: info.clone(),
                active,
                suppressed,
                options: options.clone(),
                filters: BTreeMap::new(),
                requests: Vec::new(),
                counted: Vec::new(),
            },
        );
        self.count_roles(info.id)?;
        let mine: Vec<Allocation> =
            used.iter().filter(|u| u.framework == info.id).cloned().collect();
        self.record_used(&mine, true);
        Ok(())
    }

    fn remove_framework(&mut self, framework: FrameworkId) -> Result<()> {
        let removed = self
            .frameworks
            .remove(&framework)
            .ok_or_else(|| unknown("remove_framework", framework))?;
        let keys: Vec<_> = self
            .held
            .range((framework, AgentId(0), String::new())..)
            .take_while(|(k, _)| k.0 == framework)
            .map(|(k, _)| k.clone())
            .collect();
        let placed: Vec<_> = self
            .tasks
            .range((framework, AgentId(0))..)
            .take_while(|(k, _)| k.0 == framework)
            .map(|(k, v)| (k.1, v.clone()))
            .collect();
        for (agent, shapes) in placed {
            self.tasks.remove(&(framework, agent));
            if let Some(a) = self.agent_mut(agent) {
                for (shape, n) in shapes {
                    for _ in 0..n {
                        count_task(&mut a.node.gpu_tasks, shape, false);
                    }
                }
            }
        }
        for key in keys {
            let r = self.held.get(&key).expect("listed").clone();
            self.release(framework, key.1, &key.2, &r);
            if let Some(a) = self.agent_mut(key.1) {
                a.free.add(&r);
                self.refresh(key.1);
            }
        }
        for role in &removed.counted {
            self.roles.remove_user(role)?;
        }
        Ok(())
    }

    fn activate_framework(&mut self, framework: FrameworkId) -> Result<()> {
        let f = self
            .frameworks
            .get_mut(&framework)
            .ok_or_else(|| unknown("activate_framework", framework))?;
        f.active = true;
        Ok(())
    }

    fn deactivate_framework(&mut self, framework: FrameworkId) -> Result<()> {
        let f = self
            .frameworks
            .get_mut(&framework)
            .ok_or_else(|| unknown("deactivate_framework", framework))?;
        f.active = false;
        f.filters.clear();
        Ok(())
    }

    fn update_framework(&mut self, info: &FrameworkInfo, options: &FrameworkOptions) -> Result<()> {
        let f = self
            .frameworks
            .get_mut(&info.id)
            .ok_or_else(|| unknown("update_framework", info.id))?;
        f.info = info.clone();
        f.suppressed = options.suppressed_roles.iter().map(|r| r.to_string()).collect();
        f.options = options.clone();
        self.count_roles(info.id)
    }

    fn add_agent(
        &mut self,
        info: &AgentInfo,
        _unavailability: Option<&Unavailability>,
        total: &Resources,
        used: &[Allocation],
    ) -> Result<()> {
        if self.index.contains_key(&info.id) {
            return Err(ModuleError::rejected(format!("add_agent: {} is present", info.id)));
        }
        let mut devices = Vec::new();
        total.gpu_devices_into(&mut devices);
        let agent = Agent {
            id: info.id,
            node: Node::default(),
            info: info.clone(),
            total: total.clone(),
            free: total.clone(),
            unreserved: Quantities::new(),
            devices,
            active: true,
            rank: match self.tie_break {
                TieBreak::Seeded => rank(self.order_seed, &info.name),
                TieBreak::Name => 0,
            },
            seq: self.added,
        };
        self.added += 1;
        self.ranks_stale = self.tie_break == TieBreak::Name;
        self.roles.add_agent(info.id, total)?;
        self.index.insert(info.id, self.agents.len());
        self.agents.push(agent);
        self.stale = true;
        self.refresh(info.id);
        let mine: Vec<Allocation> = used.iter().filter(|u| u.agent == info.id).cloned().collect();
        self.record_used(&mine, false);
        Ok(())
    }

    fn remove_agent(&mut self, agent: AgentId) -> Result<()> {
        let slot = self.index.remove(&agent).ok_or_else(|| unknown("remove_agent", agent))?;
        self.agents.swap_remove(slot);
        if let Some(moved) = self.agents.get(slot) {
            self.index.insert(moved.id, slot);
        }
        self.stale = true;
        let here: Vec<_> = self
            .held
            .iter()
            .filter(|(k, _)| k.1 == agent)
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect();
        for ((fw, _, role), r) in here {
            self.release(fw, agent, &role, &r);
        }
        self.roles.remove_agent(agent)?;
        self.tasks.retain(|k, _| k.1 != agent);
        for f in self.frameworks.values_mut() {
            f.filters.retain(|k, _| k.0 != agent);
        }
        Ok(())
    }

    fn update_agent(&mut self, info: &AgentInfo, total: Option<&Resources>) -> Result<()> {
        let a = self.agent_mut(info.id).ok_or_else(|| unknown("update_agent", info.id))?;
        let attributes_changed = a.info.attributes != info.attributes;
        a.info = info.clone();
        if let Some(total) = total {
            let used = a.total.clone() - &a.free;
            a.free = total.clone() - &used;
            a.total = total.clone();
            total.gpu_devices_into(&mut a.devices);
            self.roles.remove_agent(info.id)?;
            self.roles.add_agent(info.id, total)?;
        }
        if attributes_changed {
            for f in self.frameworks.values_mut() {
                f.filters.retain(|k, _| k.0 != info.id);
            }
        }
        self.refresh(info.id);
        Ok(())
    }

    fn activate_agent(&mut self, agent: AgentId) -> Result<()> {
        self.agent_mut(agent).ok_or_else(|| unknown("activate_agent", agent))?.active = true;
        Ok(())
    }

    fn deactivate_agent(&mut self, agent: AgentId) -> Result<()> {
        self.agent_mut(agent).ok_or_else(|| unknown("deactivate_agent", agent))?.active = false;
        Ok(())
    }

    fn update_whitelist(&mut self, hostnames: Option<&[RString]>) -> Result<()> {
        self.whitelist = hostnames.map(|h| h.iter().map(|s| s.to_string()).collect());
        Ok(())
    }

    /// Replaces the framework's outstanding requests (see the type's documentation).
    fn request(&mut self, framework: FrameworkId, requests: &[Request]) -> Result<()> {
        let mut stated = Vec::with_capacity(requests.len());
        for r in requests {
            let demand = Demand::from_request(&r.resources)
                .map_err(|e| ModuleError::rejected(format!("request: {e}")))?;
            if let Some(why) = r.invalid() {
                return Err(ModuleError::rejected(format!("request: {why}")));
            }
            stated.push(Outstanding {
                ask: Ask::new(demand),
                role: r.role.to_string(),
                left: r.count,
                min: r.minimum(),
                group: r.group.into_option(),
                constraints: r.constraints.to_vec(),
                todo: 0,
            });
        }
        let f = self.frameworks.get_mut(&framework).ok_or_else(|| unknown("request", framework))?;
        if let Some(r) = stated.iter().find(|r| !f.info.roles.iter().any(|x| x.as_str() == r.role))
        {
            return Err(ModuleError::rejected(format!(
                "request: role '{}' is not one of {framework}'s roles",
                r.role
            )));
        }
        // The policy hears of each task once: a framework restates what is still outstanding
        // each time its list changes, so only tasks beyond those (by shape) are new.
        let mut outstanding: HashMap<Shape, u32> = HashMap::new();
        for r in &f.requests {
            *outstanding.entry(r.ask.shape()).or_default() += r.left;
        }
        for r in &stated {
            for _ in 0..r.left {
                match outstanding.get_mut(&r.ask.shape()) {
                    Some(n) if *n > 0 => *n -= 1,
                    _ => self.policy.requested(&r.ask),
                }
            }
        }
        f.requests = stated;
        Ok(())
    }

    /// The framework's (or role's) outstanding requests after the last run, with how many of
    /// each would fit now on the agents the request may use.
    fn explain(&self, subject: &ExplainSubject, out: &mut RVec<ExplainEntry>) -> Result<()> {
        out.clear();
        let about = |id: &FrameworkId, r: &Outstanding| match subject.kind {
            ExplainSubject::FRAMEWORK => *id == subject.framework,
            _ => r.role == subject.role.as_str(),
        };
        for (id, f) in &self.frameworks {
            for r in f.requests.iter().filter(|r| about(id, r)) {
                out.push(self.explain_request(f, r));
            }
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
        if !self.index.contains_key(&agent) || !self.frameworks.contains_key(&framework) {
            return Ok(());
        }
        let key = (framework, agent, role.to_owned());
        if !self.held.get(&key).is_some_and(|h| h.contains(resources)) {
            return Err(ModuleError::rejected(format!(
                "recover_resources: {framework} does not hold {resources} on {agent} under '{role}'"
            )));
        }
        self.release(framework, agent, role, resources);
        let a = self.agent_mut(agent).expect("checked");
        a.free.add(resources);
        self.refresh(agent);
        if let Some(shape) = task_shape(resources) {
            self.count_task(framework, agent, shape, false);
        }
        let interval = self.options.allocation_interval;
        if let Some(filter) =
            RefuseFilter::new(resources.clone(), refuse_seconds, self.now, interval)
        {
            let f = self.frameworks.get_mut(&framework).expect("checked");
            f.filters.insert((agent, role.to_owned()), filter);
        }
        Ok(())
    }

    fn suppress_offers(&mut self, framework: FrameworkId, roles: &[RString]) -> Result<()> {
        let f = self
            .frameworks
            .get_mut(&framework)
            .ok_or_else(|| unknown("suppress_offers", framework))?;
        let all: Vec<String> = f.info.roles.iter().map(|r| r.to_string()).collect();
        let roles: Vec<String> =
            if roles.is_empty() { all } else { roles.iter().map(|r| r.to_string()).collect() };
        f.suppressed.extend(roles);
        Ok(())
    }

    fn revive_offers(&mut self, framework: FrameworkId, roles: &[RString]) -> Result<()> {
        let f = self
            .frameworks
            .get_mut(&framework)
            .ok_or_else(|| unknown("revive_offers", framework))?;
        if roles.is_empty() {
            f.suppressed.clear();
            f.filters.clear();
        } else {
            for r in roles {
                f.suppressed.remove(r.as_str());
                f.filters.retain(|k, _| k.1 != r.as_str());
            }
        }
        Ok(())
    }

    fn pause(&mut self) -> Result<()> {
        self.paused = true;
        Ok(())
    }

    fn resume(&mut self) -> Result<()> {
        self.paused = false;
        Ok(())
    }

    /// Operations on what a framework holds: its held resources and the agent's total change
    /// (all or nothing); what is free does not.
    fn update_allocation(
        &mut self,
        framework: FrameworkId,
        agent: AgentId,
        role: &str,
        operations: &[Operation],
    ) -> Result<()> {
        let old = self.held.get(&(framework, agent, role.to_owned())).cloned().unwrap_or_default();
        let a = self.agent(agent).ok_or_else(|| unknown("update_allocation", agent))?;
        let (held, total) = Operation::apply_all(operations, &old, &a.total)
            .map_err(|e| ModuleError::rejected(format!("update_allocation on {agent}: {e}")))?;
        self.release(framework, agent, role, &old);
        self.hold(framework, agent, role, &held);
        self.set_total(agent, total)
    }

    /// Operations on an agent's free resources: they and the agent's total change.
    fn update_available(&mut self, agent: AgentId, operations: &[Operation]) -> Result<()> {
        let a = self.agent(agent).ok_or_else(|| unknown("update_available", agent))?;
        let (free, total) = Operation::apply_all(operations, &a.free, &a.total)
            .map_err(|e| ModuleError::rejected(format!("update_available on {agent}: {e}")))?;
        self.agent_mut(agent).expect("checked").free = free;
        self.set_total(agent, total)
    }

    fn update_weights(&mut self, weights: &[RoleWeight]) -> Result<()> {
        self.roles.update_weights(weights)
    }

    fn allocate(&mut self, agents: &[AgentId], periodic: bool, out: &mut OfferBatch) -> Result<()> {
        if self.paused {
            return Ok(());
        }
        let slots = self.candidate_slots(agents);
        // Decided before placing: a framework whose requests are placed now gets nothing else.
        let plain: Vec<FrameworkId> = self
            .frameworks
            .iter()
            .filter(|(_, f)| f.active && f.requests.is_empty())
            .map(|(id, _)| *id)
            .collect();
        self.place_requests(&slots, periodic, out);
        self.plain_offers(&plain, &slots, periodic, out);
        self.return_slots(slots);
        let now = self.now;
        for f in self.frameworks.values_mut() {
            // A filter that would block no later run (periodic or not) is gone.
            f.filters.retain(|_, x| !(x.expired(now) || (periodic && x.until <= now)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api::{AgentCapabilities, RVec};

    struct First;
    impl Placement for First {
        fn score(&mut self, _node: &Node, _ask: &Ask) -> i64 {
            0
        }
    }

    fn res(s: &str) -> Resources {
        s.parse().unwrap()
    }

    fn framework(id: u32, role: &str) -> FrameworkInfo {
        FrameworkInfo {
            id: FrameworkId(id),
            name: format!("f{id}").into(),
            roles: vec![RString::from(role)].into(),
            capabilities: FrameworkCapabilities::MULTI_ROLE,
        }
    }

    fn agent(id: u32) -> AgentInfo {
        AgentInfo {
            id: AgentId(id),
            name: format!("a{id}").into(),
            hostname: format!("a{id}").into(),
            attributes: RVec::new(),
            capabilities: AgentCapabilities::all(),
        }
    }

    fn named(id: u32, name: &str) -> AgentInfo {
        AgentInfo { name: name.into(), hostname: name.into(), ..agent(id) }
    }

    /// Where one 1-CPU task of framework 0 goes, on agents added in `names` order.
    fn placed_on<P: Placement>(mut p: PlacementAllocator<P>, names: &[&str]) -> AgentId {
        p.add_framework(&framework(0, "r"), &[], true, &FrameworkOptions::default()).unwrap();
        for (i, n) in names.iter().enumerate() {
            p.add_agent(&named(i as u32, n), None, &res("cpus:4;mem:100"), &[]).unwrap();
        }
        p.request(FrameworkId(0), &[Request::task("r", res("cpus:1;mem:10"))]).unwrap();
        let mut out = OfferBatch::default();
        // The host's candidate order (here the reverse) is not the order agents were added in.
        let ids: Vec<AgentId> = (0..names.len() as u32).rev().map(AgentId).collect();
        p.allocate(&ids, false, &mut out).unwrap();
        assert_eq!(out.offers.len(), 1, "{:?}", out.offers);
        out.offers[0].agent
    }

    #[test]
    fn an_asks_other_resources_fit_in_the_unreserved_entries_only() {
        let free = res("cpus:2;cpus(web):8;mem:100;pods:1;pods(web):5");
        for (ask, want) in [
            ("cpus:2;pods:1", true),
            ("cpus:3;pods:1", false),
            ("cpus:1;pods:2", false),
            ("mem:100;pods:1", true),
            ("gpus:1", false),
        ] {
            let q = res(ask).scalar_quantities();
            let mut unreserved = Quantities::new();
            unreserved_into(&free, &mut unreserved);
            assert_eq!(holds(&unreserved, &q), want, "{ask}");
            assert_eq!(unreserved.contains(&q), want, "{ask}");
            assert_eq!(free.unreserved().contains_quantities(&q), want, "{ask}");
        }
    }

    #[test]
    fn tie_break_name_gives_ties_to_the_smallest_name() {
        let params =
            [allocator_api::abi::Parameter { key: "tie_break".into(), value: "name".into() }];
        let p = PlacementAllocator::new(First, &AllocatorOptions::default())
            .with_parameters(allocator_api::Parameters(&params))
            .unwrap();
        assert_eq!(p.tie_break(), TieBreak::Name);
        assert_eq!(placed_on(p, &["0002-c", "0000-b", "0001-a"]), AgentId(1));
        let bad = [allocator_api::abi::Parameter { key: "tie_break".into(), value: "x".into() }];
        let e = PlacementAllocator::new(First, &AllocatorOptions::default())
            .with_parameters(allocator_api::Parameters(&bad))
            .err()
            .unwrap();
        assert!(e.contains("tie_break"), "{e}");
    }

    #[test]
    fn order_seed_replaces_the_hosts_seed_in_the_seeded_order() {
        let names: Vec<String> = (0..40).map(|i| format!("agent-{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let with = |seed: u64, order_seed: Option<&str>| {
            let options = AllocatorOptions { seed, ..AllocatorOptions::default() };
            let params: Vec<allocator_api::abi::Parameter> = order_seed
                .map(|v| allocator_api::abi::Parameter {
                    key: "order_seed".into(),
                    value: v.into(),
                })
                .into_iter()
                .collect();
            let p = PlacementAllocator::new(First, &options)
                .with_parameters(allocator_api::Parameters(&params))
                .unwrap();
            placed_on(p, &names)
        };
        assert_eq!(with(1, Some("7")), with(2, Some("7")));
        assert_eq!(with(7, None), with(1, Some("7")));
    }

    struct Third;
    impl Placement for Third {
        fn score(&mut self, _node: &Node, _ask: &Ask) -> i64 {
            unreachable!("a policy that picks is not asked for scores")
        }
        fn picks(&self) -> bool {
            true
        }
        fn pick(&mut self, feasible: usize, _ask: &Ask) -> usize {
            assert_eq!(feasible, 4);
            2
        }
    }

    #[test]
    fn a_policy_that_picks_gets_the_feasible_agents_in_the_order_they_were_added() {
        let p = PlacementAllocator::new(Third, &AllocatorOptions::default());
        assert_eq!(placed_on(p, &["d", "c", "b", "a"]), AgentId(2));
    }

    #[test]
    fn requests_are_placed_role_by_role_in_weighted_drf_order() {
        // Room for three 1-CPU tasks; two roles each ask for three. Role `a` already holds 2
        // CPUs, so `b` goes first, then whichever is lower: b, a, b... with weights equal,
        // b gets two and a one.
        let mut p = PlacementAllocator::new(First, &AllocatorOptions::default());
        p.add_framework(&framework(0, "a"), &[], true, &FrameworkOptions::default()).unwrap();
        p.add_framework(&framework(1, "b"), &[], true, &FrameworkOptions::default()).unwrap();
        let used = [Allocation::new(FrameworkId(0), AgentId(0), "a", res("cpus:2;mem:20"))];
        p.add_agent(&agent(0), None, &res("cpus:5;mem:100"), &used).unwrap();
        let one = res("cpus:1;mem:10");
        for fw in [0, 1] {
            let role = ["a", "b"][fw as usize];
            p.request(FrameworkId(fw), &[Request::tasks(role, 3, one.clone())]).unwrap();
        }
        let mut out = OfferBatch::default();
        p.allocate(&[AgentId(0)], false, &mut out).unwrap();
        let cpus = |fw: u32| {
            out.offers
                .iter()
                .filter(|o| o.framework == FrameworkId(fw))
                .map(|o| o.resources.scalar("cpus").millis())
                .sum::<i64>()
        };
        assert_eq!((cpus(0), cpus(1)), (1000, 2000), "{:?}", out.offers);
        // A heavier weight on `a` turns it around.
        let mut q = PlacementAllocator::new(First, &AllocatorOptions::default());
        q.update_weights(&[RoleWeight { role: "a".into(), weight: 10.0 }]).unwrap();
        q.add_framework(&framework(0, "a"), &[], true, &FrameworkOptions::default()).unwrap();
        q.add_framework(&framework(1, "b"), &[], true, &FrameworkOptions::default()).unwrap();
        q.add_agent(&agent(0), None, &res("cpus:5;mem:100"), &used).unwrap();
        for fw in [0, 1] {
            let role = ["a", "b"][fw as usize];
            q.request(FrameworkId(fw), &[Request::tasks(role, 3, one.clone())]).unwrap();
        }
        out.clear();
        q.allocate(&[AgentId(0)], false, &mut out).unwrap();
        let a_cpus: i64 = out
            .offers
            .iter()
            .filter(|o| o.framework == FrameworkId(0))
            .map(|o| o.resources.scalar("cpus").millis())
            .sum();
        // b (share 0) first; then a's weighted share (0.4/10, 0.6/10) stays below b's 0.2.
        assert_eq!(a_cpus, 2000, "weight 10 on a: {:?}", out.offers);
    }

    /// Counts the new tasks it hears of.
    #[derive(Default)]
    struct Heard(usize);
    impl Placement for Heard {
        fn score(&mut self, _node: &Node, _ask: &Ask) -> i64 {
            0
        }
        fn requested(&mut self, _ask: &Ask) {
            self.0 += 1;
        }
    }

    #[test]
    fn the_policy_hears_of_each_stated_task_once_however_often_it_is_restated() {
        let mut p = PlacementAllocator::new(Heard::default(), &AllocatorOptions::default());
        p.add_framework(&framework(0, "a"), &[], true, &FrameworkOptions::default()).unwrap();
        let (one, two) = (res("cpus:1;mem:10"), res("cpus:2;mem:10"));
        let state = |p: &mut PlacementAllocator<Heard>, tasks: &[&Resources]| {
            let requests: Vec<Request> =
                tasks.iter().map(|r| Request::task("a", (*r).clone())).collect();
            p.request(FrameworkId(0), &requests).unwrap();
        };
        state(&mut p, &[&one, &one]);
        state(&mut p, &[&one, &one, &two]);
        state(&mut p, &[&one, &two]);
        assert_eq!(p.policy().0, 3, "two of one shape, then one of another");
        state(&mut p, &[&one, &one, &two]);
        assert_eq!(p.policy().0, 4, "a third task of the first shape is new");
    }

    #[test]
    fn an_expired_filter_does_not_block_a_placement_in_an_event_triggered_run() {
        // Interval 10 s: a 2 s filter made at 0 lives until 10 and would still block the first
        // periodic run (at 10 or later); an event-triggered run at 10.5 is not blocked (R5).
        let options = AllocatorOptions { allocation_interval: 10.0, ..AllocatorOptions::default() };
        let mut a = PlacementAllocator::new(First, &options);
        let info = FrameworkInfo {
            id: FrameworkId(0),
            name: "f".into(),
            roles: vec![RString::from("r")].into(),
            capabilities: FrameworkCapabilities::MULTI_ROLE,
        };
        a.add_framework(&info, &[], true, &FrameworkOptions::default()).unwrap();
        let agent = AgentInfo {
            id: AgentId(0),
            name: "a".into(),
            hostname: "a".into(),
            attributes: RVec::new(),
            capabilities: AgentCapabilities::all(),
        };
        a.add_agent(&agent, None, &res("cpus:4;mem:100"), &[]).unwrap();
        let mut out = OfferBatch::default();
        a.allocate(&[AgentId(0)], false, &mut out).unwrap();
        let offered = out.offers[0].resources.clone();
        a.recover_resources(FrameworkId(0), AgentId(0), "r", &offered, Some(2.0)).unwrap();
        a.request(FrameworkId(0), &[Request::task("r", res("cpus:1;mem:10"))]).unwrap();
        a.set_time(5.0).unwrap();
        out.clear();
        a.allocate(&[AgentId(0)], false, &mut out).unwrap();
        assert!(out.offers.is_empty(), "the filter is in force at 5");
        a.set_time(10.5).unwrap();
        a.allocate(&[AgentId(0)], false, &mut out).unwrap();
        assert_eq!(out.offers.len(), 1, "expired at 10, and this run is not periodic");
        assert_eq!(out.offers[0].resources, res("cpus:1;mem:10"));
    }

    /// One framework of role `r` and an agent per total; returns the allocator.
    fn cluster(totals: &[&str]) -> PlacementAllocator<First> {
        let mut p = PlacementAllocator::new(First, &AllocatorOptions::default());
        let mut info = framework(0, "r");
        info.capabilities = info.capabilities.with(FrameworkCapabilities::GPU_RESOURCES);
        p.add_framework(&info, &[], true, &FrameworkOptions::default()).unwrap();
        for (i, t) in totals.iter().enumerate() {
            p.add_agent(&agent(i as u32), None, &res(t), &[]).unwrap();
        }
        p
    }

    fn run(p: &mut PlacementAllocator<First>) -> Vec<Allocation> {
        let agents: Vec<AgentId> = p.agents.iter().map(|a| a.id).collect();
        let mut out = OfferBatch::default();
        p.allocate(&agents, true, &mut out).unwrap();
        out.offers.into_iter().collect()
    }

    fn gpus_offered(offers: &[Allocation]) -> f64 {
        offers.iter().map(|o| o.resources.scalar("gpus").as_f64()).sum()
    }

    #[test]
    fn a_gang_that_does_not_fit_whole_is_offered_nothing_and_waits() {
        let mut p = cluster(&["cpus:8;mem:800;gpus[0]:1;gpus[1]:1"]);
        p.request(FrameworkId(0), &[Request::gang("r", 4, res("cpus:1;mem:10;gpus:1"))]).unwrap();
        assert!(run(&mut p).is_empty(), "2 of 4 would fit: none is offered");
        assert_eq!(p.frameworks[&FrameworkId(0)].requests[0].left, 4, "still outstanding");
        assert_eq!(p.agents[0].free, res("cpus:8;mem:800;gpus[0]:1;gpus[1]:1"), "rolled back");
    }

    #[test]
    fn a_gang_is_offered_whole_in_one_run_once_it_fits() {
        let mut p = cluster(&["cpus:8;mem:800;gpus[0]:1;gpus[1]:1", "cpus:8;mem:800;gpus[0]:1"]);
        p.request(FrameworkId(0), &[Request::gang("r", 4, res("cpus:1;mem:10;gpus:1"))]).unwrap();
        assert!(run(&mut p).is_empty());
        p.remove_agent(AgentId(1)).unwrap();
        p.add_agent(&agent(1), None, &res("cpus:8;mem:800;gpus[0]:1;gpus[1]:1"), &[]).unwrap();
        let offers = run(&mut p);
        assert_eq!(gpus_offered(&offers), 4.0, "{offers:?}");
        assert!(p.frameworks[&FrameworkId(0)].requests.is_empty(), "placed: done");
    }

    #[test]
    fn a_group_of_requests_is_placed_all_or_nothing() {
        // A driver (no GPU) and two GPU workers: room for the driver and one worker only.
        let mut p = cluster(&["cpus:8;mem:800;gpus[0]:1"]);
        let g = allocator_api::GroupId(7);
        let driver = Request::task("r", res("cpus:2;mem:10")).in_group(g);
        let workers = Request::gang("r", 2, res("cpus:1;mem:10;gpus:1")).in_group(g);
        p.request(FrameworkId(0), &[driver.clone(), workers.clone()]).unwrap();
        assert!(run(&mut p).is_empty(), "the driver alone is not placed");
        p.remove_agent(AgentId(0)).unwrap();
        p.add_agent(&agent(0), None, &res("cpus:8;mem:800;gpus[0]:1;gpus[1]:1"), &[]).unwrap();
        let offers = run(&mut p);
        assert_eq!(offers.len(), 1);
        assert_eq!(offers[0].resources.scalar("cpus").as_f64(), 4.0, "{offers:?}");
        assert_eq!(gpus_offered(&offers), 2.0);
    }

    #[test]
    fn min_count_places_at_least_that_many_at_once_then_the_rest_one_by_one() {
        let mut p = cluster(&["cpus:3;mem:800"]);
        let elastic = Request { min_count: 2, ..Request::tasks("r", 5, res("cpus:1;mem:10")) };
        p.request(FrameworkId(0), &[elastic]).unwrap();
        let offers = run(&mut p);
        assert_eq!(offers[0].resources.scalar("cpus").as_f64(), 3.0, "two at once, then one");
        let left = &p.frameworks[&FrameworkId(0)].requests[0];
        assert_eq!((left.left, left.min), (2, 1), "the rest go one by one");
    }

    #[test]
    fn constraints_keep_tasks_off_agents_that_do_not_meet_them() {
        let mut p = cluster(&["cpus:4;mem:800", "cpus:4;mem:800"]);
        let only_a1 = Request::tasks("r", 2, res("cpus:1;mem:10"))
            .with_constraint(Constraint::is_in("hostname", &["a1"]));
        p.request(FrameworkId(0), &[only_a1]).unwrap();
        let offers = run(&mut p);
        assert!(offers.iter().all(|o| o.agent == AgentId(1)), "{offers:?}");
        assert_eq!(offers[0].resources.scalar("cpus").as_f64(), 2.0);
    }

    #[test]
    fn a_request_under_a_role_the_framework_does_not_have_is_rejected() {
        let mut p = cluster(&["cpus:4;mem:800"]);
        let e = p.request(FrameworkId(0), &[Request::task("other", res("cpus:1"))]).unwrap_err();
        assert!(e.message.contains("'other'"), "{e}");
        assert!(p.frameworks[&FrameworkId(0)].requests.is_empty(), "nothing changed");
    }

    #[test]
    fn requests_survive_deactivation_and_are_placed_after_reactivation() {
        let mut p = cluster(&["cpus:4;mem:800"]);
        p.request(FrameworkId(0), &[Request::gang("r", 2, res("cpus:1;mem:10"))]).unwrap();
        p.deactivate_framework(FrameworkId(0)).unwrap();
        assert!(run(&mut p).is_empty());
        p.activate_framework(FrameworkId(0)).unwrap();
        assert_eq!(run(&mut p)[0].resources.scalar("cpus").as_f64(), 2.0);
    }

    /// Keeps a gang's members together: the agents they took first.
    struct Together;
    impl Placement for Together {
        fn score(&mut self, _node: &Node, _ask: &Ask) -> i64 {
            0
        }
        fn score_member(&mut self, node: &Node, _ask: &Ask, group: &Members<'_>) -> i64 {
            group.placed.iter().filter(|a| **a == node.agent).count() as i64
        }
    }

    #[test]
    fn a_policy_sees_where_the_group_members_went_and_can_keep_them_together() {
        let mut p = PlacementAllocator::new(Together, &AllocatorOptions::default());
        p.add_framework(&framework(0, "r"), &[], true, &FrameworkOptions::default()).unwrap();
        for i in 0..3 {
            p.add_agent(&agent(i), None, &res("cpus:4;mem:800"), &[]).unwrap();
        }
        p.request(FrameworkId(0), &[Request::gang("r", 4, res("cpus:1;mem:10"))]).unwrap();
        let mut out = OfferBatch::default();
        p.allocate(&[AgentId(0), AgentId(1), AgentId(2)], true, &mut out).unwrap();
        assert_eq!(out.offers.len(), 1, "all four on one agent: {:?}", out.offers);
    }

    #[test]
    fn explain_says_how_many_members_of_a_waiting_gang_are_missing() {
        let mut p = cluster(&["cpus:8;mem:800;gpus[0]:1;gpus[1]:1"]);
        p.request(FrameworkId(0), &[Request::gang("r", 4, res("cpus:1;mem:10;gpus:1"))]).unwrap();
        run(&mut p);
        let mut out = RVec::new();
        p.explain(&ExplainSubject::framework(FrameworkId(0)), &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].code.as_str(), "gang_waiting");
        assert!(out[0].text.contains("2 fit now on 1 agent(s), 2 missing"), "{}", out[0].text);
    }
}
