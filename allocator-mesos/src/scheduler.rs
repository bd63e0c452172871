//! The v1 scheduler API (`POST /api/v1/scheduler`, SPEC 6.1): [`Call`] and [`Event`] with the
//! messages they carry, as `scheduler.proto` and `mesos.proto` define them.
//!
//! Parts the master does not interpret (containers, health checks, executors' details, …) are
//! carried as raw JSON ([`serde_json::Value`]) so nothing a framework sends is lost.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::common::*;
use super::resource::{AllocationInfo, Resource};

/// `FrameworkInfo.Capability.Type`; names this master does not know read as `Unknown`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FrameworkCapabilityType {
    /// Receives revocable resources.
    RevocableResources,
    /// Gets `TASK_KILLING`.
    TaskKillingState,
    /// Receives GPUs.
    GpuResources,
    /// Receives shared resources.
    SharedResources,
    /// Gets `TASK_UNREACHABLE`/`TASK_DROPPED`/`TASK_GONE` rather than `TASK_LOST`.
    PartitionAware,
    /// Subscribes with `roles` rather than `role`.
    MultiRole,
    /// Receives refined reservations, in the post-refinement format.
    ReservationRefinement,
    /// Receives resources from other fault-domain regions.
    RegionAware,
    /// Unset or not known here.
    #[serde(other)]
    Unknown,
}

/// `FrameworkInfo.Capability`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameworkCapability {
    /// The capability.
    #[serde(rename = "type", default = "unknown_capability")]
    pub kind: FrameworkCapabilityType,
}

fn unknown_capability() -> FrameworkCapabilityType {
    FrameworkCapabilityType::Unknown
}

/// `OfferFilters.ResourceQuantities`: `{name: {value}}`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct ResourceQuantities {
    /// Quantities by resource name.
    #[serde(default)]
    pub quantities: BTreeMap<String, ScalarValue>,
}

/// `OfferFilters.MinAllocatableResources`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct MinAllocatableResources {
    /// Alternatives: an offer is allocatable when it holds one of them.
    #[serde(default)]
    pub quantities: Vec<ResourceQuantities>,
}

/// `OfferFilters`: per-role offer filters of a framework.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct OfferFilters {
    /// The framework's own minimum allocatable resources in this role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_allocatable_resources: Option<MinAllocatableResources>,
}

/// `FrameworkInfo`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct FrameworkInfo {
    /// The user tasks run as (required by Mesos; empty accepted).
    #[serde(default)]
    pub user: String,
    /// The framework's name.
    #[serde(default)]
    pub name: String,
    /// Set when re-subscribing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<FrameworkId>,
    /// Seconds the master keeps a disconnected framework's tasks (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover_timeout: Option<f64>,
    /// Whether the framework checkpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<bool>,
    /// Legacy single role (default `*`), used without `MULTI_ROLE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The roles of a `MULTI_ROLE` framework.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// The framework's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Its principal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Its web UI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webui_url: Option<String>,
    /// Its capabilities.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<FrameworkCapability>,
    /// Its labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Labels>,
    /// Per-role offer filters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub offer_filters: BTreeMap<String, OfferFilters>,
}

impl FrameworkInfo {
    /// Whether the framework declares `capability`.
    pub fn has_capability(&self, capability: FrameworkCapabilityType) -> bool {
        self.capabilities.iter().any(|c| c.kind == capability)
    }

    /// The roles the framework subscribes with, as Mesos reads them: `roles` for a
    /// `MULTI_ROLE` framework, otherwise `role` (default `*`).
    pub fn effective_roles(&self) -> Vec<String> {
        if self.has_capability(FrameworkCapabilityType::MultiRole) {
            self.roles.clone()
        } else {
            vec![self.role.clone().unwrap_or_else(|| "*".into())]
        }
    }

    /// `failover_timeout` in seconds (default 0).
    pub fn failover_timeout(&self) -> f64 {
        self.failover_timeout.unwrap_or(0.0)
    }
}

/// `CommandInfo`. `uris`, `environment` are carried as JSON.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct CommandInfo {
    /// Files to fetch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uris: Vec<Json>,
    /// Environment variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<Json>,
    /// Run `value` through the shell (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<bool>,
    /// The command (or the executable without the shell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Arguments without the shell.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<String>,
    /// The user to run as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// `ExecutorInfo`. Everything but the ids, resources and command is carried as JSON.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct ExecutorInfo {
    /// `DEFAULT` or `CUSTOM`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The executor's id.
    pub executor_id: ExecutorId,
    /// Its framework.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framework_id: Option<FrameworkId>,
    /// Its command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandInfo>,
    /// Its own resources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Resource>,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Other fields (`container`, `data`, `discovery`, `labels`, …), as sent.
    #[serde(flatten)]
    pub rest: BTreeMap<String, Json>,
}

/// `TaskInfo`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct TaskInfo {
    /// The task's name.
    #[serde(default)]
    pub name: String,
    /// Its id, unique within the framework.
    pub task_id: TaskId,
    /// The agent of the offer it is launched with.
    pub agent_id: AgentId,
    /// What it uses.
    #[serde(default)]
    pub resources: Vec<Resource>,
    /// Its executor (`LAUNCH` with a custom executor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<ExecutorInfo>,
    /// Its command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandInfo>,
    /// Opaque data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Bytes>,
    /// Its labels (the label `duration` gives a simulated task's run time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Labels>,
    /// Other fields (`container`, `health_check`, `kill_policy`, …), as sent.
    #[serde(flatten)]
    pub rest: BTreeMap<String, Json>,
}

impl TaskInfo {
    /// How long a simulated agent runs the task, in virtual seconds (SPEC 6.1): its label
    /// `duration`, else a `command.value` of the form `sleep N`; `None`: until killed.
    /// Negative or non-numeric values do not count.
    pub fn duration(&self) -> Option<f64> {
        let valid = |v: f64| (v.is_finite() && v >= 0.0).then_some(v);
        let label = self.labels.as_ref().and_then(|l| l.get("duration"));
        if let Some(v) = label.and_then(|d| d.trim().parse::<f64>().ok()).and_then(valid) {
            return Some(v);
        }
        let command = self.command.as_ref()?.value.as_deref()?.trim();
        let mut words = command.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("sleep"), Some(n), None) => n.parse::<f64>().ok().and_then(valid),
            _ => None,
        }
    }
}

/// `TaskGroupInfo`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct TaskGroupInfo {
    /// The tasks, launched together.
    #[serde(default)]
    pub tasks: Vec<TaskInfo>,
}

/// `Offer.Operation.Type`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OperationType {
    /// Launch tasks.
    Launch,
    /// Launch a task group with an executor.
    LaunchGroup,
    /// Reserve resources dynamically.
    Reserve,
    /// Undo a dynamic reservation.
    Unreserve,
    /// Create persistent volumes.
    Create,
    /// Destroy persistent volumes.
    Destroy,
    /// Grow a volume.
    GrowVolume,
    /// Shrink a volume.
    ShrinkVolume,
    /// Create a disk from a resource provider's raw disk.
    CreateDisk,
    /// Destroy such a disk.
    DestroyDisk,
    /// Unset or not known here.
    #[serde(other)]
    Unknown,
}

/// `Offer.Operation.Launch`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Launch {
    /// The tasks.
    #[serde(default)]
    pub task_infos: Vec<TaskInfo>,
}

/// `Offer.Operation.LaunchGroup`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct LaunchGroup {
    /// The executor that runs the group.
    pub executor: ExecutorInfo,
    /// The tasks.
    pub task_group: TaskGroupInfo,
}

/// `Offer.Operation.Reserve`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Reserve {
    /// What is reserved from (refinement), optional.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source: Vec<Resource>,
    /// The resources as reserved.
    #[serde(default)]
    pub resources: Vec<Resource>,
}

/// `Offer.Operation.Unreserve`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Unreserve {
    /// The reserved resources to release.
    #[serde(default)]
    pub resources: Vec<Resource>,
}

/// `Offer.Operation.Create` / `Destroy`: persistent volumes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Volumes {
    /// The volumes.
    #[serde(default)]
    pub volumes: Vec<Resource>,
}

/// `Offer.Operation`: what an `ACCEPT` does with the offered resources.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Operation {
    /// Which operation; its field of the same name holds the details.
    #[serde(rename = "type", default = "unknown_operation")]
    pub kind: OperationType,
    /// For operation feedback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<OperationId>,
    /// `LAUNCH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<Launch>,
    /// `LAUNCH_GROUP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_group: Option<LaunchGroup>,
    /// `RESERVE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve: Option<Reserve>,
    /// `UNRESERVE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreserve: Option<Unreserve>,
    /// `CREATE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create: Option<Volumes>,
    /// `DESTROY`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destroy: Option<Volumes>,
    /// Other operations' fields (`grow_volume`, …), as sent.
    #[serde(flatten)]
    pub rest: BTreeMap<String, Json>,
}

fn unknown_operation() -> OperationType {
    OperationType::Unknown
}

impl Operation {
    /// `Err` with Mesos's wording when the field the type names is missing, or the type is
    /// one `serve` does not carry out (`GROW_VOLUME`, …).
    pub fn validate(&self) -> Result<(), String> {
        let present = match self.kind {
            OperationType::Launch => self.launch.is_some(),
            OperationType::LaunchGroup => self.launch_group.is_some(),
            OperationType::Reserve => self.reserve.is_some(),
            OperationType::Unreserve => self.unreserve.is_some(),
            OperationType::Create => self.create.is_some(),
            OperationType::Destroy => self.destroy.is_some(),
            OperationType::Unknown => return Err("Unknown offer operation".into()),
            other => return Err(format!("operation {other:?} is not supported")),
        };
        if present {
            Ok(())
        } else {
            Err(format!("Expecting '{}' to be present", operation_field(self.kind)))
        }
    }
}

fn operation_field(kind: OperationType) -> &'static str {
    match kind {
        OperationType::Launch => "launch",
        OperationType::LaunchGroup => "launch_group",
        OperationType::Reserve => "reserve",
        OperationType::Unreserve => "unreserve",
        OperationType::Create => "create",
        OperationType::Destroy => "destroy",
        OperationType::GrowVolume => "grow_volume",
        OperationType::ShrinkVolume => "shrink_volume",
        OperationType::CreateDisk => "create_disk",
        OperationType::DestroyDisk => "destroy_disk",
        OperationType::Unknown => "type",
    }
}

/// `Offer`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Offer {
    /// The offer's id.
    pub id: OfferId,
    /// Whom it is for.
    pub framework_id: FrameworkId,
    /// Which agent it is on.
    pub agent_id: AgentId,
    /// The agent's hostname.
    pub hostname: String,
    /// What is offered.
    #[serde(default)]
    pub resources: Vec<Resource>,
    /// The agent's attributes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<Attribute>,
    /// Executors of this framework running on the agent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub executor_ids: Vec<ExecutorId>,
    /// Scheduled maintenance of the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailability: Option<Unavailability>,
    /// The role offered to (`MULTI_ROLE` frameworks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_info: Option<AllocationInfo>,
}

/// `InverseOffer`: a request to vacate an agent for maintenance.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct InverseOffer {
    /// The inverse offer's id.
    pub id: OfferId,
    /// Whom it is for.
    pub framework_id: FrameworkId,
    /// The agent to vacate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// When the agent goes away.
    pub unavailability: Unavailability,
    /// The resources asked back (empty: all of the agent's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Resource>,
}

/// `TaskState`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(missing_docs)]
pub enum TaskState {
    TaskStaging,
    TaskStarting,
    TaskRunning,
    TaskKilling,
    TaskFinished,
    TaskFailed,
    TaskKilled,
    TaskError,
    TaskLost,
    TaskDropped,
    TaskUnreachable,
    TaskGone,
    TaskGoneByOperator,
    TaskUnknown,
}

impl TaskState {
    /// Whether no update follows this state (Mesos's `isTerminalState`).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::TaskFinished
                | TaskState::TaskFailed
                | TaskState::TaskKilled
                | TaskState::TaskError
                | TaskState::TaskLost
                | TaskState::TaskDropped
                | TaskState::TaskGone
                | TaskState::TaskGoneByOperator
        )
    }
}

/// `TaskStatus.Source`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(missing_docs)]
pub enum TaskStatusSource {
    SourceMaster,
    SourceAgent,
    SourceExecutor,
}

/// `TaskStatus.Reason`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(missing_docs)]
pub enum TaskStatusReason {
    ReasonCommandExecutorFailed,
    ReasonContainerLaunchFailed,
    ReasonContainerLimitation,
    ReasonContainerLimitationDisk,
    ReasonContainerLimitationMemory,
    ReasonContainerPreempted,
    ReasonContainerUpdateFailed,
    ReasonMaxCompletionTimeReached,
    ReasonExecutorRegistrationTimeout,
    ReasonExecutorReregistrationTimeout,
    ReasonExecutorTerminated,
    ReasonExecutorUnregistered,
    ReasonFrameworkRemoved,
    ReasonGcError,
    ReasonInvalidFrameworkid,
    ReasonInvalidOffers,
    ReasonIoSwitchboardExited,
    ReasonMasterDisconnected,
    ReasonReconciliation,
    ReasonResourcesUnknown,
    ReasonAgentDisconnected,
    ReasonAgentDraining,
    ReasonAgentRemoved,
    ReasonAgentRemovedByOperator,
    ReasonAgentReregistered,
    ReasonAgentRestarted,
    ReasonAgentUnknown,
    ReasonTaskKilledDuringLaunch,
    ReasonTaskCheckStatusUpdated,
    ReasonTaskHealthCheckStatusUpdated,
    ReasonTaskGroupInvalid,
    ReasonTaskGroupUnauthorized,
    ReasonTaskInvalid,
    ReasonTaskUnauthorized,
    ReasonTaskUnknown,
}

/// `TaskStatus`: one status update of a task.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TaskStatus {
    /// The task.
    pub task_id: TaskId,
    /// Its new state.
    pub state: TaskState,
    /// A human-readable explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Who produced the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<TaskStatusSource>,
    /// Why (for failures, losses, reconciliation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<TaskStatusReason>,
    /// Opaque data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Bytes>,
    /// The task's agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The task's executor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor_id: Option<ExecutorId>,
    /// Seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
    /// Set on updates that must be acknowledged (not on reconciliation answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<Bytes>,
    /// Health check result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy: Option<bool>,
    /// Labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Labels>,
}

impl TaskStatus {
    /// An update of `task` to `state`, without the optional fields.
    pub fn new(task: TaskId, state: TaskState) -> TaskStatus {
        TaskStatus {
            task_id: task,
            state,
            message: None,
            source: None,
            reason: None,
            data: None,
            agent_id: None,
            executor_id: None,
            timestamp: None,
            uuid: None,
            healthy: None,
            labels: None,
        }
    }
}

/// `Request`: resources a framework asks the allocator for (`REQUEST`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct ResourceRequest {
    /// On this agent, if set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// What is asked for (per task when `count` is given).
    #[serde(default)]
    pub resources: Vec<Resource>,
    /// Extension (not in Mesos): the role the tasks run under (default: the framework's first
    /// role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Extension: how many tasks of `resources` (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Extension: the fewest tasks placed at once (default 1; equal to `count` for all or
    /// nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_count: Option<u32>,
    /// Extension: requests with the same group are placed together, all or nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<u64>,
    /// Extension: conditions on the agents' attributes, all of which must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<RequestConstraint>,
}

/// Extension (not in Mesos): one condition of a [`ResourceRequest`] on an agent attribute.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct RequestConstraint {
    /// The attribute (`hostname` and `agent_id` are the agent's own when it has no attribute
    /// of that name).
    pub attribute: String,
    /// `EXISTS`, `NOT_EXISTS`, `IN` or `NOT_IN`.
    pub op: String,
    /// The values `IN` and `NOT_IN` compare with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// `Call.Type`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(missing_docs)]
pub enum CallType {
    Unknown,
    Subscribe,
    Teardown,
    Accept,
    Decline,
    AcceptInverseOffers,
    DeclineInverseOffers,
    Revive,
    Kill,
    Shutdown,
    Acknowledge,
    AcknowledgeOperationStatus,
    Reconcile,
    ReconcileOperations,
    Message,
    Request,
    Suppress,
    UpdateFramework,
}

/// `Call.Subscribe` and `Call.UpdateFramework` (the same fields).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Subscribe {
    /// The framework.
    pub framework_info: FrameworkInfo,
    /// Roles that start suppressed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suppressed_roles: Vec<String>,
    /// Offer constraints (may be ignored, SPEC 6.1), as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offer_constraints: Option<Json>,
}

/// `Call.Accept`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Accept {
    /// The offers used (all on one agent).
    #[serde(default)]
    pub offer_ids: Vec<OfferId>,
    /// What to do with them.
    #[serde(default)]
    pub operations: Vec<Operation>,
    /// Filter for what is left unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Filters>,
}

/// `Call.Decline`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Decline {
    /// The offers declined.
    #[serde(default)]
    pub offer_ids: Vec<OfferId>,
    /// How long not to offer them again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Filters>,
}

/// `Call.AcceptInverseOffers` / `Call.DeclineInverseOffers`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct InverseOffersReply {
    /// The inverse offers answered.
    #[serde(default)]
    pub inverse_offer_ids: Vec<OfferId>,
    /// How long not to send them again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Filters>,
}

/// `Call.Revive` / `Call.Suppress`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Roles {
    /// The roles (empty: all of the framework's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
}

/// `Call.Kill`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Kill {
    /// The task.
    pub task_id: TaskId,
    /// Its agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// Kill policy, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_policy: Option<Json>,
}

/// `Call.Shutdown`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Shutdown {
    /// The executor.
    pub executor_id: ExecutorId,
    /// Its agent.
    pub agent_id: AgentId,
}

/// `Call.Acknowledge`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Acknowledge {
    /// The task's agent.
    pub agent_id: AgentId,
    /// The task.
    pub task_id: TaskId,
    /// The update's `uuid`.
    pub uuid: Bytes,
}

/// `Call.Reconcile.Task`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct ReconcileTask {
    /// The task.
    pub task_id: TaskId,
    /// Its agent, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
}

/// `Call.Reconcile`: empty `tasks` asks for every task (implicit reconciliation).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Reconcile {
    /// The tasks to report on.
    #[serde(default)]
    pub tasks: Vec<ReconcileTask>,
}

/// `Call.Message`: data for an executor (accepted, no effect, SPEC 6.1).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Message {
    /// The executor's agent.
    pub agent_id: AgentId,
    /// The executor.
    pub executor_id: ExecutorId,
    /// The data.
    #[serde(default)]
    pub data: Bytes,
}

/// `Call.Request`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Request {
    /// The requests.
    #[serde(default)]
    pub requests: Vec<ResourceRequest>,
}

/// A call to `POST /api/v1/scheduler`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Call {
    /// The caller (every call but `SUBSCRIBE` of a new framework).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framework_id: Option<FrameworkId>,
    /// Which call; its field of the same (lower-case) name holds the details.
    #[serde(rename = "type", default = "unknown_call")]
    pub kind: CallType,
    /// `SUBSCRIBE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<Subscribe>,
    /// `ACCEPT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept: Option<Accept>,
    /// `DECLINE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decline: Option<Decline>,
    /// `ACCEPT_INVERSE_OFFERS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_inverse_offers: Option<InverseOffersReply>,
    /// `DECLINE_INVERSE_OFFERS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decline_inverse_offers: Option<InverseOffersReply>,
    /// `REVIVE` (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revive: Option<Roles>,
    /// `KILL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill: Option<Kill>,
    /// `SHUTDOWN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown: Option<Shutdown>,
    /// `ACKNOWLEDGE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledge: Option<Acknowledge>,
    /// `ACKNOWLEDGE_OPERATION_STATUS`, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledge_operation_status: Option<Json>,
    /// `RECONCILE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile: Option<Reconcile>,
    /// `RECONCILE_OPERATIONS`, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile_operations: Option<Json>,
    /// `MESSAGE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// `REQUEST`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Request>,
    /// `SUPPRESS` (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppress: Option<Roles>,
    /// `UPDATE_FRAMEWORK`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_framework: Option<Subscribe>,
}

fn unknown_call() -> CallType {
    CallType::Unknown
}

impl Call {
    /// A call of `kind` by `framework` with no details set.
    pub fn new(kind: CallType, framework: Option<FrameworkId>) -> Call {
        Call {
            framework_id: framework,
            kind,
            subscribe: None,
            accept: None,
            decline: None,
            accept_inverse_offers: None,
            decline_inverse_offers: None,
            revive: None,
            kill: None,
            shutdown: None,
            acknowledge: None,
            acknowledge_operation_status: None,
            reconcile: None,
            reconcile_operations: None,
            message: None,
            request: None,
            suppress: None,
            update_framework: None,
        }
    }

    /// Parses a request body; `Err` is a one-line reason for a `400` (SPEC 6.1).
    pub fn parse(body: &str) -> Result<Call, String> {
        serde_json::from_str(body).map_err(|e| format!("Failed to parse body into Call: {e}"))
    }

    /// Mesos's structural checks (`master/validation.cpp`), with its wording: a known type,
    /// the field it names present, `framework_id` present on every call but `SUBSCRIBE` and
    /// equal to `subscribe.framework_info.id` when both are given, and every `ACCEPT`
    /// operation well formed. What needs the master's state (unknown framework, stale offers,
    /// wrong stream id) is for the master to check.
    pub fn validate(&self) -> Result<(), String> {
        use CallType as T;
        let present = match self.kind {
            T::Unknown => return Err("Expecting 'type' to be present".into()),
            T::Subscribe => {
                let Some(s) = &self.subscribe else {
                    return Err("Expecting 'subscribe' to be present".into());
                };
                if let (Some(call), Some(info)) = (&self.framework_id, &s.framework_info.id)
                    && call != info
                {
                    return Err("'framework_id' differs from 'subscribe.framework_info.id'".into());
                }
                return Ok(());
            }
            _ if self.framework_id.is_none() => {
                return Err("Expecting 'framework_id' to be present".into());
            }
            T::Teardown | T::Revive | T::Suppress => true,
            T::Accept => self.accept.is_some(),
            T::Decline => self.decline.is_some(),
            T::AcceptInverseOffers => self.accept_inverse_offers.is_some(),
            T::DeclineInverseOffers => self.decline_inverse_offers.is_some(),
            T::Kill => self.kill.is_some(),
            T::Shutdown => self.shutdown.is_some(),
            T::Acknowledge => self.acknowledge.is_some(),
            T::AcknowledgeOperationStatus => self.acknowledge_operation_status.is_some(),
            T::Reconcile => self.reconcile.is_some(),
            T::ReconcileOperations => self.reconcile_operations.is_some(),
            T::Message => self.message.is_some(),
            T::Request => self.request.is_some(),
            T::UpdateFramework => self.update_framework.is_some(),
        };
        if !present {
            return Err(format!("Expecting '{}' to be present", call_field(self.kind)));
        }
        if let (T::UpdateFramework, Some(u)) = (self.kind, &self.update_framework)
            && u.framework_info.id.as_ref() != self.framework_id.as_ref()
        {
            return Err("'framework_id' differs from 'update_framework.framework_info.id'".into());
        }
        if let Some(accept) = &self.accept {
            for op in &accept.operations {
                op.validate()?;
            }
        }
        Ok(())
    }
}

/// The field of a call of `kind` that holds its details.
fn call_field(kind: CallType) -> &'static str {
    use CallType as T;
    match kind {
        T::Unknown => "type",
        T::Subscribe => "subscribe",
        T::Teardown => "teardown",
        T::Accept => "accept",
        T::Decline => "decline",
        T::AcceptInverseOffers => "accept_inverse_offers",
        T::DeclineInverseOffers => "decline_inverse_offers",
        T::Revive => "revive",
        T::Kill => "kill",
        T::Shutdown => "shutdown",
        T::Acknowledge => "acknowledge",
        T::AcknowledgeOperationStatus => "acknowledge_operation_status",
        T::Reconcile => "reconcile",
        T::ReconcileOperations => "reconcile_operations",
        T::Message => "message",
        T::Request => "request",
        T::Suppress => "suppress",
        T::UpdateFramework => "update_framework",
    }
}

/// `Event.Type`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(missing_docs)]
pub enum EventType {
    Unknown,
    Subscribed,
    Offers,
    InverseOffers,
    Rescind,
    RescindInverseOffer,
    Update,
    UpdateOperationStatus,
    Message,
    Failure,
    Error,
    Heartbeat,
}

/// `MasterInfo` (what `SUBSCRIBED` says of the master).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct MasterInfo {
    /// The master's id.
    pub id: String,
    /// IPv4 address as a number (network order), as Mesos has it.
    pub ip: u32,
    /// Port.
    pub port: u32,
    /// Hostname.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Version (dotted integers first; clients parse it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Address (`hostname`, `ip`, `port`), as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<Json>,
}

/// `Event.Subscribed`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Subscribed {
    /// The framework's id (new, or the one it re-subscribed with).
    pub framework_id: FrameworkId,
    /// Seconds between `HEARTBEAT` events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_interval_seconds: Option<f64>,
    /// The master.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_info: Option<MasterInfo>,
}

/// `Event.Offers`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Offers {
    /// The offers.
    #[serde(default)]
    pub offers: Vec<Offer>,
}

/// `Event.InverseOffers`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct InverseOffers {
    /// The inverse offers.
    #[serde(default)]
    pub inverse_offers: Vec<InverseOffer>,
}

/// `Event.Rescind`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Rescind {
    /// The offer withdrawn.
    pub offer_id: OfferId,
}

/// `Event.RescindInverseOffer`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RescindInverseOffer {
    /// The inverse offer withdrawn.
    pub inverse_offer_id: OfferId,
}

/// `Event.Update`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Update {
    /// The task's new status.
    pub status: TaskStatus,
}

/// `Event.Failure`: an agent or executor was lost.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Failure {
    /// The agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The executor, if one terminated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor_id: Option<ExecutorId>,
    /// The executor's exit status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<i32>,
}

/// `Event.Error`: the master will not accept the framework any more.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Error {
    /// Why.
    pub message: String,
}

/// An event on a `SUBSCRIBE` stream.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Event {
    /// Which event; its field of the same (lower-case) name holds the details.
    #[serde(rename = "type")]
    pub kind: EventType,
    /// `SUBSCRIBED`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribed: Option<Subscribed>,
    /// `OFFERS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offers: Option<Offers>,
    /// `INVERSE_OFFERS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inverse_offers: Option<InverseOffers>,
    /// `RESCIND`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rescind: Option<Rescind>,
    /// `RESCIND_INVERSE_OFFER`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rescind_inverse_offer: Option<RescindInverseOffer>,
    /// `UPDATE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<Update>,
    /// `UPDATE_OPERATION_STATUS`, as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_operation_status: Option<Json>,
    /// `MESSAGE` (from an executor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// `FAILURE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// `ERROR`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Error>,
}

impl Event {
    fn of(kind: EventType) -> Event {
        Event {
            kind,
            subscribed: None,
            offers: None,
            inverse_offers: None,
            rescind: None,
            rescind_inverse_offer: None,
            update: None,
            update_operation_status: None,
            message: None,
            failure: None,
            error: None,
        }
    }

    /// `SUBSCRIBED`.
    pub fn subscribed(subscribed: Subscribed) -> Event {
        Event { subscribed: Some(subscribed), ..Event::of(EventType::Subscribed) }
    }

    /// `OFFERS`.
    pub fn offers(offers: Vec<Offer>) -> Event {
        Event { offers: Some(Offers { offers }), ..Event::of(EventType::Offers) }
    }

    /// `INVERSE_OFFERS`.
    pub fn inverse_offers(inverse_offers: Vec<InverseOffer>) -> Event {
        Event {
            inverse_offers: Some(InverseOffers { inverse_offers }),
            ..Event::of(EventType::InverseOffers)
        }
    }

    /// `RESCIND` of `offer`.
    pub fn rescind(offer: OfferId) -> Event {
        Event { rescind: Some(Rescind { offer_id: offer }), ..Event::of(EventType::Rescind) }
    }

    /// `RESCIND_INVERSE_OFFER` of `inverse_offer`.
    pub fn rescind_inverse_offer(inverse_offer: OfferId) -> Event {
        Event {
            rescind_inverse_offer: Some(RescindInverseOffer { inverse_offer_id: inverse_offer }),
            ..Event::of(EventType::RescindInverseOffer)
        }
    }

    /// `UPDATE` with `status`.
    pub fn update(status: TaskStatus) -> Event {
        Event { update: Some(Update { status }), ..Event::of(EventType::Update) }
    }

    /// `FAILURE`.
    pub fn failure(failure: Failure) -> Event {
        Event { failure: Some(failure), ..Event::of(EventType::Failure) }
    }

    /// `ERROR` with `message`.
    pub fn error(message: impl Into<String>) -> Event {
        Event { error: Some(Error { message: message.into() }), ..Event::of(EventType::Error) }
    }

    /// `HEARTBEAT`.
    pub fn heartbeat() -> Event {
        Event::of(EventType::Heartbeat)
    }

    /// The event as one RecordIO record of JSON, ready for the stream.
    pub fn to_record(&self) -> Vec<u8> {
        let json = serde_json::to_vec(self).expect("events serialize");
        super::recordio::encode(&json)
    }
}

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;
