//! What the master tells its clients and observers: one typed event per thing that happened.
//!
//! The master appends events to its outbox as it changes state; whoever drives it drains them
//! with [`Master::take_events`](super::Master::take_events) after each command (and, during
//! [`Master::advance`](super::Master::advance), after each step) and hands them to observers
//! first, then to clients, which may answer with further commands.

use std::sync::Arc;

use allocator_api::{AgentId, Allocation, FrameworkId, Resources, Unavailability};

/// Why a task ended without finishing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskEnd {
    /// It ran for its duration.
    Finished,
    /// Its agent was removed.
    AgentRemoved,
    /// Its framework was removed.
    FrameworkRemoved,
    /// The resources it ran on were taken back from its framework (a `recover_resources` of
    /// what the task held): it is killed with them.
    ResourcesRecovered,
    /// Its framework killed it; its resources went back to the allocator.
    Killed,
}

/// One thing the master did.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The virtual clock moved from `from` to `to`; delivered before anything due at `to`
    /// happens, so observers integrating over time see the state that held during the interval.
    Clock {
        /// The time before.
        from: f64,
        /// The time now.
        to: f64,
    },
    /// An offer that passed the offer guard and is now in the ledger as offered. Shared, so
    /// that a client's answer ([`super::Command::AnswerOffer`]) carries it without a copy.
    Offer(Arc<Allocation>),
    /// An inverse offer that passed the guard: the framework is asked to give back what it
    /// holds on the agent for its maintenance window.
    InverseOffer {
        /// The framework asked.
        framework: FrameworkId,
        /// The agent going into maintenance.
        agent: AgentId,
        /// The agent's unavailability.
        unavailability: Unavailability,
    },
    /// An allocation run ended; its offers and inverse offers were delivered just before.
    AllocationRun {
        /// The number of agents the run considered.
        agents: usize,
        /// Offers that passed the guard.
        offers: usize,
        /// Wall time of the allocator's `allocate` call, microseconds.
        micros: u64,
        /// Whether it was a periodic (batch) run rather than one triggered by an event.
        periodic: bool,
    },
    /// A task was launched from an offer.
    TaskLaunched {
        /// The task's id (unique over the master's life).
        task: u64,
        /// Its framework.
        framework: FrameworkId,
        /// Where it runs.
        agent: AgentId,
        /// The role its resources are allocated to.
        role: String,
        /// What it holds.
        resources: Resources,
    },
    /// An agent was removed: offers of its resources are void, its tasks ended just before
    /// (each with [`TaskEnd::AgentRemoved`]).
    AgentRemoved(AgentId),
    /// A task ended; its resources went back to the allocator (unless the agent or framework
    /// went away with them).
    TaskEnded {
        /// The task's id.
        task: u64,
        /// Its framework.
        framework: FrameworkId,
        /// Why it ended.
        end: TaskEnd,
    },
}
