//! What clients hold: each allocation counted at the client's leaf and at every ancestor (scalar
//! totals by interned name at every node; per agent, everything a leaf holds and the shared
//! resources an inner node holds, a shared resource counted once), the queries on it, the agent
//! pool, and each node's dominant share of the pool.

use allocator_api::resources::Value;
use allocator_api::{
    AgentAllocation, AgentId, ClientId, ModuleError, Name, Quantities, RVec, Resource, Resources,
    Result, Scalar,
};

use crate::NodeIndex;
use crate::held::Held;
use crate::tree::{ROOT, Tree};

impl Tree {
    /// From now on, leaves keep per agent only shared resources (what is needed to count each
    /// once), as inner nodes do; [`allocation`](Self::allocation) and
    /// [`allocation_on`](Self::allocation_on) answer an `UNSUPPORTED` error, and
    /// [`unallocated`](Self::unallocated) checks non-shared resources against the leaf's scalar
    /// totals over all agents (see [`Sorter::keep_scalars_only`]). Records already kept lose
    /// their non-shared resources.
    ///
    /// [`Sorter::keep_scalars_only`]: allocator_api::Sorter::keep_scalars_only
    pub fn keep_scalars_only(&mut self) {
        self.scalars_only = true;
        for n in &mut self.nodes {
            if n.client.is_some() {
                for held in n.per_agent.values_mut() {
                    *held = Held { merged: held.merged.shared(), grants: Vec::new() };
                }
                n.per_agent.retain(|_, h| !h.is_empty());
            }
        }
    }

    fn name_id(&mut self, name: &Name) -> usize {
        if let Some(id) = find_name(&self.names, name) {
            return id;
        }
        let id = self.names.len();
        self.names.push(*name);
        self.pool.push(0);
        self.counted.push(!self.excluded.iter().any(|e| e.as_str() == name.as_str()));
        for n in &mut self.nodes {
            n.totals.resize(id + 1, 0);
        }
        id
    }

    /// Unweighted dominant share of a node over the pool (excluded names and names with an
    /// empty pool contribute nothing).
    /// When the tree shares on usage ([`share_on_usage`](Self::share_on_usage)), the share is
    /// of `usage + current_weight × holdings` instead.
    pub(crate) fn compute_share(&self, i: NodeIndex) -> f64 {
        if let Some(current_weight) = self.on_usage {
            return self.usage_share(i, current_weight);
        }
        let n = &self.nodes[i];
        let mut share = 0.0f64;
        for (id, &total) in self.pool.iter().enumerate() {
            if total > 0 && self.counted[id] {
                let s = n.totals[id] as f64 / total as f64;
                if s > share {
                    share = s;
                }
            }
        }
        share
    }

    /// Recomputes the share of node `i`.
    pub fn refresh_share(&mut self, i: NodeIndex) {
        self.nodes[i].share = self.compute_share(i);
    }

    /// `(name id, millis)` for each scalar name in `resources`, a shared resource counted once
    /// however many copies are listed. Interns new names.
    pub(crate) fn scalar_ids(&mut self, resources: &Resources) -> Vec<(usize, i64)> {
        // The buffer is handed back by the caller (`ids_scratch`): no allocation per call.
        let mut out = std::mem::take(&mut self.ids_scratch);
        out.clear();
        let mut prev: Option<&Resource> = None;
        for r in resources.iter() {
            if let Value::Scalar(s) = r.value
                && !(r.is_shared() && prev == Some(r))
            {
                let id = self.name_id(&r.name);
                match out.iter_mut().find(|(i, _)| *i == id) {
                    Some(e) => e.1 += s.millis(),
                    None => out.push((id, s.millis())),
                }
            }
            prev = Some(r);
        }
        out
    }

    /// Adds to node `i`; `delta` holds [`scalar_ids`](Self::scalar_ids) of `resources`.
    fn add_at(
        &mut self,
        i: NodeIndex,
        agent: AgentId,
        resources: &Resources,
        delta: &[(usize, i64)],
    ) {
        // Keeping scalars only, a leaf records per agent what an inner node does.
        let leaf = self.nodes[i].client.is_some() && !self.scalars_only;
        let has_shared = resources.iter().any(Resource::is_shared);
        let n = &mut self.nodes[i];
        let mut discounted;
        let mut delta = delta;
        if leaf || has_shared {
            let entry = n.per_agent.entry(agent).or_default();
            if has_shared {
                // A shared resource already held here is not counted again (Mesos counts it
                // once).
                discounted = delta.to_vec();
                discount_held_shared(&mut discounted, resources, entry.merge(), &self.names);
                delta = &discounted;
            }
            if leaf {
                entry.add(resources);
            } else {
                entry.add(&resources.shared());
            }
        }
        for &(id, v) in delta {
            n.totals[id] += v;
        }
    }

    /// Subtracts from node `i`; a shared resource leaves the totals only with its last copy.
    pub(crate) fn subtract_at(
        &mut self,
        i: NodeIndex,
        agent: AgentId,
        resources: &Resources,
        delta: &[(usize, i64)],
    ) {
        // Keeping scalars only, a leaf records per agent what an inner node does.
        let leaf = self.nodes[i].client.is_some() && !self.scalars_only;
        let has_shared = resources.iter().any(Resource::is_shared);
        let n = &mut self.nodes[i];
        let mut discounted;
        let mut delta = delta;
        // (A record without a shared resource is a leaf's: nothing else to look up.)
        let entry = if leaf || has_shared { n.per_agent.get_mut(&agent) } else { None };
        if let Some(entry) = entry {
            if leaf {
                if has_shared || !entry.take_grant(resources) {
                    entry.merge().subtract(resources);
                }
            } else if has_shared {
                entry.merge().subtract(&resources.shared());
            }
            if has_shared {
                discounted = delta.to_vec();
                discount_held_shared(&mut discounted, resources, entry.merge(), &self.names);
                delta = &discounted;
            }
            if entry.is_empty() {
                n.per_agent.remove(&agent);
            }
        }
        for &(id, v) in delta {
            n.totals[id] = (n.totals[id] - v).max(0);
        }
    }

    /// Records an allocation on the client's leaf and every ancestor; returns the leaf.
    pub fn allocated(
        &mut self,
        client: ClientId,
        agent: AgentId,
        resources: &Resources,
    ) -> Result<NodeIndex> {
        let leaf = self.client_node(client, "allocated")?;
        let ids = self.scalar_ids(resources);
        let mut cur = Some(leaf);
        while let Some(i) = cur {
            self.add_at(i, agent, resources, &ids);
            self.nodes[i].count += 1;
            cur = self.nodes[i].parent;
        }
        self.ids_scratch = ids;
        Ok(leaf)
    }

    /// Removes an allocation from the client's leaf and every ancestor.
    pub fn unallocated(
        &mut self,
        client: ClientId,
        agent: AgentId,
        resources: &Resources,
    ) -> Result<()> {
        let leaf = self.client_node(client, "unallocated")?;
        if self.scalars_only {
            return self.unallocated_scalars(leaf, client, agent, resources);
        }
        let shared = resources.iter().any(Resource::is_shared);
        // A grant, or everything held, given back whole (a declined offer) leaves the leaf's
        // record here with one comparison; anything else is checked by containment and
        // subtracted below.
        let n = &mut self.nodes[leaf];
        let (taken, held) = match n.per_agent.get_mut(&agent) {
            None => (false, false),
            Some(h) => {
                if !shared && h.take_whole(resources) {
                    if h.is_empty() {
                        n.per_agent.remove(&agent);
                    }
                    (true, true)
                } else {
                    (false, h.merge().contains(resources))
                }
            }
        };
        if !held {
            return Err(ModuleError::rejected(format!(
                "unallocated: client {client} does not hold {resources} on {agent}"
            )));
        }
        let ids = self.scalar_ids(resources);
        let mut cur = Some(leaf);
        while let Some(i) = cur {
            if i == leaf && taken {
                let totals = &mut self.nodes[i].totals;
                for &(id, v) in &ids {
                    totals[id] = (totals[id] - v).max(0);
                }
            } else {
                self.subtract_at(i, agent, resources, &ids);
            }
            cur = self.nodes[i].parent;
        }
        self.ids_scratch = ids;
        Ok(())
    }

    /// [`unallocated`](Self::unallocated) when keeping scalars only: rejects giving back more
    /// of a scalar than the client holds over all agents (its leaf's totals) or a shared
    /// resource it does not hold on `agent`; whether it holds the non-shared resources on that
    /// very agent is the caller's check. Touches no per-agent record unless `resources` has a
    /// shared resource.
    fn unallocated_scalars(
        &mut self,
        leaf: NodeIndex,
        client: ClientId,
        agent: AgentId,
        resources: &Resources,
    ) -> Result<()> {
        let ids = self.scalar_ids(resources);
        let n = &self.nodes[leaf];
        let shared_held = !resources.iter().any(Resource::is_shared)
            || n.per_agent.get(&agent).is_some_and(|h| h.merged.contains(&resources.shared()));
        if !shared_held || ids.iter().any(|&(id, v)| n.totals[id] < v) {
            self.ids_scratch = ids;
            return Err(ModuleError::rejected(format!(
                "unallocated: client {client} does not hold {resources} on {agent}"
            )));
        }
        let mut cur = Some(leaf);
        while let Some(i) = cur {
            self.subtract_at(i, agent, resources, &ids);
            cur = self.nodes[i].parent;
        }
        self.ids_scratch = ids;
        Ok(())
    }

    /// The error `allocation` and `allocation_on` answer when the tree keeps scalars only.
    fn scalars_only_error(call: &str) -> ModuleError {
        ModuleError {
            kind: allocator_api::ErrorKind::UNSUPPORTED,
            message: format!(
                "{call}: this sorter keeps scalar quantities only (keep_scalars_only), not what \
                 a client holds per agent"
            )
            .into(),
        }
    }

    /// What the client holds per agent; an `UNSUPPORTED` error when the tree keeps scalars
    /// only.
    pub fn allocation(&self, client: ClientId, out: &mut RVec<AgentAllocation>) -> Result<()> {
        let leaf = self.client_node(client, "allocation")?;
        out.clear();
        if self.scalars_only {
            return Err(Self::scalars_only_error("allocation"));
        }
        let mut entries: Vec<_> = self.nodes[leaf].per_agent.iter().collect();
        entries.sort_by_key(|(a, _)| **a);
        for (agent, held) in entries {
            out.push(AgentAllocation { agent: *agent, resources: held.total() });
        }
        Ok(())
    }

    /// What the client holds on one agent; an `UNSUPPORTED` error when the tree keeps scalars
    /// only.
    pub fn allocation_on(
        &self,
        client: ClientId,
        agent: AgentId,
        out: &mut Resources,
    ) -> Result<()> {
        let leaf = self.client_node(client, "allocation_on")?;
        out.clear();
        if self.scalars_only {
            return Err(Self::scalars_only_error("allocation_on"));
        }
        if let Some(held) = self.nodes[leaf].per_agent.get(&agent) {
            out.add(&held.merged);
            for g in &held.grants {
                out.add(g);
            }
        }
        Ok(())
    }

    /// Scalar quantities held by a client (or by everyone).
    pub fn scalar_quantities(&self, client: Option<ClientId>, out: &mut Quantities) -> Result<()> {
        let i = match client {
            Some(c) => self.client_node(c, "allocation_scalar_quantities")?,
            None => ROOT,
        };
        out.clear();
        let mut names: Vec<(&Name, usize)> = self.names.iter().zip(0..).collect();
        names.sort();
        for (name, id) in names {
            let v = self.nodes[i].totals.get(id).copied().unwrap_or(0);
            if v > 0 {
                out.set(name, Scalar::from_millis(v));
            }
        }
        Ok(())
    }

    /// Adds an agent's quantities to the pool.
    pub fn add_agent(&mut self, agent: AgentId, total: &Quantities) -> Result<()> {
        if self.agents.contains_key(&agent) {
            return Err(ModuleError::rejected(format!("add_agent: {agent} is already present")));
        }
        for q in total.iter() {
            let id = self.name_id(&q.name);
            self.pool[id] += q.value.millis();
        }
        self.agents.insert(agent, total.clone());
        Ok(())
    }

    /// Removes an agent's quantities from the pool.
    pub fn remove_agent(&mut self, agent: AgentId) -> Result<()> {
        let total = self
            .agents
            .remove(&agent)
            .ok_or_else(|| ModuleError::rejected(format!("remove_agent: unknown {agent}")))?;
        for q in total.iter() {
            let id = self.name_id(&q.name);
            self.pool[id] -= q.value.millis();
        }
        Ok(())
    }
}

/// The id (index) of `name` among `names`.
fn find_name(names: &[Name], name: &Name) -> Option<usize> {
    // Names from one binary's interner share a pointer: one pass comparing pointers finds them
    // (the built-in's case); equal text at another pointer (a module's names) needs the second.
    let text = name.as_str();
    names
        .iter()
        .position(|n| std::ptr::eq(n.as_str(), text))
        .or_else(|| names.iter().position(|n| n == name))
}

/// Removes from `delta` the amounts of shared scalars in `resources` that `held` still contains.
fn discount_held_shared(
    delta: &mut [(usize, i64)],
    resources: &Resources,
    held: &Resources,
    names: &[Name],
) {
    let mut prev: Option<&Resource> = None;
    for r in resources.iter() {
        if r.is_shared()
            && prev != Some(r)
            && held.contains_resource(r)
            && let (Value::Scalar(s), Some(id)) = (&r.value, find_name(names, &r.name))
            && let Some(e) = delta.iter_mut().find(|(i, _)| *i == id)
        {
            e.1 -= s.millis();
        }
        prev = Some(r);
    }
}
