use allocator_api::{AgentCapabilities, FrameworkCapabilities};

use super::*;

fn drf() -> SorterFactory {
    Box::new(|c: &SorterConfig| Ok(Box::new(drf_sorter::create(c)) as Box<dyn Sorter>))
}

#[test]
fn inverse_offer_statuses_are_queryable() {
    let mut a = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
    let agent = AgentInfo {
        id: AgentId(0),
        name: "a1".into(),
        hostname: "a1".into(),
        attributes: RVec::new(),
        capabilities: AgentCapabilities::all(),
    };
    let fw = FrameworkInfo {
        id: FrameworkId(0),
        name: "f1".into(),
        roles: vec![RString::from("r1")].into(),
        capabilities: FrameworkCapabilities::MULTI_ROLE,
    };
    a.add_framework(&fw, &[], true, &FrameworkOptions::default()).unwrap();
    a.add_agent(&agent, None, &"cpus:1;mem:64".parse().unwrap(), &[]).unwrap();
    a.set_time(3.0).unwrap();
    a.update_inverse_offer(AgentId(0), FrameworkId(0), Some(InverseOfferStatus::ACCEPT), None)
        .unwrap();
    let mut out = RVec::new();
    a.inverse_offer_statuses(&mut out).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].status, InverseOfferStatus::ACCEPT);
    assert_eq!(out[0].timestamp, 3.0);
    a.update_unavailability(AgentId(0), None).unwrap();
    a.inverse_offer_statuses(&mut out).unwrap();
    assert!(out.is_empty(), "clearing maintenance clears the statuses");
}

fn agent_info(id: u32) -> AgentInfo {
    AgentInfo {
        id: AgentId(id),
        name: format!("a{id}").as_str().into(),
        hostname: format!("a{id}").as_str().into(),
        attributes: RVec::new(),
        capabilities: AgentCapabilities::all(),
    }
}

fn framework_info(id: u32, role: &str) -> FrameworkInfo {
    FrameworkInfo {
        id: FrameworkId(id),
        name: format!("f{id}").as_str().into(),
        roles: vec![RString::from(role)].into(),
        capabilities: FrameworkCapabilities::MULTI_ROLE,
    }
}

fn share_of(a: &HierarchicalAllocator, role: &str) -> f64 {
    a.role_shares().into_iter().find(|(r, _)| r == role).map_or(0.0, |(_, s)| s)
}

#[test]
fn agent_used_by_a_framework_not_yet_added_counts_for_it_once_it_is_added() {
    let mut a = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
    let used = Allocation::new(FrameworkId(0), AgentId(0), "r1", "cpus:2".parse().unwrap());
    a.add_agent(&agent_info(0), None, &"cpus:4;mem:64".parse().unwrap(), &[used]).unwrap();
    // The framework arrives later and does not repeat what the agent reported.
    a.add_framework(&framework_info(0, "r1"), &[], true, &FrameworkOptions::default()).unwrap();
    assert_eq!(share_of(&a, "r1"), 0.5, "the agent's record counts in the role's share");
    a.remove_framework(FrameworkId(0)).unwrap();
    assert_eq!(a.agent_ledger(AgentId(0)).unwrap().1, Resources::new());
}

#[test]
fn framework_used_overlapping_what_the_agent_reported_counts_once() {
    let mut a = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
    let on_agent = Allocation::new(FrameworkId(0), AgentId(0), "r1", "cpus:2".parse().unwrap());
    a.add_agent(&agent_info(0), None, &"cpus:4;mem:64".parse().unwrap(), &[on_agent]).unwrap();
    let on_framework = Allocation::new(FrameworkId(0), AgentId(0), "r1", "cpus:3".parse().unwrap());
    a.add_framework(&framework_info(0, "r1"), &[on_framework], true, &Default::default()).unwrap();
    assert_eq!(a.agent_ledger(AgentId(0)).unwrap().1.to_string(), "cpus:3");
    assert_eq!(share_of(&a, "r1"), 0.75);
}

#[test]
fn framework_used_beyond_what_is_free_is_refused_and_changes_nothing() {
    let mut a = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
    a.add_agent(&agent_info(0), None, &"cpus:4;mem:64".parse().unwrap(), &[]).unwrap();
    let too_much = Allocation::new(FrameworkId(0), AgentId(0), "r1", "cpus:5".parse().unwrap());
    let e = a
        .add_framework(&framework_info(0, "r1"), &[too_much], true, &Default::default())
        .unwrap_err();
    assert_eq!(e.kind, allocator_api::ErrorKind::REJECTED);
    assert!(a.allocations().is_empty());
    a.add_framework(&framework_info(0, "r1"), &[], true, &Default::default()).unwrap();
}

#[test]
fn adding_a_present_agent_or_framework_again_is_refused() {
    let mut a = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
    a.add_agent(&agent_info(0), None, &"cpus:4".parse().unwrap(), &[]).unwrap();
    let e = a.add_agent(&agent_info(0), None, &"cpus:8".parse().unwrap(), &[]).unwrap_err();
    assert_eq!(e.kind, allocator_api::ErrorKind::REJECTED);
    a.add_framework(&framework_info(0, "r1"), &[], true, &Default::default()).unwrap();
    let e = a.add_framework(&framework_info(0, "r1"), &[], true, &Default::default()).unwrap_err();
    assert_eq!(e.kind, allocator_api::ErrorKind::REJECTED);
    // After a removal the same handle is a fresh add (a reconnecting agent).
    a.remove_agent(AgentId(0)).unwrap();
    a.add_agent(&agent_info(0), None, &"cpus:8".parse().unwrap(), &[]).unwrap();
}

/// A sorter that logs every call the allocator makes (`role:` or `r1:` before each).
struct Recorder {
    name: String,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    clients: Vec<(ClientId, bool)>,
}

impl Recorder {
    fn note(&self, call: String) {
        self.log.lock().unwrap().push(format!("{}: {call}", self.name));
    }
}

impl Sorter for Recorder {
    fn add(&mut self, c: ClientId, path: &str) -> Result<()> {
        self.note(format!("add({c}, {path})"));
        self.clients.push((c, false));
        Ok(())
    }
    fn remove(&mut self, c: ClientId) -> Result<()> {
        self.note(format!("remove({c})"));
        self.clients.retain(|e| e.0 != c);
        Ok(())
    }
    fn activate(&mut self, c: ClientId) -> Result<()> {
        self.note(format!("activate({c})"));
        self.clients.iter_mut().filter(|e| e.0 == c).for_each(|e| e.1 = true);
        Ok(())
    }
    fn deactivate(&mut self, c: ClientId) -> Result<()> {
        self.note(format!("deactivate({c})"));
        self.clients.iter_mut().filter(|e| e.0 == c).for_each(|e| e.1 = false);
        Ok(())
    }
    fn allocated(&mut self, c: ClientId, a: AgentId, r: &Resources) -> Result<()> {
        self.note(format!("allocated({c}, {a}, {r})"));
        Ok(())
    }
    fn update(&mut self, c: ClientId, a: AgentId, old: &Resources, new: &Resources) -> Result<()> {
        self.note(format!("update({c}, {a}, {old} -> {new})"));
        Ok(())
    }
    fn unallocated(&mut self, c: ClientId, a: AgentId, r: &Resources) -> Result<()> {
        self.note(format!("unallocated({c}, {a}, {r})"));
        Ok(())
    }
    fn add_agent(&mut self, a: AgentId, q: &Quantities) -> Result<()> {
        self.note(format!("add_agent({a}, {q})"));
        Ok(())
    }
    fn remove_agent(&mut self, a: AgentId) -> Result<()> {
        self.note(format!("remove_agent({a})"));
        Ok(())
    }
    fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()> {
        out.clear();
        out.extend(self.clients.iter().filter(|e| e.1).map(|e| e.0));
        self.note(format!("sort -> {:?}", out.iter().map(|c| c.to_string()).collect::<Vec<_>>()));
        Ok(())
    }
    fn keep_scalars_only(&mut self) -> bool {
        self.note("keep_scalars_only".into());
        false
    }
    fn contains(&self, c: ClientId) -> bool {
        self.clients.iter().any(|e| e.0 == c)
    }
    fn count(&self) -> usize {
        self.clients.len()
    }
}

fn recording(
    name: &'static str,
    log: &std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) -> SorterFactory {
    let log = log.clone();
    Box::new(move |_: &SorterConfig| {
        Ok(Box::new(Recorder { name: name.into(), log: log.clone(), clients: vec![] })
            as Box<dyn Sorter>)
    })
}

/// The sequence `allocator_api::sorter`'s documentation gives ("How the built-in allocator
/// calls a sorter"), call by call.
#[test]
fn sorters_are_called_as_the_sorter_documentation_says() {
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut a = HierarchicalAllocator::new(
        &AllocatorOptions::default(),
        recording("role", &log),
        recording("r1", &log),
    )
    .unwrap();
    let take = |log: &std::sync::Arc<std::sync::Mutex<Vec<String>>>| -> Vec<String> {
        std::mem::take(&mut *log.lock().unwrap())
    };
    assert_eq!(take(&log), ["role: keep_scalars_only"]);
    let f1 = FrameworkId(3);
    a.add_framework(&framework_info(3, "r1"), &[], true, &Default::default()).unwrap();
    assert_eq!(
        take(&log),
        [
            "role: add(client#0, r1)",
            "role: activate(client#0)",
            "r1: keep_scalars_only",
            "r1: add(client#3, 0000000003)",
            "r1: activate(client#3)"
        ]
    );
    a.add_agent(&agent_info(0), None, &"cpus:4;mem:4096".parse().unwrap(), &[]).unwrap();
    assert_eq!(
        take(&log),
        ["role: add_agent(agent#0, cpus:4;mem:4096)", "r1: add_agent(agent#0, cpus:4;mem:4096)"]
    );
    let mut out = OfferBatch::default();
    a.allocate(&[AgentId(0)], false, &mut out).unwrap();
    assert_eq!(
        take(&log),
        [
            r#"r1: sort -> ["client#3"]"#,
            r#"role: sort -> ["client#0"]"#,
            r#"r1: sort -> ["client#3"]"#,
            "role: allocated(client#0, agent#0, cpus:4;mem:4096)",
            "r1: allocated(client#3, agent#0, cpus:4;mem:4096)"
        ]
    );
    // The framework launches on cpus:1;mem:1024 (no call) and declines the rest.
    let rest: Resources = "cpus:3;mem:3072".parse().unwrap();
    a.recover_resources(f1, AgentId(0), "r1", &rest, Some(5.0)).unwrap();
    assert_eq!(
        take(&log),
        [
            "role: unallocated(client#0, agent#0, cpus:3;mem:3072)",
            "r1: unallocated(client#3, agent#0, cpus:3;mem:3072)"
        ]
    );
    let reserve = Operation {
        kind: allocator_api::OperationKind::RESERVE,
        resources: "cpus(r1){dynamic}:1".parse().unwrap(),
    };
    a.update_allocation(f1, AgentId(0), "r1", &[reserve]).unwrap();
    assert_eq!(
        take(&log),
        [
            "role: update(client#0, agent#0, cpus:1;mem:1024 -> cpus(r1){dynamic}:1;mem:1024)",
            "r1: update(client#3, agent#0, cpus:1;mem:1024 -> cpus(r1){dynamic}:1;mem:1024)"
        ]
    );
    // The task finishes.
    let task: Resources = "cpus(r1){dynamic}:1;mem:1024".parse().unwrap();
    a.recover_resources(f1, AgentId(0), "r1", &task, None).unwrap();
    assert_eq!(
        take(&log),
        [
            "role: unallocated(client#0, agent#0, cpus(r1){dynamic}:1;mem:1024)",
            "r1: unallocated(client#3, agent#0, cpus(r1){dynamic}:1;mem:1024)"
        ]
    );
    a.remove_framework(f1).unwrap();
    assert_eq!(take(&log), ["r1: remove(client#3)", "role: remove(client#0)"]);
}

#[test]
fn quota_on_a_nested_role_is_refused_not_ignored() {
    let mut a = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
    let quota =
        Quota { guarantees: Quantities::new(), limits: Quantities::parse("cpus:1").unwrap() };
    let e = a.update_quota("a/x", &quota).unwrap_err();
    assert_eq!(e.kind, allocator_api::ErrorKind::REJECTED);
    assert_eq!(
        e.message.as_str(),
        "update_quota: quota on nested role 'a/x' is not supported: only top-level roles take quota, as in Mesos"
    );
    assert!(a.quotas.is_empty(), "nothing recorded");
}

#[test]
fn recover_refuses_quota_on_a_nested_role() {
    let mut a = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
    let quotas = [
        RoleQuota { role: "a".into(), quota: Quota::default() },
        RoleQuota {
            role: "a/x".into(),
            quota: Quota {
                guarantees: Quantities::parse("cpus:1").unwrap(),
                limits: Quantities::new(),
            },
        },
    ];
    let e = a.recover(3, &quotas).unwrap_err();
    assert_eq!(e.kind, allocator_api::ErrorKind::REJECTED);
    assert!(e.message.contains("quota on nested role 'a/x'"), "{e}");
    assert!(a.quotas.is_empty() && !a.paused, "nothing recorded, not paused");
}

#[test]
fn a_guarantee_above_its_limit_is_refused() {
    let mut a = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
    let quota = Quota {
        guarantees: Quantities::parse("cpus:4").unwrap(),
        limits: Quantities::parse("cpus:2").unwrap(),
    };
    let e = a.update_quota("q", &quota).unwrap_err();
    assert_eq!(e.kind, allocator_api::ErrorKind::REJECTED);
    assert!(e.message.contains("above its limit"), "{e}");
}

/// One run at `now` over every agent: the offers as (framework, agent) pairs.
fn run_at(a: &mut HierarchicalAllocator, now: f64) -> Vec<(u32, u32)> {
    a.set_time(now).unwrap();
    let agents: Vec<AgentId> = a.agents.keys().copied().collect();
    let mut out = OfferBatch::default();
    a.allocate(&agents, true, &mut out).unwrap();
    out.offers.iter().map(|o| (o.framework.0, o.agent.0)).collect()
}

/// Declines every offer of a run at `now` with a refuse filter of `seconds`.
fn decline_all(a: &mut HierarchicalAllocator, now: f64, seconds: f64) -> usize {
    a.set_time(now).unwrap();
    let agents: Vec<AgentId> = a.agents.keys().copied().collect();
    let mut out = OfferBatch::default();
    a.allocate(&agents, true, &mut out).unwrap();
    for o in out.offers.iter() {
        a.recover_resources(o.framework, o.agent, &o.role, &o.resources, Some(seconds)).unwrap();
    }
    out.offers.len()
}

/// Two frameworks in `r1`, one agent of `cpus:4;mem:64`, both frameworks' offers declined with
/// a filter of `seconds` (runs at times 1 and 2), and a run at 3 that offers nothing: the agent
/// is then recorded as blocked for `r1`.
fn fully_filtered(seconds: f64) -> HierarchicalAllocator {
    let mut a = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
    a.add_framework(&framework_info(0, "r1"), &[], true, &Default::default()).unwrap();
    a.add_framework(&framework_info(1, "r1"), &[], true, &Default::default()).unwrap();
    a.add_agent(&agent_info(0), None, &"cpus:4;mem:64".parse().unwrap(), &[]).unwrap();
    assert_eq!(decline_all(&mut a, 1.0, seconds), 1);
    assert_eq!(decline_all(&mut a, 2.0, seconds), 1);
    assert!(run_at(&mut a, 3.0).is_empty());
    assert!(!a.agents[&AgentId(0)].blocked.is_empty(), "the run recorded the agent as blocked");
    a
}

#[test]
fn a_fully_filtered_agent_is_offered_again_when_a_filter_expires() {
    let mut a = fully_filtered(10.0);
    assert!(run_at(&mut a, 4.0).is_empty());
    assert_eq!(run_at(&mut a, 11.5).len(), 1, "the first filter (made at 1) is over at 11");
}

#[test]
fn a_fully_filtered_agent_is_offered_to_a_framework_added_later() {
    let mut a = fully_filtered(100.0);
    a.add_framework(&framework_info(2, "r1"), &[], true, &Default::default()).unwrap();
    assert_eq!(run_at(&mut a, 4.0), vec![(2, 0)]);
}

#[test]
fn a_fully_filtered_agent_is_offered_again_after_a_revive() {
    let mut a = fully_filtered(100.0);
    a.revive_offers(FrameworkId(1), &[]).unwrap();
    assert_eq!(run_at(&mut a, 4.0), vec![(1, 0)]);
}

#[test]
fn a_fully_filtered_agent_is_offered_again_when_it_has_more_than_was_refused() {
    let mut a = fully_filtered(100.0);
    a.update_agent(&agent_info(0), Some(&"cpus:8;mem:64".parse().unwrap())).unwrap();
    assert_eq!(run_at(&mut a, 4.0).len(), 1, "cpus:8 is not within the refused cpus:4 (R6)");
}

#[test]
fn a_fully_filtered_agent_stays_skipped_while_nothing_changes() {
    let mut a = fully_filtered(100.0);
    let recorded = a.agents[&AgentId(0)].blocked.clone();
    assert!(run_at(&mut a, 4.0).is_empty());
    assert!(run_at(&mut a, 50.0).is_empty());
    let after = &a.agents[&AgentId(0)].blocked;
    assert_eq!(after.len(), 1);
    assert_eq!((after[0].generation, after[0].until), (recorded[0].generation, recorded[0].until));
}

/// The built-in DRF sorter behind a sorter that answers every order in full (the trait's default
/// `sort_prefix`, as a module sorter does), noting each prefix length the allocator asks for;
/// with `all_records`, it also refuses `keep_scalars_only` (as a module sorter does).
struct FullSortOnly {
    inner: Box<dyn Sorter>,
    asked: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
    full: bool,
    all_records: bool,
}

impl Sorter for FullSortOnly {
    fn add(&mut self, c: ClientId, path: &str) -> Result<()> {
        self.inner.add(c, path)
    }
    fn remove(&mut self, c: ClientId) -> Result<()> {
        self.inner.remove(c)
    }
    fn activate(&mut self, c: ClientId) -> Result<()> {
        self.inner.activate(c)
    }
    fn deactivate(&mut self, c: ClientId) -> Result<()> {
        self.inner.deactivate(c)
    }
    fn update_weight(&mut self, path: &str, weight: f64) -> Result<()> {
        self.inner.update_weight(path, weight)
    }
    fn allocated(&mut self, c: ClientId, a: AgentId, r: &Resources) -> Result<()> {
        self.inner.allocated(c, a, r)
    }
    fn update(&mut self, c: ClientId, a: AgentId, old: &Resources, new: &Resources) -> Result<()> {
        self.inner.update(c, a, old, new)
    }
    fn unallocated(&mut self, c: ClientId, a: AgentId, r: &Resources) -> Result<()> {
        self.inner.unallocated(c, a, r)
    }
    fn allocation(
        &self,
        c: ClientId,
        out: &mut RVec<allocator_api::AgentAllocation>,
    ) -> Result<()> {
        self.inner.allocation(c, out)
    }
    fn allocation_on(&self, c: ClientId, a: AgentId, out: &mut Resources) -> Result<()> {
        self.inner.allocation_on(c, a, out)
    }
    fn allocation_scalar_quantities(
        &self,
        c: Option<ClientId>,
        out: &mut Quantities,
    ) -> Result<()> {
        self.inner.allocation_scalar_quantities(c, out)
    }
    fn add_agent(&mut self, a: AgentId, q: &Quantities) -> Result<()> {
        self.inner.add_agent(a, q)
    }
    fn remove_agent(&mut self, a: AgentId) -> Result<()> {
        self.inner.remove_agent(a)
    }
    fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()> {
        self.inner.sort(out)
    }
    fn sort_prefix(&mut self, len: usize, out: &mut RVec<ClientId>) -> Result<bool> {
        self.asked.lock().unwrap().push(len);
        if self.full {
            self.inner.sort(out)?;
            Ok(true)
        } else {
            self.inner.sort_prefix(len, out)
        }
    }
    fn keep_scalars_only(&mut self) -> bool {
        !self.all_records && self.inner.keep_scalars_only()
    }
    fn contains(&self, c: ClientId) -> bool {
        self.inner.contains(c)
    }
    fn count(&self) -> usize {
        self.inner.count()
    }
    fn dominant_share(&self, c: ClientId) -> Option<f64> {
        self.inner.dominant_share(c)
    }
}

fn drf_noting(full: bool, asked: &std::sync::Arc<std::sync::Mutex<Vec<usize>>>) -> SorterFactory {
    let asked = asked.clone();
    Box::new(move |c: &SorterConfig| {
        let inner = Box::new(drf_sorter::create(c)) as Box<dyn Sorter>;
        Ok(Box::new(FullSortOnly { inner, asked: asked.clone(), full, all_records: false })
            as Box<dyn Sorter>)
    })
}

/// The built-in DRF sorter keeping every per-agent record (it never hears `keep_scalars_only`).
fn drf_with_all_records() -> SorterFactory {
    Box::new(move |c: &SorterConfig| {
        let inner = Box::new(drf_sorter::create(c)) as Box<dyn Sorter>;
        let asked = std::sync::Arc::default();
        Ok(Box::new(FullSortOnly { inner, asked, full: false, all_records: true })
            as Box<dyn Sorter>)
    })
}

/// 40 frameworks in `r1` and 10 in `r2` (the even ones take revocable resources, so an agent's
/// walk goes on after a grant to an odd one), 6 agents with revocable cpus, and 30 runs whose
/// offers are declined with refuse filters of 100 seconds, one in five of 2 seconds (so later
/// walks pass many filtered frameworks): the offers of every run.
fn offers_over_many_runs(framework_sorter: SorterFactory) -> Vec<Vec<Allocation>> {
    offers_over_many_runs_with(drf(), framework_sorter)
}

/// [`offers_over_many_runs`] with the given role sorter too.
fn offers_over_many_runs_with(
    role_sorter: SorterFactory,
    framework_sorter: SorterFactory,
) -> Vec<Vec<Allocation>> {
    let mut a =
        HierarchicalAllocator::new(&AllocatorOptions::default(), role_sorter, framework_sorter)
            .unwrap();
    for f in 0..50u32 {
        let mut info = framework_info(f, if f < 40 { "r1" } else { "r2" });
        if f % 2 == 0 {
            info.capabilities = info.capabilities.with(FrameworkCapabilities::REVOCABLE_RESOURCES);
        }
        a.add_framework(&info, &[], true, &Default::default()).unwrap();
    }
    for i in 0..6u32 {
        let total = "cpus:2;mem:100;cpus{revocable}:4".parse().unwrap();
        a.add_agent(&agent_info(i), None, &total, &[]).unwrap();
    }
    let mut runs = Vec::new();
    for round in 0..30u32 {
        a.set_time(f64::from(round)).unwrap();
        let agents: Vec<AgentId> = a.agents.keys().copied().collect();
        let mut out = OfferBatch::default();
        a.allocate(&agents, true, &mut out).unwrap();
        for (k, o) in out.offers.iter().enumerate() {
            let refuse = if (round as usize + k).is_multiple_of(5) { 2.0 } else { 100.0 };
            a.recover_resources(o.framework, o.agent, &o.role, &o.resources, Some(refuse)).unwrap();
        }
        runs.push(out.offers.iter().cloned().collect());
    }
    runs
}

#[test]
fn reading_framework_orders_a_prefix_at_a_time_gives_the_offers_of_full_sorts() {
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let by_prefix = offers_over_many_runs(drf_noting(false, &asked));
    let asked_by_prefix = std::mem::take(&mut *asked.lock().unwrap());
    let in_full = offers_over_many_runs(drf_noting(true, &asked));
    assert_eq!(by_prefix, in_full);
    assert!(by_prefix.iter().filter(|r| !r.is_empty()).count() > 20, "runs offer something");
    // The walks did read past the first prefix, and read the rest before a grant that a walk
    // went on after.
    assert!(asked_by_prefix.contains(&16), "{asked_by_prefix:?}");
    assert!(asked_by_prefix.contains(&usize::MAX), "{asked_by_prefix:?}");
}

#[test]
fn an_agent_taken_by_the_first_framework_reads_only_a_prefix_of_the_order() {
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut a =
        HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf_noting(false, &asked))
            .unwrap();
    for f in 0..100u32 {
        a.add_framework(&framework_info(f, "r1"), &[], true, &Default::default()).unwrap();
    }
    a.add_agent(&agent_info(0), None, &"cpus:4;mem:64".parse().unwrap(), &[]).unwrap();
    asked.lock().unwrap().clear();
    assert_eq!(run_at(&mut a, 1.0), vec![(0, 0)]);
    // One read to see that the role has an active framework, one for the agent's walk.
    assert_eq!(*asked.lock().unwrap(), vec![1, 8]);
}

#[test]
fn sorters_keeping_scalars_only_give_the_offers_of_sorters_keeping_every_record() {
    let scalars_only = offers_over_many_runs_with(drf(), drf());
    let all_records = offers_over_many_runs_with(drf_with_all_records(), drf_with_all_records());
    assert_eq!(scalars_only, all_records);
    assert!(scalars_only.iter().filter(|r| !r.is_empty()).count() > 20, "runs offer something");
}

#[test]
fn the_allocator_asks_every_sorter_it_creates_to_keep_scalars_only() {
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut a = HierarchicalAllocator::new(
        &AllocatorOptions::default(),
        recording("role", &log),
        recording("fw", &log),
    )
    .unwrap();
    a.add_framework(&framework_info(0, "r1"), &[], true, &Default::default()).unwrap();
    a.add_framework(&framework_info(1, "r2"), &[], true, &Default::default()).unwrap();
    a.replace_sorters(recording("role2", &log), recording("fw2", &log)).unwrap();
    let asked: Vec<String> = std::mem::take(&mut *log.lock().unwrap())
        .into_iter()
        .filter(|c| c.ends_with("keep_scalars_only"))
        .collect();
    assert_eq!(
        asked,
        [
            "role: keep_scalars_only",
            "fw: keep_scalars_only",
            "fw: keep_scalars_only",
            "role2: keep_scalars_only",
            "fw2: keep_scalars_only",
            "fw2: keep_scalars_only"
        ]
    );
}

// Refuse filters live on the agents' lists (issue 21): the bookkeeping that keeps them in step
// with frameworks, roles, agents and time.

/// One agent of `cpus:4;mem:64` and framework 0 subscribed to `roles`.
fn one_framework_in(roles: &[&str]) -> HierarchicalAllocator {
    let mut a = HierarchicalAllocator::new(&AllocatorOptions::default(), drf(), drf()).unwrap();
    let info = FrameworkInfo {
        id: FrameworkId(0),
        name: "f0".into(),
        roles: roles.iter().map(|r| RString::from(*r)).collect::<Vec<_>>().into(),
        capabilities: FrameworkCapabilities::MULTI_ROLE,
    };
    a.add_framework(&info, &[], true, &Default::default()).unwrap();
    a.add_agent(&agent_info(0), None, &"cpus:4;mem:64".parse().unwrap(), &[]).unwrap();
    a
}

/// A run at `now`; every offer declined with a refuse filter of `seconds`: the offers' roles.
fn decline_roles(a: &mut HierarchicalAllocator, now: f64, seconds: f64) -> Vec<String> {
    a.set_time(now).unwrap();
    let agents: Vec<AgentId> = a.agents.keys().copied().collect();
    let mut out = OfferBatch::default();
    a.allocate(&agents, true, &mut out).unwrap();
    for o in out.offers.iter() {
        a.recover_resources(o.framework, o.agent, &o.role, &o.resources, Some(seconds)).unwrap();
    }
    out.offers.iter().map(|o| o.role.to_string()).collect()
}

fn filters_on_agent_0(a: &HierarchicalAllocator) -> usize {
    a.agents[&AgentId(0)].offer_filters.all().len()
}

#[test]
fn r6_a_refuse_filter_of_one_role_does_not_block_another_role() {
    let mut a = one_framework_in(&["r1", "r2"]);
    let first = decline_roles(&mut a, 1.0, 100.0);
    assert_eq!(first.len(), 1);
    let second = decline_roles(&mut a, 2.0, 100.0);
    assert_eq!(second.len(), 1, "the other role is offered the declined agent");
    assert_ne!(first[0], second[0]);
    assert!(run_at(&mut a, 3.0).is_empty(), "now both roles have declined");
}

#[test]
fn r11_a_removed_frameworks_refuse_filters_are_gone() {
    let mut a = fully_filtered(100.0);
    assert_eq!(a.active_offer_filters().get("r1"), Some(&2));
    a.remove_framework(FrameworkId(0)).unwrap();
    assert_eq!(a.active_offer_filters().get("r1"), Some(&1));
    assert!(a.agents[&AgentId(0)].offer_filters.of(FrameworkId(0)).is_empty());
    assert_eq!(a.frameworks[&FrameworkId(1)].refuse_filters, 1);
}

#[test]
fn r10_a_deactivated_frameworks_refuse_filters_are_gone() {
    let mut a = fully_filtered(100.0);
    a.deactivate_framework(FrameworkId(1)).unwrap();
    assert_eq!(a.active_offer_filters().get("r1"), Some(&1));
    assert!(a.agents[&AgentId(0)].offer_filters.of(FrameworkId(1)).is_empty());
    assert_eq!(a.frameworks[&FrameworkId(1)].refuse_filters, 0);
}

#[test]
fn r5_an_expired_refuse_filter_is_dropped_from_the_agent() {
    let mut a = one_framework_in(&["r1"]);
    assert_eq!(decline_roles(&mut a, 1.0, 10.0).len(), 1);
    assert!(run_at(&mut a, 5.0).is_empty());
    assert_eq!(filters_on_agent_0(&a), 1);
    assert_eq!(run_at(&mut a, 11.5), vec![(0, 0)], "the filter made at 1 is over at 11");
    assert_eq!(filters_on_agent_0(&a), 0);
    assert_eq!(a.frameworks[&FrameworkId(0)].refuse_filters, 0);
    assert!(a.active_offer_filters().is_empty());
}

#[test]
fn r9_reviving_one_role_drops_only_that_roles_refuse_filters() {
    let mut a = one_framework_in(&["r1", "r2"]);
    decline_roles(&mut a, 1.0, 100.0);
    decline_roles(&mut a, 2.0, 100.0);
    assert_eq!(filters_on_agent_0(&a), 2);
    a.revive_offers(FrameworkId(0), &[RString::from("r1")]).unwrap();
    let left: Vec<String> = a.active_offer_filters().into_keys().collect();
    assert_eq!(left, vec!["r2".to_string()]);
    assert_eq!(a.frameworks[&FrameworkId(0)].refuse_filters, 1);
    let offers = decline_roles(&mut a, 3.0, 100.0);
    assert_eq!(offers, vec!["r1".to_string()], "only the revived role is offered the agent");
}

#[test]
fn a_framework_leaving_a_role_drops_that_roles_refuse_filters() {
    let mut a = one_framework_in(&["r1", "r2"]);
    decline_roles(&mut a, 1.0, 100.0);
    decline_roles(&mut a, 2.0, 100.0);
    let info = FrameworkInfo {
        id: FrameworkId(0),
        name: "f0".into(),
        roles: vec![RString::from("r2")].into(),
        capabilities: FrameworkCapabilities::MULTI_ROLE,
    };
    a.update_framework(&info, &Default::default()).unwrap();
    let left: Vec<String> = a.active_offer_filters().into_keys().collect();
    assert_eq!(left, vec!["r2".to_string()]);
    assert_eq!(a.frameworks[&FrameworkId(0)].refuse_filters, 1);
}

#[test]
fn r12_a_removed_agents_refuse_filters_are_gone() {
    let mut a = fully_filtered(100.0);
    a.remove_agent(AgentId(0)).unwrap();
    assert!(a.active_offer_filters().is_empty());
    assert_eq!(a.frameworks[&FrameworkId(0)].refuse_filters, 0);
    assert_eq!(a.frameworks[&FrameworkId(1)].refuse_filters, 0);
}

#[test]
fn refuse_filters_of_many_frameworks_are_found_by_framework_on_the_agent() {
    let mut list = offer_filters::AgentFilters::default();
    let shared = std::sync::Arc::new(Resources::new());
    for fw in [5, 1, 3, 1, 5, 0] {
        list.insert(offer_filters::OfferFilter {
            framework: FrameworkId(fw),
            role: offer_filters::RoleId(fw),
            expires: f64::from(fw),
            first_periodic: 0.0,
            resources: std::sync::Arc::clone(&shared),
        });
    }
    let ids: Vec<u32> = list.all().iter().map(|f| f.framework.0).collect();
    assert_eq!(ids, vec![0, 1, 1, 3, 5, 5]);
    assert_eq!(list.of(FrameworkId(1)).len(), 2);
    assert_eq!(list.of(FrameworkId(2)).len(), 0);
    assert_eq!(list.retain_of(FrameworkId(5), |_| false), 2);
    let ids: Vec<u32> = list.all().iter().map(|f| f.framework.0).collect();
    assert_eq!(ids, vec![0, 1, 1, 3]);
}

#[test]
fn frameworks_sharing_a_bit_of_the_agents_filter_bitmap_are_told_apart_by_the_list() {
    let mut list = offer_filters::AgentFilters::default();
    let shared = std::sync::Arc::new(Resources::new());
    let filter = |fw: u32| offer_filters::OfferFilter {
        framework: FrameworkId(fw),
        role: offer_filters::RoleId(0),
        expires: 1.0,
        first_periodic: 0.0,
        resources: std::sync::Arc::clone(&shared),
    };
    // 3, 259 and 515 share a bit (id modulo 256).
    list.insert(filter(3));
    list.insert(filter(259));
    assert_eq!(list.of(FrameworkId(515)).len(), 0);
    assert_eq!(list.retain_of(FrameworkId(259), |_| false), 1);
    assert_eq!(list.of(FrameworkId(3)).len(), 1, "the bit stays while 3 has a filter");
    assert_eq!(list.of(FrameworkId(259)).len(), 0);
    list.retain(|_| false, |_| {});
    assert_eq!(list.of(FrameworkId(3)).len(), 0);
    list.insert(filter(4));
    assert_eq!(list.take().len(), 1);
    assert_eq!(list.of(FrameworkId(4)).len(), 0);
}
