//! Shares over usage instead of holdings: a [`Policy`](crate::Policy) whose order depends on
//! what clients used over time (the `drf_decay` sorter's decayed usage) gives nodes a usage per
//! resource name, in the units of what they hold, and the tree computes every share on
//! `usage + current_weight × holdings` ([`Tree::share_on_usage`]). What usage means, and when
//! it changes, is the policy's: the tree only stores it and divides by the pool as for DRF
//! (excluded names and names with an empty pool still contribute nothing).

use allocator_api::{ClientId, Name};

use crate::NodeIndex;
use crate::tree::Tree;

impl Tree {
    /// From now on, every share is computed on each node's usage
    /// ([`add_usage`](Self::add_usage)) plus `current_weight` × what the node holds now
    /// (`0.0`: usage alone). A node with no usage set counts 0 for each name.
    pub fn share_on_usage(&mut self, current_weight: f64) {
        self.on_usage = Some(current_weight);
    }

    /// Interned resource names; a name's index here is its id in
    /// [`holdings`](Self::holdings) and in the usage slices. Ids never change; new names are
    /// appended.
    pub fn resource_names(&self) -> &[Name] {
        &self.names
    }

    /// What node `i` holds now: scalar totals by name id, in thousandths (a shared resource
    /// counted once).
    pub fn holdings(&self, i: NodeIndex) -> &[i64] {
        &self.nodes[i].totals
    }

    /// The node at `path` (`a/b`, or `a/.` for a virtual leaf), if any.
    pub fn node_at(&self, path: &str) -> Option<NodeIndex> {
        self.by_path.get(path).copied()
    }

    /// The parent of node `i` (`None` for the root).
    pub fn parent(&self, i: NodeIndex) -> Option<NodeIndex> {
        self.nodes[i].parent
    }

    /// Every client and its leaf (a virtual leaf `a/.` for a client with children), in no
    /// particular order.
    pub fn clients(&self) -> impl Iterator<Item = (ClientId, NodeIndex)> + '_ {
        self.clients.iter().map(|(c, i)| (*c, *i))
    }

    /// Sets every node's usage to nothing.
    pub fn clear_usage(&mut self) {
        for n in &mut self.nodes {
            n.usage.clear();
        }
    }

    /// Adds `usage` (by name id, in the units of [`holdings`](Self::holdings)) to node `i` and
    /// to every ancestor up to the root, as holdings are counted.
    pub fn add_usage(&mut self, i: NodeIndex, usage: &[f64]) {
        let mut cur = Some(i);
        while let Some(j) = cur {
            let u = &mut self.nodes[j].usage;
            if u.len() < usage.len() {
                u.resize(usage.len(), 0.0);
            }
            for (x, v) in u.iter_mut().zip(usage) {
                *x += v;
            }
            cur = self.nodes[j].parent;
        }
    }

    /// The usage of node `i` by name id (shorter than the names when the last ones are 0).
    pub fn usage(&self, i: NodeIndex) -> &[f64] {
        &self.nodes[i].usage
    }

    /// The share of node `i` on usage: max over counted names with a positive pool of
    /// `(usage + current_weight × holdings) ÷ pool`.
    pub(crate) fn usage_share(&self, i: NodeIndex, current_weight: f64) -> f64 {
        let n = &self.nodes[i];
        let mut share = 0.0f64;
        for (id, &total) in self.pool.iter().enumerate() {
            if total > 0 && self.counted[id] {
                let used =
                    n.usage.get(id).copied().unwrap_or(0.0) + current_weight * n.totals[id] as f64;
                let s = used / total as f64;
                if s > share {
                    share = s;
                }
            }
        }
        share
    }
}
