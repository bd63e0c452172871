//! `least_recently_offered`: the smallest useful sorter module. Active clients are ordered by
//! when they were last allocated anything (never first), so every client gets its turn however
//! much it already holds; ties go to the lower client id.

use std::collections::BTreeMap;

use allocator_api::{
    AgentAllocation, AgentId, ClientId, ModuleError, Quantities, RVec, Resources, Result, Sorter,
};

/// The sorter: per client, whether it is active and the tick of its last allocation, and what
/// it holds per agent (so that the host's allocation queries can be answered).
#[derive(Default)]
pub struct LeastRecentlyOffered {
    clients: BTreeMap<ClientId, (bool, u64)>,
    held: BTreeMap<ClientId, BTreeMap<AgentId, Resources>>,
    tick: u64,
}

impl LeastRecentlyOffered {
    fn get(&mut self, c: ClientId, call: &str) -> Result<&mut (bool, u64)> {
        self.clients
            .get_mut(&c)
            .ok_or_else(|| ModuleError::rejected(format!("{call}: unknown {c}")))
    }
}

impl Sorter for LeastRecentlyOffered {
    fn add(&mut self, c: ClientId, _path: &str) -> Result<()> {
        if self.clients.insert(c, (false, 0)).is_some() {
            return Err(ModuleError::rejected(format!("add: {c} is already present")));
        }
        Ok(())
    }
    fn remove(&mut self, c: ClientId) -> Result<()> {
        self.clients
            .remove(&c)
            .map(|_| ())
            .ok_or_else(|| ModuleError::rejected(format!("remove: unknown {c}")))
    }
    fn activate(&mut self, c: ClientId) -> Result<()> {
        self.get(c, "activate")?.0 = true;
        Ok(())
    }
    fn deactivate(&mut self, c: ClientId) -> Result<()> {
        self.get(c, "deactivate")?.0 = false;
        Ok(())
    }
    fn allocated(&mut self, c: ClientId, agent: AgentId, r: &Resources) -> Result<()> {
        self.tick += 1;
        let tick = self.tick;
        self.get(c, "allocated")?.1 = tick;
        *self.held.entry(c).or_default().entry(agent).or_default() += r;
        Ok(())
    }
    fn unallocated(&mut self, c: ClientId, agent: AgentId, r: &Resources) -> Result<()> {
        self.get(c, "unallocated")?;
        let held = self.held.entry(c).or_default().entry(agent).or_default();
        if !held.contains(r) {
            return Err(ModuleError::rejected(format!(
                "unallocated: {c} does not hold {r} on {agent}"
            )));
        }
        *held -= r;
        Ok(())
    }
    fn update(
        &mut self,
        c: ClientId,
        agent: AgentId,
        old: &Resources,
        new: &Resources,
    ) -> Result<()> {
        self.unallocated(c, agent, old)?;
        *self.held.entry(c).or_default().entry(agent).or_default() += new;
        Ok(())
    }
    fn allocation(&self, c: ClientId, out: &mut RVec<AgentAllocation>) -> Result<()> {
        out.clear();
        for (agent, r) in self.held.get(&c).into_iter().flatten().filter(|(_, r)| !r.is_empty()) {
            out.push(AgentAllocation { agent: *agent, resources: r.clone() });
        }
        Ok(())
    }
    fn allocation_on(&self, c: ClientId, agent: AgentId, out: &mut Resources) -> Result<()> {
        *out = self.held.get(&c).and_then(|m| m.get(&agent)).cloned().unwrap_or_default();
        Ok(())
    }
    fn allocation_scalar_quantities(
        &self,
        c: Option<ClientId>,
        out: &mut Quantities,
    ) -> Result<()> {
        out.clear();
        for (_, by_agent) in self.held.iter().filter(|(k, _)| c.is_none_or(|c| **k == c)) {
            for r in by_agent.values() {
                out.add(&r.scalar_quantities());
            }
        }
        Ok(())
    }
    fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()> {
        let mut active: Vec<(u64, ClientId)> =
            self.clients.iter().filter(|(_, (a, _))| *a).map(|(c, (_, t))| (*t, *c)).collect();
        active.sort();
        out.clear();
        out.extend(active.into_iter().map(|(_, c)| c));
        Ok(())
    }
    fn contains(&self, c: ClientId) -> bool {
        self.clients.contains_key(&c)
    }
    fn count(&self) -> usize {
        self.clients.len()
    }
}

allocator_api::export_modules! {
    sorter {
        name: "least_recently_offered",
        author: "Example Org <infra@example.org>",
        description: "least recently allocated client first",
        create: |_config, _params| Ok::<_, String>(LeastRecentlyOffered::default()),
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_allocated_client_comes_first() {
        let mut s = LeastRecentlyOffered::default();
        for c in 0..3 {
            s.add(ClientId(c), "x").unwrap();
            s.activate(ClientId(c)).unwrap();
        }
        let r: Resources = "cpus:1".parse().unwrap();
        s.allocated(ClientId(0), AgentId(0), &r).unwrap();
        s.allocated(ClientId(2), AgentId(0), &r).unwrap();
        let mut out = RVec::new();
        s.sort(&mut out).unwrap();
        assert_eq!(out.as_slice(), &[ClientId(1), ClientId(0), ClientId(2)]);
    }

    #[test]
    fn adding_twice_is_refused() {
        let mut s = LeastRecentlyOffered::default();
        s.add(ClientId(0), "x").unwrap();
        assert!(s.add(ClientId(0), "x").is_err());
    }
}
