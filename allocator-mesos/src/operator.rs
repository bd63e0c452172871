//! The v1 operator API (`POST /api/v1`, SPEC 6.2): [`Call`] and [`Response`] for the calls
//! `serve` answers, as `master/master.proto`, `quota/quota.proto` and
//! `maintenance/maintenance.proto` define them. Parts the master does not model are raw JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::common::*;
use super::resource::Resource;
use super::scheduler::{FrameworkInfo, InverseOffer, Offer, TaskState, TaskStatus};

/// `master.Call.Type` (every type Mesos defines; `serve` answers those of SPEC 6.2).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(missing_docs)]
pub enum CallType {
    Unknown,
    GetHealth,
    GetFlags,
    GetVersion,
    GetMetrics,
    GetLoggingLevel,
    SetLoggingLevel,
    ListFiles,
    ReadFile,
    GetState,
    GetAgents,
    GetFrameworks,
    GetExecutors,
    GetOperations,
    GetTasks,
    GetRoles,
    GetWeights,
    UpdateWeights,
    GetMaster,
    Subscribe,
    ReserveResources,
    UnreserveResources,
    CreateVolumes,
    DestroyVolumes,
    GrowVolume,
    ShrinkVolume,
    GetMaintenanceStatus,
    GetMaintenanceSchedule,
    UpdateMaintenanceSchedule,
    StartMaintenance,
    StopMaintenance,
    DrainAgent,
    DeactivateAgent,
    ReactivateAgent,
    GetQuota,
    UpdateQuota,
    SetQuota,
    RemoveQuota,
    Teardown,
    MarkAgentGone,
}

/// `WeightInfo`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct WeightInfo {
    /// The weight (positive).
    pub weight: f64,
    /// The role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

/// `Call.UpdateWeights`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct UpdateWeights {
    /// The new weights.
    #[serde(default)]
    pub weight_infos: Vec<WeightInfo>,
}

/// `maintenance.Window`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Window {
    /// The machines.
    #[serde(default)]
    pub machine_ids: Vec<MachineId>,
    /// When they are unavailable.
    pub unavailability: Unavailability,
}

/// `maintenance.Schedule`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Schedule {
    /// The windows.
    #[serde(default)]
    pub windows: Vec<Window>,
}

/// `Call.UpdateMaintenanceSchedule`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct UpdateMaintenanceSchedule {
    /// The new schedule (replaces the old one).
    pub schedule: Schedule,
}

/// `Call.StartMaintenance` / `Call.StopMaintenance`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Machines {
    /// The machines.
    #[serde(default)]
    pub machines: Vec<MachineId>,
}

/// `quota.QuotaConfig`: a role's guarantees and limits, by resource name.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct QuotaConfig {
    /// The role.
    pub role: String,
    /// Guaranteed quantities.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub guarantees: BTreeMap<String, ScalarValue>,
    /// Limits (a zero is kept: none of this resource).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, ScalarValue>,
}

impl QuotaConfig {
    /// `quantities` in the SPEC's quantity text (`cpus:1;mem:1024`), names in order; zeros
    /// kept (they mean "none" in limits).
    pub fn quantities_text(quantities: &BTreeMap<String, ScalarValue>) -> String {
        quantities
            .iter()
            .map(|(name, v)| format!("{name}:{}", v.value))
            .collect::<Vec<_>>()
            .join(";")
    }
}

/// `Call.UpdateQuota`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct UpdateQuota {
    /// Apply even when the cluster cannot satisfy the guarantees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// The new configurations.
    #[serde(default)]
    pub quota_configs: Vec<QuotaConfig>,
}

/// `Call.Teardown` / `Call.MarkAgentGone` and the other calls naming one id.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Teardown {
    /// The framework to remove.
    pub framework_id: FrameworkId,
}

/// `Call.MarkAgentGone`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct MarkAgentGone {
    /// The agent.
    pub agent_id: AgentId,
}

/// `Call.ReserveResources` and `Call.UnreserveResources`: resources on an agent, reserved
/// (their last reservation is the one made) or to unreserve.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Reservation {
    /// The agent.
    pub agent_id: AgentId,
    /// The resources, with their reservations.
    #[serde(default)]
    pub resources: Vec<Resource>,
}

/// `Call.SetLoggingLevel`: glog's verbosity for a while.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct SetLoggingLevel {
    /// The verbosity (0 is the default; higher logs more).
    pub level: u32,
    /// How long it holds before it goes back.
    pub duration: DurationInfo,
}

/// A call to `POST /api/v1`. Calls outside SPEC 6.2 keep their details in `rest`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Call {
    /// Which call; its field of the same (lower-case) name holds the details.
    #[serde(rename = "type", default = "unknown_call")]
    pub kind: CallType,
    /// `GET_METRICS`: how long to wait for them, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_metrics: Option<Json>,
    /// `UPDATE_WEIGHTS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_weights: Option<UpdateWeights>,
    /// `UPDATE_MAINTENANCE_SCHEDULE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_maintenance_schedule: Option<UpdateMaintenanceSchedule>,
    /// `START_MAINTENANCE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_maintenance: Option<Machines>,
    /// `STOP_MAINTENANCE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_maintenance: Option<Machines>,
    /// `UPDATE_QUOTA`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_quota: Option<UpdateQuota>,
    /// `TEARDOWN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown: Option<Teardown>,
    /// `MARK_AGENT_GONE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark_agent_gone: Option<MarkAgentGone>,
    /// `RESERVE_RESOURCES`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve_resources: Option<Reservation>,
    /// `UNRESERVE_RESOURCES`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreserve_resources: Option<Reservation>,
    /// `SET_LOGGING_LEVEL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_logging_level: Option<SetLoggingLevel>,
    /// Other calls' fields, as sent.
    #[serde(flatten)]
    pub rest: BTreeMap<String, Json>,
}

fn unknown_call() -> CallType {
    CallType::Unknown
}

impl Call {
    /// Parses a request body; `Err` is a one-line reason for a `400`.
    pub fn parse(body: &str) -> Result<Call, String> {
        serde_json::from_str(body).map_err(|e| format!("Failed to parse body into Call: {e}"))
    }

    /// Mesos's structural checks with its wording: a known type, and the field it names
    /// present for the calls of SPEC 6.2 that take one.
    pub fn validate(&self) -> Result<(), String> {
        let (present, field) = match self.kind {
            CallType::Unknown => return Err("Expecting 'type' to be present".into()),
            CallType::UpdateWeights => (self.update_weights.is_some(), "update_weights"),
            CallType::UpdateMaintenanceSchedule => {
                (self.update_maintenance_schedule.is_some(), "update_maintenance_schedule")
            }
            CallType::StartMaintenance => (self.start_maintenance.is_some(), "start_maintenance"),
            CallType::StopMaintenance => (self.stop_maintenance.is_some(), "stop_maintenance"),
            CallType::UpdateQuota => (self.update_quota.is_some(), "update_quota"),
            CallType::Teardown => (self.teardown.is_some(), "teardown"),
            CallType::MarkAgentGone => (self.mark_agent_gone.is_some(), "mark_agent_gone"),
            CallType::ReserveResources => (self.reserve_resources.is_some(), "reserve_resources"),
            CallType::UnreserveResources => {
                (self.unreserve_resources.is_some(), "unreserve_resources")
            }
            CallType::SetLoggingLevel => (self.set_logging_level.is_some(), "set_logging_level"),
            _ => (true, ""),
        };
        if present { Ok(()) } else { Err(format!("Expecting '{field}' to be present")) }
    }
}

/// `Flag`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Flag {
    /// The flag's name.
    pub name: String,
    /// Its value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// `VersionInfo`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct VersionInfo {
    /// Dotted integers first.
    pub version: String,
    /// Build date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_date: Option<String>,
    /// Git commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_sha: Option<String>,
}

/// `Metric`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Metric {
    /// Mesos's metric name.
    pub name: String,
    /// Its value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
}

/// `AgentInfo`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct AgentInfo {
    /// The agent's hostname.
    pub hostname: String,
    /// Its port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// Its total resources.
    #[serde(default)]
    pub resources: Vec<Resource>,
    /// Its attributes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<Attribute>,
    /// Its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<AgentId>,
}

/// `Response.GetAgents.Agent`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Agent {
    /// The agent.
    pub agent_info: AgentInfo,
    /// Whether it is active.
    pub active: bool,
    /// Whether an operator deactivated it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deactivated: Option<bool>,
    /// The agent's Mesos version.
    pub version: String,
    /// When it registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered_time: Option<TimeInfo>,
    /// Its total resources.
    #[serde(default)]
    pub total_resources: Vec<Resource>,
    /// What is allocated (used and offered).
    #[serde(default)]
    pub allocated_resources: Vec<Resource>,
    /// What is offered.
    #[serde(default)]
    pub offered_resources: Vec<Resource>,
}

/// `Response.GetAgents`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct GetAgents {
    /// The agents.
    #[serde(default)]
    pub agents: Vec<Agent>,
    /// Agents known but not re-registered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recovered_agents: Vec<AgentInfo>,
}

/// `Response.GetFrameworks.Framework`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Framework {
    /// The framework.
    pub framework_info: FrameworkInfo,
    /// Whether it gets offers.
    pub active: bool,
    /// Whether its scheduler is connected.
    pub connected: bool,
    /// Whether it is only known from a recovered agent.
    pub recovered: bool,
    /// When it registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered_time: Option<TimeInfo>,
    /// Its outstanding offers.
    #[serde(default)]
    pub offers: Vec<Offer>,
    /// Its outstanding inverse offers.
    #[serde(default)]
    pub inverse_offers: Vec<InverseOffer>,
    /// What it uses or is offered.
    #[serde(default)]
    pub allocated_resources: Vec<Resource>,
    /// What it is offered.
    #[serde(default)]
    pub offered_resources: Vec<Resource>,
}

/// `Response.GetFrameworks`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct GetFrameworks {
    /// Subscribed frameworks (connected or failing over).
    #[serde(default)]
    pub frameworks: Vec<Framework>,
    /// Frameworks torn down or timed out.
    #[serde(default)]
    pub completed_frameworks: Vec<Framework>,
}

/// `Task`: a task as the master knows it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Task {
    /// The task's name.
    pub name: String,
    /// Its id.
    pub task_id: TaskId,
    /// Its framework.
    pub framework_id: FrameworkId,
    /// Its executor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor_id: Option<ExecutorId>,
    /// Its agent.
    pub agent_id: AgentId,
    /// Its latest state.
    pub state: TaskState,
    /// Its resources.
    #[serde(default)]
    pub resources: Vec<Resource>,
    /// Its status updates so far.
    #[serde(default)]
    pub statuses: Vec<TaskStatus>,
    /// Its labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Labels>,
}

/// `Response.GetTasks`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct GetTasks {
    /// Tasks not yet terminal.
    #[serde(default)]
    pub tasks: Vec<Task>,
    /// Tasks on unreachable agents.
    #[serde(default)]
    pub unreachable_tasks: Vec<Task>,
    /// Terminal tasks.
    #[serde(default)]
    pub completed_tasks: Vec<Task>,
}

/// `Response.GetState`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct GetState {
    /// The tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_tasks: Option<GetTasks>,
    /// The executors, as JSON (`{"executors": []}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_executors: Option<Json>,
    /// The frameworks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_frameworks: Option<GetFrameworks>,
    /// The agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_agents: Option<GetAgents>,
}

/// `Role`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Role {
    /// The role's name.
    pub name: String,
    /// Its weight.
    pub weight: f64,
    /// Frameworks subscribed to it.
    #[serde(default)]
    pub frameworks: Vec<FrameworkId>,
    /// What it is allocated.
    #[serde(default)]
    pub resources: Vec<Resource>,
}

/// `quota.QuotaStatus`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct QuotaStatus {
    /// Every role's quota.
    #[serde(default)]
    pub configs: Vec<QuotaConfig>,
}

/// `master.Response.Type`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(missing_docs)]
pub enum ResponseType {
    Unknown,
    GetHealth,
    GetFlags,
    GetVersion,
    GetMetrics,
    GetLoggingLevel,
    ListFiles,
    ReadFile,
    GetState,
    GetAgents,
    GetFrameworks,
    GetExecutors,
    GetOperations,
    GetTasks,
    GetRoles,
    GetWeights,
    GetMaster,
    GetMaintenanceStatus,
    GetMaintenanceSchedule,
    GetQuota,
}

/// `Response.GetHealth`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct GetHealth {
    /// Whether the master is healthy.
    pub healthy: bool,
}

/// `Response.GetFlags`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct GetFlags {
    /// The flags.
    #[serde(default)]
    pub flags: Vec<Flag>,
}

/// `Response.GetVersion`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct GetVersion {
    /// The version.
    pub version_info: VersionInfo,
}

/// `Response.GetMetrics`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct GetMetrics {
    /// The metrics.
    #[serde(default)]
    pub metrics: Vec<Metric>,
}

/// `Response.GetRoles`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct GetRoles {
    /// The roles.
    #[serde(default)]
    pub roles: Vec<Role>,
}

/// `Response.GetWeights`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct GetWeights {
    /// The weights.
    #[serde(default)]
    pub weight_infos: Vec<WeightInfo>,
}

/// `Response.GetMaintenanceSchedule`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct GetMaintenanceSchedule {
    /// The schedule.
    pub schedule: Schedule,
}

/// `Response.GetQuota`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct GetQuota {
    /// The quotas.
    pub status: QuotaStatus,
}

/// An answer to a `GET_*` operator call (`200 OK`); calls that change something answer
/// `200 OK` with no body, as Mesos does.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Response {
    /// Which answer; its field of the same (lower-case) name holds it.
    #[serde(rename = "type")]
    pub kind: ResponseType,
    /// `GET_HEALTH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_health: Option<GetHealth>,
    /// `GET_FLAGS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_flags: Option<GetFlags>,
    /// `GET_VERSION`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_version: Option<GetVersion>,
    /// `GET_METRICS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_metrics: Option<GetMetrics>,
    /// `GET_STATE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_state: Option<GetState>,
    /// `GET_AGENTS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_agents: Option<GetAgents>,
    /// `GET_FRAMEWORKS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_frameworks: Option<GetFrameworks>,
    /// `GET_TASKS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_tasks: Option<GetTasks>,
    /// `GET_ROLES`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_roles: Option<GetRoles>,
    /// `GET_WEIGHTS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_weights: Option<GetWeights>,
    /// `GET_MAINTENANCE_SCHEDULE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_maintenance_schedule: Option<GetMaintenanceSchedule>,
    /// `GET_QUOTA`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_quota: Option<GetQuota>,
}

macro_rules! response_constructor {
    ($(#[$doc:meta])* $fn:ident, $field:ident, $ty:ty, $kind:ident) => {
        $(#[$doc])*
        pub fn $fn(value: $ty) -> Response {
            Response { $field: Some(value), ..Response::of(ResponseType::$kind) }
        }
    };
}

impl Response {
    fn of(kind: ResponseType) -> Response {
        Response {
            kind,
            get_health: None,
            get_flags: None,
            get_version: None,
            get_metrics: None,
            get_state: None,
            get_agents: None,
            get_frameworks: None,
            get_tasks: None,
            get_roles: None,
            get_weights: None,
            get_maintenance_schedule: None,
            get_quota: None,
        }
    }

    response_constructor!(
        /// `GET_HEALTH`.
        health, get_health, GetHealth, GetHealth
    );
    response_constructor!(
        /// `GET_FLAGS`.
        flags, get_flags, GetFlags, GetFlags
    );
    response_constructor!(
        /// `GET_VERSION`.
        version, get_version, GetVersion, GetVersion
    );
    response_constructor!(
        /// `GET_METRICS`.
        metrics, get_metrics, GetMetrics, GetMetrics
    );
    response_constructor!(
        /// `GET_STATE`.
        state, get_state, GetState, GetState
    );
    response_constructor!(
        /// `GET_AGENTS`.
        agents, get_agents, GetAgents, GetAgents
    );
    response_constructor!(
        /// `GET_FRAMEWORKS`.
        frameworks, get_frameworks, GetFrameworks, GetFrameworks
    );
    response_constructor!(
        /// `GET_TASKS`.
        tasks, get_tasks, GetTasks, GetTasks
    );
    response_constructor!(
        /// `GET_ROLES`.
        roles, get_roles, GetRoles, GetRoles
    );
    response_constructor!(
        /// `GET_WEIGHTS`.
        weights, get_weights, GetWeights, GetWeights
    );
    response_constructor!(
        /// `GET_MAINTENANCE_SCHEDULE`.
        maintenance_schedule, get_maintenance_schedule, GetMaintenanceSchedule, GetMaintenanceSchedule
    );
    response_constructor!(
        /// `GET_QUOTA`.
        quota, get_quota, GetQuota, GetQuota
    );
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(v: serde_json::Value) -> Call {
        let c = Call::parse(&v.to_string()).unwrap();
        c.validate().unwrap();
        c
    }

    #[test]
    fn get_calls_need_only_their_type() {
        for name in [
            "GET_HEALTH",
            "GET_VERSION",
            "GET_FLAGS",
            "GET_STATE",
            "GET_AGENTS",
            "GET_FRAMEWORKS",
            "GET_TASKS",
            "GET_ROLES",
            "GET_WEIGHTS",
            "GET_QUOTA",
            "GET_MAINTENANCE_SCHEDULE",
        ] {
            let c = call(json!({"type": name}));
            assert_eq!(serde_json::to_value(c.kind).unwrap(), json!(name));
        }
        let m =
            call(json!({"type": "GET_METRICS", "get_metrics": {"timeout": {"nanoseconds": 5}}}));
        assert_eq!(m.get_metrics.unwrap()["timeout"]["nanoseconds"], 5);
    }

    #[test]
    fn update_weights_gives_roles_and_weights() {
        let c = call(json!({"type": "UPDATE_WEIGHTS", "update_weights": {"weight_infos": [
            {"role": "a", "weight": 3.0}, {"role": "b", "weight": 1}]}}));
        let w = c.update_weights.unwrap().weight_infos;
        assert_eq!((w[0].role.as_deref(), w[0].weight, w[1].weight), (Some("a"), 3.0, 1.0));
    }

    #[test]
    fn update_quota_gives_guarantees_and_limits_as_quantity_text() {
        let c =
            call(json!({"type": "UPDATE_QUOTA", "update_quota": {"force": true, "quota_configs": [
            {"role": "dev", "guarantees": {"cpus": {"value": 1}, "mem": {"value": 512}},
             "limits": {"cpus": {"value": 4}, "gpus": {"value": 0}}}]}}));
        let q = c.update_quota.unwrap();
        assert_eq!(q.force, Some(true));
        let config = &q.quota_configs[0];
        assert_eq!(config.role, "dev");
        assert_eq!(QuotaConfig::quantities_text(&config.guarantees), "cpus:1;mem:512");
        assert_eq!(QuotaConfig::quantities_text(&config.limits), "cpus:4;gpus:0");
    }

    #[test]
    fn maintenance_calls_give_windows_and_machines() {
        let c = call(
            json!({"type": "UPDATE_MAINTENANCE_SCHEDULE", "update_maintenance_schedule": {"schedule": {"windows": [
            {"machine_ids": [{"hostname": "a1", "ip": "10.0.0.1"}],
             "unavailability": {"start": {"nanoseconds": 1000000000}, "duration": {"nanoseconds": "3600000000000"}}}]}}}),
        );
        let w = &c.update_maintenance_schedule.unwrap().schedule.windows[0];
        assert_eq!(w.machine_ids[0].hostname.as_deref(), Some("a1"));
        assert_eq!(w.unavailability.start.as_secs(), 1.0);
        assert_eq!(w.unavailability.duration.unwrap().as_secs(), 3600.0);
        let s = call(
            json!({"type": "START_MAINTENANCE", "start_maintenance": {"machines": [{"hostname": "a1"}]}}),
        );
        assert_eq!(s.start_maintenance.unwrap().machines.len(), 1);
        let s = call(
            json!({"type": "STOP_MAINTENANCE", "stop_maintenance": {"machines": [{"ip": "10.0.0.1"}]}}),
        );
        assert_eq!(s.stop_maintenance.unwrap().machines[0].ip.as_deref(), Some("10.0.0.1"));
    }

    #[test]
    fn mark_agent_gone_and_teardown_name_their_target() {
        let c = call(
            json!({"type": "MARK_AGENT_GONE", "mark_agent_gone": {"agent_id": {"value": "a1"}}}),
        );
        assert_eq!(c.mark_agent_gone.unwrap().agent_id, AgentId::new("a1"));
        let c = call(json!({"type": "TEARDOWN", "teardown": {"framework_id": {"value": "f"}}}));
        assert_eq!(c.teardown.unwrap().framework_id, FrameworkId::new("f"));
    }

    #[test]
    fn an_operator_call_without_its_field_is_refused_as_mesos_words_it() {
        let c = Call::parse(r#"{"type": "UPDATE_QUOTA"}"#).unwrap();
        assert_eq!(c.validate().unwrap_err(), "Expecting 'update_quota' to be present");
        assert_eq!(
            Call::parse("{}").unwrap().validate().unwrap_err(),
            "Expecting 'type' to be present"
        );
        assert!(Call::parse(r#"{"type": "NOPE"}"#).unwrap_err().contains("NOPE"));
    }

    #[test]
    fn responses_are_typed_with_their_field() {
        let v = serde_json::to_value(Response::health(GetHealth { healthy: true })).unwrap();
        assert_eq!(v, json!({"type": "GET_HEALTH", "get_health": {"healthy": true}}));
        let v = serde_json::to_value(Response::version(GetVersion {
            version_info: VersionInfo { version: "1.12.0".into(), ..VersionInfo::default() },
        }))
        .unwrap();
        assert_eq!(
            v,
            json!({"type": "GET_VERSION", "get_version": {"version_info": {"version": "1.12.0"}}})
        );
        let v = serde_json::to_value(Response::weights(GetWeights {
            weight_infos: vec![WeightInfo { weight: 2.0, role: Some("a".into()) }],
        }))
        .unwrap();
        assert_eq!(v["get_weights"]["weight_infos"][0], json!({"weight": 2.0, "role": "a"}));
        let v = serde_json::to_value(Response::quota(GetQuota {
            status: QuotaStatus {
                configs: vec![QuotaConfig {
                    role: "dev".into(),
                    guarantees: [("cpus".to_string(), ScalarValue { value: 1.0 })].into(),
                    limits: BTreeMap::new(),
                }],
            },
        }))
        .unwrap();
        assert_eq!(
            v["get_quota"],
            json!({"status": {"configs": [{"role": "dev", "guarantees": {"cpus": {"value": 1.0}}}]}})
        );
    }

    #[test]
    fn a_get_state_answer_nests_tasks_frameworks_and_agents() {
        let task = Task {
            name: "t".into(),
            task_id: TaskId::new("t"),
            framework_id: FrameworkId::new("f"),
            executor_id: None,
            agent_id: AgentId::new("a"),
            state: TaskState::TaskRunning,
            resources: Vec::new(),
            statuses: Vec::new(),
            labels: None,
        };
        let state = GetState {
            get_tasks: Some(GetTasks { tasks: vec![task], ..GetTasks::default() }),
            get_executors: Some(json!({"executors": []})),
            get_frameworks: Some(GetFrameworks::default()),
            get_agents: Some(GetAgents {
                agents: vec![Agent {
                    agent_info: AgentInfo {
                        hostname: "a".into(),
                        id: Some(AgentId::new("a")),
                        ..AgentInfo::default()
                    },
                    active: true,
                    version: "1.12.0".into(),
                    ..Agent::default()
                }],
                recovered_agents: Vec::new(),
            }),
        };
        let v = serde_json::to_value(Response::state(state)).unwrap();
        assert_eq!(v["type"], "GET_STATE");
        assert_eq!(v["get_state"]["get_tasks"]["tasks"][0]["state"], "TASK_RUNNING");
        assert_eq!(v["get_state"]["get_agents"]["agents"][0]["agent_info"]["id"]["value"], "a");
        assert_eq!(
            v["get_state"]["get_frameworks"],
            json!({"frameworks": [], "completed_frameworks": []})
        );
    }
}
