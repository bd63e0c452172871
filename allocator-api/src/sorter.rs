//! The [`Sorter`] interface: the policy that answers "who is next?".
//!
//! This mirrors Mesos's sorter (`src/master/allocator/mesos/sorter/sorter.hpp`). The hierarchical
//! allocator keeps one role sorter and one framework sorter per role; before offering an agent
//! it asks the role sorter for the order of roles, then each role's framework sorter for the
//! order of its frameworks, and tells the sorters about every grant so that the next answer
//! reflects it.
//!
//! # Contract
//!
//! * Clients are leaves of a tree named by `/`-separated paths (`a/b/c`); the host refers to
//!   each client by the [`ClientId`] it assigned in [`add`](Sorter::add). A client added below
//!   an existing client turns that client into an inner node that keeps its own allocation (the
//!   virtual leaf `a/.` in Mesos).
//! * Clients are added **inactive**; inactive clients keep their allocations but are left out
//!   of [`sort`](Sorter::sort). `activate`/`deactivate` are idempotent.
//! * Calls that name an unknown client, or add a client twice, return
//!   [`ModuleError::rejected`](crate::ModuleError::rejected) and change nothing. So do a second
//!   [`add_agent`](Sorter::add_agent) and a [`remove_agent`](Sorter::remove_agent) of an
//!   absent agent, **in a sorter that tracks agents**; one that does not keeps the provided
//!   methods, which accept and ignore them. An allocation call (`allocated`, `unallocated`,
//!   `update`) naming an agent the sorter was not given may be accepted: the built-in allocator
//!   never makes one (it adds every agent first), and the shipped sorters count the allocation
//!   under the client all the same.
//! * Methods must not block and must not keep references to arguments after returning. Output
//!   parameters are caller-owned buffers: the sorter clears them and writes its answer.
//! * A sorter is used from one thread at a time (it is `Send`, not `Sync`).
//!
//! # How the built-in allocator calls a sorter
//!
//! A sorter that counts anything depends on this sequence; the built-in `hierarchical`
//! allocator follows it (an allocator module that uses sorters may differ).
//!
//! * **Instances.** One role sorter for the whole allocator; one framework sorter per role,
//!   created when the role gets its first framework and dropped when its last one leaves. Each
//!   gets [`add_agent`](Sorter::add_agent) with the scalar quantities of every agent present
//!   when it is created and of every agent added later; an agent whose total changes is
//!   [`remove_agent`](Sorter::remove_agent)ed and added again; a removed agent is removed.
//!   Each sorter is asked [`keep_scalars_only`](Sorter::keep_scalars_only) right after it is
//!   created, before any other call (the allocator never asks what a client holds per agent).
//! * **Clients.** Role-sorter clients are roles that have at least one framework subscribed
//!   to them or holding resources under them: `add(client, "eng/ml")` then `activate` at once
//!   (role clients stay active), `remove` when the last framework goes. Framework-sorter
//!   clients are frameworks (path: the handle as ten digits, `"0000000003"`): `add`, then
//!   `activate` when the framework is active and the role not suppressed; `deactivate` on
//!   `deactivate_framework` and `suppress_offers`, `activate` on `activate_framework` and
//!   `revive_offers`. Weights go to the role sorter only (`update_weights` →
//!   [`update_weight`](Sorter::update_weight)).
//! * **[`allocated`](Sorter::allocated)** (the role's client in the role sorter, the
//!   framework's in the role's framework sorter, the same resources): for every **offer**,
//!   during the run, right after it is made, so later agents of the same run see it; and for
//!   what agents and frameworks already use when they are added (`used`). An offer counts
//!   as much as a running task: launching tasks on it makes no sorter call.
//! * **[`unallocated`](Sorter::unallocated)**: for every `recover_resources` — the
//!   **declined remainder** of an offer (the framework launched on part of it), a declined or
//!   rescinded offer, the resources of a **finished task** — and for everything a framework
//!   held when it or the agent is removed, before the client is removed.
//! * **[`update`](Sorter::update)** (`old` → `new` held by the client on that agent under
//!   that role): for **operations** on offered or allocated resources (`update_allocation`:
//!   reserve, unreserve, create, destroy). Operations on the free pool (`update_available`)
//!   make no sorter call.
//! * **[`sort`](Sorter::sort)**: at the start of each allocation run, every framework sorter
//!   once (to find roles with an active framework); then for each candidate agent, in a
//!   seeded random order, the role sorter, and for each role in that order the role's
//!   framework sorter until a framework takes the agent. With quota, the agents are visited
//!   twice (guarantees, then fair share). The framework sorters are asked through
//!   [`sort_prefix`](Sorter::sort_prefix) (length 1 at the start of the run; 8 for an agent,
//!   then twice as many while the walk needs more, and the whole order before a grant that the
//!   walk goes on after); a sorter that keeps the default sees each of those as one `sort`.
//!
//! Resources are passed whole (reservations, revocable and shared flags included); sorters
//! compare scalar quantities, so `allocated` and `unallocated` of the same resources cancel.
//!
//! A trace (`allocation_interval` 1 s; `c0` is role `r1`'s client, `c1` framework `f1`'s; the
//! host's test `sorters_are_called_as_the_sorter_documentation_says` checks it call by call):
//!
//! ```text
//!      (the allocator is created) role:  (created) keep_scalars_only
//! t=0  add_framework f1 [r1]      role:  add(c0,"r1") activate(c0)
//!                                 r1:    (created, no agents yet) keep_scalars_only
//!                                        add(c1,"0000000000") activate(c1)
//!      triggered run (no agent)   r1: sort → [c1]
//! t=0  add_agent a1 cpus:4;mem:4G role:  add_agent(a1, cpus:4;mem:4096)
//!                                 r1:    add_agent(a1, cpus:4;mem:4096)
//!      triggered run on a1        r1: sort → [c1]; role: sort → [c0]; r1: sort → [c1]
//!      offer f1 cpus:4;mem:4096   role:  allocated(c0, a1, cpus:4;mem:4096)
//!                                 r1:    allocated(c1, a1, cpus:4;mem:4096)
//! t=0  f1 launches cpus:1;mem:1G  (nothing: offered already counts)
//!      and declines the rest      role:  unallocated(c0, a1, cpus:3;mem:3072)
//!                                 r1:    unallocated(c1, a1, cpus:3;mem:3072)
//! t=5  f1 reserves its cpus:1     role:  update(c0, a1, cpus:1;mem:1024, cpus(r1){dynamic}:1;mem:1024)
//!      (update_allocation)        r1:    update(c1, a1, …the same…)
//! t=10 the task finishes          role:  unallocated(c0, a1, cpus(r1){dynamic}:1;mem:1024)
//!                                 r1:    unallocated(c1, a1, …the same…)
//! t=12 remove_framework f1        r1:    remove(c1)   (dropped: no framework left)
//!                                 role:  remove(c0)
//! ```

use abi_stable::StableAbi;
use abi_stable::std_types::{RString, RVec};

use crate::error::Result;
use crate::ids::{AgentId, ClientId};
use crate::resources::{Quantities, Resources};

/// Settings a sorter receives when it is created (from the host's flags or scenario config).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default, PartialEq)]
pub struct SorterConfig {
    /// Resource names left out of share computations (`--fair_sharing_excluded_resource_names`).
    pub fairness_excluded_resource_names: RVec<RString>,
    /// Seed for any random choice (`--seed`): one seed gives one sequence of answers.
    pub seed: u64,
}

impl SorterConfig {
    /// `true` when `name` is excluded from fair-share computations.
    pub fn is_excluded(&self, name: &str) -> bool {
        self.fairness_excluded_resource_names.iter().any(|n| n == name)
    }
}

/// What a client holds on one agent (an entry of [`Sorter::allocation`]).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct AgentAllocation {
    /// The agent.
    pub agent: AgentId,
    /// What the client holds there.
    pub resources: Resources,
}

/// A sorter: orders clients for the allocator. See the [module documentation](self) for the
/// contract every method follows.
///
/// Implement this trait, then export it with [`export_modules!`](crate::export_modules); the
/// export helpers turn panics into errors and forward log records to the host. The methods with
/// default bodies may be left out by sorters that do not track allocations or weights.
pub trait Sorter: Send {
    /// Adds `client` at `path`, inactive. Rejects a path or id that is already present.
    fn add(&mut self, client: ClientId, path: &str) -> Result<()>;

    /// Removes `client` and its allocation. Inner nodes left without clients disappear.
    fn remove(&mut self, client: ClientId) -> Result<()>;

    /// Makes `client` take part in [`sort`](Self::sort) (no-op when already active).
    fn activate(&mut self, client: ClientId) -> Result<()>;

    /// Leaves `client` out of [`sort`](Self::sort), keeping its allocation (no-op when inactive).
    fn deactivate(&mut self, client: ClientId) -> Result<()>;

    /// Sets the weight of the subtree at `path` (which need not exist yet); `1.0` is the
    /// default. The weight must be finite and positive.
    fn update_weight(&mut self, path: &str, weight: f64) -> Result<()> {
        let _ = (path, weight);
        Ok(())
    }

    /// Records that `resources` on `agent` were offered or allocated to `client`.
    fn allocated(&mut self, client: ClientId, agent: AgentId, resources: &Resources) -> Result<()> {
        let _ = (client, agent, resources);
        Ok(())
    }

    /// Replaces `old` (held by `client` on `agent`) with `new`, as an operation does.
    fn update(
        &mut self,
        client: ClientId,
        agent: AgentId,
        old: &Resources,
        new: &Resources,
    ) -> Result<()> {
        let _ = (client, agent, old, new);
        Ok(())
    }

    /// Records that `client` gave back `resources` on `agent`.
    fn unallocated(
        &mut self,
        client: ClientId,
        agent: AgentId,
        resources: &Resources,
    ) -> Result<()> {
        let _ = (client, agent, resources);
        Ok(())
    }

    /// Writes into `out` what `client` holds on each agent (agents with nothing are omitted).
    fn allocation(&self, client: ClientId, out: &mut RVec<AgentAllocation>) -> Result<()> {
        let _ = client;
        out.clear();
        Err(crate::ModuleError::unsupported("allocation"))
    }

    /// Writes into `out` what `client` holds on `agent` (empty when nothing).
    fn allocation_on(&self, client: ClientId, agent: AgentId, out: &mut Resources) -> Result<()> {
        let _ = (client, agent);
        out.clear();
        Err(crate::ModuleError::unsupported("allocation_on"))
    }

    /// Writes into `out` the scalar quantities held by `client` over all agents, or by all
    /// clients together when `client` is `None`.
    fn allocation_scalar_quantities(
        &self,
        client: Option<ClientId>,
        out: &mut Quantities,
    ) -> Result<()> {
        let _ = client;
        out.clear();
        Err(crate::ModuleError::unsupported("allocation_scalar_quantities"))
    }

    /// Adds `agent`'s scalar quantities to the pool that shares are computed against.
    fn add_agent(&mut self, agent: AgentId, total: &Quantities) -> Result<()> {
        let _ = (agent, total);
        Ok(())
    }

    /// Removes `agent`'s quantities from the pool. To change an agent, remove it and add it.
    fn remove_agent(&mut self, agent: AgentId) -> Result<()> {
        let _ = agent;
        Ok(())
    }

    /// Writes the active clients into `out`, first to be served first. `out` is cleared first;
    /// reusing it across calls avoids allocation.
    fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()>;

    /// Writes into `out` the first `len` clients of the order [`sort`](Self::sort) would write
    /// now (all of them when there are fewer) and returns `true` when `out` holds the whole
    /// order. It counts as one `sort` (it answers with the same order and leaves the sorter as
    /// `sort` would). A caller that needs more of the order asks again with a larger `len`,
    /// only after an answer of `false` and with no other call on the sorter in between; it
    /// cannot tell the answers apart from one `sort` cut short.
    ///
    /// The default calls `sort` and returns `true`, so a sorter that keeps it is asked exactly
    /// as often as before: the random sorter keeps it (it draws on every sort), and so does
    /// every sorter loaded from an ABI 1 library (ABI 1 has no prefix call; ABI 2 carries it).
    /// The shipped DRF and weighted-priority sorters answer in O(`len`), which makes the
    /// built-in allocator's cost per agent grow with the frameworks it considers, not with all
    /// of them.
    fn sort_prefix(&mut self, len: usize, out: &mut RVec<ClientId>) -> Result<bool> {
        let _ = len;
        self.sort(out)?;
        Ok(true)
    }

    /// Tells a new sorter that its caller will never ask what a client holds per agent
    /// ([`allocation`](Self::allocation), [`allocation_on`](Self::allocation_on)); returns
    /// whether the sorter now keeps only what its order needs. The caller calls it once, on a
    /// new sorter, before any other call.
    ///
    /// From a sorter that answers `true`:
    /// * `allocation` and `allocation_on` answer an error of kind
    ///   [`UNSUPPORTED`](crate::ErrorKind::UNSUPPORTED) that says the sorter keeps scalar
    ///   quantities only;
    /// * every other answer ([`sort`](Self::sort), [`sort_prefix`](Self::sort_prefix),
    ///   [`allocation_scalar_quantities`](Self::allocation_scalar_quantities),
    ///   [`dominant_share`](Self::dominant_share), errors for unknown clients) is the one it
    ///   would give without the call; a shared resource still counts once per agent
    ///   however many copies a client holds there;
    /// * [`unallocated`](Self::unallocated) (and the `old` side of [`update`](Self::update))
    ///   still rejects giving back more of a scalar than the client holds over all agents, or a
    ///   shared resource it does not hold on that agent. Whether the client holds the
    ///   non-shared resources on that very agent (scalars, ranges and sets) is then the
    ///   caller's check: the sorter no longer records them per agent.
    ///
    /// The default answers `false` and changes nothing. Sorters loaded from an ABI 1 library
    /// keep it (ABI 1 has no such call; ABI 2 carries it), so they keep every per-agent record.
    /// The built-in allocator calls it on every sorter it creates: it keeps its own per-agent
    /// ledger and asks sorters only for their order, shares and scalar quantities. The shipped
    /// DRF, weighted-priority and random sorters answer `true`: a grant or a give-back of
    /// non-shared resources then updates per-node scalar totals only (no per-agent record, no
    /// allocation).
    fn keep_scalars_only(&mut self) -> bool {
        false
    }

    /// `true` when `client` is in the sorter, active or not.
    fn contains(&self, client: ClientId) -> bool;

    /// The number of clients, active and inactive.
    fn count(&self) -> usize;

    /// The client's current (weighted) dominant share, for metrics; `None` when the sorter has
    /// no notion of share or the client is unknown.
    fn dominant_share(&self, client: ClientId) -> Option<f64> {
        let _ = client;
        None
    }

    /// The host's clock, in seconds (ABI 3): the time of the allocation run about to ask for
    /// an order. The built-in allocator calls it on every sorter it asks in a run, once per
    /// run, before the run's first [`sort`](Self::sort) or
    /// [`sort_prefix`](Self::sort_prefix); time never goes back. A sorter whose order depends
    /// on time (usage that decays, aging) reads it here; nothing else may be assumed about
    /// when it is called.
    ///
    /// The default ignores it. Sorters loaded from an ABI 1 or ABI 2 library keep the
    /// default (those ABIs have no such call).
    fn set_time(&mut self, now: f64) -> Result<()> {
        let _ = now;
        Ok(())
    }
}
