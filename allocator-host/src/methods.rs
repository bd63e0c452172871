//! The [`Allocator`](allocator_api::Allocator) and [`Sorter`](allocator_api::Sorter) methods,
//! listed once for every host-side forwarder that is written from a list: the watchdog
//! ([`crate::watchdog`]: each call under the call budget and timeout) and module isolation
//! ([`crate::isolation`]: the host's proxy and the worker's dispatch). The ABI mirror writes
//! the interfaces from its own lists in `allocator-api` (frozen with each ABI), and the guard
//! ([`crate::guard`]) adds checks to some methods, so it is written by hand.
//!
//! Each entry is `NUMBER MODE fn NAME(RECEIVER, ARGS) -> RETURN;`: `NUMBER` is the call's
//! number on the worker's wire (never reused: a number names one call for the life of the
//! protocol); `MODE` is `call` (wait for the reply), `post` (the sorter calls that answer only
//! success or failure, which an isolated sorter of the built-in allocator may queue) or `out`
//! (the answer goes into the caller's buffer, written after a `;`: `(&self, x: T; out: U)`
//! stands for `(&self, x: T, out: &mut U)`).
//!
//! `allocator_methods!(m! { PREFIX })` expands to `m! { PREFIX LIST }`; the names in the list
//! resolve where `m!` expands, so its user imports the types the list names.

/// Hands the [`Allocator`](allocator_api::Allocator) method list to a macro. See the
/// [module documentation](self).
macro_rules! allocator_methods {
    ($callback:ident! { $($prefix:tt)* }) => {
        $callback! { $($prefix)*
            1 call fn set_time(&mut self, now: f64) -> Result<()>;
            2 call fn recover(&mut self, expected_agents: u32, quotas: &[RoleQuota]) -> Result<()>;
            3 call fn add_framework(&mut self, info: &FrameworkInfo, used: &[Allocation], active: bool, options: &FrameworkOptions) -> Result<()>;
            4 call fn remove_framework(&mut self, framework: FrameworkId) -> Result<()>;
            5 call fn activate_framework(&mut self, framework: FrameworkId) -> Result<()>;
            6 call fn deactivate_framework(&mut self, framework: FrameworkId) -> Result<()>;
            7 call fn update_framework(&mut self, info: &FrameworkInfo, options: &FrameworkOptions) -> Result<()>;
            8 call fn add_agent(&mut self, info: &AgentInfo, unavailability: Option<&Unavailability>, total: &Resources, used: &[Allocation]) -> Result<()>;
            9 call fn remove_agent(&mut self, agent: AgentId) -> Result<()>;
            10 call fn update_agent(&mut self, info: &AgentInfo, total: Option<&Resources>) -> Result<()>;
            11 call fn add_resource_provider(&mut self, agent: AgentId, total: &Resources, used: &[Allocation]) -> Result<()>;
            12 call fn activate_agent(&mut self, agent: AgentId) -> Result<()>;
            13 call fn deactivate_agent(&mut self, agent: AgentId) -> Result<()>;
            14 call fn update_whitelist(&mut self, hostnames: Option<&[RString]>) -> Result<()>;
            15 call fn request_resources(&mut self, framework: FrameworkId, requests: &[Resources]) -> Result<()>;
            16 call fn update_allocation(&mut self, framework: FrameworkId, agent: AgentId, role: &str, operations: &[Operation]) -> Result<()>;
            17 call fn update_available(&mut self, agent: AgentId, operations: &[Operation]) -> Result<()>;
            18 call fn update_unavailability(&mut self, agent: AgentId, unavailability: Option<&Unavailability>) -> Result<()>;
            19 call fn update_inverse_offer(&mut self, agent: AgentId, framework: FrameworkId, status: Option<InverseOfferStatus>, refuse_seconds: Option<f64>) -> Result<()>;
            20 out fn inverse_offer_statuses(&self; out: RVec<InverseOfferStatusEntry>) -> Result<()>;
            21 call fn transition_offered_to_allocated(&mut self, agent: AgentId, resources: &Resources) -> Result<()>;
            22 call fn recover_resources(&mut self, framework: FrameworkId, agent: AgentId, role: &str, resources: &Resources, refuse_seconds: Option<f64>) -> Result<()>;
            23 call fn suppress_offers(&mut self, framework: FrameworkId, roles: &[RString]) -> Result<()>;
            24 call fn revive_offers(&mut self, framework: FrameworkId, roles: &[RString]) -> Result<()>;
            25 call fn update_quota(&mut self, role: &str, quota: &Quota) -> Result<()>;
            26 call fn update_weights(&mut self, weights: &[RoleWeight]) -> Result<()>;
            27 call fn pause(&mut self) -> Result<()>;
            28 call fn resume(&mut self) -> Result<()>;
            29 out fn allocate(&mut self, agents: &[AgentId], periodic: bool; out: OfferBatch) -> Result<()>;
            30 call fn request(&mut self, framework: FrameworkId, requests: &[Request]) -> Result<()>;
            31 out fn explain(&self, subject: &ExplainSubject; out: RVec<ExplainEntry>) -> Result<()>;
        }
    };
}

/// Hands the [`Sorter`](allocator_api::Sorter) method list to a macro. See the
/// [module documentation](self).
macro_rules! sorter_methods {
    ($callback:ident! { $($prefix:tt)* }) => {
        $callback! { $($prefix)*
            1 post fn add(&mut self, client: ClientId, path: &str) -> Result<()>;
            2 post fn remove(&mut self, client: ClientId) -> Result<()>;
            3 post fn activate(&mut self, client: ClientId) -> Result<()>;
            4 post fn deactivate(&mut self, client: ClientId) -> Result<()>;
            5 post fn update_weight(&mut self, path: &str, weight: f64) -> Result<()>;
            6 post fn allocated(&mut self, client: ClientId, agent: AgentId, resources: &Resources) -> Result<()>;
            7 post fn update(&mut self, client: ClientId, agent: AgentId, old: &Resources, new: &Resources) -> Result<()>;
            8 post fn unallocated(&mut self, client: ClientId, agent: AgentId, resources: &Resources) -> Result<()>;
            9 out fn allocation(&self, client: ClientId; out: RVec<AgentAllocation>) -> Result<()>;
            10 out fn allocation_on(&self, client: ClientId, agent: AgentId; out: Resources) -> Result<()>;
            11 out fn allocation_scalar_quantities(&self, client: Option<ClientId>; out: Quantities) -> Result<()>;
            12 post fn add_agent(&mut self, agent: AgentId, total: &Quantities) -> Result<()>;
            13 post fn remove_agent(&mut self, agent: AgentId) -> Result<()>;
            14 out fn sort(&mut self; out: RVec<ClientId>) -> Result<()>;
            15 call fn contains(&self, client: ClientId) -> bool;
            16 call fn count(&self) -> usize;
            17 call fn dominant_share(&self, client: ClientId) -> Option<f64>;
            18 out fn sort_prefix(&mut self, len: usize; out: RVec<ClientId>) -> Result<bool>;
            19 call fn keep_scalars_only(&mut self) -> bool;
            20 post fn set_time(&mut self, now: f64) -> Result<()>;
        }
    };
}

pub(crate) use {allocator_methods, sorter_methods};
