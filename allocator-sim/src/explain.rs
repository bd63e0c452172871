//! Explanations (issue 24): why a role or a framework got what it got at the last allocation
//! run, with the numbers.
//!
//! The account is the host's: it is drawn from the master's records (the ledger, agents,
//! frameworks, weights, quotas, the whitelist) and, for the built-in allocator, its refuse
//! filters. It names every reason an offer can be withheld that the host can see: the order
//! of roles by weighted dominant share (and of frameworks within a role), quota limits and the
//! headroom held for other roles' guarantees, refuse filters, suppression, an inactive
//! framework, the GPU capability gate, `min_allocatable_resources`, reservations to other
//! roles, agents deactivated, under maintenance or off the whitelist, a paused allocator, and
//! no free resources at all. It costs nothing unless asked for.
//!
//! Refuse filters are given per framework: the agents it has filtered, the earliest and latest
//! expiry, and on how many of them a filter covers all that is free now. A role or framework
//! sorter loaded from a module is asked for its own key (`dominant_share`) and order through a
//! fresh instance fed the current state, never through the live sorter; a module that answers
//! no key is said to give none. An allocator built for ABI 3 adds its own reasons (its
//! `explain`, checked by the host), marked `"source": "allocator"`: the placement modules say
//! which requests and gangs wait and how many members are missing. There is no region reason: without fault domains (none in
//! SPEC, none in ABI 1's `AgentInfo`) the `REGION_AWARE` gate withholds nothing.

mod module_sorters;

use std::collections::BTreeMap;

use allocator_api::{
    AgentId, ExplainSubject, FrameworkCapabilities, FrameworkId, Quantities, Resources,
};
use allocator_host::metrics::dominant_share;
use serde_json::{Value, json};

use allocator_host::master::{Engine, Event, Master};
use module_sorters::{is_module, module_framework_order, module_place, module_role_order};

/// Offers of the last allocation run, counted per role and per framework.
#[derive(Debug, Default)]
pub struct LastRun {
    /// Off unless explanations are asked for: then an offer costs one branch.
    enabled: bool,
    run: u64,
    by_role: BTreeMap<String, u64>,
    by_framework: BTreeMap<FrameworkId, u64>,
}

impl LastRun {
    /// Starts counting (explanations are asked for).
    pub fn enable(&mut self) {
        self.enabled = true;
    }

    /// Counts an offer into the run it belongs to (when enabled).
    pub fn observe(&mut self, event: &Event, master: &Master<'_>) {
        if !self.enabled {
            return;
        }
        if let Event::Offer(offer) = event {
            if master.runs() != self.run {
                *self = LastRun { enabled: true, run: master.runs(), ..LastRun::default() };
            }
            *self.by_role.entry(offer.role.to_string()).or_default() += 1;
            *self.by_framework.entry(offer.framework).or_default() += 1;
        }
    }
}

/// One reason, machine-readable (`reason` and numbers) and in words (`text`).
fn reason(code: &str, text: String, numbers: Value) -> Value {
    let mut v = json!({"reason": code, "text": text});
    if let Value::Object(m) = numbers {
        for (k, x) in m {
            v[k] = x;
        }
    }
    v
}

/// What the allocator itself says about `subject` (ABI 3's `explain`; the host checked it),
/// as reasons marked `"source": "allocator"`.
fn allocator_reasons(master: &Master<'_>, subject: &ExplainSubject) -> Vec<Value> {
    master
        .allocator_reasons(subject)
        .into_iter()
        .map(|e| {
            let numbers: serde_json::Map<String, Value> =
                e.numbers.iter().map(|n| (n.0.to_string(), json!(n.1))).collect();
            let mut r = reason(e.code.as_str(), e.text.to_string(), Value::Object(numbers));
            r["source"] = json!("allocator");
            r
        })
        .collect()
}

/// The role's consumption (itself and its subroles), as quota counts it.
fn consumed(master: &Master<'_>, role: &str) -> Quantities {
    let mut q = Quantities::new();
    let prefix = format!("{role}/");
    for (r, alloc) in master.role_alloc() {
        if r == role || r.starts_with(&prefix) {
            q.add(alloc);
        }
    }
    q
}

fn weighted_share(master: &Master<'_>, role: &str) -> (f64, f64, f64) {
    let share = master.role_share(role);
    let weight = master.weights().get(role).copied().unwrap_or(1.0);
    (share, weight, share / weight)
}

/// Roles with at least one present framework, in the order a DRF role sorter puts them
/// (weighted dominant share, then name).
fn role_order(master: &Master<'_>) -> Vec<(String, f64)> {
    let mut roles: Vec<String> = master
        .framework_ids()
        .filter_map(|f| master.framework_info(f))
        .flat_map(|f| f.roles.iter().map(|r| r.to_string()).collect::<Vec<_>>())
        .collect();
    roles.sort();
    roles.dedup();
    let mut order: Vec<(String, f64)> =
        roles.into_iter().map(|r| (r.clone(), weighted_share(master, &r).2)).collect();
    order.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    order
}

/// Unallocated resources of activated agents, and the agents withheld by state.
struct Free {
    /// Free on agents that can be offered at all.
    free: Resources,
    deactivated: usize,
    maintenance: usize,
    off_whitelist: usize,
    /// Free resources reserved to roles other than the subject (and its ancestors).
    reserved_elsewhere: Resources,
    /// Agents with free GPUs.
    gpu_agents: usize,
    /// The largest free scalar amounts on one agent (for min_allocatable).
    largest: Vec<Quantities>,
}

fn free_for(master: &Master<'_>, role: &str) -> Free {
    let mut f = Free {
        free: Resources::new(),
        deactivated: 0,
        maintenance: 0,
        off_whitelist: 0,
        reserved_elsewhere: Resources::new(),
        gpu_agents: 0,
        largest: Vec::new(),
    };
    let now = master.now();
    for a in master.agent_records() {
        if !a.activated {
            f.deactivated += 1;
            continue;
        }
        if a.unavailability.is_some_and(|u| u.start <= now) {
            f.maintenance += 1;
        }
        if master
            .whitelist()
            .is_some_and(|w| !w.iter().any(|h| h.as_str() == a.info.hostname.as_str()))
        {
            f.off_whitelist += 1;
            continue;
        }
        let free = a.total.clone() - &master.agent_used(a.info.id);
        let usable = free.filter(|r| r.is_allocatable_to(role));
        f.reserved_elsewhere.add(&free.filter(|r| !r.is_allocatable_to(role)));
        if usable.scalar("gpus").is_positive() {
            f.gpu_agents += 1;
        }
        f.largest.push(usable.scalar_quantities());
        f.free.add(&usable);
    }
    f
}

/// Why `role` got what it got at the last run.
pub fn explain_role(master: &Master<'_>, last: &LastRun, role: &str) -> Value {
    role_account(master, last, role, &free_for(master, role))
}

/// [`explain_role`] with what is free for the role already worked out.
fn role_account(master: &Master<'_>, last: &LastRun, role: &str, free: &Free) -> Value {
    let (share, weight, weighted) = weighted_share(master, role);
    let order = role_order(master);
    let rank = order.iter().position(|(r, _)| r == role).map(|i| i + 1);
    let allocated = master.role_alloc().get(role).cloned().unwrap_or_default();
    let mut reasons = Vec::new();
    let frameworks: Vec<FrameworkId> = master
        .framework_ids()
        .filter(|f| master.framework_info(*f).is_some_and(|i| i.has_role(role)))
        .collect();
    if frameworks.is_empty() {
        reasons.push(reason(
            "no_frameworks",
            format!("no framework is subscribed to role '{role}'"),
            json!({}),
        ));
    }
    let receiving: Vec<FrameworkId> = frameworks
        .iter()
        .copied()
        .filter(|f| {
            master.framework(*f).is_some_and(|r| {
                r.active && !r.options.suppressed_roles.iter().any(|s| s.as_str() == role)
            })
        })
        .collect();
    if !frameworks.is_empty() && receiving.is_empty() {
        reasons.push(reason(
            "no_receiving_framework",
            format!(
                "none of the {} framework(s) of role '{role}' can receive: each is inactive or suppressed in it",
                frameworks.len()
            ),
            json!({"frameworks": frameworks.len()}),
        ));
    }
    let role_sorter = &master.setup().role_sorter;
    if is_module(master, role_sorter) {
        if !frameworks.is_empty() {
            let order = module_role_order(master, role_sorter);
            reasons.push(module_place("role_order", "role", role, role_sorter, &order));
        }
    } else if let Some(rank) = rank {
        reasons.push(reason(
            "role_order",
            format!(
                "role '{role}' is {rank} of {} in the role order: weighted dominant share {weighted:.4} (share {share:.4} / weight {weight})",
                order.len()
            ),
            json!({"rank": rank, "of": order.len(), "weighted_share": weighted, "share": share, "weight": weight,
                   "ahead": order.iter().take(rank - 1).map(|(r, s)| json!({"role": r, "weighted_share": s})).collect::<Vec<_>>()}),
        ));
    }
    quota_reasons(master, role, &mut reasons);
    gate_reasons(master, role, free, &mut reasons);
    reasons.extend(allocator_reasons(master, &ExplainSubject::role(role)));
    json!({"event": "explanation", "time": master.now(), "run": master.runs(), "role": role,
           "allocated": allocated.to_string(), "dominant_share": share, "weight": weight,
           "offers_last_run": last.by_role.get(role).copied().unwrap_or(0),
           "reasons": reasons})
}

/// Quota: the role's limit, and the headroom held for other roles' unmet guarantees.
fn quota_reasons(master: &Master<'_>, role: &str, reasons: &mut Vec<Value>) {
    let used = consumed(master, role);
    if let Some(q) = master.quotas().get(role) {
        for limit in q.limits.iter() {
            let have = used.get(&limit.name);
            if have >= limit.value {
                reasons.push(reason(
                    "quota_limit",
                    format!(
                        "role '{role}' is at its quota limit for {}: {} of {}",
                        limit.name, have, limit.value
                    ),
                    json!({"resource": limit.name.as_str(), "consumed": have.as_f64(), "limit": limit.value.as_f64()}),
                ));
            }
        }
    }
    // Guarantees of other roles not yet met are held back from everyone else.
    let mut held = Quantities::new();
    for (other, q) in master.quotas() {
        if other == role || role.starts_with(&format!("{other}/")) {
            continue;
        }
        let mut unmet = q.guarantees.clone();
        unmet.subtract(&consumed(master, other));
        held.add(&unmet);
    }
    if held.iter().any(|x| x.value.is_positive()) {
        reasons.push(reason(
            "quota_headroom",
            format!("other roles' quota guarantees not yet met ({held}) are held back from role '{role}'"),
            json!({"held": held.to_string()}),
        ));
    }
}

/// Agents and resources the role cannot be offered, and the allocator's own gates.
fn gate_reasons(master: &Master<'_>, role: &str, free: &Free, reasons: &mut Vec<Value>) {
    if master.paused() {
        reasons.push(reason("paused", "allocation is paused".into(), json!({})));
    }
    if free.free.is_empty() {
        reasons.push(reason(
            "no_free_resources",
            format!("nothing usable by role '{role}' is free on any offerable agent"),
            json!({}),
        ));
    }
    for (code, n, what) in [
        ("agents_deactivated", free.deactivated, "deactivated"),
        ("agents_in_maintenance", free.maintenance, "in a maintenance window"),
        ("agents_off_whitelist", free.off_whitelist, "not on the whitelist"),
    ] {
        if n > 0 {
            reasons.push(reason(code, format!("{n} agent(s) are {what}"), json!({"agents": n})));
        }
    }
    if !free.reserved_elsewhere.is_empty() {
        reasons.push(reason(
            "reserved_to_other_roles",
            format!("{} free on agents is reserved to other roles", free.reserved_elsewhere),
            json!({"resources": free.reserved_elsewhere.to_string()}),
        ));
    }
    if let Some(r) = refuse_filter_reason(master, role, None) {
        reasons.push(r);
    }
}

/// One framework's refuse filters under a role: the agents they filter, their expiries, and
/// what is free on those agents now.
#[derive(Default)]
struct FilterAccount {
    filters: usize,
    /// Per filtered agent, what each filter there refuses.
    agents: BTreeMap<AgentId, Vec<Resources>>,
    earliest: f64,
    latest: f64,
}

/// The built-in allocator's active refuse filters under `role`, per framework (only `only`'s
/// when given), with their numbers; `None` when there are none (or the allocator is a module,
/// whose filters the host does not see).
fn refuse_filter_reason(
    master: &Master<'_>,
    role: &str,
    only: Option<FrameworkId>,
) -> Option<Value> {
    let Engine::Builtin(alloc) = master.engine() else { return None };
    let mut by_framework: BTreeMap<FrameworkId, FilterAccount> = BTreeMap::new();
    alloc.visit_active_refuse_filters(|fw, agent, r, refused, expires| {
        if r != role || only.is_some_and(|o| o != fw) {
            return;
        }
        let a = by_framework.entry(fw).or_insert_with(|| FilterAccount {
            earliest: f64::INFINITY,
            latest: f64::NEG_INFINITY,
            ..FilterAccount::default()
        });
        a.filters += 1;
        a.agents.entry(agent).or_default().push(refused.clone());
        a.earliest = a.earliest.min(expires);
        a.latest = a.latest.max(expires);
    });
    if by_framework.is_empty() {
        return None;
    }
    let total: usize = by_framework.values().map(|a| a.filters).sum();
    let mut parts = Vec::new();
    let mut accounts = Vec::new();
    for (fw, a) in &by_framework {
        // An agent is withheld by the filters while one of them covers all that is free there.
        let (mut covering, mut nothing_free) = (0, 0);
        for (agent, refused) in &a.agents {
            let free = master
                .agent_records()
                .find(|r| r.info.id == *agent)
                .map(|r| {
                    (r.total.clone() - &master.agent_used(*agent))
                        .filter(|x| x.is_allocatable_to(role))
                })
                .unwrap_or_default();
            if free.is_empty() {
                nothing_free += 1;
            } else if refused.iter().any(|x| x.contains(&free)) {
                covering += 1;
            }
        }
        let name = master.framework_name(*fw);
        parts.push(format!(
            "framework '{name}' has filtered {} agent(s), expiring from {:.1} s to {:.1} s; they cover all that is free now on {covering} of them{}",
            a.agents.len(),
            a.earliest,
            a.latest,
            if nothing_free > 0 { format!(" (nothing is free on {nothing_free})") } else { String::new() }
        ));
        accounts.push(json!({"framework": name, "filters": a.filters, "agents": a.agents.len(),
                             "earliest_expiry": a.earliest, "latest_expiry": a.latest,
                             "agents_covering_free": covering, "agents_nothing_free": nothing_free}));
    }
    Some(reason(
        "refuse_filters",
        format!(
            "{total} refuse filter(s) of role '{role}' are active (declined offers, until they expire): {}",
            parts.join("; ")
        ),
        json!({"filters": total, "frameworks": accounts}),
    ))
}

/// Why framework `name` got what it got at the last run.
pub fn explain_framework(master: &Master<'_>, last: &LastRun, name: &str) -> Value {
    let Ok(fw) = master.framework_id(name) else {
        return json!({"event": "explanation", "time": master.now(), "framework": name,
                      "reasons": [reason("unknown_framework", format!("no framework '{name}' is added"), json!({}))]});
    };
    let rec = master.framework(fw).expect("present");
    let mut reasons = Vec::new();
    if !rec.active {
        reasons.push(reason(
            "inactive",
            format!("framework '{name}' is inactive: it gets no offers until activated"),
            json!({}),
        ));
    }
    let gpu_gate = master.setup().options.filter_gpu_resources
        && !rec.info.capabilities.has(FrameworkCapabilities::GPU_RESOURCES);
    let mut per_role = Vec::new();
    for role in rec.info.roles.iter().map(|r| r.as_str()) {
        if rec.options.suppressed_roles.iter().any(|s| s.as_str() == role) {
            reasons.push(reason(
                "suppressed",
                format!("framework '{name}' suppressed its offers in role '{role}'"),
                json!({"role": role}),
            ));
        }
        let free = free_for(master, role);
        capability_reasons(rec, role, &free.free, &mut reasons);
        if gpu_gate && free.gpu_agents > 0 {
            reasons.push(reason(
                "gpu_capability",
                format!("{} agent(s) with free GPUs are not offered to '{name}': it lacks the GPU_RESOURCES capability", free.gpu_agents),
                json!({"role": role, "agents": free.gpu_agents}),
            ));
        }
        let sets: Vec<&Quantities> = rec
            .options
            .min_allocatable_resources
            .iter()
            .filter(|m| m.role.as_str() == role)
            .flat_map(|m| m.sets.iter())
            .collect();
        if !sets.is_empty() && !free.largest.iter().any(|f| sets.iter().any(|s| f.contains(s))) {
            let wanted: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            reasons.push(reason(
                "min_allocatable",
                format!("no agent has free resources that meet '{name}''s min_allocatable_resources in role '{role}' ({})", wanted.join(" or ")),
                json!({"role": role, "min_allocatable_resources": wanted}),
            ));
        }
        let framework_sorter = &master.setup().framework_sorter;
        if is_module(master, framework_sorter) {
            let order = module_framework_order(master, framework_sorter, role);
            let mut place =
                module_place("framework_order", "framework", name, framework_sorter, &order);
            place["role"] = json!(role);
            per_role.push(json!({"role": role, "rank": place["rank"], "of": place["of"],
                                 "sorter": framework_sorter, "key": place["key"]}));
            reasons.push(place);
        } else {
            per_role.push(framework_rank(master, fw, role));
        }
        let account = role_account(master, last, role, &free);
        for r in account["reasons"].as_array().into_iter().flatten() {
            let own = r["source"] == "allocator"; // said of the framework itself below
            if !own
                && !matches!(
                    r["reason"].as_str(),
                    Some("no_frameworks" | "no_receiving_framework" | "refuse_filters")
                )
            {
                let mut r = r.clone();
                r["role"] = json!(role);
                reasons.push(r);
            }
        }
        if let Some(mut r) = refuse_filter_reason(master, role, Some(fw)) {
            r["role"] = json!(role);
            reasons.push(r);
        }
    }
    reasons.extend(allocator_reasons(master, &ExplainSubject::framework(fw)));
    let tasks = master.tasks_of(fw).count();
    json!({"event": "explanation", "time": master.now(), "run": master.runs(), "framework": name,
           "roles": per_role, "tasks_running": tasks,
           "offers_last_run": last.by_framework.get(&fw).copied().unwrap_or(0), "reasons": reasons})
}

/// Free revocable or shared resources the framework cannot receive for want of a capability.
fn capability_reasons(
    rec: &allocator_host::master::FrameworkRecord,
    role: &str,
    free: &Resources,
    reasons: &mut Vec<Value>,
) {
    let name = rec.info.name.as_str();
    let gates = [
        (
            "revocable_capability",
            FrameworkCapabilities::REVOCABLE_RESOURCES,
            "revocable",
            "REVOCABLE_RESOURCES",
        ),
        (
            "shared_capability",
            FrameworkCapabilities::SHARED_RESOURCES,
            "shared",
            "SHARED_RESOURCES",
        ),
    ];
    for (code, cap, what, cap_name) in gates {
        if rec.info.capabilities.has(cap) {
            continue;
        }
        let withheld =
            free.filter(|r| if what == "revocable" { r.is_revocable() } else { r.is_shared() });
        if !withheld.is_empty() {
            reasons.push(reason(
                code,
                format!("{withheld} free is {what} and not offered to '{name}': it lacks the {cap_name} capability"),
                json!({"role": role, "resources": withheld.to_string()}),
            ));
        }
    }
}

/// The framework's place among its role's frameworks by dominant share of what it holds.
fn framework_rank(master: &Master<'_>, fw: FrameworkId, role: &str) -> Value {
    // What each framework holds under the role, in one pass over the ledger.
    let mut held: BTreeMap<FrameworkId, Quantities> = BTreeMap::new();
    for a in master.ledger().into_iter().filter(|a| a.role.as_str() == role) {
        held.entry(a.framework).or_default().add(&a.resources.scalar_quantities());
    }
    let mut order: Vec<(String, f64)> = master
        .framework_ids()
        .filter(|f| master.framework_info(*f).is_some_and(|i| i.has_role(role)))
        .map(|f| {
            let none = Quantities::new();
            let share =
                dominant_share(held.get(&f).unwrap_or(&none), master.cluster(), master.excluded());
            (master.framework_name(f).to_owned(), share)
        })
        .collect();
    order.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    let name = master.framework_name(fw);
    let rank = order.iter().position(|(n, _)| n == name).map_or(0, |i| i + 1);
    let share = order.get(rank.saturating_sub(1)).map_or(0.0, |x| x.1);
    json!({"role": role, "rank": rank, "of": order.len(), "dominant_share": share})
}

/// Explains `subject`: a framework when one has that name, otherwise a role.
pub fn explain(master: &Master<'_>, last: &LastRun, subject: &str) -> Value {
    if master.framework_id(subject).is_ok() {
        explain_framework(master, last, subject)
    } else {
        explain_role(master, last, subject)
    }
}

/// The explanation as a paragraph for the summary.
pub fn to_text(explanation: &Value) -> String {
    let subject = explanation["role"]
        .as_str()
        .map(|r| format!("role '{r}'"))
        .or_else(|| explanation["framework"].as_str().map(|f| format!("framework '{f}'")))
        .unwrap_or_default();
    let mut text = format!(
        "why {subject} got what it got (at {:.1} s, run {}; {} offer(s) in the last run):\n",
        explanation["time"].as_f64().unwrap_or(0.0),
        explanation["run"],
        explanation["offers_last_run"]
    );
    for r in explanation["reasons"].as_array().into_iter().flatten() {
        text.push_str(&format!("  - {}\n", r["text"].as_str().unwrap_or_default()));
    }
    text
}
