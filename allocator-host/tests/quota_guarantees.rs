//! Property (issue 6): stage 1 never leaves a satisfiable guarantee unsatisfied while the role
//! has an active, unsuppressed and unfiltered framework. Driven on the built-in allocator
//! directly, with frameworks that never decline with a filter.

use allocator_api::{
    AgentCapabilities, AgentId, AgentInfo, Allocator, AllocatorOptions, FrameworkCapabilities,
    FrameworkId, FrameworkInfo, FrameworkOptions, OfferBatch, Quantities, Quota, RString, RVec,
    Resources, Sorter, SorterConfig,
};
use allocator_host::hierarchical::{HierarchicalAllocator, SorterFactory};
use proptest::prelude::*;

const ROLES: [&str; 3] = ["q1", "q2", "n"];
const SHAPES: [&str; 4] = [
    "cpus:4;mem:4096",
    "cpus:2;mem:1024;cpus(q1):1",
    "cpus:8;mem:512",
    "cpus:1;mem:8192;cpus(n):2",
];

#[derive(Clone, Debug)]
enum Step {
    Agent(usize),
    Framework(usize),
    RemoveFramework(u32),
    Quota(usize, u32),
    Recover(u32, u32),
    Run,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..SHAPES.len()).prop_map(Step::Agent),
        2 => (0..ROLES.len()).prop_map(Step::Framework),
        1 => (0u32..6).prop_map(Step::RemoveFramework),
        2 => (0..2usize, 1u32..12).prop_map(|(r, g)| Step::Quota(r, g)),
        2 => (0u32..6, 0u32..8).prop_map(|(f, a)| Step::Recover(f, a)),
        3 => Just(Step::Run),
    ]
}

fn drf() -> SorterFactory {
    Box::new(|c: &SorterConfig| Ok(Box::new(drf_sorter::create(c)) as Box<dyn Sorter>))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn stage_one_never_leaves_a_satisfiable_guarantee_unsatisfied(steps in prop::collection::vec(step(), 1..50), seed in 0u64..8) {
        let options = AllocatorOptions { seed, ..Default::default() };
        let mut a = HierarchicalAllocator::new(&options, drf(), drf()).unwrap();
        let (mut agents, mut frameworks, mut now) = (0u32, 0u32, 0.0);
        let mut roles: Vec<(FrameworkId, &str)> = Vec::new();
        let mut guarantees: Vec<(&str, Quantities)> = Vec::new();
        for s in &steps {
            match s {
                Step::Agent(shape) => {
                    let info = AgentInfo { id: AgentId(agents), name: "a".into(), hostname: "a".into(),
                                           attributes: RVec::new(), capabilities: AgentCapabilities::all() };
                    a.add_agent(&info, None, &SHAPES[*shape].parse().unwrap(), &[]).unwrap();
                    agents += 1;
                }
                Step::Framework(r) => {
                    let info = FrameworkInfo { id: FrameworkId(frameworks), name: "f".into(),
                                               roles: vec![RString::from(ROLES[*r])].into(),
                                               capabilities: FrameworkCapabilities::MULTI_ROLE };
                    a.add_framework(&info, &[], true, &FrameworkOptions::default()).unwrap();
                    roles.push((FrameworkId(frameworks), ROLES[*r]));
                    frameworks += 1;
                }
                Step::RemoveFramework(f) => {
                    if a.remove_framework(FrameworkId(*f)).is_ok() {
                        roles.retain(|(id, _)| id.0 != *f);
                    }
                }
                Step::Quota(r, g) => {
                    let quota = Quota { guarantees: Quantities::parse(&format!("cpus:{g}")).unwrap(), limits: Quantities::new() };
                    a.update_quota(ROLES[*r], &quota).unwrap();
                    guarantees.retain(|(role, _)| *role != ROLES[*r]);
                    guarantees.push((ROLES[*r], quota.guarantees));
                }
                Step::Recover(f, ag) => {
                    // Give back everything without a filter (so frameworks stay unfiltered).
                    for alloc in a.allocations().iter().filter(|x| x.framework.0 == *f && x.agent.0 == *ag) {
                        a.recover_resources(alloc.framework, alloc.agent, &alloc.role, &alloc.resources, None).unwrap();
                    }
                }
                Step::Run => {
                    now += 1.0;
                    a.set_time(now).unwrap();
                    let ids: Vec<AgentId> = (0..agents).map(AgentId).collect();
                    let mut out = OfferBatch::default();
                    a.allocate(&ids, true, &mut out).unwrap();
                    for (role, g) in &guarantees {
                        if !roles.iter().any(|(_, r)| r == role) {
                            continue; // no framework: stage 1 does not apply
                        }
                        // Consumption: unreserved non-revocable allocations plus reservations.
                        let mut consumed = Quantities::new();
                        for x in a.allocations().iter().filter(|x| x.role.as_str() == *role) {
                            consumed.add(&x.resources.filter(|r| r.is_unreserved() && !r.is_revocable()).scalar_quantities());
                        }
                        let mut free_cpus_somewhere = false;
                        for ag in 0..agents {
                            let (total, used) = a.agent_ledger(AgentId(ag)).unwrap();
                            consumed.add(&total.reserved_to(role).scalar_quantities());
                            let free: Resources = (total - &used).filter(|r| r.is_unreserved() && !r.is_revocable());
                            // Could stage 1 have given it? (min-allocatable: cpus:0.01 or mem:32)
                            let allocatable = free.contains_quantities(&Quantities::parse("cpus:0.01").unwrap())
                                || free.contains_quantities(&Quantities::parse("mem:32").unwrap());
                            if allocatable && free.scalar("cpus").is_positive() {
                                free_cpus_somewhere = true;
                            }
                        }
                        let unsatisfied = consumed.get("cpus") < g.get("cpus");
                        prop_assert!(!(unsatisfied && free_cpus_somewhere),
                            "role {} consumes {} of its guarantee {} while CPUs are free", role, consumed, g);
                    }
                }
            }
        }
    }
}
