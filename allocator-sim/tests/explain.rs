//! Explanations (`--explain`, `GET /explain`): why a role or framework got what it got at the
//! last allocation run, one reason code each with its numbers.

use allocator_host::registry::ModuleRegistry;
use serde_json::{Value, json};

use allocator_host::master::{FailurePolicy, Setup};
use allocator_sim::allocator_scenario::AllocatorScenario;
use allocator_sim::driver::Driver;
use allocator_sim::output::EventStream;
use allocator_sim::scenario::Document;

/// Runs `events` (scenario JSON) and explains `subject`; the reasons by code.
fn explain(events: Value, subject: &str) -> Vec<Value> {
    let registry = ModuleRegistry::new();
    let setup = Setup { on_module_failure: FailurePolicy::Stop, ..Setup::default() };
    let root = json!({"events": events}).as_object().unwrap().clone();
    let scenario = AllocatorScenario::parse(&Document { file: "t".into(), root }).unwrap();
    let mut driver = Driver::new(&registry, setup, "t").unwrap();
    driver.enable_explanations();
    let mut out = EventStream::sink();
    for (i, (_, op)) in scenario.events.iter().enumerate() {
        driver.apply(i, op, &mut out).unwrap();
    }
    driver.explanation(subject)["reasons"].as_array().unwrap().clone()
}

fn find<'a>(reasons: &'a [Value], code: &str) -> &'a Value {
    reasons
        .iter()
        .find(|r| r["reason"] == code)
        .unwrap_or_else(|| panic!("no reason '{code}' in {reasons:#?}"))
}

fn agent(name: &str, resources: &str) -> Value {
    json!({"op": "add_agent", "agent": name, "resources": resources})
}

fn framework(name: &str, role: &str) -> Value {
    json!({"op": "add_framework", "framework": name, "roles": [role]})
}

#[test]
fn a_role_without_frameworks_is_named() {
    let r = explain(json!([agent("a1", "cpus:4;mem:1024")]), "idle");
    assert!(find(&r, "no_frameworks")["text"].as_str().unwrap().contains("'idle'"));
}

#[test]
fn a_role_whose_frameworks_all_suppressed_cannot_receive() {
    let r = explain(
        json!([agent("a1", "cpus:4;mem:1024"), framework("f1", "r"),
               {"op": "suppress_offers", "framework": "f1", "roles": []}]),
        "r",
    );
    assert_eq!(find(&r, "no_receiving_framework")["frameworks"], 1);
}

#[test]
fn the_role_order_gives_rank_and_weighted_share() {
    let r = explain(
        json!([{"op": "update_weights", "weights": {"b": 2}},
               framework("fa", "a"), framework("fb", "b"),
               agent("a1", "cpus:4;mem:1024"), agent("a2", "cpus:4;mem:1024")]),
        "b",
    );
    let order = find(&r, "role_order");
    assert_eq!((order["rank"].clone(), order["of"].clone()), (json!(1), json!(2)));
    assert_eq!(order["weight"], 2.0);
    assert_eq!(order["weighted_share"], 0.25, "share 0.5 over weight 2: {order}");
}

#[test]
fn a_role_at_its_quota_limit_says_which_resource_and_how_much() {
    let r = explain(
        json!([{"op": "update_quota", "role": "r", "limits": "cpus:2"},
               agent("a1", "cpus:2;mem:1024"), agent("a2", "cpus:4;mem:1024"), framework("f1", "r")]),
        "r",
    );
    let q = find(&r, "quota_limit");
    assert_eq!(
        (q["resource"].clone(), q["consumed"].clone(), q["limit"].clone()),
        (json!("cpus"), json!(2.0), json!(2.0))
    );
}

#[test]
fn headroom_held_for_another_roles_guarantee_is_named_with_its_amount() {
    let r = explain(
        json!([{"op": "update_quota", "role": "q", "guarantees": "cpus:3"},
               agent("a1", "cpus:4;mem:1024"), framework("f1", "r")]),
        "r",
    );
    assert_eq!(find(&r, "quota_headroom")["held"], "cpus:3");
}

#[test]
fn a_paused_allocator_is_named() {
    let r = explain(json!([{"op": "pause"}, agent("a1", "cpus:4"), framework("f1", "r")]), "r");
    find(&r, "paused");
}

#[test]
fn nothing_free_is_named() {
    let r = explain(json!([agent("a1", "cpus:4;mem:1024"), framework("f1", "r")]), "r");
    find(&r, "no_free_resources");
}

#[test]
fn deactivated_agents_are_counted() {
    let r = explain(
        json!([agent("a1", "cpus:4"), agent("a2", "cpus:4"),
               {"op": "deactivate_agent", "agent": "a2"}, framework("f1", "r"),
               {"op": "recover_resources", "framework": "f1", "agent": "a1", "resources": "all"}]),
        "r",
    );
    assert_eq!(find(&r, "agents_deactivated")["agents"], 1);
}

#[test]
fn agents_in_maintenance_are_counted() {
    let r = explain(
        json!([{"op": "add_agent", "agent": "a1", "resources": "cpus:4", "unavailability": {"start": 0}},
               framework("f1", "r")]),
        "r",
    );
    assert_eq!(find(&r, "agents_in_maintenance")["agents"], 1);
}

#[test]
fn agents_off_the_whitelist_are_counted() {
    let r = explain(
        json!([{"op": "update_whitelist", "hostnames": ["h1"]},
               {"op": "add_agent", "agent": "a1", "hostname": "h1", "resources": "cpus:1"},
               {"op": "add_agent", "agent": "a2", "hostname": "h2", "resources": "cpus:4"},
               framework("f1", "r")]),
        "r",
    );
    assert_eq!(find(&r, "agents_off_whitelist")["agents"], 1);
}

#[test]
fn resources_reserved_to_other_roles_are_named_with_their_amount() {
    let r = explain(json!([agent("a1", "cpus:2;cpus(other):3"), framework("f1", "r")]), "r");
    assert_eq!(find(&r, "reserved_to_other_roles")["resources"], "cpus(other):3");
}

#[test]
fn refuse_filters_of_the_role_are_counted() {
    let r = explain(
        json!([agent("a1", "cpus:4"), agent("a2", "cpus:4"), framework("f1", "r"),
               {"op": "recover_resources", "framework": "f1", "agent": "a1", "resources": "all", "refuse_seconds": 100},
               {"op": "recover_resources", "framework": "f1", "agent": "a2", "resources": "all", "refuse_seconds": 100}]),
        "r",
    );
    assert_eq!(find(&r, "refuse_filters")["filters"], 2);
}

/// Two agents declined by `f1` in role `r` at time 0, for 100 and 50 seconds.
fn two_declines() -> Vec<Value> {
    vec![
        agent("a1", "cpus:4"),
        agent("a2", "cpus:4"),
        framework("f1", "r"),
        json!({"op": "recover_resources", "framework": "f1", "agent": "a1", "resources": "all", "refuse_seconds": 100}),
        json!({"op": "recover_resources", "framework": "f1", "agent": "a2", "resources": "all", "refuse_seconds": 50}),
    ]
}

#[test]
fn refuse_filters_per_framework_give_agents_expiries_and_cover() {
    let r = explain(Value::Array(two_declines()), "r");
    let f = &find(&r, "refuse_filters")["frameworks"][0];
    assert_eq!(
        [
            &f["framework"],
            &f["agents"],
            &f["earliest_expiry"],
            &f["latest_expiry"],
            &f["agents_covering_free"]
        ],
        [&json!("f1"), &json!(2), &json!(50.0), &json!(100.0), &json!(2)],
        "{f}"
    );
}

#[test]
fn an_expired_refuse_filter_no_longer_counts() {
    let mut events = two_declines();
    events.push(json!({"op": "advance", "seconds": 60}));
    let r = explain(Value::Array(events), "r");
    let f = &find(&r, "refuse_filters")["frameworks"][0];
    assert_eq!(
        [&f["agents"], &f["earliest_expiry"], &f["latest_expiry"]],
        [&json!(1), &json!(100.0), &json!(100.0)],
        "{f}"
    );
}

#[test]
fn a_framework_explanation_gives_its_own_refuse_filters_only() {
    let mut events = two_declines();
    events.push(framework("f2", "r"));
    events.push(json!({"op": "recover_resources", "framework": "f2", "agent": "a1", "resources": "all", "refuse_seconds": 30}));
    let role = explain(Value::Array(events.clone()), "r");
    assert_eq!(find(&role, "refuse_filters")["frameworks"].as_array().unwrap().len(), 2, "premise");
    let r = explain(Value::Array(events), "f1");
    let filters = find(&r, "refuse_filters");
    assert_eq!(filters["frameworks"].as_array().unwrap().len(), 1, "{filters}");
    assert_eq!(
        (filters["role"].clone(), filters["frameworks"][0]["framework"].clone()),
        (json!("r"), json!("f1"))
    );
}

#[test]
fn a_framework_without_region_awareness_hears_nothing_about_regions() {
    // No fault domains exist in the SPEC (ABI 1 AgentInfo has none): the region gate can
    // withhold nothing, so the explanation does not mention it.
    let r = explain(json!([agent("a1", "cpus:4;gpus:1"), framework("f1", "r")]), "f1");
    assert!(!r.is_empty());
    assert!(r.iter().all(|x| !x.to_string().to_lowercase().contains("region")), "{r:#?}");
}

#[test]
fn an_inactive_framework_is_named() {
    let r = explain(
        json!([agent("a1", "cpus:4"), framework("f1", "r"),
               {"op": "deactivate_framework", "framework": "f1"}]),
        "f1",
    );
    find(&r, "inactive");
}

#[test]
fn a_suppressed_framework_names_the_role() {
    let r = explain(
        json!([agent("a1", "cpus:4"), framework("f1", "r"),
               {"op": "suppress_offers", "framework": "f1", "roles": ["r"]}]),
        "f1",
    );
    assert_eq!(find(&r, "suppressed")["role"], "r");
}

#[test]
fn gpu_agents_withheld_from_a_framework_without_the_capability_are_counted() {
    let r = explain(json!([agent("a1", "cpus:4;gpus:2"), framework("f1", "r")]), "f1");
    assert_eq!(find(&r, "gpu_capability")["agents"], 1);
}

#[test]
fn revocable_resources_withheld_from_a_framework_without_the_capability_are_named() {
    let r = explain(
        json!([agent("a1", "cpus:2;cpus{revocable}:4"),
               {"op": "add_framework", "framework": "f1", "roles": ["r"], "capabilities": ["MULTI_ROLE"]}]),
        "f1",
    );
    assert_eq!(find(&r, "revocable_capability")["resources"], "cpus{revocable}:4");
}

#[test]
fn min_allocatable_resources_no_agent_meets_are_named() {
    let r = explain(
        json!([agent("a1", "cpus:1;mem:100"),
               {"op": "add_framework", "framework": "f1", "roles": ["r"],
                "min_allocatable_resources": {"r": ["cpus:2"]}}]),
        "f1",
    );
    assert_eq!(find(&r, "min_allocatable")["min_allocatable_resources"], json!(["cpus:2"]));
}
