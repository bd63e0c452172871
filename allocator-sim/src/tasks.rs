//! The simulated workload, as scenario events give it and the simulated frameworks
//! ([`crate::clients::simulated`]) play it: what a played framework's tasks look like
//! (`add_framework`'s `tasks`, [`TaskSpec`]) and a task submitted to its queue (`submit_task`,
//! [`Submission`]). The master core never sees either.

use allocator_api::Resources;

/// What a simulated framework's tasks look like (`add_framework`'s `tasks`).
#[derive(Clone, Debug, PartialEq)]
pub struct TaskSpec {
    /// Resources of one task (`None` for trace-driven frameworks, whose tasks come from
    /// `submit_task`).
    pub resources: Option<Resources>,
    /// How many tasks to launch (`None`: unbounded).
    pub count: Option<u64>,
    /// Seconds each task runs (`None`: forever).
    pub duration: Option<f64>,
    /// At most this many tasks per offer (`None`: unbounded).
    pub per_offer: Option<u64>,
    /// Seconds of the refuse filter when declining what was not used.
    pub refuse_seconds: f64,
    /// How many of its next tasks the framework states to the allocator (Mesos's
    /// `requestResources`), whenever they change: 0 none, 1 its next task, N its next N (queue
    /// order), so that an allocator module that honours requests can offer exactly where it
    /// places each. The built-in allocator ignores requests, as Mesos's does. Each stated
    /// request carries a count (a run of the same shape is one request of that many tasks).
    pub request: u32,
    /// The framework's `count` tasks are one gang: it states them as one all-or-nothing
    /// request (whatever `request` says) and launches them only when every one of them fits
    /// in the offers of one allocation run, declining otherwise.
    pub gang: bool,
}

/// A task submitted to a simulated framework's queue (`submit_task`).
#[derive(Clone, Debug, PartialEq)]
pub struct Submission {
    /// What the task needs.
    pub resources: Resources,
    /// Seconds it runs (`None`: forever).
    pub duration: Option<f64>,
    /// Attribute constraints: (attribute name, the values it may have).
    pub constraints: Vec<(String, Vec<String>)>,
    /// The gang the task belongs to, if any: its framework states and launches the gang's
    /// tasks together, all or nothing, once all of them are submitted.
    pub gang: Option<Gang>,
}

/// A gang of trace tasks (`submit_task`'s `gang`): the tasks submitted with the same `id` to
/// one framework, `size` of them.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gang {
    /// The gang's name within its framework (a trace's job id).
    pub id: String,
    /// How many tasks it has.
    pub size: u32,
}
