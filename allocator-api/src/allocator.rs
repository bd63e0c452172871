//! The [`Allocator`] interface: Mesos's allocator (`include/mesos/allocator/allocator.hpp`),
//! with integer handles, a host-driven clock and offers returned in caller-owned batches.
//!
//! # Contract
//!
//! * The host creates the allocator with its [`AllocatorOptions`] (there is no separate
//!   `initialize`), then may call [`recover`](Allocator::recover) before the first agent is
//!   added, then any other method in any order.
//! * Time is the host's: it calls [`set_time`](Allocator::set_time) whenever its clock moves
//!   (virtual in scenarios, real when embedded), before any other call at the new time. Time
//!   starts at 0 and never goes back.
//! * The host decides when allocation runs happen (periodically every `allocation_interval`, and
//!   after the events that trigger one) and calls [`allocate`](Allocator::allocate) with the
//!   candidate agents. The allocator never runs by itself: offers only come out of `allocate`.
//! * Every offer the allocator writes into the output batch counts as offered to that framework
//!   until the host gives it back with [`recover_resources`](Allocator::recover_resources) (a
//!   decline, a rescinded offer or finished tasks) or the framework or agent is removed.
//! * Methods must not block and must not keep references to their arguments. A refused call
//!   returns [`ModuleError::rejected`] and **changes nothing**.
//!
//! # Duplicates, unknown handles and `used` lists
//!
//! The rules the built-in allocator follows and the conformance suite checks:
//!
//! | situation | answer |
//! |---|---|
//! | `add_agent` / `add_framework` for a handle that is present | rejected, nothing changes |
//! | the same handle added again after `remove_agent` / `remove_framework` | a fresh add (a reconnecting agent, a re-subscribing framework): the host keeps one handle per name |
//! | any other call naming a framework or agent that is not present | rejected, nothing changes |
//! | … except `recover_resources` for one that was removed | `Ok`, a no-op: removal already released everything (the host may give back an offer that raced with the removal) |
//! | `add_agent`'s `used` naming a framework not added yet | accepted (a master failover: agents come back before frameworks). Those resources are in use on the agent (never free, never offered) and count for the framework, in its sorters and shares, from its `add_framework` on, whether or not that call repeats them |
//! | `add_framework`'s `used` naming an agent not added yet | ignored: the agent reports its own `used` when it is added |
//! | `add_framework`'s `used` overlapping what `add_agent`'s `used` recorded for the same framework and role | counted **once** (the union): only the part beyond what the agent reported is new |
//! | `add_agent`'s `used` beyond the agent's `total`, or the new part of `add_framework`'s `used` beyond what is free on that agent | rejected, nothing changes |
//! | `recover_resources` of more than the framework holds under that role on that agent | rejected, nothing changes |
//!
//! The host itself never adds a present agent or framework twice (it refuses such scenario
//! events before calling the allocator) and never names a handle it did not add; the rules
//! above say what an allocator answers all the same.
//!
//! [`ModuleError::rejected`]: crate::ModuleError::rejected

use abi_stable::StableAbi;
use abi_stable::std_types::{ROption, RString, RVec};

use crate::error::Result;
use crate::explain::{ExplainEntry, ExplainSubject};
use crate::ids::{AgentId, FrameworkId};
use crate::requests::{Constraint, Request};
use crate::resources::{Name, Quantities, Resources};

macro_rules! capabilities {
    ($(#[$doc:meta])* $name:ident { $($(#[$cdoc:meta])* $cap:ident = $bit:literal),* $(,)? }) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(StableAbi, Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
        pub struct $name(pub u32);

        impl $name {
            $($(#[$cdoc])* pub const $cap: $name = $name(1 << $bit);)*

            /// Every capability name this version knows, with its flag.
            pub const ALL_NAMED: &'static [(&'static str, $name)] = &[$((stringify!($cap), $name::$cap)),*];

            /// `true` when every capability of `other` is present.
            pub const fn has(self, other: $name) -> bool {
                self.0 & other.0 == other.0
            }

            /// `self` plus the capabilities of `other`.
            pub const fn with(self, other: $name) -> $name {
                $name(self.0 | other.0)
            }

            /// Every capability this version knows.
            pub fn all() -> $name {
                $name::ALL_NAMED.iter().fold($name(0), |acc, (_, c)| acc.with(*c))
            }

            /// The capability named `name` (`MULTI_ROLE`, …), if known.
            pub fn from_name(name: &str) -> Option<$name> {
                $name::ALL_NAMED.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
            }

            /// The names of the capabilities present, in declaration order.
            pub fn names(self) -> Vec<&'static str> {
                $name::ALL_NAMED.iter().filter(|(_, c)| self.has(*c)).map(|(n, _)| *n).collect()
            }
        }
    };
}

capabilities!(
    /// Framework capabilities (SPEC 4.1 names).
    FrameworkCapabilities {
        /// The framework subscribes with a list of roles.
        MULTI_ROLE = 0,
        /// The framework may receive offers from agents with GPUs.
        GPU_RESOURCES = 1,
        /// The framework may receive revocable resources.
        REVOCABLE_RESOURCES = 2,
        /// The framework may receive shared resources.
        SHARED_RESOURCES = 3,
        /// The framework may receive refined (nested) reservations.
        RESERVATION_REFINEMENT = 4,
        /// The framework accepts agents in other fault-domain regions.
        REGION_AWARE = 5,
    }
);

capabilities!(
    /// Agent capabilities (SPEC 4.1 names).
    AgentCapabilities {
        /// The agent supports frameworks with several roles.
        MULTI_ROLE = 0,
        /// The agent supports hierarchical roles (`a/b`).
        HIERARCHICAL_ROLE = 1,
        /// The agent supports refined reservations.
        RESERVATION_REFINEMENT = 2,
        /// The agent hosts resource providers.
        RESOURCE_PROVIDER = 3,
    }
);

/// Configuration the allocator is created with (Mesos's `allocator::Options` plus the host's
/// choices of sorters and seed).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct AllocatorOptions {
    /// Seconds between periodic allocation runs (`--allocation_interval`).
    pub allocation_interval: f64,
    /// Resource names left out of fair-share computations.
    pub fairness_excluded_resource_names: RVec<RString>,
    /// Only GPU_RESOURCES frameworks receive offers from agents with GPUs.
    pub filter_gpu_resources: bool,
    /// Global min-allocatable sets: an offer must contain at least one of them (an empty list
    /// means any non-empty offer is allocatable).
    pub min_allocatable_resources: RVec<Quantities>,
    /// Seed of every random choice (agent shuffle, random sorters).
    pub seed: u64,
    /// Seconds after `recover` at which allocation resumes even if agents are missing.
    pub recovery_timeout: f64,
    /// Fraction of `expected_agents` after which `recover`'s pause ends early.
    pub agent_recovery_factor: f64,
    /// Name of the role sorter (`--role_sorter`); only meaningful to allocators that use sorters.
    pub role_sorter: RString,
    /// Name of the framework sorter (`--framework_sorter`).
    pub framework_sorter: RString,
}

impl Default for AllocatorOptions {
    /// Mesos's defaults: 1 s interval, `cpus:0.01|mem:32`, GPU filtering on, 10 min recovery
    /// timeout, factor 0.8, DRF sorters, seed 0.
    fn default() -> AllocatorOptions {
        let min = ["cpus:0.01", "mem:32"]
            .iter()
            .map(|s| Quantities::parse(s).expect("valid default"))
            .collect();
        AllocatorOptions {
            allocation_interval: 1.0,
            fairness_excluded_resource_names: RVec::new(),
            filter_gpu_resources: true,
            min_allocatable_resources: min,
            seed: 0,
            recovery_timeout: 600.0,
            agent_recovery_factor: 0.8,
            role_sorter: "drf".into(),
            framework_sorter: "drf".into(),
        }
    }
}

/// A `key: value` pair (agent attributes).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct Attribute {
    /// Attribute name.
    pub name: RString,
    /// Attribute value (text).
    pub value: RString,
}

/// A framework as the allocator sees it.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct FrameworkInfo {
    /// The host's handle.
    pub id: FrameworkId,
    /// The framework's id string (for display and logs).
    pub name: RString,
    /// The roles it subscribes to.
    pub roles: RVec<RString>,
    /// Its capabilities.
    pub capabilities: FrameworkCapabilities,
}

impl FrameworkInfo {
    /// The subscribed roles as [`Role`](crate::Role)s, in subscription order.
    pub fn role_iter(&self) -> impl Iterator<Item = crate::Role> + '_ {
        self.roles.iter().map(crate::Role::from)
    }

    /// `true` when the framework subscribes to `role` (any spelling: `&str`, `RString`, `Role`).
    pub fn has_role(&self, role: impl AsRef<str>) -> bool {
        let role = role.as_ref();
        self.roles.iter().any(|r| r.as_str() == role)
    }
}

/// Per-role min-allocatable override of a framework.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct RoleMinAllocatable {
    /// The role.
    pub role: RString,
    /// Quantity sets, one of which an offer must contain; empty means anything is allocatable.
    pub sets: RVec<Quantities>,
}

/// Per-framework options (Mesos's `FrameworkOptions` plus offer filters).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Default)]
pub struct FrameworkOptions {
    /// Roles for which the framework wants no offers.
    pub suppressed_roles: RVec<RString>,
    /// Per-role min-allocatable overrides.
    pub min_allocatable_resources: RVec<RoleMinAllocatable>,
}

impl FrameworkOptions {
    /// The min-allocatable sets that apply to an offer to this framework under `role`
    /// (Mesos's `allocatable`, R17): the framework's own sets for that role when it gave some
    /// (an empty list there accepts anything), else `global`
    /// ([`AllocatorOptions::min_allocatable_resources`]). Check an offer with
    /// [`Resources::meets_minimum`].
    pub fn min_allocatable_for<'a>(
        &'a self,
        role: &str,
        global: &'a [Quantities],
    ) -> &'a [Quantities] {
        self.min_allocatable_resources
            .iter()
            .find(|m| m.role.as_str() == role)
            .map_or(global, |m| m.sets.as_slice())
    }
}

impl AgentCapabilities {
    /// Whether an agent with these capabilities may be offered to a framework with
    /// `framework`'s capabilities under `role` (R15, R16): a `MULTI_ROLE` framework needs a
    /// `MULTI_ROLE` agent, and a nested role (`a/b`) a `HIERARCHICAL_ROLE` agent. An agent
    /// added without capabilities has them all.
    pub fn admit(self, framework: FrameworkCapabilities, role: &str) -> bool {
        (!framework.has(FrameworkCapabilities::MULTI_ROLE)
            || self.has(AgentCapabilities::MULTI_ROLE))
            && (self.has(AgentCapabilities::HIERARCHICAL_ROLE) || !role.contains('/'))
    }
}

/// An agent as the allocator sees it.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct AgentInfo {
    /// The host's handle.
    pub id: AgentId,
    /// The agent's id string (for display and logs).
    pub name: RString,
    /// Its hostname (whitelists match on it).
    pub hostname: RString,
    /// Its attributes.
    pub attributes: RVec<Attribute>,
    /// Its capabilities.
    pub capabilities: AgentCapabilities,
}

impl AgentInfo {
    /// The value of the agent's attribute `name`; `hostname` and `agent_id` are its hostname
    /// and id when it has no attribute of that name (the pseudo-attributes of request
    /// constraints, as Mesos's offer constraints have `hostname`).
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes.iter().find(|a| a.name.as_str() == name).map(|a| a.value.as_str()).or(
            match name {
                "hostname" => Some(self.hostname.as_str()),
                "agent_id" => Some(self.name.as_str()),
                _ => None,
            },
        )
    }

    /// Whether the agent meets a request's constraint ([`Constraint::holds_for`] on
    /// [`attribute`](Self::attribute)).
    pub fn meets(&self, constraint: &Constraint) -> bool {
        constraint.holds_for(self.attribute(&constraint.attribute))
    }

    /// Whether the agent meets every constraint of a request.
    pub fn meets_all(&self, constraints: &[Constraint]) -> bool {
        constraints.iter().all(|c| self.meets(c))
    }
}

/// A maintenance window, in seconds on the host's clock.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq)]
pub struct Unavailability {
    /// Start of the window.
    pub start: f64,
    /// Length of the window; `None` means "from `start` on".
    pub duration: ROption<f64>,
}

/// Resources held by (or offered to) a framework under one role on one agent. Used for offers,
/// for `used` lists when agents and frameworks are added, and in queries.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct Allocation {
    /// The framework.
    pub framework: FrameworkId,
    /// The agent.
    pub agent: AgentId,
    /// The role the resources are allocated to.
    pub role: RString,
    /// The resources.
    pub resources: Resources,
}

impl Allocation {
    /// An allocation of `resources` on `agent` to `framework` under `role`, which may be given
    /// in any spelling (`&str`, `RString`, [`Role`](crate::Role)).
    pub fn new(
        framework: FrameworkId,
        agent: AgentId,
        role: impl AsRef<str>,
        resources: Resources,
    ) -> Allocation {
        Allocation { framework, agent, role: role.as_ref().into(), resources }
    }
}

/// An inverse offer: a request that a framework give back an agent for maintenance.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct InverseOffer {
    /// The framework asked.
    pub framework: FrameworkId,
    /// The agent going into maintenance.
    pub agent: AgentId,
    /// The maintenance window.
    pub unavailability: Unavailability,
}

/// A framework's answer to an inverse offer (Mesos's `InverseOfferStatus.Status` values).
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct InverseOfferStatus(pub u8);

impl InverseOfferStatus {
    /// No answer yet.
    pub const UNKNOWN: InverseOfferStatus = InverseOfferStatus(1);
    /// The framework agreed to give the agent back.
    pub const ACCEPT: InverseOfferStatus = InverseOfferStatus(2);
    /// The framework declined.
    pub const DECLINE: InverseOfferStatus = InverseOfferStatus(3);
}

/// One entry of [`Allocator::inverse_offer_statuses`].
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct InverseOfferStatusEntry {
    /// The agent under maintenance.
    pub agent: AgentId,
    /// The framework that answered.
    pub framework: FrameworkId,
    /// Its answer.
    pub status: InverseOfferStatus,
    /// When it answered (host clock).
    pub timestamp: f64,
}

/// A quota: guarantees and limits as quantities.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Default)]
pub struct Quota {
    /// Resources the role is guaranteed (empty: no guarantee).
    pub guarantees: Quantities,
    /// Upper bounds; a name without an entry is unlimited and a zero entry means none of it.
    pub limits: Quantities,
}

impl Quota {
    /// What the role may still be given under its limits after `consumed`: one entry per
    /// limited name, `max(limit - consumed, 0)`, **zeros kept** ("none left"); a name without
    /// a limit has no entry (unlimited). Feed it to
    /// [`Resources::shrink`](crate::Resources::shrink) with `keep_unbounded = true` to cut an
    /// offer to the limits. See [`Quantities::remaining_after`].
    ///
    /// ```
    /// use allocator_api::{Quantities, Quota, Resources};
    /// let quota = Quota { guarantees: Quantities::new(), limits: "cpus:4;gpus:0".parse().unwrap() };
    /// let headroom = quota.limit_headroom(&"cpus:3;mem:512".parse().unwrap());
    /// assert_eq!(headroom.to_string(), "cpus:1;gpus:0");
    /// let offer: Resources = "cpus:8;gpus:2;mem:1024".parse().unwrap();
    /// assert_eq!(offer.shrink(&headroom, true).to_string(), "cpus:1;mem:1024");
    /// ```
    pub fn limit_headroom(&self, consumed: &Quantities) -> Quantities {
        self.limits.remaining_after(consumed)
    }
}

/// A role's quota (for [`Allocator::recover`]).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct RoleQuota {
    /// The role.
    pub role: RString,
    /// Its quota.
    pub quota: Quota,
}

/// A role's weight (for [`Allocator::update_weights`]).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct RoleWeight {
    /// The role.
    pub role: RString,
    /// Its weight (finite and positive).
    pub weight: f64,
}

/// The kind of an [`Operation`]. A `u8` newtype so that later versions can add kinds.
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct OperationKind(pub u8);

impl OperationKind {
    /// Dynamically reserve unreserved resources (the resources name the target reservation).
    pub const RESERVE: OperationKind = OperationKind(0);
    /// Release a dynamic reservation (the resources name the reserved resources).
    pub const UNRESERVE: OperationKind = OperationKind(1);
    /// Create persistent volumes on reserved disk (the resources are the volumes).
    pub const CREATE: OperationKind = OperationKind(2);
    /// Destroy persistent volumes (the resources are the volumes).
    pub const DESTROY: OperationKind = OperationKind(3);
}

/// An offer operation (reserve, unreserve, create or destroy a volume).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct Operation {
    /// What to do.
    pub kind: OperationKind,
    /// On what (see [`OperationKind`]).
    pub resources: Resources,
}

impl Operation {
    /// What the operation consumes and what it produces, as two resource sets (Mesos's
    /// `ResourceConversion`). Applying it to `r` is `r - consumed + converted`, valid when `r`
    /// contains `consumed`.
    ///
    /// * reserve: the resources name the target reservation (`cpus(r1){dynamic}:2`); they
    ///   consume the same amount unreserved.
    /// * unreserve: the resources are dynamically reserved ones; they become unreserved.
    /// * create: the resources are volumes (`disk(r1)[v1]:100`); they consume the same disk
    ///   without the volume id.
    /// * destroy: the reverse of create.
    pub fn conversion(&self) -> std::result::Result<(Resources, Resources), String> {
        use crate::resources::{Resource, ResourceFlags};
        let mut consumed = Resources::new();
        let mut converted = Resources::new();
        for r in self.resources.iter() {
            let (from, to): (Resource, Resource) = match self.kind {
                OperationKind::RESERVE => {
                    if r.is_unreserved() {
                        return Err(format!("reserve needs a role: {r}"));
                    }
                    let mut plain = r.clone();
                    plain.reservation = Name::default();
                    plain.flags = plain.flags.without(ResourceFlags::DYNAMIC);
                    let mut target = r.clone();
                    target.flags = target.flags.with(ResourceFlags::DYNAMIC);
                    (plain, target)
                }
                OperationKind::UNRESERVE => {
                    if !r.flags.has(ResourceFlags::DYNAMIC) {
                        return Err(format!("only dynamic reservations can be unreserved: {r}"));
                    }
                    let mut plain = r.clone();
                    plain.reservation = Name::default();
                    plain.flags = plain.flags.without(ResourceFlags::DYNAMIC);
                    (r.clone(), plain)
                }
                OperationKind::CREATE | OperationKind::DESTROY => {
                    if r.volume.is_empty() {
                        return Err(format!("a persistent volume needs an id: {r}"));
                    }
                    let mut disk = r.clone();
                    disk.volume = Name::default();
                    disk.flags = disk.flags.without(ResourceFlags::SHARED);
                    if self.kind == OperationKind::CREATE {
                        (disk, r.clone())
                    } else {
                        (r.clone(), disk)
                    }
                }
                other => return Err(format!("unknown operation kind {}", other.0)),
            };
            consumed.add_resource(from);
            converted.add_resource(to);
        }
        Ok((consumed, converted))
    }

    /// Applies the operation to `resources`, or says why it cannot be applied.
    pub fn apply(&self, resources: &Resources) -> std::result::Result<Resources, String> {
        let (consumed, converted) = self.conversion()?;
        if !resources.contains(&consumed) {
            return Err(format!("{consumed} is not available in {resources}"));
        }
        Ok(resources.clone() - &consumed + &converted)
    }

    /// Applies `operations` in order, all or nothing, to `resources` (what they act on: what a
    /// framework holds on an agent, or the agent's free resources) and to the agent's `total`
    /// (`total - consumed + converted` for each): the new `(resources, total)`, or why one of
    /// them cannot be applied. This is what [`Allocator::update_allocation`] and
    /// [`Allocator::update_available`] do to an allocator's books.
    pub fn apply_all(
        operations: &[Operation],
        resources: &Resources,
        total: &Resources,
    ) -> std::result::Result<(Resources, Resources), String> {
        let (mut resources, mut total) = (resources.clone(), total.clone());
        for op in operations {
            let (consumed, converted) = op.conversion()?;
            resources = op.apply(&resources)?;
            total = total - &consumed + &converted;
        }
        Ok((resources, total))
    }
}

/// A caller-owned batch that [`Allocator::allocate`] fills.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default, PartialEq)]
pub struct OfferBatch {
    /// Offers, at most one per (framework, role, agent).
    pub offers: RVec<Allocation>,
    /// Inverse offers, at most one per (framework, agent).
    pub inverse_offers: RVec<InverseOffer>,
}

impl OfferBatch {
    /// Empties the batch, keeping its buffers.
    pub fn clear(&mut self) {
        self.offers.clear();
        self.inverse_offers.clear();
    }
}

/// An allocator: decides which frameworks get offers of which agents' resources.
///
/// See the [module documentation](self) for the contract. Implement this trait, then export it
/// with [`export_modules!`](crate::export_modules). Methods with default bodies ignore the call
/// (they return `Ok(())`; `update_allocation` and `update_available` answer "unsupported"),
/// which suits allocators that have no use for that event; `allocate` and the lifecycle of
/// agents and frameworks must be implemented. Ignoring [`pause`](Allocator::pause) or
/// [`update_whitelist`](Allocator::update_whitelist) is not such a case: nothing else carries
/// them out.
///
/// # Who does what
///
/// The section *Who does what* of `docs/authoring.md` has one row per responsibility: what the
/// module must or may do, what the host does, what the host checks afterwards, and which
/// conformance check covers it. The facts that matter most:
///
/// * **The host filters nothing on the way in.** [`allocate`](Allocator::allocate) gets every
///   present agent, deactivated and non-whitelisted ones included, and the host calls it while
///   allocation is paused. The module skips those agents and offers nothing while paused.
/// * **The host checks every offer afterwards, and only this** (the offer guard): it goes to a
///   known, active framework, under one of its roles that is not suppressed, on a known,
///   activated agent; it fits in what is free (per GPU device too); it holds no other role's
///   reservation. What the guard cuts comes back through `recover_resources`, and a cut fails
///   the conformance checks. Refuse filters, the whitelist, quota, min-allocatable sets and the
///   GPU and capability gates are the module's alone: nothing checks them.
/// * **Values arrive as the client gave them.** The host clamps nothing: `refuse_seconds` in
///   [`recover_resources`](Allocator::recover_resources) and
///   [`update_inverse_offer`](Allocator::update_inverse_offer) is the framework's value.
/// * **The host records a change only after the module accepted it.** An `Err` leaves the host
///   unchanged and fails the command. So a module without a feature refuses its call rather
///   than accept and ignore it.
pub trait Allocator: Send {
    /// Moves the allocator's clock to `now` (seconds; never decreasing).
    fn set_time(&mut self, now: f64) -> Result<()> {
        let _ = now;
        Ok(())
    }

    /// Called before any agent is added after a master failover: sets quotas and may pause
    /// allocation until `expected_agents × agent_recovery_factor` agents are back.
    ///
    /// **May** pause; a module that pauses must also end the pause, because the host only
    /// forwards this call and records the quotas. The built-in pauses only when `quotas` is not
    /// empty and `floor(expected_agents × agent_recovery_factor)` is above 0. The pause ends at
    /// the first of: that many agents present, `recovery_timeout` seconds after this call, or
    /// [`resume`](Self::resume).
    fn recover(&mut self, expected_agents: u32, quotas: &[RoleQuota]) -> Result<()> {
        let _ = (expected_agents, quotas);
        Ok(())
    }

    /// Adds a framework, active or not. `used` lists what it already holds: entries for agents
    /// not added yet are ignored, and what an agent's own `used` already reported for this
    /// framework and role counts once (see the
    /// [module documentation](self#duplicates-unknown-handles-and-used-lists)). A framework
    /// that is present is rejected.
    fn add_framework(
        &mut self,
        info: &FrameworkInfo,
        used: &[Allocation],
        active: bool,
        options: &FrameworkOptions,
    ) -> Result<()>;

    /// Removes a framework, releasing everything offered or allocated to it.
    fn remove_framework(&mut self, framework: FrameworkId) -> Result<()>;

    /// Resumes offers to the framework (except for suppressed roles).
    fn activate_framework(&mut self, framework: FrameworkId) -> Result<()> {
        let _ = framework;
        Ok(())
    }

    /// Stops offers to the framework and clears its filters; its allocations stay recorded.
    fn deactivate_framework(&mut self, framework: FrameworkId) -> Result<()> {
        let _ = framework;
        Ok(())
    }

    /// Changes the framework's roles, capabilities and options.
    fn update_framework(&mut self, info: &FrameworkInfo, options: &FrameworkOptions) -> Result<()> {
        let _ = (info, options);
        Ok(())
    }

    /// Adds an agent with its `total` and what frameworks already use on it (`used`, one entry
    /// per framework and role). An agent that is present is rejected; after
    /// [`remove_agent`](Self::remove_agent) the same handle may be added again (a reconnecting
    /// agent). `used` may name frameworks that are not added yet; see the
    /// [module documentation](self#duplicates-unknown-handles-and-used-lists) for how they
    /// count.
    fn add_agent(
        &mut self,
        info: &AgentInfo,
        unavailability: Option<&Unavailability>,
        total: &Resources,
        used: &[Allocation],
    ) -> Result<()>;

    /// Removes an agent and everything offered or allocated on it (no later recover needed).
    fn remove_agent(&mut self, agent: AgentId) -> Result<()>;

    /// Updates an agent's info (attributes, capabilities) and, when given, its total.
    fn update_agent(&mut self, info: &AgentInfo, total: Option<&Resources>) -> Result<()> {
        let _ = (info, total);
        Ok(())
    }

    /// Grows the agent's total by `total` (a resource provider), recording `used`.
    fn add_resource_provider(
        &mut self,
        agent: AgentId,
        total: &Resources,
        used: &[Allocation],
    ) -> Result<()> {
        let _ = (agent, total, used);
        Ok(())
    }

    /// The agent (re)connected: it may be offered again.
    fn activate_agent(&mut self, agent: AgentId) -> Result<()> {
        let _ = agent;
        Ok(())
    }

    /// The agent disconnected: no offers for it until it is activated.
    fn deactivate_agent(&mut self, agent: AgentId) -> Result<()> {
        let _ = agent;
        Ok(())
    }

    /// Only agents with these hostnames are offered; `None` means all agents.
    ///
    /// **Must**: the host passes every present agent to [`allocate`](Self::allocate) and the
    /// offer guard does not look at hostnames. An empty list means no agent. No allocation run
    /// follows.
    fn update_whitelist(&mut self, hostnames: Option<&[RString]>) -> Result<()> {
        let _ = hostnames;
        Ok(())
    }

    /// The framework's outstanding demand ([`Request`]s), **replacing** what it stated before;
    /// an empty list withdraws everything (ABI 3).
    ///
    /// Who does what:
    ///
    /// * **The host** sends a request only for a framework that is added, with `role` one of
    ///   the framework's roles (a Mesos framework's `REQUEST` without a role gets its first
    ///   role), `1 <= count`, `min_count <= count` and non-empty `resources`
    ///   ([`Request::invalid`]); it refuses anything else before the module sees it. It checks
    ///   every offer that comes out of [`allocate`](Self::allocate) as it checks any offer
    ///   (free on the agent, a role of the framework, reservations, quota, suppressed roles),
    ///   whether or not a request asked for it; it does **not** match offers to requests.
    /// * **The module** decides what to place and where. A module that honours requests
    ///   places a request's tasks on agents that meet its `constraints`, never more tasks
    ///   than `count`, each task exactly `resources` (GPU devices chosen by the sharing rule),
    ///   under the request's `role`; a request with `min_count` offers at least that many
    ///   tasks in one run or none; requests sharing a `group` are offered together or not at
    ///   all; a placed task is done (it is not placed again unless stated again). The
    ///   conformance suite checks these rules with requests it sends.
    /// * **The framework** states each task once while it is outstanding: it restates the
    ///   whole list whenever it changes, and what it launched is no longer in it.
    ///
    /// Withdrawal and lifecycle: a later call replaces the list (an empty one withdraws it);
    /// [`remove_framework`](Self::remove_framework) drops it. Requests **survive**
    /// [`deactivate_framework`](Self::deactivate_framework) and
    /// [`suppress_offers`](Self::suppress_offers) (nothing is placed while the framework is
    /// inactive or the request's role suppressed; they are placed again after
    /// [`activate_framework`](Self::activate_framework) or
    /// [`revive_offers`](Self::revive_offers)).
    ///
    /// A module built for ABI 1 or 2, or one that implements only
    /// [`request_resources`](Self::request_resources), gets the [flattened](Request::flatten)
    /// list through this default (roles, groups, sizes and constraints are lost). The built-in
    /// allocator ignores requests, as Mesos's does.
    fn request(&mut self, framework: FrameworkId, requests: &[Request]) -> Result<()> {
        self.request_resources(framework, &Request::flatten(requests))
    }

    /// ABI 1 and ABI 2's form of [`request`](Self::request): one [`Resources`] per task, in
    /// the framework's order, replacing the outstanding list. The host never calls it itself:
    /// it calls `request`, whose default flattens into this. Implement `request` instead in a
    /// new module; this default does nothing.
    fn request_resources(&mut self, framework: FrameworkId, requests: &[Resources]) -> Result<()> {
        let _ = (framework, requests);
        Ok(())
    }

    /// Reasons about the last allocation run concerning `subject`, written into `out` (cleared
    /// first), for the master's `explain` (ABI 3). Explaining never changes state. The host
    /// checks the entries (see [`crate::explain`]) and appends them to its own account. The
    /// default says nothing.
    fn explain(&self, subject: &ExplainSubject, out: &mut RVec<ExplainEntry>) -> Result<()> {
        let _ = subject;
        out.clear();
        Ok(())
    }

    /// Applies operations to resources offered to `framework` under `role` on `agent`.
    ///
    /// **May**: this default answers "unsupported", and the host then refuses the operation
    /// and changes nothing. The host calls only with operations that apply to what its ledger
    /// says the framework holds there. After `Ok` it records the converted holding and sets the
    /// agent's total to `total - consumed + converted` ([`Operation::conversion`]), so a module
    /// that answers `Ok` must change its own records the same way. No allocation run follows.
    fn update_allocation(
        &mut self,
        framework: FrameworkId,
        agent: AgentId,
        role: &str,
        operations: &[Operation],
    ) -> Result<()> {
        let _ = (framework, agent, role, operations);
        Err(crate::ModuleError::unsupported("update_allocation"))
    }

    /// Applies operations to the agent's available resources; rejects them (changing nothing)
    /// when they cannot be applied.
    ///
    /// **May**, as [`update_allocation`](Self::update_allocation). The host checks only that
    /// each operation is well formed; whether it applies to what is free is the module's check.
    /// After `Ok` the host sets the agent's total to `total - consumed + converted` (its ledger
    /// is unchanged). No allocation run follows.
    fn update_available(&mut self, agent: AgentId, operations: &[Operation]) -> Result<()> {
        let _ = (agent, operations);
        Err(crate::ModuleError::unsupported("update_available"))
    }

    /// Sets or clears the agent's maintenance window.
    fn update_unavailability(
        &mut self,
        agent: AgentId,
        unavailability: Option<&Unavailability>,
    ) -> Result<()> {
        let _ = (agent, unavailability);
        Ok(())
    }

    /// Records a framework's answer to an inverse offer (or its expiry when `status` is
    /// `None`), optionally refusing further inverse offers for `refuse_seconds`.
    ///
    /// **Must**, for a module that sends inverse offers; the host never sends them itself.
    /// `refuse_seconds` arrives unclamped. The clamps are those of offer filters
    /// ([`recover_resources`](Self::recover_resources)): `None`, `0` or NaN means no filter, a
    /// negative value 5 s, and at most 365 days. The lifetime is not: the filter lives exactly
    /// that long, with no `allocation_interval` floor and no first-periodic-run rule. It blocks
    /// inverse offers to this framework for this agent only. The call ends the outstanding
    /// inverse offer: without a filter, the next run sends another if the framework still holds
    /// something on the agent.
    fn update_inverse_offer(
        &mut self,
        agent: AgentId,
        framework: FrameworkId,
        status: Option<InverseOfferStatus>,
        refuse_seconds: Option<f64>,
    ) -> Result<()> {
        let _ = (agent, framework, status, refuse_seconds);
        Ok(())
    }

    /// Writes the recorded inverse-offer answers into `out`.
    fn inverse_offer_statuses(&self, out: &mut RVec<InverseOfferStatusEntry>) -> Result<()> {
        out.clear();
        Ok(())
    }

    /// Offered resources on `agent` became used by tasks (for quota accounting).
    fn transition_offered_to_allocated(
        &mut self,
        agent: AgentId,
        resources: &Resources,
    ) -> Result<()> {
        let _ = (agent, resources);
        Ok(())
    }

    /// Gives back `resources` that `framework` held under `role` on `agent`: the part of an
    /// offer it declined or did not use, a rescinded offer, or the resources of finished
    /// tasks. They are free again from now on, but **no allocation run follows**: the host
    /// offers them again at the next run it calls (normally the next periodic one).
    ///
    /// # Refuse filters
    ///
    /// `refuse_seconds` is the framework's `Filters.refuse_seconds`, passed **as the framework
    /// gave it**; the allocator applies these rules (Mesos's, SPEC 4.1):
    ///
    /// * `None` (finished tasks, a rescinded offer): no filter.
    /// * `Some(0.0)`: no filter either ("offer again at once").
    /// * negative: Mesos's default, 5 s. Above 365 days: 365 days. (NaN: no filter.)
    /// * otherwise a filter on exactly `resources`, for this framework, role and agent, made at
    ///   the current time `c` with lifetime `L = max(refuse_seconds, allocation_interval)`: it
    ///   blocks **every** run at a time before `c + L`, and it **always blocks the first
    ///   periodic run after `c`** — even when `L` has passed by then — so that a short filter
    ///   still costs the framework one periodic run, as in Mesos. Event-triggered runs after
    ///   `c + L` are not blocked.
    /// * A filter blocks an offer only when the offer is **contained** in what was refused
    ///   ([`Resources::contains`](crate::Resources::contains)): refusing `cpus:1` does not block
    ///   an offer of `cpus:2` on that agent.
    /// * Filters go away when they expire, when the framework is deactivated, when it revives
    ///   the role ([`revive_offers`](Self::revive_offers)), when the agent's attributes change
    ///   ([`update_agent`](Self::update_agent)), or with the framework or agent.
    ///
    /// For example, with a 1 s interval, a decline right after the periodic run at `c = 3`
    /// with `refuse_seconds: 0.2` makes `L = max(0.2, 1) = 1`: the filter blocks an
    /// event-triggered run at 3.5 and the periodic run at 4 (the first periodic run after `c`,
    /// which falls exactly at `c + L`), and nothing later: an event-triggered run at 4.2 is
    /// offered. With `refuse_seconds: 10` it blocks every run until 13. Who clamps: the
    /// allocator; the host passes the framework's value unchanged.
    ///
    /// Rejected (nothing changes) when `resources` exceeds what the framework holds there under
    /// `role`; a framework or agent that was removed makes this a no-op.
    fn recover_resources(
        &mut self,
        framework: FrameworkId,
        agent: AgentId,
        role: &str,
        resources: &Resources,
        refuse_seconds: Option<f64>,
    ) -> Result<()>;

    /// Stops offers to `framework` for `roles` (empty: all its roles).
    fn suppress_offers(&mut self, framework: FrameworkId, roles: &[RString]) -> Result<()> {
        let _ = (framework, roles);
        Ok(())
    }

    /// Resumes offers to `framework` for `roles` (empty: all) and clears their filters.
    fn revive_offers(&mut self, framework: FrameworkId, roles: &[RString]) -> Result<()> {
        let _ = (framework, roles);
        Ok(())
    }

    /// Sets a role's quota (the default quota removes it).
    ///
    /// **May**; the host records it and checks only the role name. A module that accepts a quota
    /// must enforce its limits, serve its guarantees, and hold back their unmet part from other
    /// roles, as Mesos's allocator does. A module that does not refuses the call, as this
    /// default does (`unsupported`; it accepts the default quota, which sets nothing), and the
    /// host then refuses the quota and records nothing. Until API 1.2 this default accepted
    /// and ignored every quota.
    fn update_quota(&mut self, role: &str, quota: &Quota) -> Result<()> {
        let _ = role;
        if *quota == Quota::default() {
            Ok(())
        } else {
            Err(crate::ModuleError::unsupported("update_quota"))
        }
    }

    /// Sets role weights; roles not listed keep theirs.
    fn update_weights(&mut self, weights: &[RoleWeight]) -> Result<()> {
        let _ = weights;
        Ok(())
    }

    /// Stops allocation runs until [`resume`](Self::resume) (idempotent).
    ///
    /// **Must**: the host keeps calling [`allocate`](Self::allocate) while paused (periodic and
    /// event-triggered runs), and `allocate` must write nothing then, inverse offers included.
    fn pause(&mut self) -> Result<()> {
        Ok(())
    }

    /// Resumes allocation runs (idempotent).
    ///
    /// **Must**, with [`pause`](Self::pause). It also ends a [`recover`](Self::recover) pause.
    /// The host makes no run on resume; the next periodic run offers.
    fn resume(&mut self) -> Result<()> {
        Ok(())
    }

    /// One allocation run over the candidate `agents` at the current time, writing offers and
    /// inverse offers into `out` (which the host has cleared).
    ///
    /// `periodic` is `true` for a run of the periodic timer (at `k × allocation_interval`,
    /// `k ≥ 1`, over all agents) and `false` for a run the host makes right after an event
    /// that triggers one (`add_agent`, `add_framework` when active, `activate_framework`,
    /// `revive_offers`, a changing `update_agent`, `update_unavailability`). The flag exists
    /// for the refuse-filter rule: a filter always blocks the first **periodic** run after it
    /// was made, however short it is, while event-triggered runs are blocked only during its
    /// lifetime (see [`recover_resources`](Self::recover_resources)). An allocator without
    /// refuse filters may ignore it.
    ///
    /// At most one offer per (framework, role, agent); offering an agent's resources to two
    /// frameworks, or beyond what is free, is cut by the host's offer guard and logged.
    fn allocate(&mut self, agents: &[AgentId], periodic: bool, out: &mut OfferBatch) -> Result<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: OperationKind, resources: &str) -> Operation {
        Operation { kind, resources: resources.parse().unwrap() }
    }

    #[test]
    fn operations_apply_in_order_to_the_resources_and_the_total_or_not_at_all() {
        let held: Resources = "cpus:4;disk(r1):100".parse().unwrap();
        let total: Resources = "cpus:8;disk(r1):100;mem:64".parse().unwrap();
        let ops = [
            op(OperationKind::RESERVE, "cpus(r1){dynamic}:2"),
            op(OperationKind::CREATE, "disk(r1)[v1]:100"),
        ];
        let (held, total) = Operation::apply_all(&ops, &held, &total).unwrap();
        assert_eq!(held, "cpus:2;cpus(r1){dynamic}:2;disk(r1)[v1]:100".parse().unwrap());
        assert_eq!(total, "cpus:6;cpus(r1){dynamic}:2;disk(r1)[v1]:100;mem:64".parse().unwrap());
        // The second reserve finds too few unreserved CPUs left: an error, nothing returned.
        let too_much = [ops[0].clone(), op(OperationKind::RESERVE, "cpus(r1){dynamic}:3")];
        let e = Operation::apply_all(&too_much, &"cpus:4".parse().unwrap(), &total).unwrap_err();
        assert!(e.contains("is not available"), "{e}");
    }
}

#[cfg(test)]
mod admission_tests {
    use super::*;

    fn agent(attributes: &[(&str, &str)]) -> AgentInfo {
        AgentInfo {
            id: AgentId(0),
            name: "a1".into(),
            hostname: "host1".into(),
            attributes: attributes
                .iter()
                .map(|(n, v)| Attribute { name: (*n).into(), value: (*v).into() })
                .collect(),
            capabilities: Default::default(),
        }
    }

    #[test]
    fn an_agent_meets_a_constraint_on_its_attributes() {
        let a = agent(&[("zone", "a")]);
        assert!(a.meets(&Constraint::is_in("zone", &["a", "b"])));
        assert!(!a.meets(&Constraint::is_in("zone", &["b"])));
        assert!(a.meets_all(&[]));
    }

    #[test]
    fn hostname_and_agent_id_are_pseudo_attributes_unless_the_agent_has_them() {
        assert!(agent(&[]).meets(&Constraint::is_in("hostname", &["host1"])));
        assert!(agent(&[]).meets(&Constraint::is_in("agent_id", &["a1"])));
        assert!(!agent(&[("hostname", "x")]).meets(&Constraint::is_in("hostname", &["host1"])));
    }

    #[test]
    fn a_multi_role_framework_needs_a_multi_role_agent() {
        let fw = FrameworkCapabilities::MULTI_ROLE;
        assert!(!AgentCapabilities(0).admit(fw, "r"));
        assert!(AgentCapabilities::MULTI_ROLE.admit(fw, "r"));
        assert!(AgentCapabilities(0).admit(FrameworkCapabilities(0), "r"));
    }

    #[test]
    fn a_nested_role_needs_a_hierarchical_role_agent() {
        let fw = FrameworkCapabilities(0);
        assert!(!AgentCapabilities::MULTI_ROLE.admit(fw, "a/b"));
        assert!(AgentCapabilities::HIERARCHICAL_ROLE.admit(fw, "a/b"));
        assert!(AgentCapabilities::all().admit(FrameworkCapabilities::all(), "a/b"));
    }

    #[test]
    fn a_frameworks_own_sets_for_a_role_replace_the_global_ones() {
        let global = [Quantities::parse("mem:32").unwrap()];
        let own = RoleMinAllocatable {
            role: "r".into(),
            sets: vec![Quantities::parse("cpus:2").unwrap()].into(),
        };
        let options =
            FrameworkOptions { min_allocatable_resources: vec![own].into(), ..Default::default() };
        assert_eq!(options.min_allocatable_for("r", &global)[0].to_string(), "cpus:2");
        assert_eq!(options.min_allocatable_for("other", &global), &global);
        let small: Resources = "cpus:1;mem:64".parse().unwrap();
        assert!(!small.meets_minimum(options.min_allocatable_for("r", &global)));
        assert!(small.meets_minimum(options.min_allocatable_for("other", &global)));
        assert!(!Resources::new().meets_minimum(&[]));
    }
}
