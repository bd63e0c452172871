//! The scenario printer: every scenario event as the scenario file writes it, the inverse of
//! the parser beside it ([`super::AllocatorScenario::parse`]): parsing what [`op_to_json`]
//! writes gives back the same [`Op`].

use crate::tasks::{Submission, TaskSpec};
use allocator_api::{InverseOfferStatus, OperationKind, Quantities, Quota, Resources};
use allocator_host::master::Command;
use serde_json::{Map, Value, json};

use super::{ExpectedOffer, Op};

fn text(r: &Resources) -> Value {
    Value::String(r.to_string())
}

fn quota_json(q: &Quota) -> Map<String, Value> {
    let mut m = Map::new();
    let nonempty = |x: &Quantities| x.iter().next().is_some();
    if nonempty(&q.guarantees) {
        m.insert("guarantees".into(), json!(q.guarantees.to_string()));
    }
    if nonempty(&q.limits) {
        m.insert("limits".into(), json!(q.limits.to_string()));
    }
    m
}

fn min_allocatable_json(list: &[allocator_api::RoleMinAllocatable]) -> Value {
    let m: Map<String, Value> = list
        .iter()
        .map(|m| {
            let sets: Vec<Value> = m.sets.iter().map(|q| json!(q.to_string())).collect();
            (m.role.to_string(), Value::Array(sets))
        })
        .collect();
    Value::Object(m)
}

fn task_spec_json(t: &TaskSpec) -> Value {
    let mut m = Map::new();
    if let Some(r) = &t.resources {
        m.insert("resources".into(), text(r));
    }
    if let Some(c) = t.count {
        m.insert("count".into(), json!(c));
    }
    if let Some(d) = t.duration {
        m.insert("duration".into(), json!(d));
    }
    if let Some(p) = t.per_offer {
        m.insert("per_offer".into(), json!(p));
    }
    m.insert("refuse_seconds".into(), json!(t.refuse_seconds));
    match t.request {
        0 => {}
        1 => _ = m.insert("request".into(), json!(true)),
        n => _ = m.insert("request".into(), json!(n)),
    }
    if t.gang {
        m.insert("gang".into(), json!(true));
    }
    Value::Object(m)
}

fn unavailability_json(u: &Option<allocator_api::Unavailability>) -> Value {
    match u {
        None => Value::Null,
        Some(u) => match u.duration.into_option() {
            Some(d) => json!({"start": u.start, "duration": d}),
            None => json!({"start": u.start}),
        },
    }
}

fn operations_json(ops: &[allocator_api::Operation]) -> Value {
    Value::Array(
        ops.iter()
            .map(|o| {
                let kind = match o.kind {
                    OperationKind::RESERVE => "reserve",
                    OperationKind::UNRESERVE => "unreserve",
                    OperationKind::CREATE => "create",
                    _ => "destroy",
                };
                json!({"type": kind, "resources": o.resources.to_string()})
            })
            .collect(),
    )
}

fn used_json(used: &[(String, Option<String>, Resources)]) -> Value {
    let mut m = Map::new();
    for (fw, role, r) in used {
        match role {
            None => {
                m.insert(fw.clone(), text(r));
            }
            Some(role) => {
                let entry = m.entry(fw.clone()).or_insert_with(|| json!({}));
                entry[role.as_str()] = text(r);
            }
        }
    }
    Value::Object(m)
}

/// One scenario event as the scenario file writes it; `None` for a command no scenario event
/// carries (an answer to an offer, a task kill, a request: the journal keeps what they amount
/// to instead).
pub fn op_to_json(op: &Op) -> Option<Value> {
    Some(match op {
        Op::Command(command) => return command_to_json(command),
        Op::Play { add, tasks } => {
            let mut v = command_to_json(add)?;
            v["tasks"] = task_spec_json(tasks);
            v
        }
        Op::SubmitTask { framework, task } => submit_task_json(framework, task),
        Op::Advance(s) => json!({"op": "advance", "seconds": s}),
        Op::Tick => json!({"op": "tick"}),
        Op::ExpectOffers(alts) => match &alts[..] {
            [one] => json!({"op": "expect_offers", "offers": offers_json(one)}),
            _ => {
                json!({"op": "expect_offers", "one_of": alts.iter().map(|a| offers_json(a)).collect::<Vec<_>>()})
            }
        },
        Op::ExpectInverseOffers(alts) => {
            let list = |l: &Vec<(String, String)>| -> Value {
                l.iter().map(|(f, a)| json!({"framework": f, "agent": a})).collect()
            };
            match &alts[..] {
                [one] => json!({"op": "expect_inverse_offers", "inverse_offers": list(one)}),
                _ => {
                    json!({"op": "expect_inverse_offers", "one_of": alts.iter().map(list).collect::<Vec<_>>()})
                }
            }
        }
        Op::ExpectTasks { framework, running } => {
            json!({"op": "expect_tasks", "framework": framework, "running": running})
        }
    })
}

/// One command as the scenario event that makes it; `None` for a command no scenario event
/// carries.
pub fn command_to_json(command: &Command) -> Option<Value> {
    let groups = [agent_op_json, framework_op_json, operator_op_json];
    groups.iter().find_map(|write| write(command))
}

/// Events on agents and what they have; `None` for any other.
fn agent_op_json(command: &Command) -> Option<Value> {
    Some(match command {
        Command::AddAgent {
            agent,
            resources,
            hostname,
            capabilities,
            attributes,
            used,
            unavailability,
        } => {
            let mut v = json!({"op": "add_agent", "agent": agent, "resources": text(resources)});
            if let Some(h) = hostname {
                v["hostname"] = json!(h);
            }
            if let Some(c) = capabilities {
                v["capabilities"] = json!(c.names());
            }
            if !attributes.is_empty() {
                let m: Map<String, Value> = attributes
                    .iter()
                    .map(|a| (a.name.to_string(), json!(a.value.as_str())))
                    .collect();
                v["attributes"] = Value::Object(m);
            }
            if !used.is_empty() {
                v["used"] = used_json(used);
            }
            if unavailability.is_some() {
                v["unavailability"] = unavailability_json(unavailability);
            }
            v
        }
        Command::RemoveAgent(a) => json!({"op": "remove_agent", "agent": a}),
        Command::ActivateAgent(a) => json!({"op": "activate_agent", "agent": a}),
        Command::DeactivateAgent(a) => json!({"op": "deactivate_agent", "agent": a}),
        Command::UpdateAgent { agent, resources, capabilities, attributes } => {
            let mut v = json!({"op": "update_agent", "agent": agent});
            if let Some(r) = resources {
                v["resources"] = text(r);
            }
            if let Some(c) = capabilities {
                v["capabilities"] = json!(c.names());
            }
            if let Some(attrs) = attributes {
                let m: Map<String, Value> =
                    attrs.iter().map(|a| (a.name.to_string(), json!(a.value.as_str()))).collect();
                v["attributes"] = Value::Object(m);
            }
            v
        }
        Command::AddResourceProvider { agent, resources, used } => {
            let mut v = json!({"op": "add_resource_provider", "agent": agent, "resources": text(resources)});
            if !used.is_empty() {
                v["used"] = used_json(used);
            }
            v
        }
        Command::UpdateUnavailability(a, u) => {
            json!({"op": "update_unavailability", "agent": a, "unavailability": unavailability_json(u)})
        }
        Command::UpdateAllocation { framework, agent, role, operations } => {
            json!({"op": "update_allocation", "framework": framework, "agent": agent, "role": role,
                   "operations": operations_json(operations)})
        }
        Command::UpdateAvailable { agent, operations } => {
            json!({"op": "update_available", "agent": agent, "operations": operations_json(operations)})
        }
        _ => return None,
    })
}

/// Events on frameworks and what they hold; `None` for any other.
fn framework_op_json(command: &Command) -> Option<Value> {
    Some(match command {
        Command::AddFramework {
            framework,
            roles,
            capabilities,
            active,
            used,
            suppressed_roles,
            min_allocatable,
        } => {
            let mut v = json!({"op": "add_framework", "framework": framework, "roles": roles,
                               "capabilities": capabilities.names(), "active": active});
            if !used.is_empty() {
                let m: Map<String, Value> =
                    used.iter().map(|(a, r)| (a.clone(), text(r))).collect();
                v["used"] = Value::Object(m);
            }
            if !suppressed_roles.is_empty() {
                v["suppressed_roles"] = json!(suppressed_roles);
            }
            if !min_allocatable.is_empty() {
                v["min_allocatable_resources"] = min_allocatable_json(min_allocatable);
            }
            v
        }
        Command::RemoveFramework(f) => json!({"op": "remove_framework", "framework": f}),
        Command::ActivateFramework(f) => json!({"op": "activate_framework", "framework": f}),
        Command::DeactivateFramework(f) => json!({"op": "deactivate_framework", "framework": f}),
        Command::UpdateFramework {
            framework,
            roles,
            capabilities,
            suppressed_roles,
            min_allocatable,
        } => {
            let mut v = json!({"op": "update_framework", "framework": framework});
            if let Some(r) = roles {
                v["roles"] = json!(r);
            }
            if let Some(c) = capabilities {
                v["capabilities"] = json!(c.names());
            }
            if let Some(s) = suppressed_roles {
                v["suppressed_roles"] = json!(s);
            }
            if let Some(m) = min_allocatable {
                v["min_allocatable_resources"] = min_allocatable_json(m);
            }
            v
        }
        Command::RecoverResources { framework, agent, resources, role, refuse_seconds } => {
            let mut v = json!({"op": "recover_resources", "framework": framework, "agent": agent,
                               "resources": resources.as_ref().map_or(json!("all"), text)});
            if let Some(r) = role {
                v["role"] = json!(r);
            }
            if let Some(s) = refuse_seconds {
                v["refuse_seconds"] = json!(s);
            }
            v
        }
        Command::SuppressOffers(f, roles) => {
            json!({"op": "suppress_offers", "framework": f, "roles": roles})
        }
        Command::ReviveOffers(f, roles) => {
            json!({"op": "revive_offers", "framework": f, "roles": roles})
        }
        Command::UpdateInverseOffer { agent, framework, status, refuse_seconds } => {
            let status = match *status {
                None => Value::Null,
                Some(s) if s == InverseOfferStatus::ACCEPT => json!("accept"),
                Some(_) => json!("decline"),
            };
            let mut v = json!({"op": "update_inverse_offer", "agent": agent, "framework": framework,
                               "status": status});
            if let Some(s) = refuse_seconds {
                v["refuse_seconds"] = json!(s);
            }
            v
        }
        _ => return None,
    })
}

/// Events on operator changes; `None` for any other.
fn operator_op_json(command: &Command) -> Option<Value> {
    Some(match command {
        Command::UpdateQuota(role, q) => {
            let mut v = Value::Object(quota_json(q));
            v["op"] = json!("update_quota");
            v["role"] = json!(role);
            v
        }
        Command::UpdateWeights(w) => {
            let m: Map<String, Value> = w.iter().map(|(r, w)| (r.clone(), json!(w))).collect();
            json!({"op": "update_weights", "weights": m})
        }
        Command::UpdateWhitelist(h) => json!({"op": "update_whitelist", "hostnames": h}),
        Command::Recover { expected_agents, quotas } => {
            let m: Map<String, Value> = quotas
                .iter()
                .map(|q| (q.role.to_string(), Value::Object(quota_json(&q.quota))))
                .collect();
            json!({"op": "recover", "expected_agents": expected_agents, "quotas": m})
        }
        Command::Pause => json!({"op": "pause"}),
        Command::Resume => json!({"op": "resume"}),
        Command::SetSorters { role_sorter, framework_sorter } => {
            let mut v = json!({"op": "set_sorters"});
            if let Some(r) = role_sorter {
                v["role_sorter"] = json!(r);
            }
            if let Some(f) = framework_sorter {
                v["framework_sorter"] = json!(f);
            }
            v
        }
        _ => return None,
    })
}

/// An `expect_offers` list as the scenario file writes it.
pub fn offers_json(list: &[ExpectedOffer]) -> Value {
    Value::Array(
        list.iter()
            .map(|o| json!({"framework": o.framework, "role": o.role, "agent": o.agent, "resources": o.resources.to_string()}))
            .collect(),
    )
}

fn submit_task_json(framework: &str, task: &Submission) -> Value {
    let Submission { resources, duration, constraints, gang } = task;
    let mut v = json!({"op": "submit_task", "framework": framework, "resources": text(resources)});
    if let Some(d) = duration {
        v["duration"] = json!(d);
    }
    if !constraints.is_empty() {
        let m: Map<String, Value> =
            constraints.iter().map(|(k, vals)| (k.clone(), json!(vals))).collect();
        v["constraints"] = Value::Object(m);
    }
    if let Some(g) = gang {
        v["gang"] = json!({"id": g.id, "size": g.size});
    }
    v
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::Value;

    use super::op_to_json;
    use crate::allocator_scenario::{AllocatorScenario, Op};
    use crate::scenario::Document;

    fn scenario_files() -> Vec<std::path::PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        for dir in ["tests/scenarios/allocator", "examples/scenarios"] {
            for entry in std::fs::read_dir(root.join(dir)).expect("scenario directory") {
                let path = entry.expect("entry").path();
                if path.extension().is_some_and(|e| e == "json") {
                    files.push(path);
                }
            }
        }
        files
    }

    fn ops_of(doc: &Document) -> Vec<Op> {
        let s = AllocatorScenario::parse(doc).expect("a valid scenario");
        s.events.into_iter().map(|(_, op)| op).collect()
    }

    #[test]
    fn every_event_of_every_scenario_file_writes_back_to_itself() {
        let files = scenario_files();
        assert!(files.len() > 20, "found {} scenario files", files.len());
        for path in files {
            let doc = Document::read(&path).expect("readable");
            if doc.is_sorter_scenario() {
                continue;
            }
            let ops = ops_of(&doc);
            let mut root = doc.root.clone();
            let events = ops.iter().map(|op| op_to_json(op).expect("a scenario event")).collect();
            root.insert("events".into(), Value::Array(events));
            let again = Document { file: doc.file.clone(), root };
            assert_eq!(ops_of(&again), ops, "{}", path.display());
        }
    }
}
