//! The tree's nodes: the arena, what a node is (its kind, path, client, weight, count), the
//! lookups by client and by path, weights by path, activity, where a node sits among its
//! siblings, and the 16-byte path key that orders paths. Adding and removing clients (which
//! reshape the tree) is in `clients.rs`; what nodes hold is in `holdings.rs`.

use std::cmp::Ordering;
use std::collections::HashMap;

use allocator_api::{
    AgentId, ClientId, IdMap, ModuleError, Name, Quantities, Result, SorterConfig,
};

use crate::NodeIndex;
use crate::held::Held;
use crate::siblings::Siblings;

pub(crate) const ROOT: NodeIndex = 0;

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

/// One node of the tree, as an [`Order`](crate::Order) sees it.
#[derive(Debug)]
pub struct Node {
    /// The last path segment (`.` for a virtual leaf).
    pub name: String,
    /// The full path (`a/b`, `a/.`; empty for the root).
    pub path: String,
    /// The first 16 bytes of `path`, big-endian, zero-padded ([`path_cmp`](Self::path_cmp)).
    pub(crate) path_key: u128,
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
    pub(crate) parent: Option<NodeIndex>,
    /// In order: active siblings sorted (when the tree is clean), inactive leaves after them.
    pub(crate) children: Siblings,
    pub(crate) client: Option<ClientId>,
    /// Allocated scalar quantities by interned name id (shared resources once).
    pub(crate) totals: Vec<i64>,
    /// Usage by interned name id, in the units of `totals`, when the tree shares on usage
    /// ([`Tree::share_on_usage`]); empty otherwise (a missing entry is 0).
    pub(crate) usage: Vec<f64>,
    /// Per-agent resources: every resource for leaves, only shared ones for inner nodes and,
    /// when the tree keeps scalars only, for leaves too (they are needed to count each shared
    /// resource once).
    pub(crate) per_agent: IdMap<AgentId, Held>,
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

/// The client tree and its bookkeeping.
#[derive(Debug)]
pub struct Tree {
    pub(crate) nodes: Vec<Node>,
    pub(crate) free: Vec<NodeIndex>,
    pub(crate) clients: IdMap<ClientId, NodeIndex>,
    /// Every node but the root by its full path (`a/b`, `a/.`): finding a child is one probe,
    /// not a scan of its siblings.
    pub(crate) by_path: HashMap<String, NodeIndex>,
    pub(crate) weights: HashMap<String, f64>,
    /// Interned resource names; a name's id is its index (a handful of names: a linear scan
    /// comparing pointers first beats hashing the text).
    pub(crate) names: Vec<Name>,
    /// Pool total by name id.
    pub(crate) pool: Vec<i64>,
    /// Whether each name id counts for shares.
    pub(crate) counted: Vec<bool>,
    pub(crate) agents: IdMap<AgentId, Quantities>,
    pub(crate) excluded: Vec<String>,
    /// Whether no child of the root is an inner node (every framework sorter, most role
    /// sorters), so that the order is the root's active children; `None` when the shape
    /// changed since it was last found.
    pub(crate) flat: Option<bool>,
    /// For a flat tree that was sorted in full ([`Sorter::sort`], as a module sorter is): the
    /// active leaves' clients in order, kept in step by [`reposition_path`](Self::reposition_path)
    /// so that the next full sort is one copy of a compact array. `None` when it must be rebuilt
    /// (any other change of the tree's shape, order or activity clears it); prefix reads
    /// neither build nor need it.
    ///
    /// [`Sorter::sort`]: allocator_api::Sorter::sort
    pub(crate) full_order: Option<Vec<ClientId>>,
    /// Reused by [`scalar_ids`](Self::scalar_ids).
    pub(crate) ids_scratch: Vec<(usize, i64)>,
    /// Whether leaves keep per agent only shared resources ([`Sorter::keep_scalars_only`]).
    ///
    /// [`Sorter::keep_scalars_only`]: allocator_api::Sorter::keep_scalars_only
    pub(crate) scalars_only: bool,
    /// `Some(current_weight)` when shares are computed on each node's `usage` plus
    /// `current_weight` × what it holds ([`share_on_usage`](Self::share_on_usage)).
    pub(crate) on_usage: Option<f64>,
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
            usage: Vec::new(),
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
            on_usage: None,
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

    pub(crate) fn new_node(
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
            usage: Vec::new(),
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
    pub(crate) fn free_node(&mut self, i: NodeIndex) {
        if self.by_path.get(&self.nodes[i].path) == Some(&i) {
            self.by_path.remove(&self.nodes[i].path);
        }
        self.free.push(i);
    }

    fn has_active_leaf(&self, node: &Node) -> bool {
        node.children.nodes().any(|c| self.nodes[c].is_active(self))
    }

    pub(crate) fn insert_child(&mut self, parent: NodeIndex, child: NodeIndex) {
        let client = self.nodes[child].client;
        self.nodes[parent].children.push(child, client);
    }

    /// Moves `i` to the end of its parent's children (where inactive leaves live).
    pub(crate) fn move_to_inactive_end(&mut self, i: NodeIndex) {
        self.full_order = None;
        let p = self.nodes[i].parent.expect("non-root");
        let client = self.nodes[i].client;
        let children = &mut self.nodes[p].children;
        // From the end: a node just added is the last child.
        children.remove_node(i);
        children.push(i, client);
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
