//! Quota properties of the built-in allocator, driven on it directly with frameworks that never
//! decline with a filter:
//!
//! * issue 6: stage 1 never leaves a satisfiable guarantee unsatisfied while the role has an
//!   active, unsuppressed and unfiltered framework;
//! * issue 17: an allocation run never eats into the headroom held for unsatisfied guarantees
//!   (Mesos charges a stage-1 offer to the required headroom only for its part within the
//!   guarantee, and to the available headroom whole).

use allocator_api::{
    AgentCapabilities, AgentId, AgentInfo, Allocator, AllocatorOptions, FrameworkCapabilities,
    FrameworkId, FrameworkInfo, FrameworkOptions, OfferBatch, Quantities, Quota, RString, RVec,
    Resources, Sorter, SorterConfig,
};
use allocator_host::hierarchical::{HierarchicalAllocator, SorterFactory};
use proptest::prelude::*;

/// Framework roles: two quota roles, a subrole of one (its allocations count toward `q1`'s
/// consumption), and a role without quota.
const ROLES: [&str; 4] = ["q1", "q2", "n", "q1/x"];
/// Roles that take quota: `q1` and `q2` (which may have frameworks) and `q3`, which never has
/// one, so its guarantee is only ever served by the headroom held back for it.
const QUOTA_ROLES: [&str; 3] = ["q1", "q2", "q3"];
const SHAPES: [&str; 5] = [
    "cpus:4;mem:4096",
    "cpus:2;mem:1024;cpus(q1):1",
    "cpus:8;mem:512",
    "cpus:1;mem:8192;cpus(n):2",
    "cpus:2;mem:2048;cpus{revocable}:2",
];

#[derive(Clone, Debug)]
enum Step {
    Agent(usize),
    Framework(usize),
    RemoveFramework(u32),
    /// Role index in [`QUOTA_ROLES`], guaranteed CPUs, guaranteed memory (units of 256), CPU
    /// limit above the guarantee (0: none).
    Quota(usize, u32, u32, u32),
    Recover(u32, u32),
    Run,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..SHAPES.len()).prop_map(Step::Agent),
        2 => (0..ROLES.len()).prop_map(Step::Framework),
        1 => (0u32..6).prop_map(Step::RemoveFramework),
        2 => (0..QUOTA_ROLES.len(), 1u32..12, 0u32..12, 0u32..4)
            .prop_map(|(r, g, m, l)| Step::Quota(r, g, m, l)),
        2 => (0u32..6, 0u32..8).prop_map(|(f, a)| Step::Recover(f, a)),
        3 => Just(Step::Run),
    ]
}

fn drf() -> SorterFactory {
    Box::new(|c: &SorterConfig| Ok(Box::new(drf_sorter::create(c)) as Box<dyn Sorter>))
}

/// The allocator and what the test knows about it.
struct Driver {
    a: HierarchicalAllocator,
    agents: u32,
    frameworks: u32,
    now: f64,
    /// Live frameworks and their role.
    roles: Vec<(FrameworkId, &'static str)>,
    /// Quota roles and their guarantees.
    guarantees: Vec<(&'static str, Quantities)>,
}

impl Driver {
    fn new(seed: u64) -> Driver {
        let options = AllocatorOptions { seed, ..Default::default() };
        Driver {
            a: HierarchicalAllocator::new(&options, drf(), drf()).unwrap(),
            agents: 0,
            frameworks: 0,
            now: 0.0,
            roles: Vec::new(),
            guarantees: Vec::new(),
        }
    }

    /// Applies one step; `Run` runs the allocator over every agent.
    fn apply(&mut self, s: &Step) {
        let a = &mut self.a;
        match s {
            Step::Agent(shape) => {
                let info = AgentInfo {
                    id: AgentId(self.agents),
                    name: "a".into(),
                    hostname: "a".into(),
                    attributes: RVec::new(),
                    capabilities: AgentCapabilities::all(),
                };
                a.add_agent(&info, None, &SHAPES[*shape].parse().unwrap(), &[]).unwrap();
                self.agents += 1;
            }
            Step::Framework(r) => {
                let info = FrameworkInfo {
                    id: FrameworkId(self.frameworks),
                    name: "f".into(),
                    roles: vec![RString::from(ROLES[*r])].into(),
                    capabilities: FrameworkCapabilities::MULTI_ROLE,
                };
                a.add_framework(&info, &[], true, &FrameworkOptions::default()).unwrap();
                self.roles.push((FrameworkId(self.frameworks), ROLES[*r]));
                self.frameworks += 1;
            }
            Step::RemoveFramework(f) => {
                if a.remove_framework(FrameworkId(*f)).is_ok() {
                    self.roles.retain(|(id, _)| id.0 != *f);
                }
            }
            Step::Quota(r, g, m, l) => {
                let mut guarantees = format!("cpus:{g}");
                if *m > 0 {
                    guarantees.push_str(&format!(";mem:{}", m * 256));
                }
                let limits = if *l > 0 { format!("cpus:{}", g + l) } else { String::new() };
                let quota = Quota {
                    guarantees: Quantities::parse(&guarantees).unwrap(),
                    limits: Quantities::parse(&limits).unwrap(),
                };
                let role = QUOTA_ROLES[*r];
                a.update_quota(role, &quota).unwrap();
                self.guarantees.retain(|(q, _)| *q != role);
                self.guarantees.push((role, quota.guarantees));
            }
            Step::Recover(f, ag) => {
                // Give back everything without a filter (so frameworks stay unfiltered).
                for alloc in
                    a.allocations().iter().filter(|x| x.framework.0 == *f && x.agent.0 == *ag)
                {
                    a.recover_resources(
                        alloc.framework,
                        alloc.agent,
                        &alloc.role,
                        &alloc.resources,
                        None,
                    )
                    .unwrap();
                }
            }
            Step::Run => {
                self.now += 1.0;
                a.set_time(self.now).unwrap();
                let ids: Vec<AgentId> = (0..self.agents).map(AgentId).collect();
                let mut out = OfferBatch::default();
                a.allocate(&ids, true, &mut out).unwrap();
            }
        }
    }

    /// Quota consumption of top-level `role` (R19): unreserved non-revocable scalars offered or
    /// allocated to it and its subroles, plus every reservation to it or a subrole, allocated or
    /// not.
    fn consumed(&self, role: &str) -> Quantities {
        let mine = |r: &str| r == role || r.starts_with(&format!("{role}/"));
        let mut consumed = Quantities::new();
        for x in self.a.allocations().iter().filter(|x| mine(x.role.as_str())) {
            consumed.add(
                &x.resources
                    .filter(|r| r.is_unreserved() && !r.is_revocable() && !r.is_shared())
                    .scalar_quantities(),
            );
        }
        for ag in 0..self.agents {
            let (total, _) = self.a.agent_ledger(AgentId(ag)).unwrap();
            consumed.add(&total.filter(|r| mine(&r.reservation)).scalar_quantities());
        }
        consumed
    }

    /// Unreserved, non-revocable scalars free on all agents (Mesos's available headroom).
    fn available_headroom(&self) -> Quantities {
        let mut free = Quantities::new();
        for ag in 0..self.agents {
            let (total, used) = self.a.agent_ledger(AgentId(ag)).unwrap();
            let left: Resources = total - &used;
            free.add(
                &left
                    .filter(|r| r.is_unreserved() && !r.is_revocable() && !r.is_shared())
                    .scalar_quantities(),
            );
        }
        free
    }

    /// The sum over quota roles of what their guarantees still lack (Mesos's required headroom).
    fn required_headroom(&self) -> Quantities {
        let mut required = Quantities::new();
        for (role, g) in &self.guarantees {
            let consumed = self.consumed(role);
            for q in g.iter() {
                required.add_amount(q.name, q.value.saturating_sub(consumed.get(&q.name)));
            }
        }
        required
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn stage_one_never_leaves_a_satisfiable_guarantee_unsatisfied(steps in prop::collection::vec(step(), 1..50), seed in 0u64..8) {
        let mut d = Driver::new(seed);
        for s in &steps {
            d.apply(s);
            if !matches!(s, Step::Run) {
                continue;
            }
            for (role, g) in &d.guarantees {
                if !d.roles.iter().any(|(_, r)| r == role) {
                    continue; // no framework in the quota role itself: stage 1 does not apply
                }
                let consumed = d.consumed(role);
                let mut free_cpus_somewhere = false;
                for ag in 0..d.agents {
                    let (total, used) = d.a.agent_ledger(AgentId(ag)).unwrap();
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

    /// Issue 17: when the free resources cover every unsatisfied guarantee before a run, they
    /// still do after it, resource by resource: stage 1 hands out guarantees (which lowers
    /// both sides alike) and beyond them only the surplus, and stage 2 only the surplus.
    #[test]
    fn a_run_never_hands_out_the_headroom_held_for_guarantees(steps in prop::collection::vec(step(), 1..50), seed in 0u64..8) {
        let mut d = Driver::new(seed);
        for s in &steps {
            let before = matches!(s, Step::Run)
                .then(|| (d.available_headroom(), d.required_headroom()));
            d.apply(s);
            let Some((available_before, required_before)) = before else { continue };
            let (available, required) = (d.available_headroom(), d.required_headroom());
            for q in required_before.iter() {
                if available_before.get(&q.name) < q.value {
                    continue; // short before the run: guarantees are served unconditionally
                }
                prop_assert!(
                    available.get(&q.name) >= required.get(&q.name),
                    "{}: {} free for {} still guaranteed after the run (before: {} for {}); quotas {:?}",
                    q.name, available.get(&q.name), required.get(&q.name),
                    available_before.get(&q.name), q.value, d.guarantees
                );
            }
        }
    }
}
