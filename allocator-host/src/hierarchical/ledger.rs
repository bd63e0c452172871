//! What frameworks hold on one agent: the allocator's per-agent ledger.
//!
//! One contiguous list of holdings per agent, sorted by framework, then role text (the order in
//! which the ledger is read wherever order shows: reports, rebuilt sorters, removals). An agent
//! holds a few entries — the frameworks with tasks or an outstanding offer there — so a binary
//! search over one array beats a map of maps, and a grant or a release allocates nothing but a
//! copy of the resources: the role is an interned [`Role`], and the array keeps its capacity
//! when an offer is declined and made again.
//!
//! The ledger records what it is told: an entry may hold nothing (an operation that consumed
//! everything, an empty `used`), and then still counts as held (`holds_role`), as it did when
//! the ledger was a map of maps.

use allocator_api::{FrameworkId, Resources, Role};

/// What one framework holds under one role on the agent.
#[derive(Debug)]
pub(super) struct Holding {
    /// The framework.
    pub framework: FrameworkId,
    /// The role it holds the resources under.
    pub role: Role,
    /// What it holds (offered or allocated).
    pub resources: Resources,
}

/// The holdings on one agent, sorted by framework, then role text; at most one per pair.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    entries: Vec<Holding>,
}

impl Ledger {
    /// Where `(framework, role)` is, or where it would go.
    fn search(&self, framework: FrameworkId, role: &str) -> std::result::Result<usize, usize> {
        self.entries.binary_search_by(|h| {
            h.framework.cmp(&framework).then_with(|| h.role.as_str().cmp(role))
        })
    }

    /// What `framework` holds under `role`.
    pub fn get(&self, framework: FrameworkId, role: &str) -> Option<&Resources> {
        self.search(framework, role).ok().map(|i| &self.entries[i].resources)
    }

    /// What `framework` holds under `role`, to change in place.
    pub fn get_mut(&mut self, framework: FrameworkId, role: &str) -> Option<&mut Resources> {
        self.search(framework, role).ok().map(|i| &mut self.entries[i].resources)
    }

    /// The holding of `framework` under `role`, created empty when there is none.
    pub fn entry(&mut self, framework: FrameworkId, role: Role) -> &mut Resources {
        let i = match self.search(framework, &role) {
            Ok(i) => i,
            Err(i) => {
                let resources = Resources::new();
                self.entries.insert(i, Holding { framework, role, resources });
                i
            }
        };
        &mut self.entries[i].resources
    }

    /// Adds `resources` to what `framework` holds under `role` (a copy when it held nothing
    /// there yet).
    pub fn add(&mut self, framework: FrameworkId, role: Role, resources: &Resources) {
        match self.search(framework, &role) {
            Ok(i) => self.entries[i].resources.add(resources),
            Err(i) => {
                let resources = resources.clone();
                self.entries.insert(i, Holding { framework, role, resources });
            }
        }
    }

    /// Sets what `framework` holds under `role` (recorded even when empty).
    pub fn set(&mut self, framework: FrameworkId, role: Role, resources: Resources) {
        match self.search(framework, &role) {
            Ok(i) => self.entries[i].resources = resources,
            Err(i) => self.entries.insert(i, Holding { framework, role, resources }),
        }
    }

    /// Forgets what `framework` holds under `role`.
    pub fn remove(&mut self, framework: FrameworkId, role: &str) -> Option<Resources> {
        self.search(framework, role).ok().map(|i| self.entries.remove(i).resources)
    }

    /// `true` when `framework` has a holding under `role` (even an empty one).
    pub fn holds_role(&self, framework: FrameworkId, role: &str) -> bool {
        self.search(framework, role).is_ok()
    }

    /// Every holding, by framework, then role text.
    pub fn iter(&self) -> impl Iterator<Item = &Holding> {
        self.entries.iter()
    }

    /// The holdings of `framework`, by role text.
    pub fn of(&self, framework: FrameworkId) -> impl Iterator<Item = &Holding> {
        let start = self.entries.partition_point(|h| h.framework < framework);
        self.entries[start..].iter().take_while(move |h| h.framework == framework)
    }

    /// Starts loading the holdings (not what they hold) into the cache.
    pub fn prefetch(&self) {
        super::prefetch::prefetch_slice(&self.entries);
    }

    /// The frameworks with a holding, in order, each once.
    pub fn frameworks(&self) -> impl Iterator<Item = FrameworkId> + '_ {
        let mut last = None;
        self.entries.iter().filter_map(move |h| {
            let new = last != Some(h.framework);
            last = Some(h.framework);
            new.then_some(h.framework)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(text: &str) -> Resources {
        text.parse().expect("resources")
    }

    fn keys(l: &Ledger) -> Vec<(u32, &str)> {
        l.iter().map(|h| (h.framework.0, h.role.as_str())).collect()
    }

    #[test]
    fn holdings_are_read_by_framework_then_role_text_whatever_the_insertion_order() {
        let mut l = Ledger::default();
        for (fw, role) in [(2, "b"), (1, "z"), (2, "a/x"), (1, "a"), (2, "a")] {
            l.add(FrameworkId(fw), Role::from(role), &res("cpus:1"));
        }
        assert_eq!(keys(&l), [(1, "a"), (1, "z"), (2, "a"), (2, "a/x"), (2, "b")]);
        let of2: Vec<&str> = l.of(FrameworkId(2)).map(|h| h.role.as_str()).collect();
        assert_eq!(of2, ["a", "a/x", "b"]);
        let fws: Vec<u32> = l.frameworks().map(|f| f.0).collect();
        assert_eq!(fws, [1, 2]);
    }

    #[test]
    fn adding_to_a_holding_sums_and_removing_it_forgets_the_pair_only() {
        let mut l = Ledger::default();
        l.add(FrameworkId(1), Role::from("r"), &res("cpus:1;mem:10"));
        l.add(FrameworkId(1), Role::from("r"), &res("cpus:2"));
        l.add(FrameworkId(1), Role::from("s"), &res("cpus:5"));
        assert_eq!(l.get(FrameworkId(1), "r"), Some(&res("cpus:3;mem:10")));
        assert_eq!(l.remove(FrameworkId(1), "r"), Some(res("cpus:3;mem:10")));
        assert!(!l.holds_role(FrameworkId(1), "r"));
        assert_eq!(l.frameworks().count(), 1);
        assert_eq!(l.remove(FrameworkId(1), "s"), Some(res("cpus:5")));
        assert_eq!(l.frameworks().count(), 0);
    }

    #[test]
    fn an_empty_holding_still_counts_as_held() {
        let mut l = Ledger::default();
        l.entry(FrameworkId(3), Role::from("r"));
        l.set(FrameworkId(4), Role::from("r"), Resources::new());
        assert!(l.holds_role(FrameworkId(3), "r") && l.holds_role(FrameworkId(4), "r"));
        assert_eq!(l.frameworks().map(|f| f.0).collect::<Vec<_>>(), [3, 4]);
    }
}
