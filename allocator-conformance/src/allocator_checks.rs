//! The allocator checks: each runs a short list of [`Step`]s against the allocator under test
//! through the host's master core (offer guard included) and judges what it offered. Every
//! check but *stays deterministic under a seed* also fails when the guard had to cut an offer.

use allocator_api::Resources;
use allocator_host::master::Command;
use allocator_host::registry::ModuleRegistry;

use crate::check::Check;
use crate::cluster::{Step, agent, framework, recover, run, skipped_if_refused, verdict};
use crate::{request_checks, rule_checks};

/// Runs every allocator check against `allocator` (a loaded allocator module or
/// `hierarchical`); `time_bound_ms` is the longest acceptable periodic run on the 1,000-agent
/// cluster of *answers within a time bound*.
pub fn run_allocator_checks(
    registry: &ModuleRegistry,
    allocator: &str,
    time_bound_ms: f64,
) -> Vec<Check> {
    let mut checks = vec![
        never_over_offers(registry, allocator),
        no_offers_to_inactive_or_suppressed(registry, allocator),
        respects_refuse_filters(registry, allocator),
        never_offers_another_roles_reservation(registry, allocator),
        handles_removals_with_outstanding_offers(registry, allocator),
        recovers_all_resources(registry, allocator),
        counts_used_once(registry, allocator),
        deterministic_under_a_seed(registry, allocator),
        applies_the_operations_it_accepts(registry, allocator),
        honours_the_whitelist(registry, allocator),
        offers_nothing_while_paused(registry, allocator),
        keeps_gpu_agents_for_gpu_frameworks(registry, allocator),
        offers_no_less_than_the_minimum(registry, allocator),
        revive_clears_refuse_filters(registry, allocator),
        rule_checks::clamps_refuse_filters(registry, allocator),
        rule_checks::honours_framework_minimums(registry, allocator),
        rule_checks::gates_agents_by_capability(registry, allocator),
        rule_checks::never_over_commits_a_device(registry, allocator),
        rule_checks::applies_update_available(registry, allocator),
        rule_checks::inverse_offers_respect_filters(registry, allocator),
        rule_checks::respects_quota_limits(registry, allocator),
        rule_checks::holds_back_quota_guarantees(registry, allocator),
    ];
    checks.extend(request_checks::request_checks(registry, allocator));
    checks.push(answers_within_a_time_bound(registry, allocator, time_bound_ms));
    checks
}

/// The check "honours the whitelist": no offer on an agent whose hostname is not listed.
fn honours_the_whitelist(registry: &ModuleRegistry, allocator: &str) -> Check {
    let ops = vec![
        agent("a1", "cpus:2;mem:1024"),
        agent("a2", "cpus:2;mem:1024"),
        Step::Command(Command::UpdateWhitelist(Some(vec!["a1".into()]))),
        framework("f1", "r1"),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    let check = verdict("honours the whitelist", &r, |r| {
        let bad: Vec<String> = r
            .offers
            .iter()
            .filter(|o| o.agent == "a2")
            .map(|o| format!("{} on a2", o.resources))
            .collect();
        if !bad.is_empty() {
            Some(format!("with only a1 whitelisted it offered {}", bad.join("; ")))
        } else if !r.offers.iter().any(|o| o.agent == "a1") {
            Some("it offered nothing on the whitelisted a1".into())
        } else {
            None
        }
    });
    check.citing("update_whitelist: a module must offer only whitelisted agents")
}

/// The check "offers nothing while paused": no offer between `pause` and `resume`, offers
/// again after.
fn offers_nothing_while_paused(registry: &ModuleRegistry, allocator: &str) -> Check {
    let ops = vec![
        agent("a1", "cpus:2;mem:1024"),
        Step::Command(Command::Pause),
        framework("f1", "r1"),
        Step::Advance(2.0),
        Step::Command(Command::Resume),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    let check = verdict("offers nothing while paused", &r, |r| {
        let during: Vec<String> = r
            .offers
            .iter()
            .filter(|o| o.time <= 2.0)
            .map(|o| format!("{} on {} at t={}", o.resources, o.agent, o.time))
            .collect();
        if !during.is_empty() {
            Some(format!("while paused it offered {}", during.join("; ")))
        } else if r.offers.is_empty() {
            Some("it offered nothing after resume".into())
        } else {
            None
        }
    });
    check
        .citing("pause: a module must make no offers until resume; the host keeps calling allocate")
}

/// The check "offers no less than the minimum allocatable": with Mesos's default minimum
/// (`cpus:0.01` or `mem:32`), an agent with less of both free is not offered.
fn offers_no_less_than_the_minimum(registry: &ModuleRegistry, allocator: &str) -> Check {
    let ops = vec![
        agent("sliver", "cpus:0.005;mem:16"),
        agent("room", "cpus:1;mem:64"),
        framework("f1", "r1"),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    let check = verdict("offers no less than the minimum allocatable", &r, |r| {
        let bad: Vec<String> = r
            .offers
            .iter()
            .filter(|o| o.agent == "sliver")
            .map(|o| format!("{} on sliver", o.resources))
            .collect();
        if !bad.is_empty() {
            Some(format!("below the minimum (cpus:0.01 or mem:32) it offered {}", bad.join("; ")))
        } else if !r.offers.iter().any(|o| o.agent == "room") {
            Some("it offered nothing on an agent above the minimum".into())
        } else {
            None
        }
    });
    check
        .citing("min_allocatable_resources: every offer must hold at least one of the minimum sets")
}

/// The check "revive clears refuse filters": a framework that declined an agent for an hour
/// and then revives is offered it again.
fn revive_clears_refuse_filters(registry: &ModuleRegistry, allocator: &str) -> Check {
    let ops = vec![
        agent("a1", "cpus:2;mem:1024"),
        framework("f1", "r1"),
        Step::Tick,
        recover("f1", "a1", Some(3600.0)),
        Step::Advance(2.0),
        Step::Command(Command::ReviveOffers("f1".into(), vec![])),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    // Any offer of a1 after the decline at t = 1 passes: a module that ignores filters
    // altogether offers it at once (*respects refuse filters* fails it); one that keeps the
    // filter offers it never. Only a decline of what was offered is judged.
    let check = verdict("revive clears refuse filters", &r, |r| {
        let at: Vec<f64> = r.on("a1").map(|o| o.time).collect();
        if !r.declined_at(1.0, "f1", "a1") {
            Some(format!(
                "f1, alone with one free agent, held nothing on a1 at t=1 (offers of a1 at t={at:?}), so it had nothing to decline; the check needs that offer"
            ))
        } else if !at.iter().any(|t| *t > 1.0) {
            Some(format!(
                "after revive_offers at t=3, a1 (declined for an hour at t=1) was not offered again (offers of a1 at t={at:?})"
            ))
        } else {
            None
        }
    });
    check.citing(
        "revive_offers: a module must clear the framework's refuse filters for the revived roles",
    )
}

/// The check "keeps GPU agents for GPU frameworks": with GPU filtering (the default), a
/// framework without `GPU_RESOURCES` gets nothing from an agent with GPUs.
fn keeps_gpu_agents_for_gpu_frameworks(registry: &ModuleRegistry, allocator: &str) -> Check {
    let ops = vec![
        agent("gpu", "cpus:2;mem:1024;gpus:1"),
        agent("plain", "cpus:2;mem:1024"),
        framework("f1", "r1"),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    let check = verdict("keeps GPU agents for GPU frameworks", &r, |r| {
        let bad: Vec<String> = r
            .offers
            .iter()
            .filter(|o| o.agent == "gpu")
            .map(|o| format!("{} on gpu", o.resources))
            .collect();
        if !bad.is_empty() {
            Some(format!("a framework without GPU_RESOURCES was offered {}", bad.join("; ")))
        } else if !r.offers.iter().any(|o| o.agent == "plain") {
            Some("it offered nothing on the agent without GPUs".into())
        } else {
            None
        }
    });
    check.citing(
        "filter_gpu_resources: a framework without GPU_RESOURCES must get nothing from an agent with GPUs",
    )
}

/// The check "never offers more than an agent has".
fn never_over_offers(registry: &ModuleRegistry, allocator: &str) -> Check {
    let ops = vec![
        agent("a1", "cpus:4;mem:4096"),
        agent("a2", "cpus:2;mem:2048;ports:[31000-31099]"),
        framework("f1", "r1"),
        framework("f2", "r2"),
        Step::Tick,
        recover("f1", "a1", Some(0.0)),
        Step::Tick,
        recover("f2", "a2", Some(0.0)),
        Step::Advance(3.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    verdict("never offers more than an agent has", &r, |r| {
        r.offers.is_empty().then(|| "it made no offer at all on an idle cluster".to_owned())
    })
}

/// The check "never offers to inactive or suppressed frameworks".
fn no_offers_to_inactive_or_suppressed(registry: &ModuleRegistry, allocator: &str) -> Check {
    let mut ops = vec![agent("a1", "cpus:4;mem:4096"), agent("a2", "cpus:4;mem:4096")];
    ops.extend([
        framework("inactive", "r1"),
        framework("suppressed", "r2"),
        framework("active", "r3"),
    ]);
    ops.extend([
        Step::Command(Command::DeactivateFramework("inactive".into())),
        Step::Command(Command::SuppressOffers("suppressed".into(), vec![])),
        recover("inactive", "a1", Some(0.0)),
        recover("inactive", "a2", Some(0.0)),
        recover("suppressed", "a1", Some(0.0)),
        recover("suppressed", "a2", Some(0.0)),
        Step::Advance(3.0),
    ]);
    let r = run(registry, allocator, 0, &ops);
    verdict("never offers to inactive or suppressed frameworks", &r, |r| {
        let after_setup = r.offers.iter().filter(|o| o.time > 0.0);
        let bad: Vec<String> = after_setup
            .filter(|o| o.framework == "inactive" || o.framework == "suppressed")
            .map(|o| format!("{} got {} on {} at t={}", o.framework, o.resources, o.agent, o.time))
            .collect();
        (!bad.is_empty()).then(|| bad.join("; "))
    })
}

/// The check "respects refuse filters".
fn respects_refuse_filters(registry: &ModuleRegistry, allocator: &str) -> Check {
    let ops = vec![
        agent("a1", "cpus:4;mem:4096"),
        framework("f1", "r1"),
        recover("f1", "a1", Some(10.0)),
        Step::Advance(5.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    verdict("respects refuse filters", &r, |r| {
        if !r.declined_at(0.0, "f1", "a1") {
            let at: Vec<f64> = r.on("a1").map(|o| o.time).collect();
            return Some(format!(
                "f1, alone with one free agent, was not offered a1 at t=0 (offers of a1 at t={at:?}), so it had nothing to decline; the check needs that offer"
            ));
        }
        let bad: Vec<String> = r
            .offers
            .iter()
            .filter(|o| o.time > 0.0)
            .map(|o| {
                format!(
                    "{} on {} at t={}, declined at t=0 with a 10 s filter",
                    o.resources, o.agent, o.time
                )
            })
            .collect();
        (!bad.is_empty()).then(|| bad.join("; "))
    })
}

/// The check "never offers a role another role's reservation".
fn never_offers_another_roles_reservation(registry: &ModuleRegistry, allocator: &str) -> Check {
    let ops = vec![
        framework("f1", "r1"),
        agent("a1", "cpus:2;mem:1024;cpus(r2):2;mem(r2):1024"),
        Step::Tick,
        recover("f1", "a1", Some(0.0)),
        Step::Tick,
    ];
    let r = run(registry, allocator, 0, &ops);
    verdict("never offers a role another role's reservation", &r, |r| {
        let bad: Vec<String> = r
            .offers
            .iter()
            .filter(|o| o.resources.iter().any(|x| !x.is_allocatable_to(&o.role)))
            .map(|o| format!("{} offered to role {}", o.resources, o.role))
            .collect();
        (!bad.is_empty()).then(|| bad.join("; "))
    })
}

/// The check "handles removal of agents and frameworks with outstanding offers".
fn handles_removals_with_outstanding_offers(registry: &ModuleRegistry, allocator: &str) -> Check {
    let ops = vec![
        agent("a1", "cpus:2;mem:1024"),
        framework("f1", "r1"),
        Step::Command(Command::RemoveFramework("f1".into())),
        framework("f2", "r2"),
        Step::Advance(2.0),
        Step::Command(Command::RemoveAgent("a1".into())),
        agent("a2", "cpus:2;mem:1024"),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    verdict("handles removal of agents and frameworks with outstanding offers", &r, |r| {
        let f2_a1 = r.offers.iter().any(|o| o.framework == "f2" && o.agent == "a1");
        let f2_a2 = r.offers.iter().any(|o| o.framework == "f2" && o.agent == "a2");
        if !f2_a1 {
            Some("the resources of a removed framework were never offered again".into())
        } else if !f2_a2 {
            Some("an agent added after a removal was never offered".into())
        } else {
            None
        }
    })
}

/// The check "recovers all resources".
fn recovers_all_resources(registry: &ModuleRegistry, allocator: &str) -> Check {
    let total: Resources = "cpus:4;mem:4096;disk:100".parse().expect("valid");
    let ops = vec![
        agent("a1", "cpus:4;mem:4096;disk:100"),
        framework("f1", "r1"),
        Step::Tick,
        recover("f1", "a1", None),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    verdict("recovers all resources", &r, |r| {
        let mut seen = Resources::new();
        for o in r.offers.iter().filter(|o| o.time > 1.0) {
            seen.add(&o.resources);
        }
        (!seen.contains(&total))
            .then(|| format!("after everything was given back, only {seen} was offered again"))
    })
}

/// The check "counts what agents and frameworks already use, once".
fn counts_used_once(registry: &ModuleRegistry, allocator: &str) -> Check {
    // A master failover: the agent comes back first, reporting what a framework not added yet
    // uses; the framework then comes back reporting (part of) the same resources. What both
    // report counts once, and only the rest of the agent is free (`Allocator::add_agent`).
    let used = "cpus:3;mem:3072";
    let mut with_used = agent("a1", "cpus:4;mem:4096");
    if let Step::Command(Command::AddAgent { used: u, .. }) = &mut with_used {
        u.push(("f1".into(), Some("r1".into()), used.parse().expect("valid")));
    }
    let mut returning = framework("f1", "r1");
    if let Step::Command(Command::AddFramework { used: u, .. }) = &mut returning {
        u.push(("a1".into(), used.parse().expect("valid")));
    }
    let ops = vec![with_used, returning, framework("f2", "r2"), Step::Advance(2.0)];
    let r = run(registry, allocator, 0, &ops);
    verdict("counts what agents and frameworks already use, once", &r, |r| {
        let mut seen = Resources::new();
        for o in r.offers.iter().filter(|o| o.agent == "a1") {
            seen.add(&o.resources);
        }
        let free: Resources = "cpus:1;mem:1024".parse().expect("valid");
        (!seen.contains(&free))
            .then(|| format!("of the {free} left free by what was in use, only {seen} was offered"))
    })
}

/// The check "stays deterministic under a seed".
fn deterministic_under_a_seed(registry: &ModuleRegistry, allocator: &str) -> Check {
    let ops: Vec<Step> = (0..20)
        .map(|i| agent(&format!("a{i}"), "cpus:4;mem:4096"))
        .chain((0..5).map(|i| framework(&format!("f{i}"), &format!("r{}", i % 2))))
        .chain((0..20).map(|i| recover(&format!("f{}", i % 5), &format!("a{i}"), Some(0.0))))
        .chain([Step::Advance(3.0)])
        .collect();
    let (a, b) = (run(registry, allocator, 7, &ops), run(registry, allocator, 7, &ops));
    let failure = if let Some(e) = a.error.or(b.error) {
        Some(format!("the run failed: {e}"))
    } else if a.stream != b.stream {
        Some("two runs with seed 7 made different offers".into())
    } else {
        None
    };
    Check::new("stays deterministic under a seed", failure)
}

/// The check "applies the operations it accepts (update_allocation)": a module may refuse
/// operations (the trait's default answers `unsupported`, and the host then refuses the
/// operation, so the books agree); one that accepts them must apply them to its own books, or a
/// later call breaks: here a framework reserves half an agent's CPUs for its role and gives
/// everything back; another role must then be offered only the unreserved half.
fn applies_the_operations_it_accepts(registry: &ModuleRegistry, allocator: &str) -> Check {
    const NAME: &str = "applies the operations it accepts (update_allocation)";
    let reserve = allocator_api::Operation {
        kind: allocator_api::OperationKind::RESERVE,
        resources: "cpus(r1){dynamic}:2".parse().expect("valid"),
    };
    let ops = vec![
        agent("a1", "cpus:4;mem:400"),
        framework("f1", "r1"),
        Step::Tick,
        Step::Command(Command::UpdateAllocation {
            framework: "f1".into(),
            agent: "a1".into(),
            role: "r1".into(),
            operations: vec![reserve],
        }),
        framework("f2", "r2"),
        recover("f1", "a1", Some(3600.0)),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    if let Some(skipped) = skipped_if_refused(NAME, &r, "operations") {
        return skipped;
    }
    let check = verdict(NAME, &r, |r| {
        let to_f2: Vec<&Resources> =
            r.offers.iter().filter(|o| o.framework == "f2").map(|o| &o.resources).collect();
        let cpus: i64 = to_f2.iter().map(|o| o.scalar("cpus").millis()).sum();
        (cpus != 2000).then(|| {
            format!("after 2 of a1's 4 CPUs were reserved to r1, r2 was offered {cpus} milli-CPU, not 2000")
        })
    });
    check.citing("update_allocation: a module that accepts operations must apply them to its books")
}

/// The check "answers within a time bound on a 1,000-agent cluster".
fn answers_within_a_time_bound(
    registry: &ModuleRegistry,
    allocator: &str,
    time_bound_ms: f64,
) -> Check {
    let mut ops: Vec<Step> = (0..1000)
        .map(|i| agent(&format!("a{i:04}"), "cpus:8;mem:16384;ports:[31000-32000]"))
        .collect();
    ops.extend((0..100).map(|i| framework(&format!("f{i}"), &format!("r{}", i % 10))));
    ops.push(Step::Advance(3.0));
    let r = run(registry, allocator, 0, &ops);
    verdict("answers within a time bound on a 1,000-agent cluster", &r, |r| {
        let worst = r.periodic_ms.iter().copied().fold(0.0, f64::max);
        (worst > time_bound_ms).then(|| format!("a periodic allocation run over 1,000 agents took {worst:.1} ms, over the {time_bound_ms} ms bound"))
    })
}
