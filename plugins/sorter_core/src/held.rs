//! What one node holds on one agent: the merged resources plus up to eight grants kept whole, so
//! that giving one back whole (a declined offer) is one comparison.

use allocator_api::{Resource, Resources};

/// The most whole grants a [`Held`] keeps apart before merging them.
const MAX_GRANTS: usize = 8;

/// What a node holds on one agent: `merged`, plus up to [`MAX_GRANTS`] grants kept whole, as
/// `allocated` passed them (never with a shared resource), so that giving one back whole, the
/// common case (a declined offer), removes it with one comparison instead of range and set
/// arithmetic on the merged value. Anything else merges them first.
#[derive(Clone, Debug, Default)]
pub(crate) struct Held {
    pub(crate) merged: Resources,
    pub(crate) grants: Vec<Resources>,
}

impl Held {
    pub(crate) fn is_empty(&self) -> bool {
        self.merged.is_empty() && self.grants.is_empty()
    }

    /// Adds `resources` (a grant kept whole when it has no shared resource).
    pub(crate) fn add(&mut self, resources: &Resources) {
        if self.is_empty() || resources.iter().any(Resource::is_shared) {
            self.merge();
            self.merged.add(resources);
        } else {
            if self.grants.len() >= MAX_GRANTS {
                self.merge();
            }
            // Most records keep one grant at a time: room for one, not the four a first push
            // reserves (96 bytes a record).
            if self.grants.capacity() == 0 {
                self.grants.reserve_exact(1);
            }
            self.grants.push(resources.clone());
        }
    }

    /// Merges the grants kept whole into `merged`.
    pub(crate) fn merge(&mut self) -> &mut Resources {
        for g in self.grants.drain(..) {
            self.merged.add(&g);
        }
        &mut self.merged
    }

    /// Removes a grant equal to `resources` kept whole; `false` when there is none.
    pub(crate) fn take_grant(&mut self, resources: &Resources) -> bool {
        match self.grants.iter().rposition(|g| g == resources) {
            Some(k) => {
                self.grants.swap_remove(k);
                true
            }
            None => false,
        }
    }

    /// Removes `resources` when it is a grant kept whole or, with no such grant, everything
    /// held; `false` (nothing changed) otherwise.
    pub(crate) fn take_whole(&mut self, resources: &Resources) -> bool {
        if self.take_grant(resources) {
            return true;
        }
        if self.grants.is_empty() && self.merged == *resources {
            self.merged.clear();
            return true;
        }
        false
    }

    /// Everything held.
    pub(crate) fn total(&self) -> Resources {
        let mut out = self.merged.clone();
        for g in &self.grants {
            out.add(g);
        }
        out
    }
}
