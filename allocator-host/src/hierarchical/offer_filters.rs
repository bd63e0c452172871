//! Refuse filters (Mesos rules R5/R6) as compact records: a filter names its role and its
//! expiry and points at one shared copy of what was refused, so that the same resources refused
//! on many agents (or by many frameworks) are stored once.

use std::collections::HashSet;
use std::sync::Arc;

use allocator_api::Resources;

use super::EPSILON;
/// One refuse filter of one framework on one agent.
#[derive(Clone, Debug)]
pub(super) struct OfferFilter {
    /// The role the offer was made to (shared with the allocator's role table).
    pub role: Arc<str>,
    /// What was refused: one copy shared by every filter refusing the same resources.
    pub resources: Arc<Resources>,
    /// Blocks every run before this time.
    pub expires: f64,
    /// Also blocks the periodic run at this time (the first after the filter was made).
    pub first_periodic: f64,
}

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

/// The shared copies of refused resources: one per distinct value still referred to by a
/// filter. Copies no filter refers to any more are dropped by [`prune`](Self::prune), which
/// runs when filters expire and whenever the table has doubled since the last prune, so the
/// table stays within twice the number of distinct values in use.
#[derive(Debug, Default)]
pub(super) struct RefusedResources {
    copies: HashSet<Arc<Resources>>,
    /// The table's size after the last prune.
    pruned_at: usize,
}

impl RefusedResources {
    /// The shared copy of `resources`, made on first use.
    pub fn share(&mut self, resources: &Resources) -> Arc<Resources> {
        if let Some(copy) = self.copies.get(resources) {
            return Arc::clone(copy);
        }
        if self.copies.len() >= 2 * self.pruned_at.max(64) {
            self.prune();
        }
        let copy = Arc::new(resources.clone());
        self.copies.insert(Arc::clone(&copy));
        copy
    }

    /// Drops the copies no filter refers to.
    pub fn prune(&mut self) {
        self.copies.retain(|c| Arc::strong_count(c) > 1);
        self.pruned_at = self.copies.len();
    }

    /// The number of distinct refused values held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.copies.len()
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
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
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
