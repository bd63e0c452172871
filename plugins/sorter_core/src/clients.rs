//! Clients joining and leaving the tree (Mesos's rules): `a/b/c` paths, a virtual `.` leaf for
//! a client that gains children, an inner node collapsing back into a leaf when only its virtual
//! leaf is left. What a client holds moves with it and leaves every ancestor with it.

use allocator_api::{AgentId, ClientId, ModuleError, Resources, Result};

use crate::NodeIndex;
use crate::held::Held;
use crate::tree::{NodeKind, ROOT, Tree};

impl Tree {
    /// Adds `client` at `path` (inactive). Implements Mesos's rules for virtual leaves.
    pub fn add(&mut self, client: ClientId, path: &str) -> Result<NodeIndex> {
        self.flat = None;
        self.full_order = None;
        if self.clients.contains_key(&client) {
            return Err(ModuleError::rejected(format!("add: client {client} is already present")));
        }
        if path.is_empty() || path.split('/').any(|s| s.is_empty() || s == ".") {
            return Err(ModuleError::rejected(format!("add: invalid client path '{path}'")));
        }
        let mut current = ROOT;
        let mut prefix = String::new();
        for segment in path.split('/') {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(segment);
            let existing = self.by_path.get(&prefix).copied();
            debug_assert!(existing.is_none_or(|c| self.nodes[c].parent == Some(current)));
            let next = match existing {
                Some(c) => c,
                None => {
                    if self.nodes[current].kind != NodeKind::Internal {
                        self.make_internal(current);
                    }
                    let c = self.new_node(segment, prefix.clone(), prefix.clone(), current);
                    self.nodes[c].kind = NodeKind::Internal;
                    self.insert_child(current, c);
                    c
                }
            };
            current = next;
        }
        // `current` is the node at `path`: either one we just created (still marked internal) or
        // one that existed before.
        let fresh = self.nodes[current].client.is_none()
            && self.nodes[current].children.is_empty()
            && self.nodes[current].kind == NodeKind::Internal;
        let leaf = if fresh {
            current
        } else if self.nodes[current].kind == NodeKind::Internal {
            if self.nodes[current].children.nodes().any(|c| self.nodes[c].name == ".") {
                return Err(ModuleError::rejected(format!(
                    "add: path '{path}' is already a client"
                )));
            }
            let v = self.new_node(".", format!("{path}/."), path.to_owned(), current);
            self.insert_child(current, v);
            v
        } else {
            return Err(ModuleError::rejected(format!("add: path '{path}' is already a client")));
        };
        let n = &mut self.nodes[leaf];
        n.kind = NodeKind::InactiveLeaf;
        n.client = Some(client);
        // (Re-entered with its client beside it.)
        self.move_to_inactive_end(leaf);
        self.clients.insert(client, leaf);
        Ok(leaf)
    }

    /// Turns leaf `i` into an inner node whose client moves to a new virtual leaf `.`.
    fn make_internal(&mut self, i: NodeIndex) {
        self.flat = None;
        self.full_order = None;
        let path = self.nodes[i].path.clone();
        let v = self.new_node(".", format!("{path}/."), path.clone(), i);
        let (kind, client, count, per_agent, totals) = {
            let n = &mut self.nodes[i];
            (n.kind, n.client.take(), n.count, n.per_agent.clone(), n.totals.clone())
        };
        // (Grants kept whole hold no shared resource: the inner node keeps `merged`'s.)
        {
            let vn = &mut self.nodes[v];
            vn.kind = kind;
            vn.client = client;
            vn.count = count;
            vn.per_agent = per_agent;
            vn.totals = totals;
        }
        self.nodes[i].kind = NodeKind::Internal;
        // Inner nodes keep only shared resources per agent.
        for held in self.nodes[i].per_agent.values_mut() {
            *held = Held { merged: held.merged.shared(), grants: Vec::new() };
        }
        self.nodes[i].per_agent.retain(|_, h| !h.is_empty());
        if let Some(c) = client {
            self.clients.insert(c, v);
        }
        self.nodes[i].children.push(v, client);
        if let Some(p) = self.nodes[i].parent {
            self.nodes[p].children.set_client(i, None);
        }
        self.refresh_share(v);
    }

    /// Removes `client`, subtracting its allocation from every ancestor and collapsing inner
    /// nodes left with only a virtual leaf.
    pub fn remove(&mut self, client: ClientId) -> Result<()> {
        let leaf = self.client_node(client, "remove")?;
        self.flat = None;
        self.full_order = None;
        self.clients.remove(&client);
        // (agent, what the leaf holds there, its scalar ids)
        let allocations = {
            let held: Vec<(AgentId, Resources)> =
                self.nodes[leaf].per_agent.iter().map(|(a, h)| (*a, h.total())).collect();
            let with_ids = held.into_iter().map(|(a, r)| {
                let ids = self.scalar_ids(&r);
                (a, r, ids)
            });
            with_ids.collect::<Vec<_>>()
        };
        // Keeping scalars only, the leaf records per agent only shared resources: the rest of
        // its totals leaves each ancestor's totals as it is.
        let rest: Option<Vec<i64>> = self.scalars_only.then(|| {
            let mut rest = self.nodes[leaf].totals.clone();
            for (_, _, ids) in &allocations {
                for &(id, v) in ids {
                    rest[id] = (rest[id] - v).max(0);
                }
            }
            rest
        });
        let mut up = self.nodes[leaf].parent;
        while let Some(p) = up {
            if let Some(rest) = &rest {
                let totals = &mut self.nodes[p].totals;
                for (t, v) in totals.iter_mut().zip(rest) {
                    *t = (*t - v).max(0);
                }
            }
            for (agent, res, ids) in &allocations {
                self.subtract_at(p, *agent, res, ids);
            }
            up = self.nodes[p].parent;
        }
        let mut current = leaf;
        loop {
            let parent = self.nodes[current].parent.expect("non-root");
            self.nodes[parent].children.remove_node(current);
            self.nodes[current].children.clear();
            self.nodes[current].per_agent.clear();
            self.free_node(current);
            if parent == ROOT {
                break;
            }
            let siblings = &self.nodes[parent].children;
            if siblings.is_empty() {
                current = parent;
                continue;
            }
            if siblings.len() == 1 && siblings.first().is_some_and(|s| self.nodes[s].name == ".") {
                self.collapse(parent);
            }
            break;
        }
        Ok(())
    }

    /// Collapses inner node `p`, whose only child is a virtual leaf, back into a leaf. The node
    /// keeps its own allocation count (every `allocated` call below it), as Mesos's
    /// `DRFSorter::remove` does; the virtual leaf's count goes with it.
    fn collapse(&mut self, p: NodeIndex) {
        self.flat = None;
        self.full_order = None;
        let v = self.nodes[p].children.first().expect("a virtual leaf");
        let (kind, client, per_agent) = {
            let vn = &mut self.nodes[v];
            (vn.kind, vn.client.take(), std::mem::take(&mut vn.per_agent))
        };
        self.nodes[p].children.clear();
        self.free_node(v);
        let n = &mut self.nodes[p];
        n.kind = kind;
        n.client = client;
        n.per_agent = per_agent;
        if let Some(c) = client {
            self.clients.insert(c, p);
        }
        if let Some(pp) = self.nodes[p].parent {
            self.nodes[pp].children.set_client(p, client);
        }
        if kind == NodeKind::InactiveLeaf {
            self.move_to_inactive_end(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use allocator_api::{Quantities, RVec, SorterConfig};

    use super::*;

    fn res(text: &str) -> Resources {
        text.parse().unwrap()
    }

    #[test]
    fn a_grant_given_back_whole_leaves_what_was_held_before() {
        let mut t = Tree::new(&SorterConfig::default());
        t.add_agent(AgentId(0), &Quantities::parse("cpus:8;mem:512").unwrap()).unwrap();
        t.add(ClientId(0), "a").unwrap();
        let held = res("cpus:2;mem:64;ports:[31000-31010]");
        let offer = res("cpus:4;mem:128;ports:[31020-31030]");
        t.allocated(ClientId(0), AgentId(0), &held).unwrap();
        t.allocated(ClientId(0), AgentId(0), &offer).unwrap();
        let mut out = Resources::new();
        t.allocation_on(ClientId(0), AgentId(0), &mut out).unwrap();
        assert_eq!(out, held.clone() + &offer);
        t.unallocated(ClientId(0), AgentId(0), &offer).unwrap();
        t.allocation_on(ClientId(0), AgentId(0), &mut out).unwrap();
        assert_eq!(out, held);
        let mut q = Quantities::new();
        t.scalar_quantities(Some(ClientId(0)), &mut q).unwrap();
        assert_eq!(q, Quantities::parse("cpus:2;mem:64").unwrap());
    }

    #[test]
    fn part_of_two_grants_can_be_given_back() {
        let mut t = Tree::new(&SorterConfig::default());
        t.add_agent(AgentId(0), &Quantities::parse("cpus:8").unwrap()).unwrap();
        t.add(ClientId(0), "a").unwrap();
        t.allocated(ClientId(0), AgentId(0), &res("cpus:2;ports:[1-10]")).unwrap();
        t.allocated(ClientId(0), AgentId(0), &res("cpus:3;ports:[20-30]")).unwrap();
        t.unallocated(ClientId(0), AgentId(0), &res("cpus:4;ports:[5-10,20-25]")).unwrap();
        let mut out = RVec::new();
        t.allocation(ClientId(0), &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].resources, res("cpus:1;ports:[1-4,26-30]"));
        let e = t.unallocated(ClientId(0), AgentId(0), &res("cpus:2")).unwrap_err();
        assert_eq!(e.kind, allocator_api::ErrorKind::REJECTED, "more than is held");
    }

    #[test]
    fn a_client_that_gains_a_child_keeps_its_grants() {
        let mut t = Tree::new(&SorterConfig::default());
        t.add_agent(AgentId(0), &Quantities::parse("cpus:8").unwrap()).unwrap();
        t.add(ClientId(0), "a").unwrap();
        t.allocated(ClientId(0), AgentId(0), &res("cpus:1")).unwrap();
        t.allocated(ClientId(0), AgentId(0), &res("cpus:2")).unwrap();
        t.add(ClientId(1), "a/b").unwrap();
        t.unallocated(ClientId(0), AgentId(0), &res("cpus:2")).unwrap();
        let mut out = Resources::new();
        t.allocation_on(ClientId(0), AgentId(0), &mut out).unwrap();
        assert_eq!(out, res("cpus:1"));
        let mut q = Quantities::new();
        t.scalar_quantities(None, &mut q).unwrap();
        assert_eq!(q, Quantities::parse("cpus:1").unwrap(), "the root counts what is left");
    }

    #[test]
    fn a_collapsed_parent_keeps_its_own_allocation_count() {
        let mut t = Tree::new(&SorterConfig::default());
        let (ax, a) = (ClientId(0), ClientId(1));
        t.add_agent(AgentId(0), &Quantities::parse("cpus:2;mem:512").unwrap()).unwrap();
        let res: Resources = "cpus:2;mem:512".parse().unwrap();
        t.add(ax, "a/x").unwrap();
        t.allocated(ax, AgentId(0), &res).unwrap();
        t.add(a, "a").unwrap();
        t.unallocated(ax, AgentId(0), &res).unwrap();
        t.remove(ax).unwrap();
        let leaf = t.client_node(a, "test").unwrap();
        assert_eq!(t.node(leaf).path, "a");
        assert_eq!(t.node(leaf).count, 1, "a/x's allocation counted at a");
    }
}
