//! The checks that send requests (ABI 3, [`Allocator::request`]): each states a framework's
//! demand through the host and judges the offers against the rule of the request contract it
//! is named after. They apply to a module that honours requests: one whose offers follow a
//! stated request. A module whose offers a request does not change at all ignores requests,
//! as the built-in allocator does (and Mesos's), and gets every check here skipped, never
//! failed; so does one that refuses the call.
//!
//! In every check the framework states its requests before any agent joins, so that the first
//! offers already answer them.
//!
//! [`Allocator::request`]: allocator_api::Allocator::request

use allocator_api::{Attribute, Constraint, Request, Resources};
use allocator_host::master::Command;
use allocator_host::registry::ModuleRegistry;

use crate::check::Check;
use crate::cluster::{Offer, Run, Step, agent, framework, run, verdict};

/// One task of the checks' requests.
const TASK: &str = "cpus:1;mem:128";

/// The rule every failure here cites.
const RULE: &str = "request: a module that honours requests places each task exactly as asked (count, resources, role, constraints), a gang whole in one run or not at all, nothing withdrawn, nothing while the framework is inactive or the role suppressed";

/// The checks of this file, by name and function, in the order they run.
type RequestCheck = fn(&ModuleRegistry, &str) -> Check;
const CHECKS: [(&str, RequestCheck); 8] = [
    (NO_MORE_THAN_ASKED, no_more_than_asked),
    (NO_MORE_THAN_THE_AGENT_HAS, no_more_than_the_agent_has),
    (GANG_WHOLE, gang_whole_or_not_at_all),
    (WITHDRAWN, never_places_a_withdrawn_request),
    (ACROSS_DEACTIVATION, keeps_requests_across_deactivation),
    (ACROSS_SUPPRESSION, keeps_requests_across_suppression),
    (UNDER_ITS_ROLE, places_under_the_requests_role),
    (CONSTRAINTS, honours_constraints),
];

const NO_MORE_THAN_ASKED: &str = "places no more tasks than a request asks, each as asked";
const NO_MORE_THAN_THE_AGENT_HAS: &str = "places no more on an agent than it has";
const GANG_WHOLE: &str = "offers a gang whole in one run or not at all";
const WITHDRAWN: &str = "never places a withdrawn request";
const ACROSS_DEACTIVATION: &str = "keeps requests across deactivate and reactivate";
const ACROSS_SUPPRESSION: &str = "keeps requests across suppress and revive";
const UNDER_ITS_ROLE: &str = "places a request under its role";
const CONSTRAINTS: &str = "honours request constraints";

/// The request checks against `allocator`: skipped, each with the reason, when it ignores or
/// refuses requests ([`ignores_requests`]).
pub(crate) fn request_checks(registry: &ModuleRegistry, allocator: &str) -> Vec<Check> {
    if let Some(why) = ignores_requests(registry, allocator) {
        return CHECKS
            .iter()
            .map(|&(name, _)| Check { name, failure: None, skipped: Some(why.clone()) })
            .collect();
    }
    CHECKS.iter().map(|(_, check)| check(registry, allocator)).collect()
}

/// Why the request checks do not apply to `allocator`, or `None` when they do: one agent, one
/// framework, run once without a request and once with a request of one small task. Offers
/// identical in both runs mean the module ignores requests; a refused `request` call means it
/// refuses them.
fn ignores_requests(registry: &ModuleRegistry, allocator: &str) -> Option<String> {
    let steps = |requests: Option<Vec<Request>>| {
        let mut steps = vec![framework("f1", "r1")];
        steps.extend(requests.map(|r| state("f1", r)));
        steps.extend([agent("a1", "cpus:4;mem:1024"), Step::Advance(2.0)]);
        steps
    };
    let without = run(registry, allocator, 0, &steps(None));
    let with = run(registry, allocator, 0, &steps(Some(vec![Request::task("r1", task())])));
    if without.error.is_none()
        && let Some(e) = &with.error
    {
        // The report shows what follows the last ": " (as for the other skips).
        return Some(format!("{e}: it refuses requests, so none reaches it"));
    }
    (without.error.is_none() && with.error.is_none() && without.stream == with.stream).then(|| {
        "it ignores requests, as the built-in does (a stated request changed none of its offers)"
            .to_owned()
    })
}

/// The framework `fw` states `requests` (Mesos's `REQUEST`), replacing what it stated before.
fn state(fw: &str, requests: Vec<Request>) -> Step {
    Step::Command(Command::RequestResources { framework: fw.into(), requests })
}

/// One task of [`TASK`].
fn task() -> Resources {
    TASK.parse().expect("valid")
}

/// `add_agent` with attributes `(name, value)`.
fn agent_with(name: &str, resources: &str, attributes: &[(&str, &str)]) -> Step {
    let mut step = agent(name, resources);
    if let Step::Command(Command::AddAgent { attributes: a, .. }) = &mut step {
        a.extend(
            attributes.iter().map(|(n, v)| Attribute { name: (*n).into(), value: (*v).into() }),
        );
    }
    step
}

/// How many tasks of `each` `offered` is exactly (`None`: not a whole number of them).
fn tasks_in(offered: &Resources, each: &Resources) -> Option<u32> {
    let per = each.scalar("cpus").millis();
    let n = if per > 0 { offered.scalar("cpus").millis() / per } else { 0 };
    let mut whole = Resources::new();
    for _ in 0..n {
        whole.add(each);
    }
    (n > 0 && whole.contains(offered) && offered.contains(&whole)).then_some(n as u32)
}

/// An offer as a failure names it.
fn describe(o: &Offer) -> String {
    format!("{} on {} under '{}' at t={}", o.resources, o.agent, o.role, o.time)
}

/// The offers as a failure lists them.
fn list<'a>(offers: impl IntoIterator<Item = &'a Offer>) -> String {
    let all: Vec<String> = offers.into_iter().map(describe).collect();
    if all.is_empty() { "no offer".to_owned() } else { all.join("; ") }
}

/// One offer that placed tasks of a request: `tasks` of `requests[request]`.
struct Placed<'a> {
    offer: &'a Offer,
    request: usize,
    tasks: u32,
}

/// The offers to `fw` from time `from` on that placed tasks of its `requests`, in order. While
/// a request is outstanding each offer must be whole tasks of a request under the offer's role
/// (else the failure says which offer); once all are placed the framework has no demand left
/// and may be offered anything, and only offers that are again whole tasks of a request are
/// listed (tasks placed twice). The checks' agents are sized so that what is left of one after
/// its tasks is never whole tasks.
fn placed<'a>(
    r: &'a Run,
    fw: &'a str,
    requests: &[Request],
    from: f64,
) -> Result<Vec<Placed<'a>>, String> {
    let mut out: Vec<Placed<'a>> = Vec::new();
    let mut done = vec![0u32; requests.len()];
    let mut run = None;
    let mut outstanding = true;
    for o in r.to(fw).filter(|o| o.time >= from) {
        if run != Some(o.run) {
            // A new run: its offers are judged against what was outstanding before it.
            run = Some(o.run);
            outstanding = requests.iter().zip(&done).any(|(q, n)| *n < q.count);
        }
        let whole = requests.iter().enumerate().find_map(|(i, q)| {
            (q.role.as_str() == o.role)
                .then(|| tasks_in(&o.resources, &q.resources))
                .flatten()
                .map(|k| (i, k))
        });
        match whole {
            Some((request, tasks)) => {
                done[request] += tasks;
                out.push(Placed { offer: o, request, tasks });
            }
            None if outstanding => {
                let stated: Vec<String> = requests.iter().map(Request::to_string).collect();
                return Err(format!(
                    "{fw}, which stated [{}], was offered {} while tasks were outstanding — not a whole number of tasks of a request under '{}'",
                    stated.join("; "),
                    describe(o),
                    o.role
                ));
            }
            None => {}
        }
    }
    Ok(out)
}

/// The tasks of `placed` in all.
fn total(placed: &[Placed<'_>]) -> u32 {
    placed.iter().map(|p| p.tasks).sum()
}

/// The offers of `placed`, as a failure lists them.
fn list_placed(placed: &[Placed<'_>]) -> String {
    list(placed.iter().map(|p| p.offer))
}

/// The check "places no more tasks than a request asks, each as asked": 3 tasks asked on a
/// cluster with room for 8.
fn no_more_than_asked(registry: &ModuleRegistry, allocator: &str) -> Check {
    let request = Request::tasks("r1", 3, task());
    let ops = vec![
        framework("f1", "r1"),
        state("f1", vec![request.clone()]),
        agent("a1", "cpus:4;mem:1000"),
        agent("a2", "cpus:4;mem:1000"),
        Step::Advance(3.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    verdict(NO_MORE_THAN_ASKED, &r, |r| {
        let placed = match placed(r, "f1", std::slice::from_ref(&request), 0.0) {
            Ok(p) => p,
            Err(e) => return Some(e),
        };
        match total(&placed) {
            0 => Some(format!(
                "f1 stated {request} on an idle cluster with room for 8 such tasks and was offered none of them ({})",
                list(r.to("f1"))
            )),
            n if n > request.count => Some(format!(
                "f1 stated {request} and was offered {n} tasks: {}",
                list_placed(&placed)
            )),
            _ => None,
        }
    })
    .citing(RULE)
}

/// The check "places no more on an agent than it has": 4 tasks asked where a1 has room for 2
/// and a2, short of memory, for none.
fn no_more_than_the_agent_has(registry: &ModuleRegistry, allocator: &str) -> Check {
    let request = Request::tasks("r1", 4, task());
    let totals = [("a1", "cpus:2;mem:1000"), ("a2", "cpus:4;mem:100")];
    let mut ops = vec![framework("f1", "r1"), state("f1", vec![request.clone()])];
    ops.extend(totals.iter().map(|(name, total)| agent(name, total)));
    ops.push(Step::Advance(3.0));
    let r = run(registry, allocator, 0, &ops);
    verdict(NO_MORE_THAN_THE_AGENT_HAS, &r, |r| {
        for (name, total) in totals {
            let total: Resources = total.parse().expect("valid");
            let mut offered = Resources::new();
            r.on(name).for_each(|o| offered.add(&o.resources));
            if !total.contains(&offered) {
                return Some(format!(
                    "{name} has {total} and was offered {offered} in all, for f1's {request}: {}",
                    list(r.on(name))
                ));
            }
        }
        let placed = match placed(r, "f1", std::slice::from_ref(&request), 0.0) {
            Ok(p) => p,
            Err(e) => return Some(e),
        };
        let on_a2: Vec<&Placed<'_>> = placed.iter().filter(|p| p.offer.agent == "a2").collect();
        if let Some(p) = on_a2.first() {
            Some(format!(
                "a2 has cpus:4;mem:100, too little memory for one task of f1's {request}, and was offered {}",
                describe(p.offer)
            ))
        } else if total(&placed) == 0 {
            Some(format!(
                "f1 stated {request}; a1 has room for 2 of them and none was offered ({})",
                list(r.to("f1"))
            ))
        } else {
            None
        }
    })
    .citing(RULE)
}

/// The check "offers a gang whole in one run or not at all": a gang of 4 one-CPU tasks with
/// room for 2 (a1) is offered nothing; once a2 joins with 2 more CPUs, all 4 in one run.
fn gang_whole_or_not_at_all(registry: &ModuleRegistry, allocator: &str) -> Check {
    let gang = Request::gang("r1", 4, task());
    let ops = vec![
        framework("f1", "r1"),
        state("f1", vec![gang.clone()]),
        agent("a1", "cpus:2;mem:1000"),
        Step::Advance(2.0),
        agent("a2", "cpus:2;mem:1000"),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    verdict(GANG_WHOLE, &r, |r| {
        let placed = match placed(r, "f1", std::slice::from_ref(&gang), 0.0) {
            Ok(p) => p,
            Err(e) => return Some(e),
        };
        let mut runs: Vec<usize> = placed.iter().map(|p| p.offer.run).collect();
        runs.dedup();
        for run in &runs {
            let in_run: Vec<&Placed<'_>> = placed.iter().filter(|p| p.offer.run == *run).collect();
            let n: u32 = in_run.iter().map(|p| p.tasks).sum();
            if n != gang.count {
                return Some(format!(
                    "f1 stated {gang}, and one allocation run offered {n} of its {} tasks: {}",
                    gang.count,
                    list(in_run.iter().map(|p| p.offer))
                ));
            }
        }
        match runs.len() {
            0 => Some(format!(
                "f1 stated {gang}; once a2 joined at t=2 the cluster had room for all 4, and the gang was never offered ({})",
                list(r.to("f1"))
            )),
            1 => None,
            n => Some(format!(
                "f1 stated {gang} once and was offered it whole {n} times: {}",
                list_placed(&placed)
            )),
        }
    })
    .citing(RULE)
}

/// The check "never places a withdrawn request": a framework states 2 tasks of an odd shape,
/// then an empty list, before any agent joins; no offer may hold those tasks (the framework may
/// get any other offer).
fn never_places_a_withdrawn_request(registry: &ModuleRegistry, allocator: &str) -> Check {
    let withdrawn = Request::tasks("r1", 2, "cpus:0.5;mem:96".parse().expect("valid"));
    let ops = vec![
        framework("f1", "r1"),
        state("f1", vec![withdrawn.clone()]),
        state("f1", vec![]),
        agent("a1", "cpus:4;mem:1024"),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    verdict(WITHDRAWN, &r, |r| {
        let placed: Vec<&Offer> =
            r.to("f1").filter(|o| tasks_in(&o.resources, &withdrawn.resources).is_some()).collect();
        (!placed.is_empty()).then(|| {
            format!(
                "f1 stated {withdrawn}, then withdrew it (an empty list) before any agent joined, and was offered its tasks: {}",
                list(placed)
            )
        })
    })
    .citing(RULE)
}

/// What the two lifecycle checks share: `pause` (deactivate, suppress) at t=0 before the
/// agent joins, `resume` (activate, revive) at t=1.5; nothing for f1 before, its 2 tasks
/// after.
fn across(
    registry: &ModuleRegistry,
    allocator: &str,
    name: &'static str,
    (pause, resume): (Command, Command),
    (paused, resumed): (&str, &str),
) -> Check {
    let request = Request::tasks("r1", 2, task());
    let ops = vec![
        framework("f1", "r1"),
        state("f1", vec![request.clone()]),
        Step::Command(pause),
        agent("a1", "cpus:4;mem:1000"),
        Step::Advance(1.5),
        Step::Command(resume),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    verdict(name, &r, |r| {
        let before: Vec<&Offer> = r.to("f1").filter(|o| o.time < 1.5).collect();
        if !before.is_empty() {
            return Some(format!("f1, {paused}, was offered {}", list(before)));
        }
        let placed = match placed(r, "f1", std::slice::from_ref(&request), 1.5) {
            Ok(p) => p,
            Err(e) => return Some(format!("after {resumed} at t=1.5, {e}: the request did not survive")),
        };
        match total(&placed) {
            0 => Some(format!(
                "f1 stated {request}, was {paused}, and after {resumed} at t=1.5 none of its tasks was placed ({})",
                list(r.to("f1"))
            )),
            n if n > request.count => Some(format!(
                "after {resumed} at t=1.5, f1, which stated {request}, was offered {n} tasks: {}",
                list_placed(&placed)
            )),
            _ => None,
        }
    })
    .citing(RULE)
}

/// The check "keeps requests across deactivate and reactivate".
fn keeps_requests_across_deactivation(registry: &ModuleRegistry, allocator: &str) -> Check {
    let commands =
        (Command::DeactivateFramework("f1".into()), Command::ActivateFramework("f1".into()));
    across(registry, allocator, ACROSS_DEACTIVATION, commands, ("inactive", "activate_framework"))
}

/// The check "keeps requests across suppress and revive".
fn keeps_requests_across_suppression(registry: &ModuleRegistry, allocator: &str) -> Check {
    let commands =
        (Command::SuppressOffers("f1".into(), vec![]), Command::ReviveOffers("f1".into(), vec![]));
    across(registry, allocator, ACROSS_SUPPRESSION, commands, ("suppressed", "revive_offers"))
}

/// The check "places a request under its role": a framework of roles r1 and r2 states one
/// task under r2 and a task of another shape under r1; each is offered under its own role.
fn places_under_the_requests_role(registry: &ModuleRegistry, allocator: &str) -> Check {
    let requests = vec![
        Request::task("r2", task()),
        Request::task("r1", "cpus:2;mem:512".parse().expect("valid")),
    ];
    let ops = vec![
        Step::Command(Command::add_framework("f1", &["r1", "r2"])),
        state("f1", requests.clone()),
        agent("a1", "cpus:4;mem:2048"),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    verdict(UNDER_ITS_ROLE, &r, |r| {
        let placed = match placed(r, "f1", &requests, 0.0) {
            Ok(p) => p,
            Err(e) => return Some(format!("{e} (an offer's role is its request's role)")),
        };
        for (i, request) in requests.iter().enumerate() {
            let of: Vec<&Placed<'_>> = placed.iter().filter(|p| p.request == i).collect();
            let n: u32 = of.iter().map(|p| p.tasks).sum();
            if n == 0 {
                return Some(format!(
                    "f1 (roles r1, r2) stated {request} and was offered none of it under '{}' ({})",
                    request.role,
                    list(r.to("f1"))
                ));
            } else if n > request.count {
                return Some(format!(
                    "f1 stated {request} and was offered {n} tasks under '{}': {}",
                    request.role,
                    list(of.iter().map(|p| p.offer))
                ));
            }
        }
        None
    })
    .citing(RULE)
}

/// The check "honours request constraints": 2 tasks constrained to `zone` b; a1 (zone a) is
/// added first and is as large as a2 (zone b).
fn honours_constraints(registry: &ModuleRegistry, allocator: &str) -> Check {
    let request =
        Request::tasks("r1", 2, task()).with_constraint(Constraint::is_in("zone", &["b"]));
    let ops = vec![
        framework("f1", "r1"),
        state("f1", vec![request.clone()]),
        agent_with("a1", "cpus:4;mem:1000", &[("zone", "a")]),
        agent_with("a2", "cpus:4;mem:1000", &[("zone", "b")]),
        Step::Advance(2.0),
    ];
    let r = run(registry, allocator, 0, &ops);
    verdict(CONSTRAINTS, &r, |r| {
        let placed = match placed(r, "f1", std::slice::from_ref(&request), 0.0) {
            Ok(p) => p,
            Err(e) => return Some(e),
        };
        let wrong: Vec<&Placed<'_>> = placed.iter().filter(|p| p.offer.agent == "a1").collect();
        if !wrong.is_empty() {
            Some(format!(
                "f1 stated {request}, which a1 (zone a) fails, and was offered tasks of it there: {}",
                list(wrong.iter().map(|p| p.offer))
            ))
        } else if total(&placed) == 0 {
            Some(format!(
                "f1 stated {request}; a2 (zone b) had room and none of its tasks was placed ({})",
                list(r.to("f1"))
            ))
        } else {
            None
        }
    })
    .citing(RULE)
}

/// The checks' names, for the tests of this crate.
#[cfg(test)]
pub(crate) fn names() -> Vec<&'static str> {
    CHECKS.iter().map(|(n, _)| *n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_are_counted_only_when_the_offer_is_exactly_whole_tasks() {
        let each = task();
        let r = |s: &str| -> Resources { s.parse().unwrap() };
        assert_eq!(tasks_in(&r("cpus:3;mem:384"), &each), Some(3));
        assert_eq!(tasks_in(&r("cpus:3;mem:400"), &each), None);
        assert_eq!(tasks_in(&r("cpus:4;mem:1024"), &each), None);
        assert_eq!(tasks_in(&Resources::new(), &each), None);
    }

    fn offer(run: usize, agent: &str, resources: &str) -> Offer {
        Offer {
            time: run as f64,
            run,
            framework: "f1".into(),
            role: "r1".into(),
            agent: agent.into(),
            resources: resources.parse().unwrap(),
        }
    }

    #[test]
    fn while_a_request_is_outstanding_every_offer_must_be_its_tasks() {
        let request = Request::tasks("r1", 3, task());
        let r = Run {
            offers: vec![offer(0, "a1", "cpus:2;mem:256"), offer(1, "a2", "cpus:2;mem:300")],
            ..Run::default()
        };
        let e = placed(&r, "f1", std::slice::from_ref(&request), 0.0).err().unwrap();
        assert!(e.contains("cpus:2;mem:300 on a2 under 'r1' at t=1"), "{e}");
    }

    #[test]
    fn once_placed_other_offers_are_free_but_tasks_placed_again_are_listed() {
        let request = Request::tasks("r1", 2, task());
        let r = Run {
            offers: vec![
                offer(0, "a1", "cpus:2;mem:256"),
                offer(1, "a1", "cpus:2;mem:744"),
                offer(2, "a2", "cpus:1;mem:128"),
            ],
            ..Run::default()
        };
        let placed = placed(&r, "f1", std::slice::from_ref(&request), 0.0).unwrap();
        let seen: Vec<(&str, u32)> =
            placed.iter().map(|p| (p.offer.agent.as_str(), p.tasks)).collect();
        assert_eq!(seen, [("a1", 2), ("a2", 1)]);
        assert_eq!(total(&placed), 3, "more than the 2 asked: the check fails it");
    }

    #[test]
    fn every_check_has_its_own_name() {
        let mut all = names();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), CHECKS.len());
    }
}
