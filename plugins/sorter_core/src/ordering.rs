//! Ordering: how siblings compare ([`Order`]); keeping them sorted incrementally (a full re-sort
//! when the tree is dirty, otherwise repositioning the nodes on one client's path after an
//! allocation); writing the active clients in order (a flat tree keeps its full order as a
//! compact array); and [`TreeSorter`], the [`Sorter`] whose order comes from a [`Policy`].

use std::cmp::Ordering;

use allocator_api::{
    AgentAllocation, AgentId, ClientId, Quantities, RVec, Resources, Result, Sorter, SorterConfig,
};

use crate::NodeIndex;
use crate::siblings::{Entry, Siblings};
use crate::tree::{Node, NodeKind, ROOT, Tree};

/// How siblings are ordered: `true` when `a` comes before `b`.
pub trait Order: Send + 'static {
    /// Compares two active siblings.
    fn compare(a: &Node, b: &Node) -> Ordering;
}

impl Tree {
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

/// What distinguishes one tree sorter from another: how it answers `sort`.
pub trait Policy: Send + 'static {
    /// Called once, on the new and empty tree, when the sorter is created (a policy that
    /// shares on usage says so here: [`Tree::share_on_usage`]). The default does nothing.
    fn configure(&self, tree: &mut Tree) {
        let _ = tree;
    }

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

    /// The host's clock ([`Sorter::set_time`]); returns whether the order may have changed, in
    /// which case the next sort recomputes every share and re-sorts (`dirty`). The default
    /// ignores time.
    fn set_time(&mut self, tree: &mut Tree, now: f64) -> bool {
        let _ = (tree, now);
        false
    }
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
        let mut tree = Tree::new(config);
        policy.configure(&mut tree);
        TreeSorter { tree, dirty: true, policy }
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

    /// Passes the time to the policy ([`Policy::set_time`]); re-sorts in full at the next sort
    /// when the policy says the order may have changed.
    fn set_time(&mut self, now: f64) -> Result<()> {
        if self.policy.set_time(&mut self.tree, now) {
            self.dirty = true;
        }
        Ok(())
    }

    fn contains(&self, client: ClientId) -> bool {
        self.tree.contains(client)
    }

    fn count(&self) -> usize {
        self.tree.client_count()
    }

    /// The unweighted dominant share of the client (Mesos's `shares/dominant` metric); on
    /// usage when the tree shares on usage ([`Tree::share_on_usage`]).
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
