//! Module sorters' own keys in explanations: the place a role or framework has in a sorter
//! module's order, with the key the module gives it (its `dominant_share` answer).
//!
//! The live sorter is never asked to sort for an explanation (a random sorter's generator
//! would move and change later offers): a fresh instance of the module, with the same
//! configuration and seed, is fed what the built-in allocator feeds its own sorter (agents,
//! weights, clients, activity, the ledger's allocations) and asked instead. Where a module's
//! order depends on its history (a random draw, first-in-first-out), the place is the one it
//! gives now, and the text says so.

use allocator_api::{ClientId, FrameworkId, RVec, Sorter, SorterConfig};
use serde_json::{Value, json};

use super::reason;
use allocator_host::master::Master;

/// A sorter module's own order: its clients as its `sort` gives them, each with the key its
/// `dominant_share` answers (`None`: the module answers nothing).
pub(super) type ModuleOrder = Vec<(String, Option<f64>)>;

/// `true` when the sorter called `name` is a loaded module (not the built-in DRF, whose
/// weighted shares the host computes itself).
pub(super) fn is_module(master: &Master<'_>, name: &str) -> bool {
    master.registry().module(name).is_some()
}

/// A fresh instance of sorter module `name`, configured as the allocator's are, holding every
/// agent's total.
fn fresh_sorter(master: &Master<'_>, name: &str, flag: &str) -> Result<Box<dyn Sorter>, String> {
    let options = &master.setup().options;
    let config = SorterConfig {
        fairness_excluded_resource_names: options.fairness_excluded_resource_names.clone(),
        seed: options.seed,
    };
    let mut sorter =
        master.registry().create_sorter(name, flag, &config).map_err(|e| e.to_string())?;
    for a in master.agent_records() {
        sorter.add_agent(a.info.id, &a.total.scalar_quantities()).map_err(|e| e.to_string())?;
    }
    Ok(sorter)
}

/// The sorter's order with each client's key; `name_of` names a client.
fn read_order(
    sorter: &mut dyn Sorter,
    name_of: impl Fn(ClientId) -> String,
) -> Result<ModuleOrder, String> {
    let mut out = RVec::new();
    sorter.sort(&mut out).map_err(|e| e.to_string())?;
    Ok(out.iter().map(|c| (name_of(*c), sorter.dominant_share(*c))).collect())
}

/// The order role sorter module `module` gives now: a fresh instance fed what the built-in
/// allocator feeds its role sorter (agents, weights, every role a present framework subscribes
/// to or holds resources under, active, and the ledger's allocations). Asked only when an
/// explanation is, so the live sorter (a random one's generator included) is left untouched.
pub(super) fn module_role_order(master: &Master<'_>, module: &str) -> Result<ModuleOrder, String> {
    let mut sorter = fresh_sorter(master, module, "--role_sorter")?;
    for (path, w) in master.weights() {
        sorter.update_weight(path, *w).map_err(|e| e.to_string())?;
    }
    let ledger = master.ledger();
    let mut roles: Vec<String> = master
        .framework_ids()
        .filter_map(|f| master.framework_info(f))
        .flat_map(|f| f.roles.iter().map(|r| r.to_string()).collect::<Vec<_>>())
        .chain(ledger.iter().map(|a| a.role.to_string()))
        .collect();
    roles.sort();
    roles.dedup();
    let client =
        |role: &str| ClientId(roles.binary_search_by(|r| r.as_str().cmp(role)).unwrap_or(0) as u32);
    for role in &roles {
        sorter.add(client(role), role).map_err(|e| e.to_string())?;
        sorter.activate(client(role)).map_err(|e| e.to_string())?;
    }
    for a in &ledger {
        sorter
            .allocated(client(a.role.as_str()), a.agent, &a.resources)
            .map_err(|e| e.to_string())?;
    }
    read_order(sorter.as_mut(), |c| roles[c.index()].clone())
}

/// The order framework sorter module `module` gives now within `role`: a fresh instance fed
/// what the built-in allocator feeds that role's framework sorter (the frameworks subscribed
/// to the role or holding resources under it, active unless inactive or suppressed in it, and
/// their allocations under the role).
pub(super) fn module_framework_order(
    master: &Master<'_>,
    module: &str,
    role: &str,
) -> Result<ModuleOrder, String> {
    let mut sorter = fresh_sorter(master, module, "--framework_sorter")?;
    let ledger: Vec<_> = master.ledger().into_iter().filter(|a| a.role.as_str() == role).collect();
    let mut frameworks: Vec<FrameworkId> = master
        .framework_ids()
        .filter(|f| master.framework_info(*f).is_some_and(|i| i.has_role(role)))
        .chain(ledger.iter().map(|a| a.framework))
        .collect();
    frameworks.sort();
    frameworks.dedup();
    for fw in &frameworks {
        // The built-in allocator's client id and path for a framework.
        let client = ClientId(fw.0);
        sorter.add(client, &format!("{:010}", fw.0)).map_err(|e| e.to_string())?;
        let receiving = master.framework(*fw).is_some_and(|r| {
            r.active && !r.options.suppressed_roles.iter().any(|s| s.as_str() == role)
        });
        if receiving {
            sorter.activate(client).map_err(|e| e.to_string())?;
        }
    }
    for a in &ledger {
        sorter
            .allocated(ClientId(a.framework.0), a.agent, &a.resources)
            .map_err(|e| e.to_string())?;
    }
    read_order(sorter.as_mut(), |c| master.framework_name(FrameworkId(c.0)).to_owned())
}

/// `who`'s place in a sorter module's order, with the module's own key for it, as reason
/// `code`: "place k of n"; when the module answers no key, it says so.
pub(super) fn module_place(
    code: &str,
    kind: &str,
    who: &str,
    module: &str,
    order: &Result<ModuleOrder, String>,
) -> Value {
    let order = match order {
        Ok(order) => order,
        Err(e) => {
            return reason(
                code,
                format!(
                    "the {kind} sorter module '{module}' could not be asked for its order: {e}"
                ),
                json!({"sorter": module, "rank": null, "of": null, "key": null, "error": e}),
            );
        }
    };
    let n = order.len();
    let Some(i) = order.iter().position(|(c, _)| c == who) else {
        return reason(
            code,
            format!(
                "{kind} '{who}' has no place in the order of {kind} sorter module '{module}': it is not active there (inactive or suppressed); {n} {kind}(s) are"
            ),
            json!({"sorter": module, "rank": null, "of": n, "key": null}),
        );
    };
    let key = order[i].1;
    let text = match key {
        Some(k) => format!(
            "{kind} '{who}' is place {} of {n} in the order of {kind} sorter module '{module}' (asked now, given the current allocations); the module's key for it (its dominant_share answer) is {k:.4}",
            i + 1
        ),
        None => format!(
            "{kind} '{who}': the sorter module '{module}' gives no key; place {} of {n}",
            i + 1
        ),
    };
    let ahead: Vec<Value> = order[..i].iter().map(|(c, k)| json!({(kind): c, "key": k})).collect();
    reason(
        code,
        text,
        json!({"sorter": module, "rank": i + 1, "of": n, "key": key, "ahead": ahead}),
    )
}
