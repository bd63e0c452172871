//! Refuse filters (Mesos rules R5/R6), all in one place: the records and their layout, the
//! check an offer passes in the run, expiry, and the refuse-seconds rule; and the [`Blocked`]
//! records that let a run skip, in constant time, a role every candidate framework of which is
//! blocked on an agent.
//!
//! # Layout
//!
//! * A filter is an [`OfferFilter`], a 32-byte record with no allocation of its own: the
//!   framework, the role (a small [`RoleId`] from the allocator's table of role names,
//!   [`RoleNames`]), the expiry, the first periodic run it also blocks, and a shared pointer to
//!   what was refused.
//! * [`RefusedResources`] keeps one copy of each distinct refused value, so the same resources
//!   refused on many agents, or by many frameworks, are stored once. A value's copy is found by
//!   a fingerprint of shape and amounts (equal values have equal fingerprints; the text is never
//!   hashed), after a look at the copy shared last. Copies no filter refers to are dropped when
//!   filters expire and whenever the table has doubled since the last prune.
//! * Each agent keeps every filter made on it in one contiguous list sorted by framework id
//!   ([`AgentFilters`]): the run finds a framework's filters there by binary search, with no
//!   hash probe and no allocation per (framework, agent). Beside the list, a 256-bit map of the
//!   frameworks with a filter there (by id modulo 256) answers the run's usual question, "has
//!   this framework none here?", without reading the list.
//! * A framework keeps only a count of its filters, so removing, deactivating, reviving or
//!   updating a framework with none scans no agent; and expiry scans nothing before the
//!   earliest time any filter can expire.

use std::hash::Hasher;
use std::sync::Arc;

use allocator_api::resources::Value;
use allocator_api::{IdHasher, IdMap, Resources};

use super::*;

/// The interned id of a role name (see [`RoleNames`]): what a refuse filter records instead of
/// the name.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub(super) struct RoleId(pub u32);

/// The allocator's table of role names refuse filters refer to: each name gets a small integer
/// id on first use and keeps it for the allocator's life (role names are few). The text is the
/// interned [`Role`], the same the ledger and the run hold.
#[derive(Debug, Default)]
pub(super) struct RoleNames {
    ids: HashMap<Role, RoleId>,
    names: Vec<Role>,
}

impl RoleNames {
    /// The id of `name`, assigned on first use.
    pub fn intern(&mut self, name: &str) -> RoleId {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = RoleId(u32::try_from(self.names.len()).expect("fewer than 2^32 role names"));
        let name = Role::from(name);
        self.names.push(name);
        self.ids.insert(name, id);
        id
    }

    /// The id of `name` if it was interned.
    pub fn get(&self, name: &str) -> Option<RoleId> {
        self.ids.get(name).copied()
    }

    /// The name of an id [`intern`](Self::intern) returned.
    pub fn name(&self, id: RoleId) -> Role {
        self.names[id.0 as usize]
    }

    /// The number of names interned.
    pub fn len(&self) -> usize {
        self.names.len()
    }
}

/// One refuse filter of one framework on one agent: a record in the agent's list
/// ([`AgentFilters`]), 32 bytes, no allocation of its own.
#[derive(Clone, Debug)]
pub(super) struct OfferFilter {
    /// The framework that declined.
    pub framework: FrameworkId,
    /// The role the offer was made to.
    pub role: RoleId,
    /// Blocks every run before this time.
    pub expires: f64,
    /// Also blocks the periodic run at this time (the first after the filter was made).
    pub first_periodic: f64,
    /// What was refused: one copy shared by every filter refusing the same resources.
    pub resources: Arc<Resources>,
}

const _: () = assert!(std::mem::size_of::<OfferFilter>() == 32);

impl OfferFilter {
    /// `true` while the filter blocks a run at `now` (`periodic`: a periodic run).
    pub fn active(&self, now: f64, periodic: bool) -> bool {
        now < self.expires - EPSILON || (periodic && (now - self.first_periodic).abs() < EPSILON)
    }

    /// `true` once the filter can block no run any more.
    pub fn expired(&self, now: f64) -> bool {
        now >= self.expires - EPSILON && now > self.first_periodic + EPSILON
    }

    /// The earliest time at which [`expired`](Self::expired) can become true.
    pub fn ends(&self) -> f64 {
        self.expires.max(self.first_periodic)
    }
}

/// The refuse filters on one agent: one contiguous list sorted by framework id (a framework's
/// filters are found by binary search, without hashing), in the order they were made within a
/// framework; and a bitmap of the frameworks with a filter here (by id modulo 256), so that the
/// common answer of a run's check, "this framework has none here", needs no read of the list.
#[derive(Clone, Debug, Default)]
pub(super) struct AgentFilters {
    list: Vec<OfferFilter>,
    /// Bit `id % 256` is set for every framework with a filter in `list` (and maybe others).
    frameworks: [u64; 4],
}

/// The word and the bit of `framework` in [`AgentFilters`]'s bitmap.
fn framework_bit(framework: FrameworkId) -> (usize, u64) {
    let i = framework.0 as usize % 256;
    (i / 64, 1 << (i % 64))
}

impl AgentFilters {
    /// The filters `framework` made on this agent.
    pub fn of(&self, framework: FrameworkId) -> &[OfferFilter] {
        let (word, bit) = framework_bit(framework);
        if self.frameworks[word] & bit == 0 {
            return &[];
        }
        let start = self.list.partition_point(|f| f.framework < framework);
        let len = self.list[start..].partition_point(|f| f.framework == framework);
        &self.list[start..start + len]
    }

    /// Every filter on this agent.
    pub fn all(&self) -> &[OfferFilter] {
        &self.list
    }

    /// Adds a filter after the other filters of its framework.
    pub fn insert(&mut self, filter: OfferFilter) {
        let (word, bit) = framework_bit(filter.framework);
        self.frameworks[word] |= bit;
        let at = self.list.partition_point(|f| f.framework <= filter.framework);
        self.list.insert(at, filter);
    }

    /// Drops the filters of `framework` for which `keep` is false; the number dropped.
    pub fn retain_of(
        &mut self,
        framework: FrameworkId,
        mut keep: impl FnMut(&OfferFilter) -> bool,
    ) -> usize {
        let start = self.list.partition_point(|f| f.framework < framework);
        let end = start + self.list[start..].partition_point(|f| f.framework == framework);
        // Kept records move left in order; dropped ones gather at the end of the range.
        let mut kept = start;
        for i in start..end {
            if keep(&self.list[i]) {
                self.list.swap(kept, i);
                kept += 1;
            }
        }
        self.list.drain(kept..end);
        self.removed();
        end - kept
    }

    /// Drops the filters for which `keep` is false, calling `dropped` with each.
    pub fn retain(
        &mut self,
        mut keep: impl FnMut(&OfferFilter) -> bool,
        mut dropped: impl FnMut(&OfferFilter),
    ) {
        self.list.retain(|f| {
            let k = keep(f);
            if !k {
                dropped(f);
            }
            k
        });
        self.removed();
    }

    /// Removes every filter, returning them.
    pub fn take(&mut self) -> Vec<OfferFilter> {
        self.frameworks = [0; 4];
        std::mem::take(&mut self.list)
    }

    /// After a removal: the bitmap made again from what is left, and room given back when the
    /// list holds less than a quarter of it.
    fn removed(&mut self) {
        self.frameworks = [0; 4];
        for f in &self.list {
            let (word, bit) = framework_bit(f.framework);
            self.frameworks[word] |= bit;
        }
        if self.list.capacity() > 4 * self.list.len().max(4) {
            self.list.shrink_to(2 * self.list.len());
        }
    }
}

/// A role every candidate framework of which was blocked on an agent, before any quota rule
/// applied: not allocatable (R17 on everything available), filtered (capabilities, or a refuse
/// filter covering everything available, R6), the GPU gate (R24) or nothing left after the
/// incapable-resource strip. Each of those depends only on the agent's resources and info, the
/// frameworks' info, options, activity and roles, and the filters; so the same walk blocks
/// every candidate again while the agent's resources are unchanged (the record is dropped when
/// they change), `generation` is the allocator's current one (every other change bumps it;
/// filters added since only block more) and the run's time is before `until` (the earliest
/// expiry among the refuse filters the walk relied on). A run then skips the role's walk,
/// still asking the sorters for their order as before (a random sorter draws per sort).
#[derive(Clone, Copy, Debug)]
pub(super) struct Blocked {
    /// The role's client in the role sorter.
    pub role: ClientId,
    /// The allocator's blocked generation when the walk was made.
    pub generation: u64,
    /// Valid for runs before this time.
    pub until: f64,
}

/// Whether `blocked` records `role` as blocked for a run at `now` in `generation`.
pub(super) fn is_blocked(blocked: &[Blocked], role: ClientId, generation: u64, now: f64) -> bool {
    blocked.iter().any(|b| b.role == role && b.generation == generation && now < b.until)
}

/// The shared copies of refused resources: one per distinct value still referred to by a
/// filter. Copies no filter refers to any more are dropped by [`prune`](Self::prune), which
/// runs when filters expire and whenever the table has doubled since the last prune, so the
/// table stays within twice the number of distinct values in use.
#[derive(Debug, Default)]
pub(super) struct RefusedResources {
    /// Copies by [`fingerprint`]; values with the same fingerprint share a bucket.
    copies: IdMap<u64, Vec<Arc<Resources>>>,
    /// The number of copies held.
    len: usize,
    /// The table's size after the last prune.
    pruned_at: usize,
    /// The copy shared last: declines usually refuse what the one before refused.
    last: Option<Arc<Resources>>,
}

/// A cheap hash consistent with equality: the shape of each entry and its amount, not its
/// text (equal values have equal fingerprints; unequal ones usually differ).
fn fingerprint(resources: &Resources) -> u64 {
    let mut h = IdHasher::default();
    h.write_usize(resources.entries().len());
    for e in resources.iter() {
        h.write_usize(e.name.len());
        h.write_usize(e.reservation.len());
        h.write_u8(e.flags.0);
        match &e.value {
            Value::Scalar(s) => h.write_i64(s.millis()),
            Value::Ranges(ranges) => {
                h.write_usize(ranges.len());
                if let (Some(first), Some(last)) = (ranges.first(), ranges.last()) {
                    h.write_u64(first.begin);
                    h.write_u64(last.end);
                }
            }
            Value::Set(items) => h.write_usize(items.len()),
        }
    }
    h.finish()
}

impl RefusedResources {
    /// The shared copy of `resources`, made on first use.
    pub fn share(&mut self, resources: &Resources) -> Arc<Resources> {
        if let Some(last) = &self.last
            && **last == *resources
        {
            return Arc::clone(last);
        }
        let key = fingerprint(resources);
        let found = self
            .copies
            .get(&key)
            .and_then(|bucket| bucket.iter().find(|c| ***c == *resources))
            .cloned();
        let copy = match found {
            Some(copy) => copy,
            None => {
                if self.len >= 2 * self.pruned_at.max(64) {
                    self.prune();
                }
                let copy = Arc::new(resources.clone());
                self.copies.entry(key).or_default().push(Arc::clone(&copy));
                self.len += 1;
                copy
            }
        };
        self.last = Some(Arc::clone(&copy));
        copy
    }

    /// Drops the copies no filter refers to.
    pub fn prune(&mut self) {
        self.last = None;
        self.copies.retain(|_, bucket| {
            bucket.retain(|c| Arc::strong_count(c) > 1);
            !bucket.is_empty()
        });
        self.len = self.copies.values().map(Vec::len).sum();
        self.pruned_at = self.len;
    }

    /// The number of distinct refused values held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }
}

// The filters in the run: whether one blocks an offer, their expiry, and the refuse-seconds
// rule (R5/R6).

impl HierarchicalAllocator {
    /// Rule 3.3g (`role_id`: `role`'s interned id).
    pub(super) fn is_filtered(
        &self,
        fw: &Framework,
        role: &str,
        role_id: RoleId,
        agent: &Agent,
        offer: &Resources,
        periodic: bool,
    ) -> bool {
        let caps = agent.info.capabilities;
        if fw.has(FrameworkCapabilities::MULTI_ROLE) && !caps.has(AgentCapabilities::MULTI_ROLE) {
            return true;
        }
        if role.contains('/') && !caps.has(AgentCapabilities::HIERARCHICAL_ROLE) {
            return true;
        }
        agent.offer_filters.of(fw.info.id).iter().any(|f| {
            f.role == role_id && f.active(self.now, periodic) && f.resources.contains(offer)
        })
    }

    /// Rule 3.3g, with how long its answer holds: `None` when the offer is not filtered;
    /// `Some(t)` when it is, and stays filtered for every run before time `t` (infinite for a
    /// capability; the latest expiry among the refuse filters that cover it; `now` when only a
    /// filter's first-periodic-run rule blocks it, so for this run only).
    pub(super) fn filtered_until(
        &self,
        fw: &Framework,
        role: &str,
        role_id: RoleId,
        agent: &Agent,
        offer: &Resources,
        periodic: bool,
    ) -> Option<f64> {
        let caps = agent.info.capabilities;
        if fw.has(FrameworkCapabilities::MULTI_ROLE) && !caps.has(AgentCapabilities::MULTI_ROLE) {
            return Some(f64::INFINITY);
        }
        if role.contains('/') && !caps.has(AgentCapabilities::HIERARCHICAL_ROLE) {
            return Some(f64::INFINITY);
        }
        let mut until = None;
        for f in agent.offer_filters.of(fw.info.id) {
            if f.role == role_id && f.active(self.now, periodic) && f.resources.contains(offer) {
                let holds =
                    if self.now < f.expires - EPSILON { f.expires - EPSILON } else { self.now };
                until = Some(until.map_or(holds, |u: f64| u.max(holds)));
            }
        }
        until
    }

    /// Records a refuse filter of `filter.framework` on `agent` (both known).
    pub(super) fn add_refuse_filter(&mut self, agent: AgentId, filter: OfferFilter) {
        self.earliest_expiry = self.earliest_expiry.min(filter.ends());
        self.frameworks.get_mut(&filter.framework).expect("known framework").refuse_filters += 1;
        self.agents.get_mut(&agent).expect("known agent").offer_filters.insert(filter);
    }

    /// Drops the refuse filters of `framework` (on every agent) for which `keep` is false. The
    /// agents are scanned only while the framework has filters left.
    pub(super) fn drop_refuse_filters_of(
        &mut self,
        framework: FrameworkId,
        mut keep: impl FnMut(&OfferFilter) -> bool,
    ) {
        let Some(fw) = self.frameworks.get_mut(&framework) else { return };
        if fw.refuse_filters == 0 {
            return;
        }
        let mut seen = fw.refuse_filters;
        let mut dropped = 0;
        for agent in self.agents.values_mut() {
            if seen == 0 {
                break;
            }
            let before = agent.offer_filters.of(framework).len();
            if before == 0 {
                continue;
            }
            seen = seen.saturating_sub(before);
            dropped += agent.offer_filters.retain_of(framework, &mut keep);
        }
        fw.refuse_filters = fw.refuse_filters.saturating_sub(dropped);
    }

    /// Drops every refuse filter on `agent`.
    pub(super) fn drop_refuse_filters_on(&mut self, agent: AgentId) {
        let Some(a) = self.agents.get_mut(&agent) else { return };
        for f in a.offer_filters.take() {
            if let Some(fw) = self.frameworks.get_mut(&f.framework) {
                fw.refuse_filters = fw.refuse_filters.saturating_sub(1);
            }
        }
    }

    /// Drops expired offer and inverse-offer filters. Skipped (no scan) until the earliest
    /// time any filter can expire.
    pub(super) fn expire_filters(&mut self) {
        let now = self.now;
        if now < self.earliest_expiry - 2.0 * EPSILON {
            return;
        }
        let mut earliest = f64::INFINITY;
        let frameworks = &mut self.frameworks;
        for agent in self.agents.values_mut() {
            agent.offer_filters.retain(
                |f| !f.expired(now),
                |f| {
                    if let Some(fw) = frameworks.get_mut(&f.framework) {
                        fw.refuse_filters = fw.refuse_filters.saturating_sub(1);
                    }
                },
            );
            for f in agent.offer_filters.all() {
                earliest = earliest.min(f.ends());
            }
        }
        for fw in self.frameworks.values_mut() {
            fw.inverse_filters.retain(|_, until| now < *until - EPSILON);
            for until in fw.inverse_filters.values() {
                earliest = earliest.min(*until);
            }
        }
        self.earliest_expiry = earliest;
        self.refused.prune();
    }

    pub(super) fn first_periodic_after(&self, c: f64) -> f64 {
        let interval = self.options.allocation_interval;
        if interval <= 0.0 {
            return c;
        }
        ((c / interval + EPSILON).floor() + 1.0) * interval
    }
}

impl HierarchicalAllocator {
    /// Visits every refuse filter that blocks an event-triggered run at the allocator's current
    /// time, read-only (for explanations, issue 24): the framework that declined, the agent,
    /// the role the offer was made to, what was refused and the virtual time the filter
    /// expires at. The order of visits is unspecified.
    pub fn visit_active_refuse_filters(
        &self,
        mut visit: impl FnMut(FrameworkId, AgentId, &str, &Resources, f64),
    ) {
        for (agent_id, agent) in &self.agents {
            for f in agent.offer_filters.all().iter().filter(|f| f.active(self.now, false)) {
                let role = self.role_names.name(f.role);
                visit(f.framework, *agent_id, &role, &f.resources, f.expires);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(text: &str) -> Resources {
        text.parse().unwrap()
    }

    #[test]
    fn the_same_refused_resources_are_stored_once() {
        let mut table = RefusedResources::default();
        let a = table.share(&res("cpus:8;mem:2082;ports:[31000-31010,31020-31030]"));
        let b = table.share(&res("cpus:8;mem:2082;ports:[31000-31010,31020-31030]"));
        let c = table.share(&res("cpus:4"));
        let d = table.share(&res("cpus:8;mem:2082;ports:[31000-31010,31020-31030]"));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert!(Arc::ptr_eq(&a, &d), "found again after another value");
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn values_with_the_same_fingerprint_stay_distinct() {
        let mut table = RefusedResources::default();
        // Same shape, amounts and first and last values: only the middle differs.
        let a = table.share(&res("ports:[1-2,5-6,9-10]"));
        let b = table.share(&res("ports:[1-2,6-7,9-10]"));
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(*table.share(&res("ports:[1-2,5-6,9-10]")), *a);
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn a_copy_no_filter_refers_to_is_dropped_by_a_prune() {
        let mut table = RefusedResources::default();
        let kept = table.share(&res("cpus:1"));
        drop(table.share(&res("cpus:2")));
        table.prune();
        assert_eq!(table.len(), 1);
        assert!(Arc::ptr_eq(&kept, &table.share(&res("cpus:1"))));
    }

    #[test]
    fn the_table_prunes_itself_when_it_doubles() {
        let mut table = RefusedResources::default();
        for i in 1..=1000 {
            drop(table.share(&res(&format!("cpus:{i}"))));
        }
        assert!(table.len() <= 128, "{} copies held for no filter", table.len());
    }
}
