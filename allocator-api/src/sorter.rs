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
//! * Calls that name an unknown client or agent, or add a client or agent twice, return
//!   [`ModuleError::rejected`](crate::ModuleError::rejected) and change nothing.
//! * Methods must not block and must not keep references to arguments after returning. Output
//!   parameters are caller-owned buffers: the sorter clears them and writes its answer.
//! * A sorter is used from one thread at a time (it is `Send`, not `Sync`).

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
}
