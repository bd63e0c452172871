//! The host's ledger: what every framework holds on every agent under every role, as offered
//! or allocated, kept independently of the allocator. Fallback rebuilds the built-in allocator
//! from it; the offer guard checks offers against it; the metrics and the summary read it.

use std::collections::BTreeMap;

use allocator_api::{AgentId, Allocation, FrameworkId, Quantities, Resources};

/// What frameworks hold, by (framework, agent, role), with per-agent and per-role totals kept
/// incrementally.
#[derive(Debug, Default)]
pub struct Ledger {
    held: BTreeMap<(FrameworkId, AgentId, String), Resources>,
    /// Non-shared resources held on each agent, indexed by agent id.
    agent_used: Vec<Resources>,
    /// Scalar quantities held under each role.
    role_alloc: BTreeMap<String, Quantities>,
}

impl Ledger {
    /// Records `r` as held by `fw` on `agent` under `role`. Empty resources change nothing.
    pub fn add(&mut self, fw: FrameworkId, agent: AgentId, role: &str, r: &Resources) {
        if r.is_empty() {
            return;
        }
        self.held.entry((fw, agent, role.to_owned())).or_default().add(r);
        if self.agent_used.len() <= agent.index() {
            self.agent_used.resize_with(agent.index() + 1, Resources::new);
        }
        self.agent_used[agent.index()].add(&r.filter(|x| !x.is_shared()));
        self.role_alloc.entry(role.to_owned()).or_default().add(&r.scalar_quantities());
    }

    /// Takes `r` away from what `fw` holds on `agent` under `role`.
    pub fn remove(&mut self, fw: FrameworkId, agent: AgentId, role: &str, r: &Resources) {
        let key = (fw, agent, role.to_owned());
        if let Some(used) = self.agent_used.get_mut(agent.index()) {
            used.subtract(&r.filter(|x| !x.is_shared()));
        }
        if let Some(held) = self.held.get_mut(&key) {
            held.subtract(r);
            if held.is_empty() {
                self.held.remove(&key);
            }
        }
        if let Some(q) = self.role_alloc.get_mut(role) {
            q.subtract(&r.scalar_quantities());
        }
    }

    /// What `fw` holds on `agent` under `role`.
    pub fn held(&self, fw: FrameworkId, agent: AgentId, role: &str) -> Resources {
        self.held.get(&(fw, agent, role.to_owned())).cloned().unwrap_or_default()
    }

    /// What `fw` holds on `agent`, per role.
    pub fn held_on(&self, fw: FrameworkId, agent: AgentId) -> BTreeMap<String, Resources> {
        self.held
            .range((fw, agent, String::new())..)
            .take_while(|((f, a, _), _)| *f == fw && *a == agent)
            .map(|((_, _, role), r)| (role.clone(), r.clone()))
            .collect()
    }

    /// Whether `fw` holds anything on `agent`.
    pub fn holds_any(&self, fw: FrameworkId, agent: AgentId) -> bool {
        self.held
            .range((fw, agent, String::new())..)
            .take_while(|((f, a, _), _)| *f == fw && *a == agent)
            .any(|(_, r)| !r.is_empty())
    }

    /// Forgets everything held on `agent`.
    pub fn clear_agent(&mut self, agent: AgentId) {
        let keys: Vec<_> = self.held.keys().filter(|k| k.1 == agent).cloned().collect();
        self.clear(keys);
    }

    /// Forgets everything `fw` holds.
    pub fn clear_framework(&mut self, fw: FrameworkId) {
        let keys: Vec<_> = self.held.keys().filter(|k| k.0 == fw).cloned().collect();
        self.clear(keys);
    }

    fn clear(&mut self, keys: Vec<(FrameworkId, AgentId, String)>) {
        for (fw, agent, role) in keys {
            let held = self.held(fw, agent, &role);
            self.remove(fw, agent, &role, &held);
        }
    }

    /// Non-shared resources held on `agent`.
    pub fn used(&self, agent: AgentId) -> Resources {
        self.agent_used.get(agent.index()).cloned().unwrap_or_default()
    }

    /// Non-shared resources held on `agent`, when it ever held anything.
    pub fn used_ref(&self, agent: AgentId) -> Option<&Resources> {
        self.agent_used.get(agent.index())
    }

    /// Whether `agent` holds more than `total` (only a shrinking `update_agent` does that).
    pub fn exceeds(&self, agent: AgentId, total: &Resources) -> bool {
        self.agent_used.get(agent.index()).is_some_and(|used| !total.contains(used))
    }

    /// Scalar quantities held under each role that ever held something.
    pub fn role_alloc(&self) -> &BTreeMap<String, Quantities> {
        &self.role_alloc
    }

    /// Every entry, ordered by framework, agent and role.
    pub fn iter(&self) -> impl Iterator<Item = (FrameworkId, AgentId, &str, &Resources)> {
        self.held.iter().map(|((f, a, role), r)| (*f, *a, role.as_str(), r))
    }

    /// The entries on `agent`, as allocations.
    pub fn on_agent(&self, agent: AgentId) -> Vec<Allocation> {
        self.iter()
            .filter(|(_, a, _, _)| *a == agent)
            .map(|(f, a, role, r)| allocation(f, a, role, r))
            .collect()
    }

    /// Every entry, as allocations.
    pub fn allocations(&self) -> Vec<Allocation> {
        self.iter().map(|(f, a, role, r)| allocation(f, a, role, r)).collect()
    }
}

fn allocation(framework: FrameworkId, agent: AgentId, role: &str, r: &Resources) -> Allocation {
    Allocation { framework, agent, role: role.into(), resources: r.clone() }
}
