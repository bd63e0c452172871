//! The v1 operator API of `serve` (`POST /api/v1`, SPEC 6.2): Mesos's operator calls as
//! queries and commands of the [master core](allocator_host::master), in Mesos's JSON
//! ([`allocator_mesos::operator`]).
//!
//! Calls answered: `GET_HEALTH`, `GET_VERSION`, `GET_METRICS`, `GET_FLAGS`, `GET_STATE`,
//! `GET_AGENTS`, `GET_FRAMEWORKS`, `GET_TASKS`, `GET_ROLES`, `GET_WEIGHTS`, `UPDATE_WEIGHTS`,
//! `GET_QUOTA`, `UPDATE_QUOTA`, `GET_MAINTENANCE_SCHEDULE`, `UPDATE_MAINTENANCE_SCHEDULE`,
//! `START_MAINTENANCE`, `STOP_MAINTENANCE`, `MARK_AGENT_GONE`, `TEARDOWN`, `GET_MASTER`,
//! `GET_MAINTENANCE_STATUS` (and `SUBSCRIBE`, which `serve` answers with
//! [`super::operator_events`]); any other type is refused with `501`. Changes are [`Command`]s applied through an [`Apply`] handle (the wiring's, which
//! delivers each command's events before the next), so the master's clients and observers
//! see them as they see a scenario's.
//!
//! Differences from Mesos, by design of a simulated cluster:
//! * maintenance times (`unavailability.start`, `duration`) are seconds of the master's
//!   virtual clock, not of the Unix epoch; a machine is matched to the agents whose hostname
//!   (or name) is its `hostname` or `ip`;
//! * `START_MAINTENANCE` removes the machines' agents (their tasks are lost) and
//!   `STOP_MAINTENANCE` adds them back as they were, empty;
//! * an agent's `allocated_resources` are what the host's ledger holds there, offered or
//!   allocated.

use std::collections::BTreeMap;

use allocator_api::{
    AgentCapabilities, Attribute as ApiAttribute, Operation, OperationKind, Quota, Resources,
};
use serde_json::{Map, Value};

use crate::auth::{Action, Caller, Denied};
use allocator_host::master::{Apply, Command, Master};
use allocator_http::Response;
use allocator_mesos::operator::{self as m, Call, CallType, QuotaConfig};
use allocator_mesos::scheduler as s;
use allocator_mesos::{
    AgentId, Attribute, FrameworkId, ResourceFormat, ScalarValue, TaskId, to_mesos,
};

/// What the operator API shows of the frameworks connected over the scheduler API: their own
/// `FrameworkInfo` and their tasks' names.
pub trait SchedulerView {
    /// The `FrameworkInfo` a connected framework subscribed with.
    fn framework_info(&self, id: allocator_api::FrameworkId) -> Option<&s::FrameworkInfo>;
    /// The framework's name for one of its tasks (by the master's task id).
    fn task_name(&self, fw: allocator_api::FrameworkId, task: u64) -> Option<&str>;
    /// The principal of a connected framework (by its framework id), if it has one.
    fn principal(&self, framework: &str) -> Option<&str>;
    /// This master's id.
    fn master_id(&self) -> &str;
}

/// The calls [`Operator::answer`] answers (`SUBSCRIBE` is answered by the event stream,
/// [`super::operator_events`]); any other is `501`. The route × ACL table of
/// `docs/operators/security.md` lists each.
pub const ANSWERED: &[CallType] = &[
    CallType::GetHealth,
    CallType::GetVersion,
    CallType::GetMetrics,
    CallType::GetFlags,
    CallType::GetState,
    CallType::GetMaster,
    CallType::GetMaintenanceStatus,
    CallType::GetAgents,
    CallType::GetFrameworks,
    CallType::GetTasks,
    CallType::GetRoles,
    CallType::GetWeights,
    CallType::GetQuota,
    CallType::GetMaintenanceSchedule,
    CallType::UpdateWeights,
    CallType::UpdateQuota,
    CallType::UpdateMaintenanceSchedule,
    CallType::StartMaintenance,
    CallType::StopMaintenance,
    CallType::Teardown,
    CallType::MarkAgentGone,
    CallType::ReserveResources,
    CallType::UnreserveResources,
    CallType::GetOperations,
    CallType::GetLoggingLevel,
    CallType::SetLoggingLevel,
];

/// `501`: a call Mesos defines that this master does not answer.
fn not_supported(kind: CallType) -> Response {
    let name = serde_json::to_value(kind).unwrap_or_default();
    Response::text(
        501,
        &format!("{} is not supported by allocator-master", name.as_str().unwrap_or("?")),
    )
}

/// A machine as the maintenance ACLs name it when it is read: its hostname, else its IP
/// address.
fn machine_name(machine: &allocator_mesos::MachineId) -> String {
    machine.hostname.clone().or_else(|| machine.ip.clone()).unwrap_or_default()
}

/// A framework's user, the object of `view_frameworks` and `view_tasks`
/// ([`Caller::sees_framework`]): its `FrameworkInfo.user` when it subscribed over the scheduler
/// API, else (a framework the scenario plays) the empty user.
pub fn framework_user(
    scheduler: Option<&dyn SchedulerView>,
    fw: allocator_api::FrameworkId,
) -> &str {
    scheduler.and_then(|s| s.framework_info(fw)).map_or("", |i| i.user.as_str())
}

/// The user of the framework named `name` ([`framework_user`]); the empty user for a name the
/// master does not know.
pub fn framework_user_named<'a>(
    master: &Master<'_>,
    scheduler: Option<&'a dyn SchedulerView>,
    name: &str,
) -> &'a str {
    master.framework_id(name).ok().map_or("", |id| framework_user(scheduler, id))
}

/// The master as the operator API sees it: commands to apply, and the frameworks connected
/// over the scheduler API, if any.
pub trait Cluster<'r>: Apply<'r> {
    /// The frameworks connected over the scheduler API, when the master has them.
    fn scheduler(&self) -> Option<&dyn SchedulerView>;
    /// Removes a framework, as `TEARDOWN` does: one connected over the scheduler API through
    /// its client (its stream ends, it cannot come back), any other by `remove_framework`.
    fn teardown(&mut self, framework: &str) -> Result<(), String>;
}

/// An agent taken down by `START_MAINTENANCE`, to bring back on `STOP_MAINTENANCE`.
struct Down {
    resources: Resources,
    hostname: String,
    attributes: Vec<ApiAttribute>,
    capabilities: AgentCapabilities,
}

/// What the operator API keeps between calls: the maintenance schedule, the agents it took
/// down and those marked gone.
#[derive(Default)]
pub struct Operator {
    schedule: m::Schedule,
    down: BTreeMap<String, Down>,
    gone: std::collections::BTreeSet<String>,
    /// Every flag the master runs with, for `GET_FLAGS`.
    flags: Vec<(String, String)>,
    /// When the master started, seconds since the epoch (`GET_MASTER`).
    started: f64,
    /// Who made each reservation through this API, by (agent, role): the object of
    /// `unreserve_resources` (the principal a request claims is not trusted).
    reservers: BTreeMap<(String, String), String>,
}

/// The role a resource to reserve or unreserve is reserved for: its last reservation's, or
/// the legacy `role` field's (`*` is none).
fn reservation_role(r: &allocator_mesos::Resource) -> Option<String> {
    r.reservations
        .last()
        .and_then(|i| i.role.clone())
        .or_else(|| r.role.clone().filter(|role| role != "*"))
}

/// The operator's part of the master's registry ([`crate::master_registry`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OperatorRecords {
    /// The maintenance schedule, when it has windows.
    pub schedule: Option<m::Schedule>,
    /// The machines (by hostname) whose agents are down for maintenance.
    pub down: Vec<allocator_mesos::MachineId>,
    /// Agents marked gone.
    pub gone: Vec<String>,
}

impl Operator {
    /// An operator API answering `GET_FLAGS` with `flags` (name, value), beside the allocator,
    /// sorters and allocation interval in use.
    pub fn with_flags(flags: Vec<(String, String)>) -> Operator {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        Operator { flags, started, ..Operator::default() }
    }

    /// `GET_MASTER`: the master's `MasterInfo`, start and election times.
    fn master_json(&self, cluster: &dyn Cluster<'_>) -> Value {
        let flag = |name: &str| self.flags.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let ip = flag("ip").unwrap_or_else(|| "127.0.0.1".into());
        let hostname = flag("hostname").unwrap_or_else(|| ip.clone());
        let port: u16 = flag("port").and_then(|p| p.parse().ok()).unwrap_or(5050);
        let id = cluster.scheduler().map_or_else(String::new, |v| v.master_id().to_owned());
        serde_json::json!({
            "master_info": {"id": id, "ip": 0, "port": port, "hostname": hostname,
                "version": allocator_mesos::MESOS_VERSION, "pid": format!("master@{ip}:{port}"),
                "address": {"hostname": hostname, "ip": ip, "port": port}},
            "start_time": self.started,
            "elected_time": self.started,
        })
    }

    /// `GET_MAINTENANCE_STATUS`: machines scheduled and up are draining, with no inverse-offer
    /// statuses (the host does not ask the allocator for them); machines taken down are down.
    fn maintenance_status(&self, master: &Master<'_>, caller: Caller<'_>) -> Value {
        let down: Vec<Value> = self
            .down
            .values()
            .filter(|d| caller.sees_machine(&d.hostname, true))
            .map(|d| serde_json::json!({"hostname": d.hostname}))
            .collect();
        let draining: Vec<Value> = self
            .schedule
            .windows
            .iter()
            .flat_map(|w| w.machine_ids.iter())
            .filter(|mid| caller.sees_machine(&machine_name(mid), true))
            // Draining: some agent of the machine is still up.
            .filter(|mid| {
                let agents = self.agents_on(master, std::slice::from_ref(*mid));
                agents.iter().any(|a| !self.down.contains_key(a))
            })
            .map(|mid| serde_json::json!({"id": mid, "statuses": []}))
            .collect();
        serde_json::json!({"draining_machines": draining, "down_machines": down})
    }

    /// The maintenance schedule as `caller` may see it: in each window the machines it may
    /// see (`get_maintenance_schedules`), and no window left empty by that.
    fn visible_schedule(&self, caller: Caller<'_>) -> m::Schedule {
        let mut schedule = self.schedule.clone();
        for w in &mut schedule.windows {
            w.machine_ids.retain(|mid| caller.sees_machine(&machine_name(mid), false));
        }
        schedule.windows.retain(|w| !w.machine_ids.is_empty());
        schedule
    }

    /// Every flag the master runs with, as given to [`Operator::with_flags`].
    pub fn flags(&self) -> &[(String, String)] {
        &self.flags
    }

    /// What the registry keeps of this operator's state.
    pub fn records(&self) -> OperatorRecords {
        OperatorRecords {
            schedule: (!self.schedule.windows.is_empty()).then(|| self.schedule.clone()),
            down: self
                .down
                .values()
                .map(|d| allocator_mesos::MachineId {
                    hostname: Some(d.hostname.clone()),
                    ip: None,
                })
                .collect(),
            gone: self.gone.iter().cloned().collect(),
        }
    }

    /// Restores `records` after a restart, on the cluster as the scenario brought it back:
    /// agents marked gone are removed again, the schedule is set again (unavailability and
    /// inverse offers follow), and machines down for maintenance go down again.
    pub fn restore(
        &mut self,
        cluster: &mut dyn Cluster<'_>,
        records: OperatorRecords,
    ) -> Result<(), String> {
        for agent in records.gone {
            if cluster.master().agent_id(&agent).is_ok() {
                cluster.apply(&Command::RemoveAgent(agent.clone()))?;
            }
            self.gone.insert(agent);
        }
        if let Some(schedule) = records.schedule {
            self.update_schedule(cluster, schedule)?;
        }
        if !records.down.is_empty() {
            self.start_maintenance(cluster, &records.down)?;
        }
        Ok(())
    }
}

/// The ACL check of one call (see [`crate::auth`]): changes by their action and objects (roles,
/// the machines of the agents a maintenance call touches, a framework's principal). Reads of
/// frameworks, tasks, roles, weights and quotas are not refused as a whole: their answers
/// leave out what the caller may not see.
fn authorize(
    call: &Call,
    caller: Caller<'_>,
    cluster: &dyn Cluster<'_>,
    operator: &Operator,
) -> Result<(), Denied> {
    let machines =
        |list: &[allocator_mesos::MachineId]| operator.machines_touched(cluster.master(), list);
    let (action, objects): (Action, Vec<String>) = match call.kind {
        CallType::GetMetrics => (Action::GetEndpoints, vec!["/metrics/snapshot".into()]),
        CallType::GetFlags => (Action::ViewFlags, vec![]),
        CallType::UpdateWeights => {
            let w =
                call.update_weights.as_ref().map(|u| u.weight_infos.as_slice()).unwrap_or_default();
            (Action::UpdateWeights, w.iter().filter_map(|i| i.role.clone()).collect())
        }
        CallType::UpdateQuota => {
            let q =
                call.update_quota.as_ref().map(|u| u.quota_configs.as_slice()).unwrap_or_default();
            (Action::UpdateQuotas, q.iter().map(|c| c.role.clone()).collect())
        }
        CallType::UpdateMaintenanceSchedule => {
            let windows = call
                .update_maintenance_schedule
                .as_ref()
                .map(|u| u.schedule.windows.as_slice())
                .unwrap_or_default();
            // The schedule replaces the whole one: every machine in it now, and every machine in
            // the new one, is touched.
            let old = operator.schedule.windows.iter();
            let touched: std::collections::BTreeSet<String> =
                windows.iter().chain(old).flat_map(|w| machines(&w.machine_ids)).collect();
            (Action::UpdateMaintenanceSchedules, touched.into_iter().collect())
        }
        CallType::StartMaintenance => {
            let m =
                call.start_maintenance.as_ref().map(|m| m.machines.as_slice()).unwrap_or_default();
            (Action::StartMaintenances, machines(m))
        }
        CallType::StopMaintenance => {
            let m =
                call.stop_maintenance.as_ref().map(|m| m.machines.as_slice()).unwrap_or_default();
            (Action::StopMaintenances, machines(m))
        }
        CallType::MarkAgentGone => (Action::MarkAgentsGone, vec![]),
        CallType::ReserveResources => {
            let r = call.reserve_resources.as_ref();
            let resources = r.map(|r| r.resources.as_slice()).unwrap_or_default();
            let mut roles = Vec::new();
            for resource in resources {
                let Some(role) = reservation_role(resource) else {
                    let reason = format!("'{}' names no role to reserve it for", resource.name);
                    return Err(Box::new(Response::text(400, &reason)));
                };
                // Mesos: a reservation's principal, if it names one, is the caller's own.
                let claimed = resource.reservations.last().and_then(|i| i.principal.as_deref());
                if let (Some(claimed), Some(caller)) = (claimed, caller.principal)
                    && claimed != caller
                {
                    let reason = format!(
                        "a reservation's principal '{claimed}' is not the authenticated principal '{caller}'"
                    );
                    return Err(Box::new(Response::text(400, &reason)));
                }
                roles.push(role);
            }
            (Action::ReserveResources, roles)
        }
        CallType::UnreserveResources => {
            // Who made each reservation, as recorded when it was made here (`ANY` when it was
            // made otherwise: by a scenario, a framework, or before a restart).
            let r = call.unreserve_resources.as_ref();
            let agent = r.map_or("", |r| r.agent_id.value.as_str());
            let resources = r.map(|r| r.resources.as_slice()).unwrap_or_default();
            let made = resources
                .iter()
                .filter_map(reservation_role)
                .filter_map(|role| operator.reservers.get(&(agent.to_owned(), role)).cloned());
            (Action::UnreserveResources, made.collect())
        }
        CallType::SetLoggingLevel => (Action::SetLogLevel, vec![]),
        CallType::Teardown => {
            // The object is the framework's principal (`ANY` when it has none), as in Mesos.
            let id = call.teardown.as_ref().map(|t| t.framework_id.value.as_str()).unwrap_or("");
            let principal = cluster.scheduler().and_then(|s| s.principal(id)).map(str::to_owned);
            (Action::TeardownFrameworks, principal.into_iter().collect())
        }
        _ => return Ok(()),
    };
    let objects: Vec<&str> = objects.iter().map(String::as_str).collect();
    caller.may(action, &objects)
}

impl Operator {
    /// Answers one `POST /api/v1` body. `metrics` are `GET /metrics/snapshot`'s.
    pub fn answer(
        &mut self,
        cluster: &mut dyn Cluster<'_>,
        metrics: Map<String, Value>,
        body: &str,
        caller: Caller<'_>,
    ) -> Response {
        let call = match Call::parse(body) {
            Ok(call) if !ANSWERED.contains(&call.kind) => return not_supported(call.kind),
            Ok(call) => call,
            Err(reason) => return Response::text(400, &reason),
        };
        if let Err(reason) = call.validate() {
            return Response::text(400, &reason);
        }
        if let Err(denied) = authorize(&call, caller, cluster, self) {
            return *denied;
        }
        let answer = match call.kind {
            CallType::GetHealth => Ok(Some(m::Response::health(m::GetHealth { healthy: true }))),
            CallType::GetVersion => Ok(Some(m::Response::version(m::GetVersion {
                version_info: m::VersionInfo {
                    version: allocator_mesos::MESOS_VERSION.into(),
                    ..m::VersionInfo::default()
                },
            }))),
            CallType::GetMetrics => Ok(Some(m::Response::metrics(m::GetMetrics {
                metrics: metrics
                    .iter()
                    .filter_map(|(k, v)| {
                        Some(m::Metric { name: k.clone(), value: Some(v.as_f64()?) })
                    })
                    .collect(),
            }))),
            CallType::GetFlags => {
                Ok(Some(m::Response::flags(flags(cluster.master(), &self.flags))))
            }
            CallType::GetState => Ok(Some(m::Response::state(v1_state(cluster, caller)))),
            CallType::GetMaster => {
                return json_answer(serde_json::json!({"type": "GET_MASTER", "get_master":
                    self.master_json(cluster)}));
            }
            CallType::GetMaintenanceStatus => {
                return json_answer(serde_json::json!({"type": "GET_MAINTENANCE_STATUS",
                    "get_maintenance_status": {"status": self.maintenance_status(cluster.master(), caller)}}));
            }
            CallType::GetAgents => Ok(Some(m::Response::agents(agents(cluster.master())))),
            CallType::GetFrameworks => {
                Ok(Some(m::Response::frameworks(frameworks(cluster, caller))))
            }
            CallType::GetTasks => Ok(Some(m::Response::tasks(tasks(cluster, caller)))),
            CallType::GetRoles => Ok(Some(m::Response::roles(roles(cluster, caller)))),
            CallType::GetWeights => Ok(Some(m::Response::weights(m::GetWeights {
                weight_infos: cluster
                    .master()
                    .weights()
                    .iter()
                    .filter(|(r, _)| caller.sees_role(r))
                    .map(|(r, w)| m::WeightInfo { weight: *w, role: Some(r.clone()) })
                    .collect(),
            }))),
            CallType::GetQuota => Ok(Some(m::Response::quota(quota(cluster.master(), caller)))),
            CallType::GetMaintenanceSchedule => {
                Ok(Some(m::Response::maintenance_schedule(m::GetMaintenanceSchedule {
                    schedule: self.visible_schedule(caller),
                })))
            }
            CallType::UpdateWeights => {
                update_weights(cluster, call.update_weights.expect("validated")).map(|()| None)
            }
            CallType::UpdateQuota => {
                update_quota(cluster, call.update_quota.expect("validated")).map(|()| None)
            }
            CallType::UpdateMaintenanceSchedule => {
                let schedule = call.update_maintenance_schedule.expect("validated").schedule;
                self.update_schedule(cluster, schedule).map(|()| None)
            }
            CallType::StartMaintenance => {
                let machines = call.start_maintenance.expect("validated").machines;
                self.start_maintenance(cluster, &machines).map(|()| None)
            }
            CallType::StopMaintenance => {
                let machines = call.stop_maintenance.expect("validated").machines;
                self.stop_maintenance(cluster, &machines).map(|()| None)
            }
            CallType::Teardown => {
                let id = call.teardown.expect("validated").framework_id.value;
                if cluster.master().framework_id(&id).is_err() {
                    return Response::text(400, "No framework found with specified ID");
                }
                cluster.teardown(&id).map(|()| None)
            }
            CallType::MarkAgentGone => {
                let agent = call.mark_agent_gone.expect("validated").agent_id.value;
                match cluster.master().agent_id(&agent) {
                    Ok(_) => cluster
                        .apply(&Command::RemoveAgent(agent.clone()))
                        .map(|_| {
                            self.gone.insert(agent);
                            None
                        })
                        .map_err(String::from),
                    Err(e) => return Response::text(404, &e),
                }
            }
            CallType::ReserveResources | CallType::UnreserveResources => {
                let (kind, r) = match call.kind {
                    CallType::ReserveResources => {
                        (OperationKind::RESERVE, call.reserve_resources.expect("validated"))
                    }
                    _ => (OperationKind::UNRESERVE, call.unreserve_resources.expect("validated")),
                };
                let made: Vec<(String, String)> = r
                    .resources
                    .iter()
                    .filter_map(reservation_role)
                    .map(|role| (r.agent_id.value.clone(), role))
                    .collect();
                let claimed =
                    r.resources.iter().find_map(|x| x.reservations.last()?.principal.clone());
                return match reserve(cluster, kind, r) {
                    // Mesos answers a reservation `202 Accepted` (it is carried out on the agent).
                    Ok(()) => {
                        let principal = caller.principal.map(str::to_owned).or(claimed);
                        if let (OperationKind::RESERVE, Some(p)) = (kind, principal) {
                            for key in made {
                                self.reservers.insert(key, p.clone());
                            }
                        }
                        Response::empty(202)
                    }
                    Err(reason) => Response::text(400, &reason),
                };
            }
            CallType::GetOperations => {
                // Operations are carried out as they are asked for: none is ever pending.
                return json_answer(serde_json::json!({"type": "GET_OPERATIONS",
                    "get_operations": {"operations": []}}));
            }
            CallType::GetLoggingLevel => {
                return json_answer(serde_json::json!({"type": "GET_LOGGING_LEVEL",
                    "get_logging_level": {"level": crate::logging::level()}}));
            }
            CallType::SetLoggingLevel => {
                let set = call.set_logging_level.expect("validated");
                let seconds = set.duration.as_secs().clamp(0.0, 1e9);
                let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds);
                crate::logging::set_level(set.level, until);
                Ok(None)
            }
            other => return not_supported(other),
        };
        match answer {
            Ok(Some(response)) => {
                Response::json(200, serde_json::to_string(&response).expect("responses serialize"))
            }
            Ok(None) => Response::empty(200),
            Err(reason) => Response::text(400, &reason),
        }
    }

    /// The machines a maintenance call on `machines` touches, the objects of its ACL: every
    /// hostname and IP address the call names, and the hostname of every agent (present or
    /// taken down) they match (an agent matches a machine by its hostname or its name, through
    /// either field), so that a principal allowed one machine cannot reach another agent
    /// through the other field.
    fn machines_touched(
        &self,
        master: &Master<'_>,
        machines: &[allocator_mesos::MachineId],
    ) -> Vec<String> {
        let mut touched: std::collections::BTreeSet<String> =
            machines.iter().flat_map(|m| [&m.hostname, &m.ip]).flatten().cloned().collect();
        for agent in self.agents_on(master, machines) {
            let hostname = match master.agent_id(&agent).ok().and_then(|id| master.agent_info(id)) {
                Some(info) => info.hostname.to_string(),
                None => self.down.get(&agent).map_or(agent, |d| d.hostname.clone()),
            };
            touched.insert(hostname);
        }
        touched.into_iter().collect()
    }

    /// Agents (present or taken down) on `machines`.
    fn agents_on(
        &self,
        master: &Master<'_>,
        machines: &[allocator_mesos::MachineId],
    ) -> Vec<String> {
        let hit = |name: &str, hostname: &str| {
            machines.iter().any(|mid| {
                [&mid.hostname, &mid.ip].into_iter().flatten().any(|h| h == hostname || h == name)
            })
        };
        let mut found: Vec<String> = master
            .all_agents()
            .into_iter()
            .filter_map(|id| master.agent_info(id))
            .filter(|a| hit(&a.name, &a.hostname))
            .map(|a| a.name.to_string())
            .collect();
        found.extend(self.down.iter().filter(|(n, d)| hit(n, &d.hostname)).map(|(n, _)| n.clone()));
        found
    }

    /// `UPDATE_MAINTENANCE_SCHEDULE`: each window's agents get its unavailability (inverse
    /// offers go out); agents no longer scheduled have theirs cleared.
    fn update_schedule(
        &mut self,
        cluster: &mut dyn Cluster<'_>,
        schedule: m::Schedule,
    ) -> Result<(), String> {
        let mut wanted: BTreeMap<String, allocator_api::Unavailability> = BTreeMap::new();
        for w in &schedule.windows {
            let u = allocator_api::Unavailability {
                start: w.unavailability.start.as_secs(),
                duration: w.unavailability.duration.map(|d| d.as_secs()).into(),
            };
            for agent in self.agents_on(cluster.master(), &w.machine_ids) {
                wanted.insert(agent, u);
            }
        }
        let old_windows = std::mem::take(&mut self.schedule.windows);
        let mut cleared = Vec::new();
        for w in &old_windows {
            for agent in self.agents_on(cluster.master(), &w.machine_ids) {
                if !wanted.contains_key(&agent) {
                    cleared.push(agent);
                }
            }
        }
        self.schedule = schedule;
        for agent in cleared {
            if cluster.master().agent_id(&agent).is_ok() {
                cluster.apply(&Command::UpdateUnavailability(agent, None))?;
            }
        }
        for (agent, u) in wanted {
            if cluster.master().agent_id(&agent).is_ok() {
                cluster.apply(&Command::UpdateUnavailability(agent, Some(u)))?;
            }
        }
        Ok(())
    }

    /// `START_MAINTENANCE`: the machines' agents go down (removed; remembered for
    /// `STOP_MAINTENANCE`).
    fn start_maintenance(
        &mut self,
        cluster: &mut dyn Cluster<'_>,
        machines: &[allocator_mesos::MachineId],
    ) -> Result<(), String> {
        for agent in self.agents_on(cluster.master(), machines) {
            let master = cluster.master();
            let Ok(id) = master.agent_id(&agent) else { continue };
            let (Some(info), Some(total)) = (master.agent_info(id), master.agent_total(id)) else {
                continue;
            };
            let down = Down {
                resources: total.clone(),
                hostname: info.hostname.to_string(),
                attributes: info.attributes.to_vec(),
                capabilities: info.capabilities,
            };
            cluster.apply(&Command::RemoveAgent(agent.clone()))?;
            self.down.insert(agent, down);
        }
        Ok(())
    }

    /// `STOP_MAINTENANCE`: the machines' agents come back, empty, and leave the schedule.
    fn stop_maintenance(
        &mut self,
        cluster: &mut dyn Cluster<'_>,
        machines: &[allocator_mesos::MachineId],
    ) -> Result<(), String> {
        for agent in self.agents_on(cluster.master(), machines) {
            let Some(d) = self.down.remove(&agent) else { continue };
            let op = Command::AddAgent {
                agent: agent.clone(),
                resources: d.resources,
                hostname: Some(d.hostname),
                capabilities: Some(d.capabilities),
                attributes: d.attributes,
                used: Vec::new(),
                unavailability: None,
            };
            cluster.apply(&op)?;
        }
        for w in &mut self.schedule.windows {
            w.machine_ids.retain(|mid| !machines.contains(mid));
        }
        self.schedule.windows.retain(|w| !w.machine_ids.is_empty());
        Ok(())
    }
}

/// Every flag the master runs with, the allocator, sorters and interval as now in use (a
/// sorter switch or a fallback changes them): `GET_FLAGS` and `/master/flags`.
pub fn effective_flags(
    master: &Master<'_>,
    given: &[(String, String)],
) -> BTreeMap<String, String> {
    let setup = master.setup();
    let mut all: BTreeMap<String, String> = given.iter().cloned().collect();
    all.insert("allocator".into(), setup.allocator.clone());
    all.insert("role_sorter".into(), setup.role_sorter.clone());
    all.insert("framework_sorter".into(), setup.framework_sorter.clone());
    all.insert(
        "allocation_interval".into(),
        crate::duration::format_seconds(master.allocation_interval()),
    );
    all
}

/// `GET_STATE`'s answer: agents, and the frameworks and tasks `caller` may see (and no
/// executors).
pub fn v1_state(cluster: &dyn Cluster<'_>, caller: Caller<'_>) -> m::GetState {
    m::GetState {
        get_tasks: Some(tasks(cluster, caller)),
        get_executors: Some(serde_json::json!({"executors": []})),
        get_frameworks: Some(frameworks(cluster, caller)),
        get_agents: Some(agents(cluster.master())),
    }
}

fn json_answer(value: Value) -> Response {
    Response::json(200, value.to_string())
}

fn flags(master: &Master<'_>, given: &[(String, String)]) -> m::GetFlags {
    m::GetFlags {
        flags: effective_flags(master, given)
            .into_iter()
            .map(|(name, value)| m::Flag { name, value: Some(value) })
            .collect(),
    }
}

fn agents(master: &Master<'_>) -> m::GetAgents {
    let agents = master
        .all_agents()
        .into_iter()
        .filter_map(|id| {
            let info = master.agent_info(id)?;
            let total = master.agent_total(id)?;
            Some(m::Agent {
                agent_info: m::AgentInfo {
                    hostname: info.hostname.to_string(),
                    port: None,
                    resources: to_mesos(total, None, ResourceFormat::Refined),
                    attributes: info
                        .attributes
                        .iter()
                        .map(|a| Attribute::text(&a.name, &a.value))
                        .collect(),
                    id: Some(AgentId::new(info.name.as_str())),
                },
                active: true,
                deactivated: None,
                version: allocator_mesos::MESOS_VERSION.into(),
                registered_time: None,
                total_resources: to_mesos(total, None, ResourceFormat::Refined),
                allocated_resources: to_mesos(
                    &master.agent_used(id),
                    None,
                    ResourceFormat::Refined,
                ),
                offered_resources: Vec::new(),
            })
        })
        .collect();
    m::GetAgents { agents, recovered_agents: Vec::new() }
}

fn frameworks(cluster: &dyn Cluster<'_>, caller: Caller<'_>) -> m::GetFrameworks {
    let master = cluster.master();
    let frameworks = master
        .framework_ids()
        .filter(|id| caller.sees_framework(framework_user(cluster.scheduler(), *id)))
        .filter_map(|id| {
            let name = master.framework_name(id).to_owned();
            let info = master.framework_info(id)?;
            let active = master.framework(id).is_some_and(|f| f.active);
            let mesos = cluster.scheduler().and_then(|m| m.framework_info(id));
            let framework_info = match mesos {
                Some(i) => i.clone(),
                None => serde_json::from_value(serde_json::json!({
                    "user": "", "name": name, "id": {"value": name},
                    "roles": info.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
                    "capabilities": [{"type": "MULTI_ROLE"}],
                }))
                .expect("a framework info"),
            };
            let allocated = master.held_by_framework(id);
            Some(m::Framework {
                framework_info,
                active,
                connected: active,
                recovered: false,
                registered_time: None,
                offers: Vec::new(),
                inverse_offers: Vec::new(),
                allocated_resources: to_mesos(&allocated, None, ResourceFormat::Refined),
                offered_resources: Vec::new(),
            })
        })
        .collect();
    m::GetFrameworks { frameworks, completed_frameworks: Vec::new() }
}

fn tasks(cluster: &dyn Cluster<'_>, caller: Caller<'_>) -> m::GetTasks {
    let master = cluster.master();
    let mut tasks = Vec::new();
    for fw in master.framework_ids() {
        if !caller.sees_task(framework_user(cluster.scheduler(), fw)) {
            continue;
        }
        let fw_name = master.framework_name(fw);
        for (id, t) in master.tasks_of(fw) {
            let name = cluster
                .scheduler()
                .and_then(|m| m.task_name(fw, id))
                .map_or_else(|| format!("task-{id}"), str::to_owned);
            tasks.push(m::Task {
                name: name.clone(),
                task_id: TaskId::new(&name),
                framework_id: FrameworkId::new(fw_name),
                executor_id: None,
                agent_id: AgentId::new(master.agent_name(t.agent)),
                state: allocator_mesos::scheduler::TaskState::TaskRunning,
                resources: to_mesos(&t.resources, Some(&t.role), ResourceFormat::Refined),
                statuses: Vec::new(),
                labels: None,
            });
        }
    }
    m::GetTasks { tasks, unreachable_tasks: Vec::new(), completed_tasks: Vec::new() }
}

fn roles(cluster: &dyn Cluster<'_>, caller: Caller<'_>) -> m::GetRoles {
    let master = cluster.master();
    let sees =
        |name: &str| caller.sees_framework(framework_user_named(master, cluster.scheduler(), name));
    let roles = master
        .role_names()
        .into_iter()
        .filter(|role| caller.sees_role(role))
        .map(|role| m::Role {
            weight: master.weights().get(&role).copied().unwrap_or(1.0),
            frameworks: master
                .frameworks_in_role(&role)
                .into_iter()
                .filter(|f| sees(f))
                .map(FrameworkId::new)
                .collect(),
            resources: to_mesos(&master.held_by_role(&role), None, ResourceFormat::Refined),
            name: role,
        })
        .collect();
    m::GetRoles { roles }
}

fn quota(master: &Master<'_>, caller: Caller<'_>) -> m::GetQuota {
    let map = |q: &allocator_api::Quantities| -> BTreeMap<String, ScalarValue> {
        q.iter().map(|e| (e.name.to_string(), ScalarValue { value: e.value.as_f64() })).collect()
    };
    m::GetQuota {
        status: m::QuotaStatus {
            configs: master
                .quotas()
                .iter()
                .filter(|(role, _)| caller.sees_quota(role))
                .map(|(role, q)| QuotaConfig {
                    role: role.clone(),
                    guarantees: map(&q.guarantees),
                    limits: map(&q.limits),
                })
                .collect(),
        },
    }
}

/// `RESERVE_RESOURCES` or `UNRESERVE_RESOURCES`: one `update_available` operation on the
/// agent's unused resources.
fn reserve(
    cluster: &mut dyn Cluster<'_>,
    kind: OperationKind,
    reservation: m::Reservation,
) -> Result<(), String> {
    let agent = reservation.agent_id.value;
    cluster.master().agent_id(&agent)?;
    let resources = allocator_mesos::from_mesos(&reservation.resources)
        .map_err(|e| format!("Invalid resources: {e}"))?;
    if resources.is_empty() {
        return Err("Invalid resources: none given".into());
    }
    let operations = vec![Operation { kind, resources }];
    cluster.apply(&Command::UpdateAvailable { agent, operations }).map(drop).map_err(String::from)
}

fn update_weights(cluster: &mut dyn Cluster<'_>, update: m::UpdateWeights) -> Result<(), String> {
    let mut weights = Vec::new();
    for w in update.weight_infos {
        let Some(role) = w.role else { return Err("Every weight needs a 'role'".into()) };
        if !(w.weight.is_finite() && w.weight > 0.0) {
            return Err(format!("Invalid weight {} for role '{role}': must be positive", w.weight));
        }
        weights.push((role, w.weight));
    }
    cluster.apply(&Command::UpdateWeights(weights)).map(drop).map_err(String::from)
}

fn update_quota(cluster: &mut dyn Cluster<'_>, update: m::UpdateQuota) -> Result<(), String> {
    let mut quotas = Vec::new();
    for c in update.quota_configs {
        let parse = |q: &BTreeMap<String, ScalarValue>| {
            QuotaConfig::quantities_text(q)
                .parse::<allocator_api::Quantities>()
                .map_err(|e| format!("Invalid quota for role '{}': {e}", c.role))
        };
        let guarantees =
            if c.guarantees.is_empty() { Default::default() } else { parse(&c.guarantees)? };
        let limits = if c.limits.is_empty() { Default::default() } else { parse(&c.limits)? };
        quotas.push((c.role.clone(), Quota { guarantees, limits }));
    }
    for (role, q) in quotas {
        cluster.apply(&Command::UpdateQuota(role, q))?;
    }
    Ok(())
}
