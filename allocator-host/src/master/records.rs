//! What the master records of each agent and framework: the host's own truth, from which a
//! failed module's replacement is rebuilt ([`super::fallback`]) and explanations are told.

use allocator_api::{AgentInfo, FrameworkInfo, FrameworkOptions, Resources, Unavailability};

/// The host's record of an agent.
#[derive(Debug)]
pub struct AgentRecord {
    /// Its description.
    pub info: AgentInfo,
    /// Its total resources.
    pub total: Resources,
    /// Whether it is present (an agent removed keeps its record and its id).
    pub present: bool,
    /// Whether it is activated.
    pub activated: bool,
    /// Its maintenance window.
    pub unavailability: Option<Unavailability>,
}

/// The host's record of a framework.
#[derive(Debug)]
pub struct FrameworkRecord {
    /// Its description (roles, capabilities).
    pub info: FrameworkInfo,
    /// Its suppressed roles and `min_allocatable_resources`.
    pub options: FrameworkOptions,
    /// Whether it is present.
    pub present: bool,
    /// Whether it is active.
    pub active: bool,
}
