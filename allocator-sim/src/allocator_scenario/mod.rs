//! Allocator scenarios (SPEC 4.1): parse the events, then drive an allocator (built-in or
//! module) through a [`Driver`](crate::driver::Driver) on a virtual clock.

pub mod print;

use allocator_api::{
    AgentCapabilities, Attribute, FrameworkCapabilities, InverseOfferStatus, Operation,
    OperationKind, Quantities, Quota, Resources, RoleMinAllocatable, RoleQuota, Unavailability,
};
use serde_json::{Map, Value};

use crate::scenario::{Document, Fields, ScenarioError};
use crate::tasks::{Gang, Submission, TaskSpec};
use allocator_host::hierarchical::{QuotaError, check_quota};
use allocator_host::master::command::{AgentUsed, Command};
use allocator_host::master::journal::Entry;

/// The scenario's `config` (SPEC 4.1), every key optional.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScenarioConfig {
    /// `allocator`.
    pub allocator: Option<String>,
    /// `role_sorter`.
    pub role_sorter: Option<String>,
    /// `framework_sorter`.
    pub framework_sorter: Option<String>,
    /// `allocation_interval`, seconds.
    pub allocation_interval: Option<f64>,
    /// `min_allocatable_resources`: quantity sets (OR).
    pub min_allocatable_resources: Option<Vec<Quantities>>,
    /// `fair_sharing_excluded_resource_names`.
    pub fair_sharing_excluded_resource_names: Option<Vec<String>>,
    /// `filter_gpu_resources`.
    pub filter_gpu_resources: Option<bool>,
    /// `seed`.
    pub seed: Option<u64>,
}

/// One scenario event: a [`Command`] to the master, a clock event, or an expectation.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// A change to the cluster.
    Command(Command),
    /// `add_framework` with `tasks`: the framework is added (`add`, a
    /// [`Command::AddFramework`]) and the simulated frameworks play it.
    Play {
        /// The framework's addition.
        add: Command,
        /// What its tasks look like.
        tasks: TaskSpec,
    },
    /// `submit_task`: a task for the queue of a framework the simulated frameworks play.
    SubmitTask {
        /// The framework's name.
        framework: String,
        /// The task.
        task: Submission,
    },
    /// The clock moves on by this many seconds (`advance`).
    Advance(f64),
    /// The clock moves on by one allocation interval (`tick`).
    Tick,
    /// `expect_offers`: alternatives, each a list of offers.
    ExpectOffers(Vec<Vec<ExpectedOffer>>),
    /// `expect_inverse_offers`: alternatives, each a list of (framework, agent).
    ExpectInverseOffers(Vec<Vec<(String, String)>>),
    /// `expect_tasks`.
    ExpectTasks {
        /// The framework.
        framework: String,
        /// How many of its tasks run now.
        running: u64,
    },
}

impl From<Command> for Op {
    fn from(command: Command) -> Op {
        Op::Command(command)
    }
}

impl TryFrom<Entry> for Op {
    type Error = String;

    /// A journal entry as the scenario event that replays it; a note must be one the
    /// [driver](crate::driver::Driver) wrote (an [`Op`]).
    fn try_from(entry: Entry) -> Result<Op, String> {
        match entry {
            Entry::Advance(seconds) => Ok(Op::Advance(seconds)),
            Entry::Command(command) => Ok(Op::Command(*command)),
            Entry::Note(note) => note
                .get::<Op>()
                .cloned()
                .ok_or_else(|| "the journal holds a note that is not a scenario event".to_owned()),
        }
    }
}

/// One expected offer.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpectedOffer {
    /// Framework name.
    pub framework: String,
    /// Role.
    pub role: String,
    /// Agent name.
    pub agent: String,
    /// Resources (compared by value).
    pub resources: Resources,
}

/// A parsed allocator scenario.
#[derive(Clone, Debug)]
pub struct AllocatorScenario {
    /// The file name, for messages.
    pub file: String,
    /// The `description`, if any.
    pub description: Option<String>,
    /// The configuration from the file.
    pub config: ScenarioConfig,
    /// The events, each with its location (`event 3 (add_agent)`).
    pub events: Vec<(String, Op)>,
}

impl AllocatorScenario {
    /// Parses an allocator scenario document.
    pub fn parse(doc: &Document) -> Result<AllocatorScenario, ScenarioError> {
        doc.check_keys(&["config", "events", "description"])?;
        let description = match doc.root.get("description") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(doc.error(Some("description"), "expected a string")),
        };
        let config = parse_config(&doc.config()?)?;
        let mut events = Vec::new();
        for f in doc.events()? {
            let op = parse_op(&f)?;
            if let Op::Command(command) = &op {
                check_roles(&f, command)?;
            }
            events.push((f.location.clone(), op));
        }
        Ok(AllocatorScenario { file: doc.file.clone(), description, config, events })
    }
}

fn parse_config(f: &Fields<'_>) -> Result<ScenarioConfig, ScenarioError> {
    f.check_keys(&[
        "allocator",
        "role_sorter",
        "framework_sorter",
        "allocation_interval",
        "min_allocatable_resources",
        "fair_sharing_excluded_resource_names",
        "filter_gpu_resources",
        "seed",
    ])?;
    let interval = f.opt_f64("allocation_interval")?;
    if interval.is_some_and(|i| i <= 0.0) {
        return Err(f.error("allocation_interval", "must be positive"));
    }
    let min = match f.opt_str_list("min_allocatable_resources")? {
        None => None,
        Some(list) => Some(
            list.iter()
                .map(|s| {
                    Quantities::parse(s)
                        .map_err(|e| f.error("min_allocatable_resources", e.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    Ok(ScenarioConfig {
        allocator: f.opt_str("allocator")?.map(str::to_owned),
        role_sorter: f.opt_str("role_sorter")?.map(str::to_owned),
        framework_sorter: f.opt_str("framework_sorter")?.map(str::to_owned),
        allocation_interval: interval,
        min_allocatable_resources: min,
        fair_sharing_excluded_resource_names: f
            .opt_str_list("fair_sharing_excluded_resource_names")?
            .map(|l| l.into_iter().map(str::to_owned).collect()),
        filter_gpu_resources: f.opt_bool("filter_gpu_resources")?,
        seed: f.opt_u64("seed")?,
    })
}

fn strings(f: &Fields<'_>, field: &str) -> Result<Vec<String>, ScenarioError> {
    Ok(f.opt_str_list(field)?.unwrap_or_default().into_iter().map(str::to_owned).collect())
}

fn parse_resources(f: &Fields<'_>, field: &str, text: &str) -> Result<Resources, ScenarioError> {
    text.parse().map_err(|e: allocator_api::resources::ParseError| f.error(field, e.to_string()))
}

fn agent_caps(f: &Fields<'_>) -> Result<Option<AgentCapabilities>, ScenarioError> {
    let Some(list) = f.opt_str_list("capabilities")? else { return Ok(None) };
    let mut caps = AgentCapabilities(0);
    for name in list {
        caps = caps.with(AgentCapabilities::from_name(name).ok_or_else(|| {
            f.error("capabilities", format!("unknown agent capability '{name}'"))
        })?);
    }
    Ok(Some(caps))
}

fn framework_caps(f: &Fields<'_>) -> Result<Option<FrameworkCapabilities>, ScenarioError> {
    let Some(list) = f.opt_str_list("capabilities")? else { return Ok(None) };
    let mut caps = FrameworkCapabilities(0);
    for name in list {
        caps = caps.with(FrameworkCapabilities::from_name(name).ok_or_else(|| {
            f.error("capabilities", format!("unknown framework capability '{name}'"))
        })?);
    }
    Ok(Some(caps))
}

fn attributes(f: &Fields<'_>) -> Result<Option<Vec<Attribute>>, ScenarioError> {
    let Some(obj) = f.opt_object("attributes")? else { return Ok(None) };
    obj.iter()
        .map(|(k, v)| {
            let value = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return Err(f.error("attributes", format!("'{k}': expected text or a number"))),
            };
            Ok(Attribute { name: k.as_str().into(), value: value.as_str().into() })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn unavailability_value(
    f: &Fields<'_>,
    field: &str,
    v: Option<&Value>,
) -> Result<Option<Unavailability>, ScenarioError> {
    let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(None) };
    let Some(obj) = v.as_object() else {
        return Err(f.error(field, "expected {start, [duration]} or null"));
    };
    let start = obj
        .get("start")
        .and_then(Value::as_f64)
        .ok_or_else(|| f.error(field, "'start' must be a number"))?;
    let duration = match obj.get("duration") {
        None | Some(Value::Null) => None,
        Some(d) => Some(
            d.as_f64()
                .filter(|d| *d >= 0.0)
                .ok_or_else(|| f.error(field, "'duration' must be a non-negative number"))?,
        ),
    };
    if let Some(k) = obj.keys().find(|k| *k != "start" && *k != "duration") {
        return Err(f.error(field, format!("unknown key '{k}'")));
    }
    Ok(Some(Unavailability { start, duration: duration.into() }))
}

fn agent_used(f: &Fields<'_>) -> Result<AgentUsed, ScenarioError> {
    let Some(obj) = f.opt_object("used")? else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for (fw, v) in obj {
        match v {
            Value::String(s) => out.push((fw.clone(), None, parse_resources(f, "used", s)?)),
            Value::Object(roles) => {
                for (role, r) in roles {
                    let Some(text) = r.as_str() else {
                        return Err(f.error(
                            "used",
                            format!("'{fw}' / '{role}': expected a resources string"),
                        ));
                    };
                    out.push((fw.clone(), Some(role.clone()), parse_resources(f, "used", text)?));
                }
            }
            _ => {
                return Err(
                    f.error("used", format!("'{fw}': expected resources or {{role: resources}}"))
                );
            }
        }
    }
    Ok(out)
}

fn min_allocatable(f: &Fields<'_>) -> Result<Option<Vec<RoleMinAllocatable>>, ScenarioError> {
    let Some(obj) = f.opt_object("min_allocatable_resources")? else { return Ok(None) };
    let mut out = Vec::new();
    for (role, v) in obj {
        let Some(list) = v.as_array() else {
            return Err(f.error(
                "min_allocatable_resources",
                format!("'{role}': expected a list of quantity strings"),
            ));
        };
        let mut sets = Vec::new();
        for item in list {
            let text = item.as_str().ok_or_else(|| {
                f.error("min_allocatable_resources", format!("'{role}': expected strings"))
            })?;
            sets.push(
                Quantities::parse(text)
                    .map_err(|e| f.error("min_allocatable_resources", e.to_string()))?,
            );
        }
        out.push(RoleMinAllocatable { role: role.as_str().into(), sets: sets.into() });
    }
    Ok(Some(out))
}

fn operations(f: &Fields<'_>) -> Result<Vec<Operation>, ScenarioError> {
    let Some(Value::Array(list)) = f.get("operations") else {
        return Err(f.error("operations", "expected a list"));
    };
    list.iter()
        .map(|op| {
            let obj = op.as_object().ok_or_else(|| f.error("operations", "expected objects"))?;
            let kind = match obj.get("type").and_then(Value::as_str) {
                Some("reserve") => OperationKind::RESERVE,
                Some("unreserve") => OperationKind::UNRESERVE,
                Some("create") => OperationKind::CREATE,
                Some("destroy") => OperationKind::DESTROY,
                _ => {
                    return Err(f.error(
                        "operations",
                        "'type' must be reserve, unreserve, create or destroy",
                    ));
                }
            };
            let text = obj
                .get("resources")
                .and_then(Value::as_str)
                .ok_or_else(|| f.error("operations", "'resources' missing"))?;
            Ok(Operation { kind, resources: parse_resources(f, "operations", text)? })
        })
        .collect()
}

fn quota(f: &Fields<'_>, field: &str, obj: &Map<String, Value>) -> Result<Quota, ScenarioError> {
    let mut q = Quota::default();
    for (k, v) in obj {
        let text =
            v.as_str().ok_or_else(|| f.error(field, format!("'{k}' must be a quantity string")))?;
        let parsed = Quantities::parse(text).map_err(|e| f.error(field, e.to_string()))?;
        match k.as_str() {
            "guarantees" => q.guarantees = parsed,
            "limits" => q.limits = parsed,
            other => {
                return Err(
                    f.error(field, format!("unknown key '{other}' (expected guarantees, limits)"))
                );
            }
        }
    }
    Ok(q)
}

/// A refused quota as a scenario error: on `role_field` for a nested role, on `limit_field` for
/// a guarantee above its limit.
fn quota_error(
    f: &Fields<'_>,
    role_field: &str,
    limit_field: &str,
    e: QuotaError,
) -> ScenarioError {
    let field = match e {
        QuotaError::NestedRole(_) => role_field,
        QuotaError::GuaranteeAboveLimit { .. } => limit_field,
    };
    f.error(field, e.to_string())
}

fn offers_list(f: &Fields<'_>, v: &Value) -> Result<Vec<ExpectedOffer>, ScenarioError> {
    let Some(list) = v.as_array() else { return Err(f.error("offers", "expected a list")) };
    list.iter()
        .map(|o| {
            let obj = o.as_object().ok_or_else(|| f.error("offers", "expected objects"))?;
            let get = |k: &str| {
                obj.get(k)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| f.error("offers", format!("'{k}' missing")))
            };
            if let Some(k) = obj
                .keys()
                .find(|k| !["framework", "role", "agent", "resources"].contains(&k.as_str()))
            {
                return Err(f.error("offers", format!("unknown key '{k}'")));
            }
            Ok(ExpectedOffer {
                framework: get("framework")?,
                role: get("role")?,
                agent: get("agent")?,
                resources: parse_resources(f, "offers", &get("resources")?)?,
            })
        })
        .collect()
}

fn inverse_list(f: &Fields<'_>, v: &Value) -> Result<Vec<(String, String)>, ScenarioError> {
    let Some(list) = v.as_array() else { return Err(f.error("inverse_offers", "expected a list")) };
    list.iter()
        .map(|o| {
            let obj = o.as_object().ok_or_else(|| f.error("inverse_offers", "expected objects"))?;
            let get = |k: &str| {
                obj.get(k)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| f.error("inverse_offers", format!("'{k}' missing")))
            };
            Ok((get("framework")?, get("agent")?))
        })
        .collect()
}

fn alternatives<T>(
    f: &Fields<'_>,
    field: &str,
    one: impl Fn(&Fields<'_>, &Value) -> Result<Vec<T>, ScenarioError>,
) -> Result<Vec<Vec<T>>, ScenarioError> {
    match (f.get(field), f.get("one_of")) {
        (Some(v), None) => Ok(vec![one(f, v)?]),
        (None, Some(Value::Array(alts))) if !alts.is_empty() => {
            alts.iter().map(|v| one(f, v)).collect()
        }
        _ => Err(f.error(field, format!("give exactly one of '{field}' or a non-empty 'one_of'"))),
    }
}

/// Applies the role-name rules ([`allocator_api::roles::validate`]) to every role an event
/// names: framework roles and suppressed roles, `used` and min-allocatable keys, quota and
/// weight roles, and the roles of recoveries, suppressions and operations.
fn check_roles(f: &Fields<'_>, command: &Command) -> Result<(), ScenarioError> {
    let mut named: Vec<(&'static str, &str)> = Vec::new();
    fn min<'o>(list: &'o [RoleMinAllocatable], named: &mut Vec<(&'static str, &'o str)>) {
        named.extend(list.iter().map(|m| ("min_allocatable_resources", m.role.as_str())));
    }
    match command {
        Command::AddAgent { used, .. } | Command::AddResourceProvider { used, .. } => {
            named.extend(used.iter().filter_map(|(_, r, _)| r.as_deref()).map(|r| ("used", r)));
        }
        Command::AddFramework { roles, suppressed_roles, min_allocatable, .. } => {
            named.extend(roles.iter().map(|r| ("roles", r.as_str())));
            named.extend(suppressed_roles.iter().map(|r| ("suppressed_roles", r.as_str())));
            min(min_allocatable, &mut named);
        }
        Command::UpdateFramework { roles, suppressed_roles, min_allocatable, .. } => {
            named.extend(roles.iter().flatten().map(|r| ("roles", r.as_str())));
            named.extend(
                suppressed_roles.iter().flatten().map(|r| ("suppressed_roles", r.as_str())),
            );
            if let Some(list) = min_allocatable {
                min(list, &mut named);
            }
        }
        Command::RecoverResources { role: Some(r), .. } => named.push(("role", r)),
        Command::SuppressOffers(_, roles) | Command::ReviveOffers(_, roles) => {
            named.extend(roles.iter().map(|r| ("roles", r.as_str())));
        }
        Command::UpdateQuota(role, _) => named.push(("role", role)),
        Command::UpdateWeights(weights) => {
            named.extend(weights.iter().map(|(r, _)| ("weights", r.as_str())))
        }
        Command::UpdateAllocation { role, .. } => named.push(("role", role)),
        Command::Recover { quotas, .. } => {
            named.extend(quotas.iter().map(|q| ("quotas", q.role.as_str())));
        }
        _ => {}
    }
    for (field, role) in named {
        allocator_api::roles::validate(role).map_err(|e| f.error(field, e.to_string()))?;
    }
    Ok(())
}

fn parse_op(f: &Fields<'_>) -> Result<Op, ScenarioError> {
    let op = f.op();
    let commands = [parse_agent_op, parse_operator_op];
    for parse in commands {
        if let Some(parsed) = parse(f, op)? {
            return Ok(Op::Command(parsed));
        }
    }
    for parse in [parse_framework_op, parse_clock_op, parse_expectation] {
        if let Some(parsed) = parse(f, op)? {
            return Ok(parsed);
        }
    }
    Err(f.error("op", format!("unknown op '{op}'")))
}

/// Ops on agents and what they have; `Ok(None)` for any other op.
fn parse_agent_op(f: &Fields<'_>, op: &str) -> Result<Option<Command>, ScenarioError> {
    let s = |k: &str| f.str(k).map(str::to_owned);
    Ok(Some(match op {
        "add_agent" => {
            f.check_keys(&[
                "agent",
                "resources",
                "hostname",
                "capabilities",
                "attributes",
                "used",
                "unavailability",
            ])?;
            Command::AddAgent {
                agent: s("agent")?,
                resources: f.resources("resources")?,
                hostname: f.opt_str("hostname")?.map(str::to_owned),
                capabilities: agent_caps(f)?,
                attributes: attributes(f)?.unwrap_or_default(),
                used: agent_used(f)?,
                unavailability: unavailability_value(f, "unavailability", f.get("unavailability"))?,
            }
        }
        op @ ("remove_agent" | "activate_agent" | "deactivate_agent") => {
            f.check_keys(&["agent"])?;
            let a = s("agent")?;
            match op {
                "remove_agent" => Command::RemoveAgent(a),
                "activate_agent" => Command::ActivateAgent(a),
                _ => Command::DeactivateAgent(a),
            }
        }
        "update_agent" => {
            f.check_keys(&["agent", "resources", "capabilities", "attributes"])?;
            let resources = match f.opt_str("resources")? {
                Some(t) => Some(parse_resources(f, "resources", t)?),
                None => None,
            };
            Command::UpdateAgent {
                agent: s("agent")?,
                resources,
                capabilities: agent_caps(f)?,
                attributes: attributes(f)?,
            }
        }
        "add_resource_provider" => {
            f.check_keys(&["agent", "resources", "used"])?;
            Command::AddResourceProvider {
                agent: s("agent")?,
                resources: f.resources("resources")?,
                used: agent_used(f)?,
            }
        }
        "update_unavailability" => {
            f.check_keys(&["agent", "unavailability"])?;
            Command::UpdateUnavailability(
                s("agent")?,
                unavailability_value(f, "unavailability", f.get("unavailability"))?,
            )
        }
        "update_allocation" => {
            f.check_keys(&["framework", "agent", "role", "operations"])?;
            Command::UpdateAllocation {
                framework: s("framework")?,
                agent: s("agent")?,
                role: s("role")?,
                operations: operations(f)?,
            }
        }
        "update_available" => {
            f.check_keys(&["agent", "operations"])?;
            Command::UpdateAvailable { agent: s("agent")?, operations: operations(f)? }
        }
        _ => return Ok(None),
    }))
}

/// Ops on frameworks and what they hold; `Ok(None)` for any other op.
fn parse_framework_op(f: &Fields<'_>, op: &str) -> Result<Option<Op>, ScenarioError> {
    let s = |k: &str| f.str(k).map(str::to_owned);
    Ok(Some(Op::Command(match op {
        "add_framework" => {
            f.check_keys(&[
                "framework",
                "roles",
                "capabilities",
                "active",
                "used",
                "suppressed_roles",
                "min_allocatable_resources",
                "tasks",
            ])?;
            let roles = f.opt_str_list("roles")?.ok_or_else(|| f.error("roles", "missing"))?;
            if roles.is_empty() {
                return Err(f.error("roles", "a framework needs at least one role"));
            }
            let mut used = Vec::new();
            if let Some(obj) = f.opt_object("used")? {
                for (agent, v) in obj {
                    let text = v.as_str().ok_or_else(|| {
                        f.error("used", format!("'{agent}': expected a resources string"))
                    })?;
                    used.push((agent.clone(), parse_resources(f, "used", text)?));
                }
            }
            let tasks = match f.opt_object("tasks")? {
                None => None,
                Some(obj) => Some(task_spec(f, obj)?),
            };
            let add = Command::AddFramework {
                framework: s("framework")?,
                roles: roles.into_iter().map(str::to_owned).collect(),
                capabilities: framework_caps(f)?.unwrap_or(FrameworkCapabilities::MULTI_ROLE),
                active: f.opt_bool("active")?.unwrap_or(true),
                used,
                suppressed_roles: strings(f, "suppressed_roles")?,
                min_allocatable: min_allocatable(f)?.unwrap_or_default(),
            };
            match tasks {
                Some(tasks) => return Ok(Some(Op::Play { add, tasks })),
                None => add,
            }
        }
        op @ ("remove_framework" | "activate_framework" | "deactivate_framework") => {
            f.check_keys(&["framework"])?;
            let fw = s("framework")?;
            match op {
                "remove_framework" => Command::RemoveFramework(fw),
                "activate_framework" => Command::ActivateFramework(fw),
                _ => Command::DeactivateFramework(fw),
            }
        }
        "update_framework" => {
            f.check_keys(&[
                "framework",
                "roles",
                "capabilities",
                "suppressed_roles",
                "min_allocatable_resources",
            ])?;
            Command::UpdateFramework {
                framework: s("framework")?,
                roles: f.opt_str_list("roles")?.map(|l| l.into_iter().map(str::to_owned).collect()),
                capabilities: framework_caps(f)?,
                suppressed_roles: f
                    .opt_str_list("suppressed_roles")?
                    .map(|l| l.into_iter().map(str::to_owned).collect()),
                min_allocatable: min_allocatable(f)?,
            }
        }
        "recover_resources" => {
            f.check_keys(&["framework", "agent", "resources", "role", "refuse_seconds"])?;
            let text = f.str("resources")?;
            let resources =
                if text == "all" { None } else { Some(parse_resources(f, "resources", text)?) };
            Command::RecoverResources {
                framework: s("framework")?,
                agent: s("agent")?,
                resources,
                role: f.opt_str("role")?.map(str::to_owned),
                refuse_seconds: f.opt_f64("refuse_seconds")?,
            }
        }
        op @ ("suppress_offers" | "revive_offers") => {
            f.check_keys(&["framework", "roles"])?;
            let (fw, roles) = (s("framework")?, strings(f, "roles")?);
            if op == "suppress_offers" {
                Command::SuppressOffers(fw, roles)
            } else {
                Command::ReviveOffers(fw, roles)
            }
        }
        "update_inverse_offer" => {
            f.check_keys(&["agent", "framework", "status", "refuse_seconds"])?;
            let status = match f.opt_str("status")? {
                None => None,
                Some("accept") => Some(InverseOfferStatus::ACCEPT),
                Some("decline") => Some(InverseOfferStatus::DECLINE),
                Some(other) => {
                    return Err(
                        f.error("status", format!("'{other}': expected accept, decline or null"))
                    );
                }
            };
            Command::UpdateInverseOffer {
                agent: s("agent")?,
                framework: s("framework")?,
                status,
                refuse_seconds: f.opt_f64("refuse_seconds")?,
            }
        }
        _ => return Ok(None),
    })))
}

/// Ops on operator changes (quota, weights, whitelist, recovery, pause, sorters); `Ok(None)` for any other op.
fn parse_operator_op(f: &Fields<'_>, op: &str) -> Result<Option<Command>, ScenarioError> {
    let s = |k: &str| f.str(k).map(str::to_owned);
    Ok(Some(match op {
        "update_quota" => {
            f.check_keys(&["role", "guarantees", "limits"])?;
            let mut q = Quota::default();
            if f.get("guarantees").is_some() {
                q.guarantees = f.quantities("guarantees")?;
            }
            if f.get("limits").is_some() {
                q.limits = f.quantities("limits")?;
            }
            let role = s("role")?;
            // A malformed role name is the first thing wrong with it (before "nested").
            allocator_api::roles::validate(&role).map_err(|e| f.error("role", e.to_string()))?;
            check_quota(&role, &q).map_err(|e| quota_error(f, "role", "limits", e))?;
            Command::UpdateQuota(role, q)
        }
        "update_weights" => {
            f.check_keys(&["weights"])?;
            let obj = f.opt_object("weights")?.ok_or_else(|| f.error("weights", "missing"))?;
            let mut weights = Vec::new();
            for (role, w) in obj {
                let w = w.as_f64().filter(|w| w.is_finite() && *w > 0.0).ok_or_else(|| {
                    f.error("weights", format!("'{role}': weight must be a positive number"))
                })?;
                weights.push((role.clone(), w));
            }
            Command::UpdateWeights(weights)
        }
        "update_whitelist" => {
            f.check_keys(&["hostnames"])?;
            Command::UpdateWhitelist(
                f.opt_str_list("hostnames")?.map(|l| l.into_iter().map(str::to_owned).collect()),
            )
        }
        "recover" => {
            f.check_keys(&["expected_agents", "quotas"])?;
            let expected = f
                .opt_u64("expected_agents")?
                .ok_or_else(|| f.error("expected_agents", "missing"))?;
            let expected_agents =
                u32::try_from(expected).map_err(|_| f.error("expected_agents", "too large"))?;
            let mut quotas = Vec::new();
            if let Some(obj) = f.opt_object("quotas")? {
                for (role, v) in obj {
                    let q = v.as_object().ok_or_else(|| {
                        f.error("quotas", format!("'{role}': expected {{guarantees, limits}}"))
                    })?;
                    let quota = quota(f, "quotas", q)?;
                    allocator_api::roles::validate(role)
                        .map_err(|e| f.error("quotas", e.to_string()))?;
                    check_quota(role, &quota).map_err(|e| quota_error(f, "quotas", "quotas", e))?;
                    quotas.push(RoleQuota { role: role.as_str().into(), quota });
                }
            }
            Command::Recover { expected_agents, quotas }
        }
        "pause" => {
            f.check_keys(&[])?;
            Command::Pause
        }
        "resume" => {
            f.check_keys(&[])?;
            Command::Resume
        }
        "set_sorters" => {
            f.check_keys(&["role_sorter", "framework_sorter"])?;
            Command::SetSorters {
                role_sorter: f.opt_str("role_sorter")?.map(str::to_owned),
                framework_sorter: f.opt_str("framework_sorter")?.map(str::to_owned),
            }
        }
        _ => return Ok(None),
    }))
}

/// Ops on the clock and trace tasks; `Ok(None)` for any other op.
fn parse_clock_op(f: &Fields<'_>, op: &str) -> Result<Option<Op>, ScenarioError> {
    let s = |k: &str| f.str(k).map(str::to_owned);
    Ok(Some(match op {
        "advance" => {
            f.check_keys(&["seconds"])?;
            let secs = f.f64("seconds")?;
            if secs < 0.0 {
                return Err(f.error("seconds", "the clock cannot go back"));
            }
            Op::Advance(secs)
        }
        "tick" => {
            f.check_keys(&[])?;
            Op::Tick
        }
        "submit_task" => {
            f.check_keys(&["framework", "resources", "duration", "constraints", "gang"])?;
            let duration = f.opt_f64("duration")?;
            if duration.is_some_and(|d| d < 0.0) {
                return Err(f.error("duration", "must not be negative"));
            }
            let mut constraints = Vec::new();
            if let Some(obj) = f.opt_object("constraints")? {
                for (attr, v) in obj {
                    let values = v
                        .as_array()
                        .and_then(|a| {
                            a.iter()
                                .map(|x| x.as_str().map(str::to_owned))
                                .collect::<Option<Vec<_>>>()
                        })
                        .ok_or_else(|| {
                            f.error("constraints", format!("'{attr}': expected a list of strings"))
                        })?;
                    constraints.push((attr.clone(), values));
                }
            }
            let gang = match f.opt_object("gang")? {
                None => None,
                Some(g) => {
                    let id = g.get("id").and_then(Value::as_str).map(str::to_owned);
                    let size = g.get("size").and_then(Value::as_u64).filter(|n| *n >= 1);
                    match (id, size.and_then(|n| u32::try_from(n).ok())) {
                        (Some(id), Some(size)) if g.len() == 2 => Some(Gang { id, size }),
                        _ => {
                            return Err(f.error(
                                "gang",
                                "expected {\"id\": a string, \"size\": a positive integer}",
                            ));
                        }
                    }
                }
            };
            Op::SubmitTask {
                framework: s("framework")?,
                task: Submission {
                    resources: f.resources("resources")?,
                    duration,
                    constraints,
                    gang,
                },
            }
        }
        _ => return Ok(None),
    }))
}

/// Ops on expectations; `Ok(None)` for any other op.
fn parse_expectation(f: &Fields<'_>, op: &str) -> Result<Option<Op>, ScenarioError> {
    let s = |k: &str| f.str(k).map(str::to_owned);
    Ok(Some(match op {
        "expect_offers" => {
            f.check_keys(&["offers", "one_of"])?;
            Op::ExpectOffers(alternatives(f, "offers", offers_list)?)
        }
        "expect_inverse_offers" => {
            f.check_keys(&["inverse_offers", "one_of"])?;
            Op::ExpectInverseOffers(alternatives(f, "inverse_offers", inverse_list)?)
        }
        "expect_tasks" => {
            f.check_keys(&["framework", "running"])?;
            Op::ExpectTasks {
                framework: s("framework")?,
                running: f.opt_u64("running")?.ok_or_else(|| f.error("running", "missing"))?,
            }
        }
        _ => return Ok(None),
    }))
}

fn task_spec(f: &Fields<'_>, obj: &Map<String, Value>) -> Result<TaskSpec, ScenarioError> {
    let mut spec = TaskSpec {
        resources: None,
        count: None,
        duration: None,
        per_offer: None,
        refuse_seconds: 5.0,
        request: 0,
        gang: false,
    };
    for (k, v) in obj {
        let num = || {
            v.as_f64()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| f.error("tasks", format!("'{k}' must be a non-negative number")))
        };
        let int = || {
            v.as_u64()
                .ok_or_else(|| f.error("tasks", format!("'{k}' must be a non-negative integer")))
        };
        match k.as_str() {
            "resources" => {
                let text =
                    v.as_str().ok_or_else(|| f.error("tasks", "'resources' must be a string"))?;
                let r = parse_resources(f, "tasks", text)?;
                if r.is_empty() {
                    return Err(f.error("tasks", "'resources' of a task must not be empty"));
                }
                spec.resources = Some(r);
            }
            "count" => spec.count = Some(int()?),
            "duration" => spec.duration = Some(num()?),
            "per_offer" => spec.per_offer = Some(int()?),
            "request" => {
                spec.request = match v {
                    Value::Bool(b) => u32::from(*b),
                    _ => v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
                        f.error("tasks", "'request' must be true, false or a number of tasks")
                    })?,
                }
            }
            "gang" => {
                spec.gang =
                    v.as_bool().ok_or_else(|| f.error("tasks", "'gang' must be true or false"))?
            }
            "refuse_seconds" => {
                spec.refuse_seconds = v
                    .as_f64()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| f.error("tasks", "'refuse_seconds' must be a number"))?
            }
            other => {
                return Err(f.error(
                    "tasks",
                    format!("unknown key '{other}' (expected resources, count, duration, per_offer, refuse_seconds, request, gang)"),
                ));
            }
        }
    }
    if spec.gang && (spec.resources.is_none() || spec.count.is_none_or(|c| c == 0)) {
        return Err(f.error("tasks", "a gang needs 'resources' and a positive 'count'"));
    }
    Ok(spec)
}
