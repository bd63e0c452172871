//! Mesos's master HTTP endpoints, as `mesos-dns`, dashboards and scripts read them: `GET
//! /master/state` (and `state.json`), `/master/frameworks`, `/master/slaves`, `/master/tasks`,
//! `/master/roles`, `/master/flags`, `/master/health`, `/master/quota`, `GET` and `PUT
//! /master/weights`, each also without the `/master` prefix (but `/state`, which is this
//! master's own), and `GET /`, which lists them. The JSON is Mesos 1.x's "v0" shape (the
//! master's `http.cpp`): resources as `{"cpus": 4.0, "ports": "[31000-32000]"}`, ids as
//! strings, times in seconds since the epoch.

use std::collections::BTreeMap;

use allocator_api::resources::Value as ResValue;
use allocator_api::{AgentId, FrameworkId, Resources};
use serde_json::{Value, json};

use super::operator::{Cluster, SchedulerView, framework_user};
use crate::auth::Caller;
use allocator_host::master::{Command, Master};

/// The endpoints `GET /` lists, with what each answers.
pub const ENDPOINTS: &[(&str, &str)] = &[
    ("GET /", "this list"),
    (
        "GET /master/state, /master/state.json",
        "Mesos's master state: agents, frameworks (and completed ones), tasks, flags",
    ),
    ("GET /master/frameworks", "frameworks, completed frameworks"),
    ("GET /master/slaves", "agents"),
    ("GET /master/tasks", "tasks"),
    ("GET /master/roles", "roles: weight, frameworks, allocated resources, quota"),
    ("GET /master/flags", "every flag the master runs with"),
    ("GET /master/health, /health", "200 while the master serves"),
    ("GET /master/quota", "quotas (Mesos's QuotaStatus)"),
    ("GET /master/weights, PUT /master/weights", "role weights: [{\"role\", \"weight\"}]"),
    (
        "GET /master/state-summary",
        "the cluster's name, agents and frameworks with their task counts",
    ),
    (
        "POST /master/quota, DELETE /master/quota/ROLE",
        "set (a QuotaRequest) or remove a role's quota",
    ),
    (
        "GET, POST /master/maintenance/schedule; GET /master/maintenance/status",
        "the maintenance schedule and the machines draining or down",
    ),
    ("POST /master/machine/down, /master/machine/up", "start or stop maintenance on machines"),
    ("POST /master/teardown", "remove a framework (frameworkId=ID)"),
    ("POST /master/reserve, /master/unreserve", "reserve or unreserve an agent's resources"),
    ("GET /version", "the Mesos version this master speaks"),
    ("GET /metrics/snapshot", "metrics, Mesos's names"),
    ("GET /state", "this master's own state: allocator, sorters, shares, allocations"),
    ("GET /explain?role=R, ?framework=F", "why a role or framework got what it got"),
    ("POST /quota, /weights, /sorters", "operator changes as scenario events"),
    ("POST /plan", "what-if: the offers a change would make"),
    ("POST /api/v1", "the Mesos v1 operator API"),
    ("POST /api/v1/scheduler", "the Mesos v1 scheduler API"),
];

/// The answer to `GET /`.
pub fn index() -> Value {
    let endpoints: Vec<Value> =
        ENDPOINTS.iter().map(|(path, what)| json!({"endpoint": path, "answers": what})).collect();
    json!({"master": "allocator-master", "version": allocator_mesos::MESOS_VERSION, "endpoints": endpoints})
}

/// `path` without its `/master` prefix and `.json` suffix, when `method` on it is one of
/// Mesos's endpoints served here; `None` otherwise: this master's own `/state`, and `POST
/// /quota` and `/weights` (this master's scenario-event form) stay its own.
pub fn mesos_endpoint<'p>(method: &str, path: &'p str) -> Option<&'p str> {
    // As Mesos's router, a trailing slash names the same endpoint (`/master/frameworks/`).
    let path = if path.len() > 1 { path.strip_suffix('/').unwrap_or(path) } else { path };
    let name = match path.strip_prefix("/master") {
        Some(rest) => rest.strip_suffix(".json").unwrap_or(rest),
        None if path == "/state" => return None,
        None if method == "POST" && (path == "/quota" || path == "/weights") => return None,
        None => path.strip_suffix(".json").unwrap_or(path),
    };
    let known = MESOS_ROUTES.iter().any(|(_, n)| *n == name) || super::v0_calls::is_route(name);
    known.then_some(name)
}

/// Mesos's endpoints served here: (method, name); [`answer`] answers each.
pub const MESOS_ROUTES: &[(&str, &str)] = &[
    ("GET", "/state"),
    ("GET", "/frameworks"),
    ("GET", "/slaves"),
    ("GET", "/tasks"),
    ("GET", "/roles"),
    ("GET", "/flags"),
    ("GET", "/health"),
    ("GET", "/quota"),
    ("GET", "/weights"),
    ("PUT", "/weights"),
    ("GET", "/state-summary"),
];

/// Answers `method` on Mesos endpoint `name` ([`mesos_endpoint`]): status and JSON (`Null`:
/// an empty body). The frameworks, tasks, roles, weights and quotas in it are those `caller`
/// may see ([`crate::auth`]).
pub fn answer(
    cluster: &mut dyn Cluster<'_>,
    caller: Caller<'_>,
    flags: &[(String, String)],
    completed: &[Value],
    method: &str,
    name: &str,
    body: &str,
) -> (u16, Value) {
    let master = cluster.master();
    let view = cluster.scheduler();
    let completed: Vec<Value> = completed
        .iter()
        .filter(|f| caller.sees_framework(f["user"].as_str().unwrap_or_default()))
        .cloned()
        .collect();
    let completed = completed.as_slice();
    let shown = Shown { master, view, caller };
    let flags: Vec<(String, String)> =
        super::operator::effective_flags(master, flags).into_iter().collect();
    let flags = flags.as_slice();
    match (method, name) {
        ("GET", "/state") => (200, state(&shown, flags, completed)),
        ("GET", "/state-summary") => (200, state_summary(&shown, flags)),
        ("GET", "/frameworks") => (
            200,
            json!({"frameworks": frameworks(&shown), "completed_frameworks": completed,
                   "unregistered_frameworks": []}),
        ),
        ("GET", "/slaves") => (200, json!({"slaves": slaves(master), "recovered_slaves": []})),
        ("GET", "/tasks") => (200, json!({"tasks": tasks(&shown)})),
        ("GET", "/roles") => (200, json!({"roles": roles(&shown)})),
        ("GET", "/flags") if !caller.sees_flags() => {
            (403, json!({"error": "Not authorized to view_flags"}))
        }
        ("GET", "/flags") => (200, json!({"flags": flag_map(flags)})),
        ("GET", "/health") => (200, Value::Null),
        ("GET", "/quota") => (200, quota(master, caller)),
        ("GET", "/weights") => (200, weights(master, caller)),
        ("PUT", "/weights") => match parse_weights(body) {
            Ok(w) => match cluster.apply(&Command::UpdateWeights(w)) {
                Ok(_) => (200, Value::Null),
                Err(e) => (400, json!({"error": e.message()})),
            },
            Err(e) => (400, json!({"error": e})),
        },
        (m, n) => (405, json!({"error": format!("{m} is not allowed on {n}")})),
    }
}

/// Resources as Mesos's v0 JSON: scalars summed per name, ranges as `[a-b, c-d]`, sets as
/// `{a,b}`.
pub fn resource_map(r: &Resources) -> Value {
    let mut scalars: BTreeMap<String, f64> = BTreeMap::new();
    let mut other: BTreeMap<String, String> = BTreeMap::new();
    for e in r.iter() {
        match &e.value {
            ResValue::Scalar(s) => *scalars.entry(e.name.to_string()).or_default() += s.as_f64(),
            ResValue::Ranges(ranges) => {
                let text: Vec<String> =
                    ranges.iter().map(|x| format!("{}-{}", x.begin, x.end)).collect();
                other.insert(e.name.to_string(), format!("[{}]", text.join(", ")));
            }
            ResValue::Set(items) => {
                let text: Vec<&str> = items.iter().map(|x| x.as_str()).collect();
                other.insert(e.name.to_string(), format!("{{{}}}", text.join(",")));
            }
        }
    }
    let mut map = serde_json::Map::new();
    for name in ["cpus", "mem", "disk", "gpus"] {
        map.insert(name.into(), json!(scalars.remove(name).unwrap_or(0.0)));
    }
    map.extend(scalars.into_iter().map(|(k, v)| (k, json!(v))));
    map.extend(other.into_iter().map(|(k, v)| (k, json!(v))));
    Value::Object(map)
}

fn agent_json(master: &Master<'_>, id: AgentId) -> Option<Value> {
    let info = master.agent_info(id)?;
    let total = master.agent_total(id)?;
    let used = master.agent_used(id);
    let attributes: serde_json::Map<String, Value> =
        info.attributes.iter().map(|a| (a.name.to_string(), json!(a.value.as_str()))).collect();
    let hostname = info.hostname.as_str();
    Some(json!({
        "id": info.name.as_str(),
        "pid": format!("slave(1)@{hostname}:5051"),
        "hostname": hostname,
        "port": 5051,
        "registered_time": 0.0,
        "resources": resource_map(total),
        "used_resources": resource_map(&used),
        "offered_resources": resource_map(&Resources::new()),
        "reserved_resources": {},
        "unreserved_resources": resource_map(&total.unreserved()),
        "attributes": attributes,
        "active": true,
        "version": allocator_mesos::MESOS_VERSION,
        "capabilities": info.capabilities.names(),
    }))
}

fn slaves(master: &Master<'_>) -> Vec<Value> {
    master.all_agents().into_iter().filter_map(|id| agent_json(master, id)).collect()
}

fn task_json(master: &Master<'_>, view: Option<&dyn SchedulerView>, fw: FrameworkId) -> Vec<Value> {
    let fw_name = master.framework_name(fw);
    master
        .tasks_of(fw)
        .map(|(id, t)| {
            let name = view
                .and_then(|v| v.task_name(fw, id))
                .map_or_else(|| format!("task-{id}"), str::to_owned);
            json!({
                "id": name, "name": name, "framework_id": fw_name, "executor_id": "",
                "slave_id": master.agent_name(t.agent), "state": "TASK_RUNNING",
                "role": t.role, "resources": resource_map(&t.resources),
                "statuses": [{"state": "TASK_RUNNING", "timestamp": master.now()}],
            })
        })
        .collect()
}

/// The master and the frameworks' client as one caller may see them.
struct Shown<'a, 'r> {
    master: &'a Master<'r>,
    view: Option<&'a dyn SchedulerView>,
    caller: Caller<'a>,
}

impl Shown<'_, '_> {
    /// The frameworks the caller may see.
    fn frameworks(&self) -> impl Iterator<Item = FrameworkId> + '_ {
        self.master
            .framework_ids()
            .filter(|fw| self.caller.sees_framework(framework_user(self.view, *fw)))
    }
}

fn tasks(shown: &Shown<'_, '_>) -> Vec<Value> {
    let Shown { master, view, caller } = *shown;
    master
        .framework_ids()
        .filter(|fw| caller.sees_task(framework_user(view, *fw)))
        .flat_map(|fw| task_json(master, view, fw))
        .collect()
}

/// One framework as v0 JSON, from what the scheduler API knows of it (else the master's),
/// with its tasks when `with_tasks` (the caller may see them).
pub fn framework_json(
    master: &Master<'_>,
    view: Option<&dyn SchedulerView>,
    fw: FrameworkId,
    with_tasks: bool,
) -> Option<Value> {
    let name = master.framework_name(fw).to_owned();
    let info = master.framework_info(fw)?;
    let record = master.framework(fw)?;
    let roles: Vec<&str> = info.roles.iter().map(|r| r.as_str()).collect();
    let mesos = view.and_then(|v| v.framework_info(fw));
    let allocated = master.held_by_framework(fw);
    let capabilities: Vec<&str> = info.capabilities.names();
    Some(json!({
        "id": name,
        "name": mesos.map_or(name.as_str(), |m| m.name.as_str()),
        "user": mesos.map_or("", |m| m.user.as_str()),
        "hostname": mesos.and_then(|m| m.hostname.as_deref()).unwrap_or(""),
        "webui_url": mesos.and_then(|m| m.webui_url.as_deref()).unwrap_or(""),
        "principal": view.and_then(|v| v.principal(&name)),
        "role": roles.first().copied().unwrap_or("*"),
        "roles": roles,
        "active": record.active,
        "connected": record.active,
        "recovered": false,
        "checkpoint": mesos.and_then(|m| m.checkpoint).unwrap_or(false),
        "failover_timeout": mesos.map_or(0.0, |m| m.failover_timeout()),
        "capabilities": capabilities,
        "registered_time": 0.0,
        "unregistered_time": 0.0,
        "resources": resource_map(&allocated),
        "allocated_resources": resource_map(&allocated),
        "used_resources": resource_map(&allocated),
        "offered_resources": resource_map(&Resources::new()),
        "tasks": if with_tasks { task_json(master, view, fw) } else { Vec::new() },
        "completed_tasks": [],
        "unreachable_tasks": [],
        "offers": [],
        "executors": [],
        "completed_executors": [],
    }))
}

fn frameworks(shown: &Shown<'_, '_>) -> Vec<Value> {
    let Shown { master, view, caller } = *shown;
    shown
        .frameworks()
        .filter_map(|fw| {
            framework_json(master, view, fw, caller.sees_task(framework_user(view, fw)))
        })
        .collect()
}

fn roles(shown: &Shown<'_, '_>) -> Vec<Value> {
    let Shown { master, caller, .. } = *shown;
    let visible: std::collections::BTreeSet<&str> =
        shown.frameworks().map(|fw| master.framework_name(fw)).collect();
    master
        .role_names()
        .into_iter()
        .filter(|role| caller.sees_role(role))
        .map(|role| {
            // Its quota only to a caller who may see it (`get_quotas`).
            let q = master.quotas().get(&role).filter(|_| caller.sees_quota(&role));
            let held = master.held_by_role(&role);
            let quantities = |q: Option<&allocator_api::Quantities>| -> Value {
                let map: serde_json::Map<String, Value> = q
                    .map(|q| {
                        q.iter().map(|e| (e.name.to_string(), json!(e.value.as_f64()))).collect()
                    })
                    .unwrap_or_default();
                Value::Object(map)
            };
            json!({
                "name": role,
                "weight": master.weights().get(&role).copied().unwrap_or(1.0),
                "frameworks": master.frameworks_in_role(&role).into_iter()
                    .filter(|f| visible.contains(f)).collect::<Vec<_>>(),
                "resources": resource_map(&held),
                "allocated": resource_map(&held),
                "offered": resource_map(&Resources::new()),
                "reserved": {},
                "quota": {"role": role, "guarantee": quantities(q.map(|q| &q.guarantees)),
                          "limit": quantities(q.map(|q| &q.limits)),
                          "consumed": resource_map(&held)},
            })
        })
        .collect()
}

fn flag_map(flags: &[(String, String)]) -> Value {
    Value::Object(flags.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

fn quota(master: &Master<'_>, caller: Caller<'_>) -> Value {
    let map = |q: &allocator_api::Quantities| -> Value {
        Value::Object(
            q.iter().map(|e| (e.name.to_string(), json!({"value": e.value.as_f64()}))).collect(),
        )
    };
    let configs: Vec<Value> = master
        .quotas()
        .iter()
        .filter(|(role, _)| caller.sees_quota(role))
        .map(|(role, q)| json!({"role": role, "guarantees": map(&q.guarantees), "limits": map(&q.limits)}))
        .collect();
    json!({"configs": configs})
}

fn weights(master: &Master<'_>, caller: Caller<'_>) -> Value {
    let seen = master.weights().iter().filter(|(r, _)| caller.sees_role(r));
    Value::Array(seen.map(|(r, w)| json!({"role": r, "weight": w})).collect())
}

/// `PUT /master/weights`'s body: `[{"role": "r", "weight": 2.0}, …]` (Mesos's `WeightInfo`).
fn parse_weights(body: &str) -> Result<Vec<(String, f64)>, String> {
    let list: Vec<Value> = serde_json::from_str(body)
        .map_err(|e| format!("expected a list of {{\"role\", \"weight\"}}: {e}"))?;
    list.iter()
        .map(|w| {
            let role = w["role"].as_str().ok_or("every weight needs a 'role'")?;
            let weight = w["weight"].as_f64().ok_or("every weight needs a numeric 'weight'")?;
            if !(weight.is_finite() && weight > 0.0) {
                return Err(format!("Invalid weight {weight} for role '{role}': must be positive"));
            }
            Ok((role.to_owned(), weight))
        })
        .collect()
}

/// `GET /master/state`: Mesos's master state.
fn state(shown: &Shown<'_, '_>, flags: &[(String, String)], completed: &[Value]) -> Value {
    let Shown { master, view, caller } = *shown;
    let slaves = slaves(master);
    let flag = |name: &str| flags.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let ip = flag("ip").unwrap_or("127.0.0.1");
    let hostname = flag("hostname").unwrap_or(ip);
    let port: u16 = flag("port").and_then(|p| p.parse().ok()).unwrap_or(5050);
    let pid = format!("master@{ip}:{port}");
    json!({
        "version": allocator_mesos::MESOS_VERSION,
        "cluster": flag("cluster").unwrap_or(""),
        "id": view.map_or("", |v| v.master_id()),
        "pid": pid,
        "hostname": hostname,
        "port": port,
        "leader": pid,
        "leader_info": {"id": view.map_or("", |v| v.master_id()), "hostname": hostname, "port": port},
        "activated_slaves": slaves.len(),
        "deactivated_slaves": 0,
        "unreachable_slaves": 0,
        "flags": if caller.sees_flags() { flag_map(flags) } else { json!({}) },
        "slaves": slaves,
        "recovered_slaves": [],
        "frameworks": frameworks(shown),
        "completed_frameworks": completed,
        "unregistered_frameworks": [],
        "orphan_tasks": [],
    })
}

/// Mesos's task states a summary counts.
const TASK_STATES: &[&str] = &[
    "TASK_STAGING",
    "TASK_STARTING",
    "TASK_RUNNING",
    "TASK_KILLING",
    "TASK_FINISHED",
    "TASK_KILLED",
    "TASK_FAILED",
    "TASK_LOST",
    "TASK_ERROR",
    "TASK_UNREACHABLE",
];

/// Task counts by state (every task here is running), as a summary gives them.
fn task_counts(running: usize) -> serde_json::Map<String, Value> {
    let count = |state: &str| if state == "TASK_RUNNING" { running } else { 0 };
    TASK_STATES.iter().map(|s| ((*s).to_owned(), json!(count(s)))).collect()
}

/// `GET /master/state-summary`: the cluster's name, and each agent and each framework the
/// caller may see, with what they hold and their tasks counted by state.
fn state_summary(shown: &Shown<'_, '_>, flags: &[(String, String)]) -> Value {
    let Shown { master, view, caller } = *shown;
    let flag = |name: &str| flags.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let visible: Vec<FrameworkId> = shown.frameworks().collect();
    let slaves: Vec<Value> = master
        .all_agents()
        .into_iter()
        .filter_map(|id| {
            let mut v = agent_json(master, id)?;
            let on_agent: Vec<(FrameworkId, usize)> = visible
                .iter()
                .map(|fw| (*fw, master.tasks_of(*fw).filter(|(_, t)| t.agent == id).count()))
                .filter(|(_, n)| *n > 0)
                .collect();
            let running = on_agent.iter().map(|(_, n)| n).sum();
            let ids: Vec<&str> =
                on_agent.iter().map(|(fw, _)| master.framework_name(*fw)).collect();
            let fields = v.as_object_mut()?;
            fields.extend(task_counts(running));
            fields.insert("framework_ids".into(), json!(ids));
            Some(v)
        })
        .collect();
    let frameworks: Vec<Value> = visible
        .iter()
        .filter_map(|fw| {
            let full = framework_json(master, view, *fw, false)?;
            let tasks: Vec<_> = if caller.sees_task(framework_user(view, *fw)) {
                master.tasks_of(*fw).collect()
            } else {
                Vec::new()
            };
            let mut agents: Vec<&str> = tasks.iter().map(|(_, t)| master.agent_name(t.agent)).collect();
            agents.sort_unstable();
            agents.dedup();
            let mut v = json!({"id": full["id"], "name": full["name"], "pid": "",
                "used_resources": full["used_resources"], "offered_resources": full["offered_resources"],
                "capabilities": full["capabilities"], "hostname": full["hostname"],
                "webui_url": full["webui_url"], "active": full["active"], "connected": full["connected"],
                "recovered": false, "slave_ids": agents});
            v.as_object_mut()?.extend(task_counts(tasks.len()));
            Some(v)
        })
        .collect();
    json!({"hostname": flag("hostname").or(flag("ip")).unwrap_or("127.0.0.1"),
           "cluster": flag("cluster").unwrap_or(""), "slaves": slaves, "frameworks": frameworks})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mesos_paths_map_to_their_endpoint_and_our_state_stays_ours() {
        assert_eq!(mesos_endpoint("GET", "/master/state"), Some("/state"));
        assert_eq!(mesos_endpoint("GET", "/master/state.json"), Some("/state"));
        assert_eq!(mesos_endpoint("GET", "/state.json"), Some("/state"));
        assert_eq!(mesos_endpoint("GET", "/state"), None);
        assert_eq!(mesos_endpoint("GET", "/slaves"), Some("/slaves"));
        assert_eq!(mesos_endpoint("GET", "/master/nope"), None);
        assert_eq!(mesos_endpoint("GET", "/quota"), Some("/quota"));
        assert_eq!(mesos_endpoint("POST", "/quota"), None);
        assert_eq!(mesos_endpoint("POST", "/weights"), None);
        assert_eq!(mesos_endpoint("PUT", "/weights"), Some("/weights"));
        assert_eq!(mesos_endpoint("GET", "/master/frameworks/"), Some("/frameworks"));
    }

    #[test]
    fn resources_read_as_mesos_v0_json() {
        let r: Resources =
            "cpus:2;cpus(ml):1;mem:64;ports:[31000-31009,32000-32000]".parse().unwrap();
        let m = resource_map(&r);
        assert_eq!(m["cpus"], 3.0);
        assert_eq!(m["gpus"], 0.0);
        assert_eq!(m["ports"], "[31000-31009, 32000-32000]");
    }

    #[test]
    fn weights_are_put_as_a_list_of_weight_infos() {
        assert_eq!(parse_weights(r#"[{"role": "a", "weight": 2}]"#), Ok(vec![("a".into(), 2.0)]));
        assert!(
            parse_weights(r#"[{"role": "a", "weight": -1}]"#).unwrap_err().contains("positive")
        );
        assert!(parse_weights("{}").is_err());
    }
}
