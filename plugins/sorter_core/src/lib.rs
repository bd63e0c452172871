//! The client tree shared by the shipped sorters (Mesos's sorter tree, written once).
//!
//! [`TreeSorter`] implements [`Sorter`] for any sibling [`Order`]: it keeps the tree of
//! clients (`a/b/c` paths, virtual `.` leaves for clients that gained children), allocations
//! counted at every ancestor, weights by path, the pool of agent quantities, and the ordering of
//! siblings. The DRF and weighted-priority sorters are `TreeSorter`s with different orders; the
//! random sorter uses the same tree for bookkeeping and draws its own order.
//!
//! Ordering is incremental, as in Mesos 1.7 (MESOS-9249): any change that can reorder many
//! nodes sets a dirty bit and the next [`sort`](Sorter::sort) recomputes every share and
//! re-sorts each level; an [`allocated`](Sorter::allocated) call on a clean tree only
//! recomputes the shares on the client's path and moves those nodes among their siblings.
//! Siblings are kept in blocks of at most 128 (`siblings.rs`), each entry with its client beside
//! it: a move costs O(log n) comparisons and shifts entries within at most two blocks, and
//! [`sort_prefix`](Sorter::sort_prefix) of a flat tree writes `len` clients in O(`len`).
//!
//! Every node counts what its clients hold as scalar totals (`totals`: shares need nothing
//! else). A leaf also keeps what its client holds per agent, for
//! [`allocation`](Sorter::allocation) and [`allocation_on`](Sorter::allocation_on), unless the
//! caller said it never asks ([`keep_scalars_only`](Sorter::keep_scalars_only)): then a leaf
//! keeps per agent only shared resources, as inner nodes do (needed to count a shared resource
//! once), and a grant or give-back of non-shared resources adds to or subtracts from the
//! totals on the client's path without touching a per-agent record or allocating.

#![deny(missing_docs)]

mod siblings;

use std::cmp::Ordering;
use std::collections::HashMap;

use allocator_api::resources::Value;
use allocator_api::{
    AgentAllocation, AgentId, ClientId, IdMap, ModuleError, Name, Quantities, RVec, Resource,
    Resources, Result, Scalar, Sorter, SorterConfig,
};
use siblings::{Entry, Siblings};

/// Index of a node in the arena.
pub type NodeIndex = usize;

const ROOT: NodeIndex = 0;

/// What a node is.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum NodeKind {
    /// A client that takes part in sorting.
    ActiveLeaf,
    /// A client left out of sorting.
    InactiveLeaf,
    /// An inner node (including the root).
    Internal,
}

/// One node of the tree, as an [`Order`] sees it.
#[derive(Debug)]
pub struct Node {
    /// The last path segment (`.` for a virtual leaf).
    pub name: String,
    /// The full path (`a/b`, `a/.`; empty for the root).
    pub path: String,
    /// The first 16 bytes of `path`, big-endian, zero-padded ([`path_cmp`](Self::path_cmp)).
    path_key: u128,
    /// The client path, which differs from `path` for virtual leaves (`a` for `a/.`).
    pub client_path: String,
    /// What the node is.
    pub kind: NodeKind,
    /// Its weight (by exact `path`; 1.0 unless set).
    pub weight: f64,
    /// Unweighted dominant share, as of the last recomputation.
    pub share: f64,
    /// The number of `allocated` calls made on this node's clients (its own and, for an inner
    /// node, every client below it). A virtual leaf starts with the count of the client it took
    /// over; an inner node that collapses back into a leaf keeps its own count.
    pub count: u64,
    parent: Option<NodeIndex>,
    /// In order: active siblings sorted (when the tree is clean), inactive leaves after them.
    children: Siblings,
    client: Option<ClientId>,
    /// Allocated scalar quantities by interned name id (shared resources once).
    totals: Vec<i64>,
    /// Per-agent resources: every resource for leaves, only shared ones for inner nodes and,
    /// when the tree keeps scalars only, for leaves too (they are needed to count each shared
    /// resource once).
    per_agent: IdMap<AgentId, Held>,
}

/// The most whole grants a [`Held`] keeps apart before merging them.
const MAX_GRANTS: usize = 8;

/// What a node holds on one agent: `merged`, plus up to [`MAX_GRANTS`] grants kept whole, as
/// `allocated` passed them (never with a shared resource), so that giving one back whole, the
/// common case (a declined offer), removes it with one comparison instead of range and set
/// arithmetic on the merged value. Anything else merges them first.
#[derive(Clone, Debug, Default)]
struct Held {
    merged: Resources,
    grants: Vec<Resources>,
}

impl Held {
    fn is_empty(&self) -> bool {
        self.merged.is_empty() && self.grants.is_empty()
    }

    /// Adds `resources` (a grant kept whole when it has no shared resource).
    fn add(&mut self, resources: &Resources) {
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
    fn merge(&mut self) -> &mut Resources {
        for g in self.grants.drain(..) {
            self.merged.add(&g);
        }
        &mut self.merged
    }

    /// Removes a grant equal to `resources` kept whole; `false` when there is none.
    fn take_grant(&mut self, resources: &Resources) -> bool {
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
    fn take_whole(&mut self, resources: &Resources) -> bool {
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
    fn total(&self) -> Resources {
        let mut out = self.merged.clone();
        for g in &self.grants {
            out.add(g);
        }
        out
    }
}

impl Node {
    /// Orders two nodes' paths as their bytes order (`a.path.as_bytes().cmp(b.path.as_bytes())`,
    /// the last tie-break of the shipped orders), reading the text only when both paths share
    /// their first 16 bytes and one is longer: siblings' paths differ in their last segment,
    /// which for framework paths (ten digits) and most roles lies within those bytes.
    #[inline]
    pub fn path_cmp(&self, other: &Node) -> Ordering {
        compare_paths((self.path_key, &self.path), (other.path_key, &other.path))
    }

    fn is_active(&self, tree: &Tree) -> bool {
        match self.kind {
            NodeKind::ActiveLeaf => true,
            NodeKind::InactiveLeaf => false,
            NodeKind::Internal => tree.has_active_leaf(self),
        }
    }
}

/// How siblings are ordered: `true` when `a` comes before `b`.
pub trait Order: Send + 'static {
    /// Compares two active siblings.
    fn compare(a: &Node, b: &Node) -> Ordering;
}

/// The client tree and its bookkeeping.
#[derive(Debug)]
pub struct Tree {
    nodes: Vec<Node>,
    free: Vec<NodeIndex>,
    clients: IdMap<ClientId, NodeIndex>,
    /// Every node but the root by its full path (`a/b`, `a/.`): finding a child is one probe,
    /// not a scan of its siblings.
    by_path: HashMap<String, NodeIndex>,
    weights: HashMap<String, f64>,
    /// Interned resource names; a name's id is its index (a handful of names: a linear scan
    /// comparing pointers first beats hashing the text).
    names: Vec<Name>,
    /// Pool total by name id.
    pool: Vec<i64>,
    /// Whether each name id counts for shares.
    counted: Vec<bool>,
    agents: IdMap<AgentId, Quantities>,
    excluded: Vec<String>,
    /// Whether no child of the root is an inner node (every framework sorter, most role
    /// sorters), so that the order is the root's active children; `None` when the shape
    /// changed since it was last found.
    flat: Option<bool>,
    /// For a flat tree that was sorted in full ([`Sorter::sort`], as a module sorter is): the
    /// active leaves' clients in order, kept in step by [`reposition_path`](Self::reposition_path)
    /// so that the next full sort is one copy of a compact array. `None` when it must be rebuilt
    /// (any other change of the tree's shape, order or activity clears it); prefix reads
    /// neither build nor need it.
    full_order: Option<Vec<ClientId>>,
    /// Reused by [`scalar_ids`](Self::scalar_ids).
    ids_scratch: Vec<(usize, i64)>,
    /// Whether leaves keep per agent only shared resources ([`Sorter::keep_scalars_only`]).
    scalars_only: bool,
}

impl Tree {
    /// An empty tree for the given configuration.
    pub fn new(config: &SorterConfig) -> Tree {
        let root = Node {
            name: String::new(),
            path: String::new(),
            path_key: 0,
            client_path: String::new(),
            kind: NodeKind::Internal,
            weight: 1.0,
            share: 0.0,
            count: 0,
            parent: None,
            children: Siblings::default(),
            client: None,
            totals: Vec::new(),
            per_agent: IdMap::default(),
        };
        Tree {
            nodes: vec![root],
            free: Vec::new(),
            clients: IdMap::default(),
            by_path: HashMap::new(),
            weights: HashMap::new(),
            names: Vec::new(),
            pool: Vec::new(),
            counted: Vec::new(),
            agents: IdMap::default(),
            excluded: config
                .fairness_excluded_resource_names
                .iter()
                .map(|s| s.to_string())
                .collect(),
            flat: None,
            full_order: None,
            ids_scratch: Vec::new(),
            scalars_only: false,
        }
    }

    /// From now on, leaves keep per agent only shared resources (what is needed to count each
    /// once), as inner nodes do; [`allocation`](Self::allocation) and
    /// [`allocation_on`](Self::allocation_on) answer an `UNSUPPORTED` error, and
    /// [`unallocated`](Self::unallocated) checks non-shared resources against the leaf's scalar
    /// totals over all agents (see [`Sorter::keep_scalars_only`]). Records already kept lose
    /// their non-shared resources.
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

    /// The node at `i`.
    pub fn node(&self, i: NodeIndex) -> &Node {
        &self.nodes[i]
    }

    /// The node of `client`, or a rejection naming the call.
    pub fn client_node(&self, client: ClientId, call: &str) -> Result<NodeIndex> {
        self.clients
            .get(&client)
            .copied()
            .ok_or_else(|| ModuleError::rejected(format!("{call}: unknown client {client}")))
    }

    /// The number of clients.
    pub fn client_count(&self) -> usize {
        self.clients.len()
    }

    /// Whether `client` is present.
    pub fn contains(&self, client: ClientId) -> bool {
        self.clients.contains_key(&client)
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

    fn new_node(
        &mut self,
        name: &str,
        path: String,
        client_path: String,
        parent: NodeIndex,
    ) -> NodeIndex {
        let weight = self.weights.get(&path).copied().unwrap_or(1.0);
        let node = Node {
            name: name.to_owned(),
            path_key: path_key(&path),
            path,
            client_path,
            kind: NodeKind::InactiveLeaf,
            weight,
            share: 0.0,
            count: 0,
            parent: Some(parent),
            children: Siblings::default(),
            client: None,
            totals: vec![0; self.names.len()],
            per_agent: IdMap::default(),
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i] = node;
                i
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        self.by_path.insert(self.nodes[i].path.clone(), i);
        i
    }

    /// Returns node `i` to the free list.
    fn free_node(&mut self, i: NodeIndex) {
        if self.by_path.get(&self.nodes[i].path) == Some(&i) {
            self.by_path.remove(&self.nodes[i].path);
        }
        self.free.push(i);
    }

    fn has_active_leaf(&self, node: &Node) -> bool {
        node.children.nodes().any(|c| self.nodes[c].is_active(self))
    }

    /// Unweighted dominant share of a node over the pool (excluded names and names with an
    /// empty pool contribute nothing).
    fn compute_share(&self, i: NodeIndex) -> f64 {
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

    fn insert_child(&mut self, parent: NodeIndex, child: NodeIndex) {
        let client = self.nodes[child].client;
        self.nodes[parent].children.push(child, client);
    }

    /// Moves `i` to the end of its parent's children (where inactive leaves live).
    fn move_to_inactive_end(&mut self, i: NodeIndex) {
        self.full_order = None;
        let p = self.nodes[i].parent.expect("non-root");
        let client = self.nodes[i].client;
        let children = &mut self.nodes[p].children;
        // From the end: a node just added is the last child.
        children.remove_node(i);
        children.push(i, client);
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

    /// Sets the kind of `client`'s leaf; returns whether it changed.
    pub fn set_active(&mut self, client: ClientId, active: bool, call: &str) -> Result<bool> {
        let leaf = self.client_node(client, call)?;
        let want = if active { NodeKind::ActiveLeaf } else { NodeKind::InactiveLeaf };
        if self.nodes[leaf].kind == want {
            return Ok(false);
        }
        self.full_order = None;
        self.nodes[leaf].kind = want;
        if !active {
            self.move_to_inactive_end(leaf);
        }
        Ok(true)
    }

    /// Sets the weight of `path` for existing and future nodes.
    pub fn set_weight(&mut self, path: &str, weight: f64) -> Result<()> {
        if !(weight.is_finite() && weight > 0.0) {
            return Err(ModuleError::rejected(format!(
                "update_weight: weight of '{path}' must be finite and positive, got {weight}"
            )));
        }
        self.weights.insert(path.to_owned(), weight);
        for n in &mut self.nodes {
            if n.path == path {
                n.weight = weight;
            }
        }
        Ok(())
    }

    /// `(name id, millis)` for each scalar name in `resources`, a shared resource counted once
    /// however many copies are listed. Interns new names.
    fn scalar_ids(&mut self, resources: &Resources) -> Vec<(usize, i64)> {
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
    fn subtract_at(
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

    /// Children of `i` that are active (active leaves and inner nodes with an active leaf).
    pub fn active_children(&self, i: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        self.nodes[i].children.nodes().filter(|&c| self.nodes[c].is_active(self))
    }

    /// Root index.
    pub fn root(&self) -> NodeIndex {
        ROOT
    }

    /// The client of a leaf.
    pub fn client_of(&self, i: NodeIndex) -> Option<ClientId> {
        self.nodes[i].client
    }

    /// Recomputes every share and sorts every level with `O`, inactive leaves last.
    pub fn resort_all<O: Order>(&mut self) {
        self.full_order = None;
        for i in 0..self.nodes.len() {
            if self.nodes[i].parent.is_some() || i == ROOT {
                self.nodes[i].share = self.compute_share(i);
            }
        }
        let mut stack = vec![ROOT];
        while let Some(i) = stack.pop() {
            let mut children = self.nodes[i].children.take_all();
            let nodes = &self.nodes;
            children.sort_by(|a, b| {
                let (na, nb) = (&nodes[a.node], &nodes[b.node]);
                let ia = na.kind == NodeKind::InactiveLeaf;
                let ib = nb.kind == NodeKind::InactiveLeaf;
                match (ia, ib) {
                    (false, false) => O::compare(na, nb),
                    (true, true) => Ordering::Equal,
                    (false, true) => Ordering::Less,
                    (true, false) => Ordering::Greater,
                }
            });
            stack.extend(
                children
                    .iter()
                    .map(|e| e.node)
                    .filter(|&c| self.nodes[c].kind == NodeKind::Internal),
            );
            self.nodes[i].children.set_all(children);
        }
    }

    /// After an allocation on a clean tree: refreshes the shares on the path from `leaf` up and
    /// moves each node to its place among its siblings.
    ///
    /// Each node on the path had its count raised by one ([`allocated`](Self::allocated)) and
    /// its share not yet refreshed, and the siblings were sorted with the old values: so a node's
    /// old place is found by binary search with its count lowered back by one (without a search
    /// when the node is the first of its siblings, the usual grant), and its new place by
    /// another. O(log n) comparisons per level; the move shifts entries within at most two
    /// blocks of siblings (no shift of every sibling in between).
    pub fn reposition_path<O: Order>(&mut self, leaf: NodeIndex) {
        let mut cur = leaf;
        while let Some(p) = self.nodes[cur].parent {
            let share = self.compute_share(cur);
            if self.nodes[cur].kind != NodeKind::InactiveLeaf {
                let mut children = std::mem::take(&mut self.nodes[p].children);
                // Active siblings first, inactive leaves after (both kept so by every change
                // that does not mark the tree dirty). The old place, under the values the
                // siblings were sorted with:
                self.nodes[cur].count -= 1;
                let nodes = &self.nodes;
                let active = |e: &Entry| nodes[e.node].kind != NodeKind::InactiveLeaf;
                let before_cur = |e: &Entry| {
                    active(e) && O::compare(&nodes[e.node], &nodes[cur]) == Ordering::Less
                };
                // The first sibling is the usual case (the walk grants to the first framework
                // in the order that takes the agent): no search then.
                let mut pos = if children.first() == Some(cur) {
                    Siblings::START
                } else {
                    children.partition_point(before_cur)
                };
                if children.get(pos).map(|e| e.node) != Some(cur) {
                    // Not where the order says (it cannot be, short of a sorter bug): find it.
                    if let Some(found) = children.position_in_prefix(cur, active) {
                        pos = found;
                    }
                }
                self.nodes[cur].count += 1;
                self.nodes[cur].share = share;
                let nodes = &self.nodes;
                let before_cur = |e: &Entry| {
                    nodes[e.node].kind != NodeKind::InactiveLeaf
                        && O::compare(&nodes[e.node], &nodes[cur]) == Ordering::Less
                };
                // Still between its neighbours (a lone child, or a share that did not pass the
                // next sibling's): nothing moves.
                let (prev, next) = children.neighbours(pos);
                let stays = prev.is_none_or(before_cur) && next.is_none_or(|e| !before_cur(e));
                if children.get(pos).map(|e| e.node) == Some(cur) && !stays {
                    // The new place among the other active siblings (they are sorted).
                    // In a flat tree sorted in full, the cached order is the active prefix of
                    // the root's children: it moves the same way (by index).
                    let cached = if p == ROOT { self.full_order.as_mut() } else { None };
                    let from = cached.is_some().then(|| children.index_of(pos));
                    let entry = children.remove_at(pos);
                    let at = children.partition_point(before_cur);
                    if let (Some(order), Some(from)) = (cached, from) {
                        move_entry(order, from, children.index_of(at));
                    }
                    children.insert_at(at, entry);
                }
                self.nodes[p].children = children;
            } else {
                self.nodes[cur].share = share;
            }
            cur = p;
        }
        self.nodes[ROOT].share = self.compute_share(ROOT);
    }

    /// Writes the active leaves in pre-order (each subtree before the next sibling). A flat
    /// tree keeps what it wrote for the next call (see `full_order`).
    pub fn emit_active(&mut self, out: &mut RVec<ClientId>) {
        if let Some(order) = &self.full_order {
            copy_order(order, out);
            return;
        }
        self.emit_prefix(usize::MAX, out);
        if self.flat == Some(true) {
            self.full_order = Some(out.to_vec());
        }
    }

    /// Writes the first `len` active leaves in pre-order (all of them when there are fewer);
    /// returns `true` when `out` holds every active leaf. O(len) for a flat tree (plus
    /// O(log n) to find where the active leaves end), the walk of the visited subtrees
    /// otherwise.
    pub fn emit_prefix(&mut self, len: usize, out: &mut RVec<ClientId>) -> bool {
        out.clear();
        let flat = match self.flat {
            Some(f) => f,
            None => {
                let root = &self.nodes[ROOT];
                let f = root.children.nodes().all(|c| self.nodes[c].kind != NodeKind::Internal);
                self.flat = Some(f);
                f
            }
        };
        let nodes = &self.nodes;
        if flat {
            // A flat tree (every framework sorter, most role sorters): the root's children in
            // order, up to the first inactive leaf.
            let children = &nodes[ROOT].children;
            let end = children.partition_point(|e| nodes[e.node].kind == NodeKind::ActiveLeaf);
            for slice in children.slices_before(end) {
                let room = len - out.len();
                if slice.len() > room {
                    extend_clients(out, &slice[..room]);
                    return false;
                }
                extend_clients(out, slice);
            }
            return true;
        }
        let mut stack = vec![nodes[ROOT].children.iter()];
        while let Some(top) = stack.last_mut() {
            let Some(e) = top.next() else {
                stack.pop();
                continue;
            };
            let n = &nodes[e.node];
            match n.kind {
                NodeKind::InactiveLeaf => {}
                NodeKind::ActiveLeaf => {
                    if let Some(c) = n.client {
                        if out.len() == len {
                            return false;
                        }
                        out.push(c);
                    }
                }
                NodeKind::Internal => stack.push(n.children.iter()),
            }
        }
        true
    }
}

/// Moves the entry at `from` to index `to`, shifting only the entries in between (one
/// `memmove`; a slice rotation by one is an element-by-element loop).
fn move_entry<T: Copy>(v: &mut [T], from: usize, to: usize) {
    let x = v[from];
    if from < to {
        v.copy_within(from + 1..=to, from);
    } else if to < from {
        v.copy_within(to..from, to + 1);
    }
    v[to] = x;
}

/// Writes `order` into `out` with one `memcpy` (extending or resizing an `RVec` goes element
/// by element, several instructions per client).
fn copy_order(order: &[ClientId], out: &mut RVec<ClientId>) {
    out.clear();
    out.reserve(order.len());
    // SAFETY: `out` has room for `order.len()` elements (reserved above) and does not overlap
    // `order` (a distinct buffer); `ClientId` is `Copy`, so the copied elements are valid and
    // the new length covers exactly the initialized prefix.
    unsafe {
        std::ptr::copy_nonoverlapping(order.as_ptr(), out.as_mut_ptr(), order.len());
        out.set_len(order.len());
    }
}

/// Appends the clients of `entries` to `out` in one pass (extending an `RVec` from an iterator
/// goes through a capacity check per element).
fn extend_clients(out: &mut RVec<ClientId>, entries: &[Entry]) {
    out.reserve(entries.len());
    let base = out.len();
    let mut k = 0;
    // SAFETY: `out` has room for `entries.len()` more elements (reserved above) and at most
    // that many are written, each one past the initialized length; `ClientId` is `Copy`, so the
    // new length covers exactly the initialized elements.
    unsafe {
        let dst = out.as_mut_ptr().add(base);
        for e in entries {
            if let Some(c) = e.client {
                dst.add(k).write(c);
                k += 1;
            }
        }
        out.set_len(base + k);
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

/// Orders two `(path_key(path), path)` pairs as the paths' bytes order.
#[inline]
fn compare_paths((a_key, a): (u128, &str), (b_key, b): (u128, &str)) -> Ordering {
    match a_key.cmp(&b_key) {
        Ordering::Equal if a.len() > 16 || b.len() > 16 => a.as_bytes().cmp(b.as_bytes()),
        // Equal keys of two paths within 16 bytes: one is the other followed by zero bytes (or
        // they are equal), and the shorter comes first.
        Ordering::Equal => a.len().cmp(&b.len()),
        unequal => unequal,
    }
}

/// The first 16 bytes of `path` as a big-endian number, zero-padded: keys order as the paths'
/// bytes do wherever they differ within those bytes ([`Node::path_cmp`]).
fn path_key(path: &str) -> u128 {
    let mut bytes = [0u8; 16];
    let n = path.len().min(16);
    bytes[..n].copy_from_slice(&path.as_bytes()[..n]);
    u128::from_be_bytes(bytes)
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

/// What distinguishes one tree sorter from another: how it answers `sort`.
pub trait Policy: Send + 'static {
    /// Called after `allocated` on a tree that is not dirty (to keep an incremental order).
    fn on_allocated(&mut self, tree: &mut Tree, leaf: NodeIndex);
    /// Writes the active clients in order; `dirty` is true when anything but an allocation
    /// changed since the last sort.
    fn sort(&mut self, tree: &mut Tree, dirty: bool, out: &mut RVec<ClientId>);

    /// Writes the first `len` active clients of the order [`sort`](Self::sort) would write and
    /// returns `true` when that is all of them ([`Sorter::sort_prefix`]). The default sorts in
    /// full (one `sort`, so a policy that draws on every sort keeps its sequence).
    fn sort_prefix(
        &mut self,
        tree: &mut Tree,
        dirty: bool,
        len: usize,
        out: &mut RVec<ClientId>,
    ) -> bool {
        let _ = len;
        self.sort(tree, dirty, out);
        true
    }

    /// Called when a client is deactivated. DRF keeps its order (the inactive leaf just leaves
    /// the walk); policies that cache the set of active clients refresh it.
    fn invalidate(&mut self) {}
}

/// A [`Policy`] that keeps siblings ordered by `O` (DRF, weighted priority).
#[derive(Debug)]
pub struct Ordered<O: Order>(std::marker::PhantomData<O>);

impl<O: Order> Default for Ordered<O> {
    fn default() -> Self {
        Ordered(std::marker::PhantomData)
    }
}

impl<O: Order> Policy for Ordered<O> {
    fn on_allocated(&mut self, tree: &mut Tree, leaf: NodeIndex) {
        tree.reposition_path::<O>(leaf);
    }

    fn sort(&mut self, tree: &mut Tree, dirty: bool, out: &mut RVec<ClientId>) {
        if dirty {
            tree.resort_all::<O>();
        }
        tree.emit_active(out);
    }

    fn sort_prefix(
        &mut self,
        tree: &mut Tree,
        dirty: bool,
        len: usize,
        out: &mut RVec<ClientId>,
    ) -> bool {
        if dirty {
            tree.resort_all::<O>();
        }
        tree.emit_prefix(len, out)
    }
}

/// A [`Sorter`] over the shared tree whose order comes from policy `P`.
#[derive(Debug)]
pub struct TreeSorter<P: Policy> {
    tree: Tree,
    dirty: bool,
    policy: P,
}

impl<P: Policy> TreeSorter<P> {
    /// A new, empty sorter.
    pub fn new(config: &SorterConfig, policy: P) -> TreeSorter<P> {
        TreeSorter { tree: Tree::new(config), dirty: true, policy }
    }

    /// The underlying tree.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }
}

impl<P: Policy> Sorter for TreeSorter<P> {
    fn add(&mut self, client: ClientId, path: &str) -> Result<()> {
        self.tree.add(client, path)?;
        self.dirty = true;
        Ok(())
    }

    fn remove(&mut self, client: ClientId) -> Result<()> {
        self.tree.remove(client)?;
        self.dirty = true;
        Ok(())
    }

    fn activate(&mut self, client: ClientId) -> Result<()> {
        if self.tree.set_active(client, true, "activate")? {
            self.dirty = true;
        }
        Ok(())
    }

    fn deactivate(&mut self, client: ClientId) -> Result<()> {
        if self.tree.set_active(client, false, "deactivate")? {
            self.policy.invalidate();
        }
        Ok(())
    }

    fn update_weight(&mut self, path: &str, weight: f64) -> Result<()> {
        self.tree.set_weight(path, weight)?;
        self.dirty = true;
        Ok(())
    }

    fn allocated(&mut self, client: ClientId, agent: AgentId, resources: &Resources) -> Result<()> {
        let leaf = self.tree.allocated(client, agent, resources)?;
        if !self.dirty {
            self.policy.on_allocated(&mut self.tree, leaf);
        }
        Ok(())
    }

    fn update(
        &mut self,
        client: ClientId,
        agent: AgentId,
        old: &Resources,
        new: &Resources,
    ) -> Result<()> {
        self.tree.unallocated(client, agent, old)?;
        // An update is not a new allocation: keep the counts as they were.
        let leaf = self.tree.client_node(client, "update")?;
        let counts: Vec<(NodeIndex, u64)> = {
            let mut v = Vec::new();
            let mut cur = Some(leaf);
            while let Some(i) = cur {
                v.push((i, self.tree.node(i).count));
                cur = self.tree.node(i).parent;
            }
            v
        };
        self.tree.allocated(client, agent, new)?;
        for (i, c) in counts {
            self.tree.nodes[i].count = c;
        }
        self.dirty = true;
        Ok(())
    }

    fn unallocated(
        &mut self,
        client: ClientId,
        agent: AgentId,
        resources: &Resources,
    ) -> Result<()> {
        self.tree.unallocated(client, agent, resources)?;
        self.dirty = true;
        Ok(())
    }

    fn allocation(&self, client: ClientId, out: &mut RVec<AgentAllocation>) -> Result<()> {
        self.tree.allocation(client, out)
    }

    fn allocation_on(&self, client: ClientId, agent: AgentId, out: &mut Resources) -> Result<()> {
        self.tree.allocation_on(client, agent, out)
    }

    fn allocation_scalar_quantities(
        &self,
        client: Option<ClientId>,
        out: &mut Quantities,
    ) -> Result<()> {
        self.tree.scalar_quantities(client, out)
    }

    fn add_agent(&mut self, agent: AgentId, total: &Quantities) -> Result<()> {
        self.tree.add_agent(agent, total)?;
        self.dirty = true;
        Ok(())
    }

    fn remove_agent(&mut self, agent: AgentId) -> Result<()> {
        self.tree.remove_agent(agent)?;
        self.dirty = true;
        Ok(())
    }

    fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()> {
        self.policy.sort(&mut self.tree, self.dirty, out);
        self.dirty = false;
        Ok(())
    }

    fn sort_prefix(&mut self, len: usize, out: &mut RVec<ClientId>) -> Result<bool> {
        let complete = self.policy.sort_prefix(&mut self.tree, self.dirty, len, out);
        self.dirty = false;
        Ok(complete)
    }

    /// Answers `true`: leaves keep per agent only shared resources from now on
    /// ([`Tree::keep_scalars_only`]).
    fn keep_scalars_only(&mut self) -> bool {
        self.tree.keep_scalars_only();
        true
    }

    fn contains(&self, client: ClientId) -> bool {
        self.tree.contains(client)
    }

    fn count(&self) -> usize {
        self.tree.client_count()
    }

    /// The unweighted dominant share of the client (Mesos's `shares/dominant` metric).
    fn dominant_share(&self, client: ClientId) -> Option<f64> {
        let leaf = self.tree.clients.get(&client)?;
        Some(self.tree.compute_share(*leaf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DRF's order (share, count, path), for the tests.
    struct ShareOrder;

    impl Order for ShareOrder {
        fn compare(a: &Node, b: &Node) -> Ordering {
            (a.share / a.weight)
                .total_cmp(&(b.share / b.weight))
                .then(a.count.cmp(&b.count))
                .then_with(|| a.path_cmp(b))
        }
    }

    #[test]
    fn path_order_by_key_is_the_order_of_the_paths_bytes() {
        let paths = [
            "",
            "a",
            "a\0",
            "a\0\0",
            "ab",
            "b",
            "0000000003",
            "0000000012",
            "0000000120",
            "eng",
            "eng/ml",
            "eng/ml/.",
            "eng\u{e9}",
            "\u{ff}",
            "0123456789abcdef",
            "0123456789abcdeg",
            "0123456789abcdef0",
            "0123456789abcdef\0",
            "0123456789abcdef1",
            "0123456789abcdefz/long/role/path",
            "zz",
        ];
        for a in paths {
            for b in paths {
                assert_eq!(
                    compare_paths((path_key(a), a), (path_key(b), b)),
                    a.as_bytes().cmp(b.as_bytes()),
                    "{a:?} vs {b:?}"
                );
            }
        }
    }

    fn res(text: &str) -> Resources {
        text.parse().unwrap()
    }

    #[test]
    fn the_incremental_order_after_allocations_is_the_full_sort_order() {
        let mut s = TreeSorter::new(&SorterConfig::default(), Ordered::<ShareOrder>::default());
        s.add_agent(AgentId(0), &Quantities::parse("cpus:1000;mem:100000").unwrap()).unwrap();
        for c in 0..40 {
            s.add(ClientId(c), &format!("c{c:02}")).unwrap();
            s.activate(ClientId(c)).unwrap();
        }
        // A nested client too, so that repositioning also moves an inner node.
        s.add(ClientId(40), "c07/x").unwrap();
        s.activate(ClientId(40)).unwrap();
        let mut incremental = RVec::new();
        s.sort(&mut incremental).unwrap();
        for step in 0u32..300 {
            let client = ClientId((step * 7 + step / 3) % 41);
            let amount = 1 + (step * 13) % 5;
            s.allocated(client, AgentId(0), &res(&format!("cpus:{amount}"))).unwrap();
            s.sort(&mut incremental).unwrap();
        }
        let mut full = RVec::new();
        s.dirty = true;
        s.sort(&mut full).unwrap();
        assert_eq!(incremental, full);
    }

    /// A DRF sorter with `n` active clients (`c000`…) and, when `nested`, one client below
    /// another (`c007/x`), some inactive ones, and 300 allocations spread over them.
    fn busy_sorter(n: u32, nested: bool) -> TreeSorter<Ordered<ShareOrder>> {
        let mut s = TreeSorter::new(&SorterConfig::default(), Ordered::<ShareOrder>::default());
        s.add_agent(AgentId(0), &Quantities::parse("cpus:100000;mem:100000").unwrap()).unwrap();
        for c in 0..n {
            s.add(ClientId(c), &format!("c{c:03}")).unwrap();
            s.activate(ClientId(c)).unwrap();
        }
        if nested {
            s.add(ClientId(n), "c007/x").unwrap();
            s.activate(ClientId(n)).unwrap();
        }
        for c in (0..n).step_by(9) {
            s.deactivate(ClientId(c)).unwrap();
        }
        let mut out = RVec::new();
        s.sort(&mut out).unwrap();
        for step in 0u32..300 {
            let client = ClientId((step * 7 + step / 3) % n);
            let amount = 1 + (step * 13) % 5;
            s.allocated(client, AgentId(0), &res(&format!("cpus:{amount}"))).unwrap();
        }
        s
    }

    #[test]
    fn a_prefix_of_the_order_is_the_start_of_the_full_sort() {
        for nested in [false, true] {
            let mut s = busy_sorter(400, nested);
            let mut full = RVec::new();
            let mut prefix = RVec::new();
            for len in [0, 1, 5, 128, 129, 300] {
                assert!(!s.sort_prefix(len, &mut prefix).unwrap(), "more than {len} are active");
                s.sort(&mut full).unwrap();
                assert_eq!(prefix.as_slice(), &full[..len], "len {len}, nested {nested}");
            }
            assert!(s.sort_prefix(full.len(), &mut prefix).unwrap(), "exactly all of them");
            assert_eq!(prefix, full);
            assert!(s.sort_prefix(usize::MAX, &mut prefix).unwrap());
            assert_eq!(prefix, full);
        }
    }

    #[test]
    fn the_incremental_order_over_many_blocks_of_siblings_is_the_full_sort_order() {
        for nested in [false, true] {
            let mut s = busy_sorter(1000, nested);
            let mut incremental = RVec::new();
            s.sort(&mut incremental).unwrap();
            let mut full = RVec::new();
            s.dirty = true;
            s.sort(&mut full).unwrap();
            assert_eq!(incremental, full, "nested {nested}");
        }
    }

    #[test]
    fn a_prefix_after_a_change_that_resorts_is_the_start_of_the_new_order() {
        let mut s = busy_sorter(200, false);
        let mut prefix = RVec::new();
        s.sort_prefix(3, &mut prefix).unwrap();
        // Giving back marks the tree dirty: the next answer comes from a full re-sort.
        let first = prefix[0];
        s.allocated(first, AgentId(0), &res("cpus:50")).unwrap();
        s.unallocated(first, AgentId(0), &res("cpus:50")).unwrap();
        s.activate(ClientId(0)).unwrap();
        s.sort_prefix(10, &mut prefix).unwrap();
        let mut full = RVec::new();
        s.dirty = true;
        s.sort(&mut full).unwrap();
        assert_eq!(prefix.as_slice(), &full[..10]);
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

    /// Two DRF sorters over 3 agents with clients `a`, `b`, `c`, `a/x` (so `a` is a virtual
    /// leaf) and `d/y`, all active; the second keeps scalars only.
    fn plain_and_scalars_only() -> [TreeSorter<Ordered<ShareOrder>>; 2] {
        [false, true].map(|scalars| {
            let mut s = TreeSorter::new(&SorterConfig::default(), Ordered::<ShareOrder>::default());
            if scalars {
                assert!(s.keep_scalars_only());
            }
            for a in 0..3 {
                let total = Quantities::parse("cpus:100;mem:1000;disk:1000").unwrap();
                s.add_agent(AgentId(a), &total).unwrap();
            }
            for (c, path) in (0..).zip(["a", "b", "c", "a/x", "d/y"]) {
                s.add(ClientId(c), path).unwrap();
                s.activate(ClientId(c)).unwrap();
            }
            s
        })
    }

    /// The order, and every client's (and everyone's) scalar quantities and share.
    fn observe(s: &mut TreeSorter<Ordered<ShareOrder>>) -> (RVec<ClientId>, Vec<String>) {
        let mut order = RVec::new();
        s.sort(&mut order).unwrap();
        let mut seen = Vec::new();
        let mut q = Quantities::new();
        s.allocation_scalar_quantities(None, &mut q).unwrap();
        seen.push(format!("all: {q}"));
        for c in 0..5 {
            if s.contains(ClientId(c)) {
                s.allocation_scalar_quantities(Some(ClientId(c)), &mut q).unwrap();
                seen.push(format!("{c}: {q} {:?}", s.dominant_share(ClientId(c))));
            }
        }
        (order, seen)
    }

    #[test]
    fn keeping_scalars_only_gives_the_same_order_and_shares_over_random_calls() {
        let [mut plain, mut scalars] = plain_and_scalars_only();
        let paths = ["a", "b", "c", "a/x", "d/y"];
        // (A port range is granted once: each step offers its own.)
        let grant = |step: usize| match step % 6 {
            0 => res(&format!("cpus:1;mem:10;ports:[{}-{}]", 1000 + 20 * step, 1010 + 20 * step)),
            k => res(GRANTS[k]),
        };
        const GRANTS: [&str; 6] = [
            "",
            "cpus:2",
            "mem:30;disk:5",
            "cpus:1;disk(r)[v]{shared}:10",
            "disk(r)[v]{shared}:10",
            "disk(r)[w]{shared}:20;disk(r)[v]{shared}:10;mem:3",
        ];
        // What each client holds: (client, agent, resources), one entry per grant.
        let mut held: Vec<(ClientId, AgentId, Resources)> = Vec::new();
        let mut seed = 0x5eed_u64;
        let mut next = |n: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for step in 0..600 {
            let op = next(10);
            let (client, agent) = (ClientId(next(5) as u32), AgentId(next(3) as u32));
            let pick = if held.is_empty() { None } else { Some(next(held.len())) };
            for s in [&mut plain, &mut scalars] {
                match (op, pick) {
                    (0..=3, _) => s.allocated(client, agent, &grant(step)).unwrap(),
                    (4..=5, Some(k)) => {
                        let (c, a, r) = &held[k];
                        s.unallocated(*c, *a, r).unwrap()
                    }
                    (6, Some(k)) => {
                        let (c, a, r) = &held[k];
                        s.unallocated(*c, *a, &r.filter(|x| !x.is_shared())).unwrap()
                    }
                    (7, Some(k)) => {
                        let (c, a, r) = &held[k];
                        s.update(*c, *a, r, &(r.clone() + &res("mem:5"))).unwrap()
                    }
                    (8, _) => {
                        s.remove(client).unwrap();
                        s.add(client, paths[client.index()]).unwrap();
                        s.activate(client).unwrap();
                    }
                    (9, _) => s.deactivate(client).unwrap(),
                    _ => {}
                }
            }
            match (op, pick) {
                (0..=3, _) => held.push((client, agent, grant(step))),
                (4..=5, Some(k)) => {
                    held.swap_remove(k);
                }
                (6, Some(k)) => {
                    held[k].2 = held[k].2.filter(|x| x.is_shared());
                    if held[k].2.is_empty() {
                        held.swap_remove(k);
                    }
                }
                (7, Some(k)) => held[k].2.add(&res("mem:5")),
                (8, _) => held.retain(|(c, _, _)| *c != client),
                _ => {}
            }
            if op == 9 && step % 3 == 0 {
                plain.activate(client).unwrap();
                scalars.activate(client).unwrap();
            }
            assert_eq!(observe(&mut plain), observe(&mut scalars), "step {step}, op {op}");
        }
        assert!(!held.is_empty());
    }

    #[test]
    fn keeping_scalars_only_answers_allocation_with_an_error() {
        let [_, mut s] = plain_and_scalars_only();
        s.allocated(ClientId(1), AgentId(0), &res("cpus:2;ports:[1-10]")).unwrap();
        let mut out = RVec::new();
        let e = s.allocation(ClientId(1), &mut out).unwrap_err();
        assert_eq!(e.kind, allocator_api::ErrorKind::UNSUPPORTED);
        assert!(e.message.contains("keeps scalar quantities only"), "{}", e.message);
        let mut on = Resources::new();
        let e = s.allocation_on(ClientId(1), AgentId(0), &mut on).unwrap_err();
        assert_eq!(e.kind, allocator_api::ErrorKind::UNSUPPORTED);
    }

    #[test]
    fn keeping_scalars_only_still_rejects_giving_back_more_than_is_held() {
        let [_, mut s] = plain_and_scalars_only();
        let b = ClientId(1);
        s.allocated(b, AgentId(0), &res("cpus:2;disk(r)[v]{shared}:10")).unwrap();
        let before = observe(&mut s);
        for (agent, more) in [
            (0, "cpus:3"),
            (0, "mem:1"),
            (1, "disk(r)[v]{shared}:10"),
            (0, "disk(r)[v]{shared}:10;disk(r)[v]{shared}:10"),
        ] {
            let e = s.unallocated(b, AgentId(agent), &res(more)).unwrap_err();
            assert_eq!(e.kind, allocator_api::ErrorKind::REJECTED, "{more} on agent {agent}");
        }
        assert_eq!(observe(&mut s), before, "a rejected call changes nothing");
        s.unallocated(b, AgentId(0), &res("cpus:2;disk(r)[v]{shared}:10")).unwrap();
        let mut q = Quantities::new();
        s.allocation_scalar_quantities(Some(b), &mut q).unwrap();
        assert!(q.is_empty(), "{q}");
    }

    #[test]
    fn keeping_scalars_only_records_only_shared_resources_per_agent() {
        let [_, mut s] = plain_and_scalars_only();
        let leaf = s.tree.client_node(ClientId(1), "test").unwrap();
        s.allocated(ClientId(1), AgentId(0), &res("cpus:2;mem:10;ports:[1-10]")).unwrap();
        assert!(s.tree.node(leaf).per_agent.is_empty());
        s.allocated(ClientId(1), AgentId(1), &res("cpus:1;disk(r)[v]{shared}:10")).unwrap();
        let held: Vec<_> = s.tree.node(leaf).per_agent.iter().collect();
        assert_eq!(held.len(), 1);
        assert_eq!(*held[0].0, AgentId(1));
        assert_eq!(held[0].1.total(), res("disk(r)[v]{shared}:10"));
    }
}
