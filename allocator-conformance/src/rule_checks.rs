//! The allocator checks added for the remaining rows of the "Who does what" table
//! (`docs/authoring.md`): refuse-filter clamps, per-framework minimum sets, agent capabilities,
//! GPU devices, `update_available`, and inverse-offer filters. Each failure cites its rule.

use allocator_api::{
    AgentCapabilities, FrameworkCapabilities, InverseOfferStatus, Operation, OperationKind,
    Quantities, RoleMinAllocatable, Unavailability,
};
use allocator_host::master::Command;
use allocator_host::registry::ModuleRegistry;

use crate::check::Check;
use crate::cluster::{Run, Step, agent, framework, recover, run, skipped_if_refused, verdict};

/// The check "clamps refuse filters as Mesos does": a negative `refuse_seconds` is a 5 s filter,
/// and a filter shorter than the allocation interval still blocks the first periodic run after
/// it was made (`L = max(t, allocation_interval)`). Each filter is tried alone: one framework,
/// one free agent, offered at t=0 and declined — so that a module that offers fewer agents per
/// run (a valid choice) is judged on its filters only, and a failure says what was offered when.
pub(crate) fn clamps_refuse_filters(registry: &ModuleRegistry, allocator: &str) -> Check {
    let declined = |refuse: f64| {
        let ops = vec![
            agent("a1", "cpus:2;mem:1024"),
            framework("f1", "r1"),
            recover("f1", "a1", Some(refuse)),
            Step::Advance(8.0),
        ];
        run(registry, allocator, 0, &ops)
    };
    let (clamped, short) = (declined(-1.0), declined(0.2));
    let name = "clamps refuse filters as Mesos does";
    for r in [&clamped, &short] {
        if r.error.is_some() || r.guard_dropped > 0 {
            return verdict(name, r, |_| None).citing(CLAMP_RULE);
        }
    }
    let judge = |r: &Run, what: &str, earliest: f64| -> Option<String> {
        let at: Vec<f64> = r.on("a1").map(|o| o.time).collect();
        let seen = || format!("offers of a1 at t={at:?}");
        if !r.declined_at(0.0, "f1", "a1") {
            return Some(format!(
                "f1, alone with one free agent, was not offered a1 at t=0, so it had nothing to decline ({}); the check needs that offer",
                seen()
            ));
        }
        let again: Vec<f64> = at.iter().copied().filter(|t| *t > 0.0).collect();
        match again.iter().find(|t| **t < earliest) {
            Some(t) => Some(format!("a1, {what}, was offered again at t={t} ({})", seen())),
            None if again.is_empty() => {
                Some(format!("a1, {what}, was never offered again in 8 s ({})", seen()))
            }
            None => None,
        }
    };
    let failure = judge(&clamped, "declined at t=0 with refuse_seconds -1 (a 5 s filter)", 5.0)
        .or_else(|| {
            judge(
                &short,
                "declined at t=0 for 0.2 s (a filter lasts at least one allocation interval, 1 s, and blocks the first periodic run)",
                1.0 + 1e-9,
            )
        });
    Check::new(name, failure).citing(CLAMP_RULE)
}

/// The rule [`clamps_refuse_filters`] cites.
const CLAMP_RULE: &str = "recover_resources: a negative refuse_seconds means 5 s; a filter lives max(t, allocation_interval) and blocks the first periodic run after it";

/// The check "honours per-framework minimum allocatable sets": a framework whose role asks
/// for at least `cpus:2` is never offered less.
pub(crate) fn honours_framework_minimums(registry: &ModuleRegistry, allocator: &str) -> Check {
    let mut f1 = framework("f1", "r1");
    if let Step::Command(Command::AddFramework { min_allocatable, .. }) = &mut f1 {
        min_allocatable.push(RoleMinAllocatable {
            role: "r1".into(),
            sets: vec![Quantities::parse("cpus:2").expect("valid")].into(),
        });
    }
    let ops = vec![
        agent("small", "cpus:1;mem:1024"),
        agent("big", "cpus:4;mem:1024"),
        f1,
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    let check = verdict("honours per-framework minimum allocatable sets", &r, |r| {
        let bad: Vec<String> = r
            .offers
            .iter()
            .filter(|o| o.resources.scalar("cpus").millis() < 2000)
            .map(|o| format!("{} on {}", o.resources, o.agent))
            .collect();
        if !bad.is_empty() {
            Some(format!("f1, whose minimum for r1 is cpus:2, was offered {}", bad.join("; ")))
        } else if r.on("big").next().is_none() {
            Some("f1 was offered nothing on an agent above its minimum".into())
        } else {
            None
        }
    });
    check.citing(
        "min_allocatable_resources: a framework's own sets for a role replace the global ones",
    )
}

/// The check "gates agents by capability": a `MULTI_ROLE` framework gets nothing from an
/// agent without `MULTI_ROLE`, a nested role nothing from one without `HIERARCHICAL_ROLE`.
pub(crate) fn gates_agents_by_capability(registry: &ModuleRegistry, allocator: &str) -> Check {
    let with_caps = |name: &str, caps: AgentCapabilities| {
        let mut step = agent(name, "cpus:2;mem:1024");
        if let Step::Command(Command::AddAgent { capabilities, .. }) = &mut step {
            *capabilities = Some(caps);
        }
        step
    };
    let ops = vec![
        with_caps("old", AgentCapabilities(0)),
        with_caps("flat", AgentCapabilities::MULTI_ROLE),
        agent("full", "cpus:2;mem:1024"),
        framework("f1", "r1"),
        framework("f2", "a/b"),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    let check = verdict("gates agents by capability", &r, |r| {
        let mut bad: Vec<String> = r
            .on("old")
            .map(|o| format!("{} got {} on old (no MULTI_ROLE)", o.framework, o.resources))
            .collect();
        bad.extend(r.on("flat").filter(|o| o.role.contains('/')).map(|o| {
            format!(
                "{} got {} for nested role {} on flat (no HIERARCHICAL_ROLE)",
                o.framework, o.resources, o.role
            )
        }));
        if !bad.is_empty() {
            Some(bad.join("; "))
        } else if r.offers.is_empty() {
            Some("it offered nothing, not even on the agent with every capability".into())
        } else {
            None
        }
    });
    check.citing(
        "agent capabilities: no MULTI_ROLE agent for a MULTI_ROLE framework, no HIERARCHICAL_ROLE agent for a nested role",
    )
}

/// The check "never over-commits a GPU device": on an agent whose GPUs are devices, what is
/// offered, given back and offered again never holds more of a device than it has (the guard
/// cuts an over-commit, which fails the check), and only GPU frameworks get the agent.
pub(crate) fn never_over_commits_a_device(registry: &ModuleRegistry, allocator: &str) -> Check {
    let gpu_framework = |name: &str, role: &str| {
        let mut step = framework(name, role);
        if let Step::Command(Command::AddFramework { capabilities, .. }) = &mut step {
            *capabilities = capabilities.with(FrameworkCapabilities::GPU_RESOURCES);
        }
        step
    };
    let ops = vec![
        agent("d", "cpus:4;mem:4096;gpus[0]:1;gpus[1]:1"),
        gpu_framework("f1", "r1"),
        gpu_framework("f2", "r2"),
        Step::Tick,
        recover("f1", "d", Some(0.0)),
        recover("f2", "d", Some(0.0)),
        Step::Advance(3.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    verdict("never over-commits a GPU device", &r, |r| {
        r.offers.is_empty().then(|| "it offered nothing on an agent with GPU devices".into())
    })
    .citing("GPU devices: offer device entries out of what is free on each device")
}

/// The check "applies the operations it accepts (update_available)": a module that accepts
/// a reservation of free resources must offer them only to the reserving role afterwards.
pub(crate) fn applies_update_available(registry: &ModuleRegistry, allocator: &str) -> Check {
    const NAME: &str = "applies the operations it accepts (update_available)";
    let reserve = Operation {
        kind: OperationKind::RESERVE,
        resources: "cpus(r1){dynamic}:2".parse().expect("valid"),
    };
    let ops = vec![
        agent("a1", "cpus:4;mem:400"),
        Step::Command(Command::UpdateAvailable { agent: "a1".into(), operations: vec![reserve] }),
        framework("f2", "r2"),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    if let Some(skipped) = skipped_if_refused(NAME, &r, "operations") {
        return skipped;
    }
    verdict(NAME, &r, |r| {
        let cpus: i64 = r.on("a1").map(|o| o.resources.scalar("cpus").millis()).sum();
        (cpus != 2000).then(|| {
            format!("after 2 of a1's 4 free CPUs were reserved to r1, r2 was offered {cpus} milli-CPU, not 2000")
        })
    })
    .citing("update_available: a module that accepts operations must apply them to its books")
}

/// The check "inverse offers respect their filters": a module that sends inverse offers (an
/// optional feature) sends none to a framework that declined one with a filter while the filter
/// lasts, and sends again after `revive_offers` clears it. Skipped for a module that sends none.
pub(crate) fn inverse_offers_respect_filters(registry: &ModuleRegistry, allocator: &str) -> Check {
    const NAME: &str = "inverse offers respect their filters";
    let mut m = agent("m", "cpus:2;mem:1024");
    if let Step::Command(Command::AddAgent { unavailability, .. }) = &mut m {
        *unavailability = Some(Unavailability { start: 100.0, duration: Some(50.0).into() });
    }
    let ops = vec![
        m,
        framework("f1", "r1"),
        Step::Tick,
        Step::Command(Command::UpdateInverseOffer {
            agent: "m".into(),
            framework: "f1".into(),
            status: Some(InverseOfferStatus::DECLINE),
            refuse_seconds: Some(3600.0),
        }),
        Step::Advance(2.5),
        Step::Command(Command::ReviveOffers("f1".into(), vec![])),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    if r.error.is_none() && r.inverse_offers.is_empty() {
        return Check {
            name: NAME,
            failure: None,
            skipped: Some("it sends no inverse offers: maintenance is optional".into()),
        };
    }
    let (answered_at, revived_at) = (1.0, 3.5 - 1e-9);
    verdict(NAME, &r, |r| {
        let during: Vec<f64> = r
            .inverse_offers
            .iter()
            .filter(|(t, f, _)| *t > answered_at && *t < revived_at && f == "f1")
            .map(|(t, ..)| *t)
            .collect();
        if let Some(t) = during.first() {
            Some(format!(
                "f1 declined its inverse offer for m with a one-hour filter, and got another at t={t}"
            ))
        } else if !r.inverse_offers.iter().any(|(t, f, _)| *t >= revived_at && f == "f1") {
            Some("after revive_offers cleared f1's inverse-offer filter, m sent it no inverse offer".into())
        } else {
            None
        }
    })
    .citing(
        "update_inverse_offer: a filter blocks inverse offers to that framework for that agent; revive_offers clears it",
    )
}

/// `update_quota` of `role` with `guarantees` and `limits` (quantity text).
fn quota(role: &str, guarantees: &str, limits: &str) -> Step {
    let q = |t: &str| Quantities::parse(t).expect("valid quantities");
    Step::Command(Command::UpdateQuota(
        role.into(),
        allocator_api::Quota { guarantees: q(guarantees), limits: q(limits) },
    ))
}

/// The CPUs offered to `role` in `r`, in milli-CPU (nothing is given back in these runs, so
/// this is what the role holds).
fn cpus_offered_to(r: &crate::cluster::Run, role: &str) -> i64 {
    r.offers.iter().filter(|o| o.role == role).map(|o| o.resources.scalar("cpus").millis()).sum()
}

/// The check "respects the quota limits it accepts": a module that accepts a limit of
/// `cpus:2` for a role never lets the role hold more. Skipped for a module that refuses quotas
/// (the trait's default since API 1.2).
pub(crate) fn respects_quota_limits(registry: &ModuleRegistry, allocator: &str) -> Check {
    const NAME: &str = "respects the quota limits it accepts";
    let ops = vec![
        agent("a1", "cpus:4;mem:4096"),
        agent("a2", "cpus:4;mem:4096"),
        quota("r1", "", "cpus:2"),
        framework("f1", "r1"),
        Step::Advance(3.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    if let Some(skipped) = skipped_if_refused(NAME, &r, "quotas") {
        return skipped;
    }
    verdict(NAME, &r, |r| {
        let cpus = cpus_offered_to(r, "r1");
        if cpus > 2000 {
            Some(format!("r1, limited to cpus:2, was offered {cpus} milli-CPU"))
        } else if cpus == 0 {
            Some("r1, limited to cpus:2, was offered no CPU at all".into())
        } else {
            None
        }
    })
    .citing("update_quota: once it accepts a limit, a module never offers a role beyond it")
}

/// The check "holds back the quota guarantees it accepts": with `cpus:4` of 8 guaranteed to a
/// role that has no framework yet, another role is never offered more than the other 4 (the
/// headroom is held back). Skipped for a module that refuses quotas.
pub(crate) fn holds_back_quota_guarantees(registry: &ModuleRegistry, allocator: &str) -> Check {
    const NAME: &str = "holds back the quota guarantees it accepts";
    let ops = vec![
        agent("a1", "cpus:4;mem:4096"),
        agent("a2", "cpus:4;mem:4096"),
        quota("r2", "cpus:4", ""),
        framework("f1", "r1"),
        Step::Advance(3.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    if let Some(skipped) = skipped_if_refused(NAME, &r, "quotas") {
        return skipped;
    }
    verdict(NAME, &r, |r| {
        let cpus = cpus_offered_to(r, "r1");
        if cpus > 4000 {
            Some(format!(
                "with cpus:4 of 8 guaranteed to r2 (no framework yet), r1 was offered {cpus} milli-CPU"
            ))
        } else if cpus == 0 {
            Some("r1 was offered no CPU, though 4 were not guaranteed to anyone".into())
        } else {
            None
        }
    })
    .citing(
        "update_quota: once it accepts a guarantee, a module holds its unmet part back from other roles",
    )
}
