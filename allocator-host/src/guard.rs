//! The offer guard: the host never trusts what a module hands back.
//!
//! Every check on module output lives here (or is called from here):
//!
//! * [`check_offer`]: an offer goes to a known, active framework, for a known, activated
//!   agent, under one of the framework's roles that it has not suppressed; its resources are
//!   well formed ([`Resources::checked`]: canonicalised, or refused before any arithmetic);
//!   they fit in what is free on the agent; and reserved resources go only to their role or
//!   one of its descendants.
//! * [`check_inverse_offer`]: an inverse offer goes to a known, active framework that holds
//!   something on a known agent that has an unavailability; the window shown is the host's.
//! * [`CheckedSorter`]: a sorter module's `sort` answers only known, active clients, each at
//!   most once, never more than there are; a `sort_prefix` answer is checked the same way, and
//!   one that says more clients follow holds exactly the length asked and fewer than the active
//!   clients; anything else is a module fault (fallback or stop, per `--on_module_failure`).
//!   Inside the built-in allocator, which usually reads only a prefix of each answer, the
//!   wrapper checks the length and [`SortWalk`] checks each client the allocator actually
//!   visits (so the check costs no more than the walk).
//!
//! [`GuardLog`] counts what the guard drops (`allocator/guard/dropped_offers`) and logs the
//! first drops one by one.

use allocator_api::{
    AgentAllocation, AgentId, Allocation, ClientId, ErrorKind, ModuleError, Quantities, RString,
    RVec, Resources, Result, Sorter, Unavailability,
};

/// What the guard knows of the framework an offer names.
#[derive(Clone, Copy, Debug)]
pub struct FrameworkView<'a> {
    /// Whether it is active.
    pub active: bool,
    /// Its roles.
    pub roles: &'a [RString],
    /// The roles it suppressed offers for.
    pub suppressed: &'a [RString],
}

/// What the guard knows of the agent an offer names.
#[derive(Clone, Copy, Debug)]
pub struct AgentView<'a> {
    /// Whether it is activated.
    pub activated: bool,
    /// Its total resources.
    pub total: &'a Resources,
    /// What the host's ledger holds on it (non-shared).
    pub used: &'a Resources,
}

/// The guard's decision on one offer.
#[derive(Clone, Debug, PartialEq)]
pub enum OfferVerdict {
    /// The whole offer is refused (nothing of it is recorded or shown), with the reason.
    /// `give_back` holds the offer's resources (canonical) when the framework and agent are
    /// known and the resources well formed, so the allocator can have them back.
    Refuse {
        /// Why.
        reason: String,
        /// What to give back to the allocator, if anything.
        give_back: Option<Resources>,
    },
    /// `offer` (possibly empty) goes through; `dropped` is the part that did not fit (more than
    /// is free, or reserved to a role the offer's role may not receive), to give back to the
    /// allocator.
    Accept {
        /// What is offered.
        offer: Resources,
        /// What was taken out.
        dropped: Option<Resources>,
    },
}

/// Checks one offer (see the [module documentation](self)). `framework` and `agent` are `None`
/// when unknown or removed.
pub fn check_offer(
    offer: &Allocation,
    framework: Option<FrameworkView<'_>>,
    agent: Option<AgentView<'_>>,
) -> OfferVerdict {
    let role = offer.role.as_str();
    let resources = match offer.resources.checked() {
        Ok(r) => r,
        Err(e) => return OfferVerdict::Refuse { reason: e.to_string(), give_back: None },
    };
    let known = framework.is_some() && agent.is_some();
    let refuse = |reason: String| OfferVerdict::Refuse {
        reason,
        give_back: known.then(|| resources.clone().into_owned()),
    };
    let Some(fw) = framework.filter(|f| f.active) else {
        return refuse(format!("{} is unknown, removed or inactive", offer.framework));
    };
    let Some(agent) = agent.filter(|a| a.activated) else {
        return refuse(format!("{} is unknown, removed or deactivated", offer.agent));
    };
    if !fw.roles.iter().any(|r| r.as_str() == role) {
        return refuse(format!("role '{role}' is not one of {}'s roles", offer.framework));
    }
    if fw.suppressed.iter().any(|r| r.as_str() == role) {
        return refuse(format!("{} suppressed offers for role '{role}'", offer.framework));
    }
    let mut free = agent.total.filter(|r| !r.is_shared()) - agent.used;
    free.add(&agent.total.shared());
    let allowed = resources.filter(|r| r.is_allocatable_to(role));
    let ok = allowed.clone() - &(allowed - &free);
    let dropped = (ok != *resources).then(|| resources.clone().into_owned() - &ok);
    OfferVerdict::Accept { offer: ok, dropped }
}

/// Checks one inverse offer: `framework_active` is `None` for an unknown or removed framework;
/// `unavailability` is the agent's (`None`: unknown agent, or no maintenance scheduled);
/// `holds` says whether the framework holds anything on the agent. Returns the window to show
/// (the host's record, never the module's).
pub fn check_inverse_offer(
    framework_active: Option<bool>,
    unavailability: Option<Option<Unavailability>>,
    holds: bool,
) -> std::result::Result<Unavailability, &'static str> {
    match (framework_active, unavailability) {
        (None, _) | (Some(false), _) => Err("the framework is unknown, removed or inactive"),
        (_, None) => Err("the agent is unknown or removed"),
        (_, Some(None)) => Err("the agent has no unavailability scheduled"),
        (_, Some(Some(_))) if !holds => Err("the framework holds nothing on the agent"),
        (_, Some(Some(u))) => Ok(u),
    }
}

/// Counts the guard's drops and logs the first ones one by one.
#[derive(Debug, Default)]
pub struct GuardLog {
    dropped: u64,
}

impl GuardLog {
    /// How many logged one by one before the guard only counts.
    const LOGGED: u64 = 20;

    /// Counts one drop; logs `message()` for the first few.
    pub fn drop_offer(&mut self, message: impl FnOnce() -> String) {
        self.dropped += 1;
        if self.dropped <= Self::LOGGED {
            log::error!("offer guard: {}", message());
        } else if self.dropped == Self::LOGGED + 1 {
            log::error!("offer guard: more offers dropped; counting them without logging each");
        }
    }

    /// The number of drops so far (`allocator/guard/dropped_offers`).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// Checks a sort answer as the built-in allocator walks it: each visited client must be one the
/// allocator can take from that sorter (`eligible`) and be visited at most once per answer.
#[derive(Debug, Default)]
pub struct SortWalk {
    seen: Vec<u32>,
    stamp: u32,
    /// Clients visited (and passed) over the walk's whole life.
    visits: u64,
}

impl SortWalk {
    /// Starts checking a new answer.
    pub fn begin(&mut self) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.seen.iter_mut().for_each(|s| *s = 0);
            self.stamp = 1;
        }
    }

    /// Checks one visited client of `sorter`'s answer (`role sorter`, `framework sorter of
    /// role 'r'`); the error is a module fault.
    pub fn visit(
        &mut self,
        sorter: &dyn Fn() -> String,
        client: ClientId,
        eligible: bool,
    ) -> Result<()> {
        let fault = |what: String| ModuleError {
            kind: ErrorKind::FAILED,
            message: format!("the {} answered sort with {what}", sorter()).into(),
        };
        if !eligible {
            return Err(fault(format!("{client}, which is not an active client")));
        }
        let i = client.index();
        if i >= self.seen.len() {
            self.seen.resize(i + 1, 0);
        }
        if self.seen[i] == self.stamp {
            return Err(fault(format!("{client} more than once")));
        }
        self.seen[i] = self.stamp;
        self.visits += 1;
        Ok(())
    }

    /// The number of clients that passed [`visit`](Self::visit) since the walk was made: for the
    /// built-in allocator's framework walk, the frameworks it considered (benchmarks divide a
    /// run's time by it).
    pub fn visits(&self) -> u64 {
        self.visits
    }
}

/// What a checked answer claims to be.
#[derive(Clone, Copy, Debug)]
enum Answer {
    /// The whole order, from `sort`.
    Sort,
    /// `sort_prefix(len)`'s answer: the whole order (`more` false: the call answered `true`),
    /// or its first clients with more to follow (`more` true: the call answered `false`).
    Prefix {
        /// The length asked.
        len: usize,
        /// Whether the answer says more clients follow.
        more: bool,
    },
}

/// Client states as the sorter was told them.
const ABSENT: u8 = 0;
const INACTIVE: u8 = 1;
const ACTIVE: u8 = 2;

/// A sorter module whose `sort` output is checked: only known, active clients, each at most
/// once, and no more than there are. A violation is returned as a module fault (so the
/// allocator falls back or stops, per `--on_module_failure`) before the caller reads the
/// order. The wrapper keeps its own record of clients from the calls it forwards.
///
/// `sort_prefix(len)` is forwarded (a module that has no such call keeps the trait's default:
/// one `sort`) and its answer passes the same check: an answer of `true` is the whole order, a
/// sort answer; an answer of `false` (more clients follow) must also hold exactly `len` clients
/// and fewer than the active ones. `keep_scalars_only` is forwarded as is.
pub struct CheckedSorter {
    inner: Box<dyn Sorter>,
    name: String,
    state: Vec<u8>,
    active: usize,
    seen: Vec<u32>,
    stamp: u32,
    /// The last answer that passed, valid while no client was added, removed, activated or
    /// deactivated since: an identical answer passes with one comparison (the common case on
    /// the hot path, where a sort per agent answers the same order).
    last_ok: Vec<ClientId>,
    last_ok_valid: bool,
    /// Only the length is checked (the caller walks the answer with [`SortWalk`]).
    length_only: bool,
}

impl CheckedSorter {
    /// Wraps a sorter module called `name`.
    pub fn new(inner: Box<dyn Sorter>, name: &str) -> CheckedSorter {
        CheckedSorter {
            inner,
            name: name.to_owned(),
            state: Vec::new(),
            active: 0,
            seen: Vec::new(),
            stamp: 0,
            last_ok: Vec::new(),
            last_ok_valid: false,
            length_only: false,
        }
    }

    /// Wraps a sorter module whose answers the caller checks client by client as it walks
    /// them ([`SortWalk`], the built-in allocator): `sort` only checks the length here.
    pub fn length_only(inner: Box<dyn Sorter>, name: &str) -> CheckedSorter {
        CheckedSorter { length_only: true, ..CheckedSorter::new(inner, name) }
    }

    fn set(&mut self, client: ClientId, to: u8) {
        self.last_ok_valid = false;
        let i = client.index();
        if i >= self.state.len() {
            if to == ABSENT {
                return;
            }
            self.state.resize(i + 1, ABSENT);
        }
        let from = std::mem::replace(&mut self.state[i], to);
        if from == ACTIVE {
            self.active -= 1;
        }
        if to == ACTIVE {
            self.active += 1;
        }
    }

    fn violation(&self, call: Answer, what: String) -> ModuleError {
        let call = match call {
            Answer::Sort => "sort".to_owned(),
            Answer::Prefix { len, .. } => format!("sort_prefix({len})"),
        };
        ModuleError {
            kind: ErrorKind::FAILED,
            message: format!("sorter '{}' answered {call} with {what}", self.name).into(),
        }
    }

    /// Checks a sort answer, or a prefix answer that says more clients follow (see the
    /// [type documentation](Self)).
    fn check(&mut self, order: &[ClientId], answer: Answer) -> Result<()> {
        if order.len() > self.active {
            return Err(self.violation(
                answer,
                format!("{} clients, but only {} are active", order.len(), self.active),
            ));
        }
        if let Answer::Prefix { len, more: true } = answer {
            if order.len() == self.active {
                return Err(self.violation(
                    answer,
                    format!("all {} active clients and more to follow", self.active),
                ));
            }
            // `sort_prefix` answers the first `len` clients, or all of them when there are
            // fewer: an answer with more to follow holds exactly `len`.
            if order.len() != len {
                return Err(
                    self.violation(answer, format!("{} clients and more to follow", order.len()))
                );
            }
        }
        // A prefix of an answer that passed passes (each client in it is known, active, once).
        if self.length_only || (self.last_ok_valid && self.last_ok.starts_with(order)) {
            return Ok(());
        }
        if self.seen.len() < self.state.len() {
            self.seen.resize(self.state.len(), 0);
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.seen.iter_mut().for_each(|s| *s = 0);
            self.stamp = 1;
        }
        for &c in order {
            let i = c.index();
            if self.state.get(i).copied() != Some(ACTIVE) {
                return Err(self.violation(answer, format!("{c}, which is not an active client")));
            }
            if self.seen[i] == self.stamp {
                return Err(self.violation(answer, format!("{c} more than once")));
            }
            self.seen[i] = self.stamp;
        }
        self.last_ok.clear();
        self.last_ok.extend_from_slice(order);
        self.last_ok_valid = true;
        Ok(())
    }
}

impl Sorter for CheckedSorter {
    fn add(&mut self, client: ClientId, path: &str) -> Result<()> {
        self.inner.add(client, path)?;
        self.set(client, INACTIVE);
        Ok(())
    }
    fn remove(&mut self, client: ClientId) -> Result<()> {
        self.inner.remove(client)?;
        self.set(client, ABSENT);
        Ok(())
    }
    fn activate(&mut self, client: ClientId) -> Result<()> {
        self.inner.activate(client)?;
        if self.state.get(client.index()).is_some_and(|s| *s != ABSENT) {
            self.set(client, ACTIVE);
        }
        Ok(())
    }
    fn deactivate(&mut self, client: ClientId) -> Result<()> {
        self.inner.deactivate(client)?;
        if self.state.get(client.index()).is_some_and(|s| *s != ABSENT) {
            self.set(client, INACTIVE);
        }
        Ok(())
    }
    fn update_weight(&mut self, path: &str, weight: f64) -> Result<()> {
        self.inner.update_weight(path, weight)
    }
    fn set_time(&mut self, now: f64) -> Result<()> {
        self.inner.set_time(now)
    }
    fn allocated(&mut self, client: ClientId, agent: AgentId, resources: &Resources) -> Result<()> {
        self.inner.allocated(client, agent, resources)
    }
    fn update(
        &mut self,
        client: ClientId,
        agent: AgentId,
        old: &Resources,
        new: &Resources,
    ) -> Result<()> {
        self.inner.update(client, agent, old, new)
    }
    fn unallocated(
        &mut self,
        client: ClientId,
        agent: AgentId,
        resources: &Resources,
    ) -> Result<()> {
        self.inner.unallocated(client, agent, resources)
    }
    fn allocation(&self, client: ClientId, out: &mut RVec<AgentAllocation>) -> Result<()> {
        self.inner.allocation(client, out)
    }
    fn allocation_on(&self, client: ClientId, agent: AgentId, out: &mut Resources) -> Result<()> {
        self.inner.allocation_on(client, agent, out)
    }
    fn allocation_scalar_quantities(
        &self,
        client: Option<ClientId>,
        out: &mut Quantities,
    ) -> Result<()> {
        self.inner.allocation_scalar_quantities(client, out)
    }
    fn add_agent(&mut self, agent: AgentId, total: &Quantities) -> Result<()> {
        self.inner.add_agent(agent, total)
    }
    fn remove_agent(&mut self, agent: AgentId) -> Result<()> {
        self.inner.remove_agent(agent)
    }
    fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()> {
        self.inner.sort(out)?;
        let checked = self.check(out, Answer::Sort);
        if checked.is_err() {
            out.clear();
        }
        checked
    }
    fn sort_prefix(&mut self, len: usize, out: &mut RVec<ClientId>) -> Result<bool> {
        let whole = self.inner.sort_prefix(len, out)?;
        let checked = self.check(out, Answer::Prefix { len, more: !whole });
        if checked.is_err() {
            out.clear();
        }
        checked.map(|()| whole)
    }
    fn keep_scalars_only(&mut self) -> bool {
        self.inner.keep_scalars_only()
    }
    fn contains(&self, client: ClientId) -> bool {
        self.inner.contains(client)
    }
    fn count(&self) -> usize {
        self.inner.count()
    }
    fn dominant_share(&self, client: ClientId) -> Option<f64> {
        self.inner.dominant_share(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api::FrameworkId;

    fn res(s: &str) -> Resources {
        s.parse().unwrap()
    }

    fn offer(role: &str, resources: &str) -> Allocation {
        Allocation {
            framework: FrameworkId(0),
            agent: AgentId(0),
            role: role.into(),
            resources: res(resources),
        }
    }

    fn verdict(o: &Allocation, roles: &[&str], suppressed: &[&str], total: &str) -> OfferVerdict {
        let roles: Vec<RString> = roles.iter().map(|r| (*r).into()).collect();
        let suppressed: Vec<RString> = suppressed.iter().map(|r| (*r).into()).collect();
        let total = res(total);
        let used = Resources::new();
        check_offer(
            o,
            Some(FrameworkView { active: true, roles: &roles, suppressed: &suppressed }),
            Some(AgentView { activated: true, total: &total, used: &used }),
        )
    }

    #[test]
    fn an_offer_under_a_role_the_framework_does_not_have_is_refused() {
        let o = offer("r2", "cpus(r2):2;mem(r2):1024");
        let v = verdict(&o, &["r1"], &[], "cpus(r2):2;mem(r2):1024;cpus:4");
        assert!(
            matches!(v, OfferVerdict::Refuse { reason: ref m, .. } if m.contains("not one of")),
            "{v:?}"
        );
    }

    #[test]
    fn a_reservation_goes_to_its_role_and_its_descendants_only() {
        let total = "cpus(r1):2;cpus(r1/a):1;cpus(r2):3";
        let to_child = offer("r1/a", "cpus(r1):2;cpus(r1/a):1");
        let v = verdict(&to_child, &["r1/a"], &[], total);
        assert_eq!(
            v,
            OfferVerdict::Accept { offer: res("cpus(r1):2;cpus(r1/a):1"), dropped: None }
        );
        let to_parent = offer("r1", "cpus(r1):2;cpus(r1/a):1;cpus(r2):3");
        let v = verdict(&to_parent, &["r1"], &[], total);
        assert_eq!(
            v,
            OfferVerdict::Accept {
                offer: res("cpus(r1):2"),
                dropped: Some(res("cpus(r1/a):1;cpus(r2):3"))
            }
        );
    }

    #[test]
    fn a_gpu_device_is_never_over_committed() {
        // Device 0 has 0.4 free (0.6 is used); device 1 is free. An offer of 0.5 on device 0
        // is over-commit even though the agent has 1.4 GPU free in all.
        let roles: Vec<RString> = vec!["r1".into()];
        let total = res("cpus:4;gpus[0]:1;gpus[1]:1");
        let used = res("gpus[0]:0.6");
        let v = check_offer(
            &offer("r1", "cpus:1;gpus[0]:0.5"),
            Some(FrameworkView { active: true, roles: &roles, suppressed: &[] }),
            Some(AgentView { activated: true, total: &total, used: &used }),
        );
        match v {
            OfferVerdict::Accept { offer, dropped } => {
                assert!(!offer.to_string().contains("gpus[0]:0.5"), "{offer}");
                assert!(dropped.is_some_and(|d| d.scalar("gpus").is_positive()));
            }
            OfferVerdict::Refuse { .. } => {}
        }
    }

    #[test]
    fn an_offer_to_a_suppressed_role_is_refused() {
        let v = verdict(&offer("r1", "cpus:1"), &["r1"], &["r1"], "cpus:4");
        assert!(
            matches!(v, OfferVerdict::Refuse { reason: ref m, .. } if m.contains("suppressed")),
            "{v:?}"
        );
    }

    #[test]
    fn an_offer_to_an_inactive_framework_is_refused() {
        let total = res("cpus:4");
        let used = Resources::new();
        let roles = ["r1".into()];
        let v = check_offer(
            &offer("r1", "cpus:1"),
            Some(FrameworkView { active: false, roles: &roles, suppressed: &[] }),
            Some(AgentView { activated: true, total: &total, used: &used }),
        );
        assert!(matches!(v, OfferVerdict::Refuse { give_back: Some(_), .. }));
    }

    #[test]
    fn more_than_is_free_is_dropped_and_given_back() {
        let v = verdict(&offer("r1", "cpus:6;mem:10"), &["r1"], &[], "cpus:4;mem:10");
        assert_eq!(
            v,
            OfferVerdict::Accept { offer: res("cpus:4;mem:10"), dropped: Some(res("cpus:2")) }
        );
    }

    #[test]
    fn inverse_offers_need_a_known_framework_holding_resources_on_an_agent_in_maintenance() {
        let u = Unavailability { start: 5.0, duration: None.into() };
        assert!(check_inverse_offer(None, Some(Some(u)), true).is_err());
        assert!(check_inverse_offer(Some(true), None, true).is_err());
        assert!(check_inverse_offer(Some(true), Some(None), true).is_err());
        assert!(check_inverse_offer(Some(true), Some(Some(u)), false).is_err());
        assert_eq!(check_inverse_offer(Some(true), Some(Some(u)), true).unwrap().start, 5.0);
    }

    /// Sorts whatever it is told to; answers `sort_prefix` with the same order and the scripted
    /// "whole order" flag.
    struct Scripted(Vec<ClientId>, bool);

    impl Sorter for Scripted {
        fn add(&mut self, _: ClientId, _: &str) -> Result<()> {
            Ok(())
        }
        fn remove(&mut self, _: ClientId) -> Result<()> {
            Ok(())
        }
        fn activate(&mut self, _: ClientId) -> Result<()> {
            Ok(())
        }
        fn deactivate(&mut self, _: ClientId) -> Result<()> {
            Ok(())
        }
        fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()> {
            out.clear();
            out.extend(self.0.iter().copied());
            Ok(())
        }
        fn sort_prefix(&mut self, _: usize, out: &mut RVec<ClientId>) -> Result<bool> {
            self.sort(out)?;
            Ok(self.1)
        }
        fn contains(&self, _: ClientId) -> bool {
            true
        }
        fn count(&self) -> usize {
            self.0.len()
        }
    }

    fn checked(answer: &[u32]) -> Result<()> {
        let ids = answer.iter().map(|c| ClientId(*c)).collect();
        let mut s = CheckedSorter::new(Box::new(Scripted(ids, true)), "scripted");
        for c in 0..3 {
            s.add(ClientId(c), &format!("c{c}"))?;
        }
        s.activate(ClientId(0))?;
        s.activate(ClientId(1))?;
        let mut out = RVec::new();
        s.sort(&mut out)
    }

    #[test]
    fn sort_output_of_known_active_clients_passes() {
        assert!(checked(&[1, 0]).is_ok());
        assert!(checked(&[]).is_ok());
    }

    #[test]
    fn sort_output_with_a_repeated_client_is_a_fault() {
        let e = checked(&[0, 0]).unwrap_err();
        assert!(e.is_fault() && e.message.contains("more than once"), "{e}");
    }

    #[test]
    fn sort_output_longer_than_the_active_clients_is_a_fault() {
        let e = checked(&[0; 5_000]).unwrap_err();
        assert!(e.message.contains("5000 clients, but only 2 are active"), "{e}");
    }

    #[test]
    fn a_walk_refuses_an_ineligible_or_repeated_client() {
        let mut walk = SortWalk::default();
        let name = || "framework sorter of role 'r'".to_owned();
        walk.begin();
        assert!(walk.visit(&name, ClientId(3), true).is_ok());
        let e = walk.visit(&name, ClientId(3), true).unwrap_err();
        assert!(e.is_fault() && e.message.contains("more than once"), "{e}");
        assert!(walk.visit(&name, ClientId(u32::MAX), false).is_err());
        walk.begin();
        assert!(walk.visit(&name, ClientId(3), true).is_ok(), "a new answer starts afresh");
    }

    #[test]
    fn a_repeated_answer_is_checked_again_after_a_client_changes() {
        let mut s =
            CheckedSorter::new(Box::new(Scripted(vec![ClientId(0), ClientId(1)], true)), "s");
        for c in 0..2 {
            s.add(ClientId(c), "c").unwrap();
            s.activate(ClientId(c)).unwrap();
        }
        let mut out = RVec::new();
        assert!(s.sort(&mut out).is_ok());
        assert!(s.sort(&mut out).is_ok(), "the same answer passes again");
        s.deactivate(ClientId(1)).unwrap();
        assert!(s.sort(&mut out).is_err(), "client 1 is no longer active");
    }

    #[test]
    fn sort_output_with_an_unknown_or_inactive_client_is_a_fault() {
        assert!(checked(&[2]).unwrap_err().message.contains("not an active client"));
        assert!(checked(&[77]).unwrap_err().message.contains("not an active client"));
    }

    /// `sort_prefix(len)` of a checked sorter with clients 0, 1 and 2 active and 3 inactive
    /// whose module answers `answer` and `whole`.
    fn checked_prefix(answer: &[u32], whole: bool, len: usize) -> Result<bool> {
        let ids = answer.iter().map(|c| ClientId(*c)).collect();
        let mut s = CheckedSorter::new(Box::new(Scripted(ids, whole)), "scripted");
        for c in 0..4 {
            s.add(ClientId(c), &format!("c{c}"))?;
        }
        for c in 0..3 {
            s.activate(ClientId(c))?;
        }
        let mut out = RVec::new();
        let answered = s.sort_prefix(len, &mut out);
        if answered.is_err() {
            assert!(out.is_empty(), "a refused answer is not passed on");
        }
        answered
    }

    #[test]
    fn prefix_answers_of_known_active_clients_pass_with_their_flag() {
        assert!(!checked_prefix(&[2], false, 1).unwrap());
        assert!(!checked_prefix(&[2, 0], false, 2).unwrap());
        assert!(checked_prefix(&[2, 0, 1], true, 1).unwrap());
        assert!(checked_prefix(&[], true, 8).unwrap());
    }

    #[test]
    fn prefix_answer_longer_than_asked_that_is_not_whole_is_a_fault() {
        let e = checked_prefix(&[2, 0], false, 1).unwrap_err();
        assert!(e.is_fault(), "{e}");
        assert!(e.message.contains("answered sort_prefix(1) with 2 clients and more to follow"));
    }

    #[test]
    fn prefix_answer_shorter_than_asked_that_is_not_whole_is_a_fault() {
        let e = checked_prefix(&[2], false, 2).unwrap_err();
        assert!(e.is_fault(), "{e}");
        assert!(e.message.contains("answered sort_prefix(2) with 1 clients and more to follow"));
        let e = checked_prefix(&[], false, 1).unwrap_err();
        assert!(e.message.contains("with 0 clients and more to follow"), "{e}");
    }

    #[test]
    fn prefix_answer_holding_every_active_client_that_is_not_whole_is_a_fault() {
        let e = checked_prefix(&[2, 0, 1], false, 8).unwrap_err();
        assert!(e.message.contains("all 3 active clients and more to follow"), "{e}");
    }

    #[test]
    fn prefix_answer_with_an_inactive_or_repeated_client_is_a_fault() {
        let e = checked_prefix(&[3], false, 1).unwrap_err();
        assert!(e.message.contains("not an active client"), "{e}");
        let e = checked_prefix(&[0, 0], true, 8).unwrap_err();
        assert!(
            e.message.contains("sort_prefix(8) with") && e.message.contains("more than once"),
            "{e}"
        );
        let e = checked_prefix(&[0, 1, 2, 0], true, 8).unwrap_err();
        assert!(e.message.contains("4 clients, but only 3 are active"), "{e}");
    }
}
