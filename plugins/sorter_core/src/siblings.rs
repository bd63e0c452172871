//! The ordered children of a node, kept in blocks so that moving one child costs O(log n)
//! comparisons and a copy of at most two blocks, not a shift of every sibling in between.

use allocator_api::ClientId;

use crate::NodeIndex;

/// A block splits in two when it grows past this many entries.
const MAX_BLOCK: usize = 128;
/// A block that shrinks below this many entries joins a neighbour (when the two fit in one).
const MIN_BLOCK: usize = MAX_BLOCK / 4;

/// One child: its node and, for a client's leaf, the client (kept here so that writing an order
/// reads the siblings only, not every node).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) node: NodeIndex,
    pub(crate) client: Option<ClientId>,
}

/// A place among the siblings: a block and an offset in it (`(0, 0)` when there is none).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pos {
    block: usize,
    offset: usize,
}

/// The children of one node, in order, as a list of non-empty blocks of at most
/// `MAX_BLOCK` entries.
#[derive(Clone, Debug, Default)]
pub(crate) struct Siblings {
    blocks: Vec<Vec<Entry>>,
}

impl Siblings {
    /// The number of children.
    pub(crate) fn len(&self) -> usize {
        self.blocks.iter().map(Vec::len).sum()
    }

    /// `true` when there is no child.
    pub(crate) fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The children in order.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &Entry> + Clone + '_ {
        self.blocks.iter().flatten()
    }

    /// The children's nodes in order.
    pub(crate) fn nodes(&self) -> impl DoubleEndedIterator<Item = NodeIndex> + Clone + '_ {
        self.iter().map(|e| e.node)
    }

    /// The place of the first child.
    pub(crate) const START: Pos = Pos { block: 0, offset: 0 };

    /// The first child.
    pub(crate) fn first(&self) -> Option<NodeIndex> {
        self.blocks.first().map(|b| b[0].node)
    }

    /// Removes every child.
    pub(crate) fn clear(&mut self) {
        self.blocks.clear();
    }

    /// Appends a child.
    pub(crate) fn push(&mut self, node: NodeIndex, client: Option<ClientId>) {
        let entry = Entry { node, client };
        match self.blocks.last_mut() {
            Some(b) => b.push(entry),
            None => self.blocks.push(vec![entry]),
        }
        let last = self.blocks.len() - 1;
        self.split_if_full(last);
    }

    /// Removes `node` (searched from the end); `false` when it is not a child.
    pub(crate) fn remove_node(&mut self, node: NodeIndex) -> bool {
        for b in (0..self.blocks.len()).rev() {
            if let Some(offset) = self.blocks[b].iter().rposition(|e| e.node == node) {
                self.remove_at(Pos { block: b, offset });
                return true;
            }
        }
        false
    }

    /// Sets the client recorded beside `node` (a leaf that gained or lost its client).
    pub(crate) fn set_client(&mut self, node: NodeIndex, client: Option<ClientId>) {
        if let Some(e) = self.blocks.iter_mut().flatten().find(|e| e.node == node) {
            e.client = client;
        }
    }

    /// Every child in order, leaving none.
    pub(crate) fn take_all(&mut self) -> Vec<Entry> {
        let mut out = Vec::with_capacity(self.len());
        for b in self.blocks.drain(..) {
            out.extend(b);
        }
        out
    }

    /// Replaces the children with `entries`, in that order.
    pub(crate) fn set_all(&mut self, entries: Vec<Entry>) {
        self.blocks.clear();
        if entries.len() <= MAX_BLOCK {
            if !entries.is_empty() {
                self.blocks.push(entries);
            }
            return;
        }
        let half = MAX_BLOCK / 2;
        for chunk in entries.chunks(half) {
            self.blocks.push(chunk.to_vec());
        }
    }

    /// The place of the first child for which `pred` is false, `pred` being true for a prefix
    /// of the children and false after it (the end when it holds for all). O(log n) calls.
    pub(crate) fn partition_point(&self, mut pred: impl FnMut(&Entry) -> bool) -> Pos {
        let b = self.blocks.partition_point(|blk| pred(blk.last().expect("non-empty block")));
        if b == self.blocks.len() {
            return self.end();
        }
        Pos { block: b, offset: self.blocks[b].partition_point(pred) }
    }

    /// The place after the last child.
    fn end(&self) -> Pos {
        match self.blocks.last() {
            Some(b) => Pos { block: self.blocks.len() - 1, offset: b.len() },
            None => Pos { block: 0, offset: 0 },
        }
    }

    /// The place of `node` among the children for which `pred` holds (a prefix), by a scan.
    pub(crate) fn position_in_prefix(
        &self,
        node: NodeIndex,
        mut pred: impl FnMut(&Entry) -> bool,
    ) -> Option<Pos> {
        for (block, b) in self.blocks.iter().enumerate() {
            for (offset, e) in b.iter().enumerate() {
                if !pred(e) {
                    return None;
                }
                if e.node == node {
                    return Some(Pos { block, offset });
                }
            }
        }
        None
    }

    /// The index of `pos` in the whole sequence. O(number of blocks).
    pub(crate) fn index_of(&self, pos: Pos) -> usize {
        self.blocks[..pos.block].iter().map(Vec::len).sum::<usize>() + pos.offset
    }

    /// The children just before and just after `pos`.
    pub(crate) fn neighbours(&self, pos: Pos) -> (Option<&Entry>, Option<&Entry>) {
        let before = if pos.offset > 0 {
            self.blocks[pos.block].get(pos.offset - 1)
        } else {
            pos.block.checked_sub(1).and_then(|b| self.blocks[b].last())
        };
        let after = match self.blocks.get(pos.block) {
            Some(b) if pos.offset + 1 < b.len() => b.get(pos.offset + 1),
            _ => self.blocks.get(pos.block + 1).and_then(|b| b.first()),
        };
        (before, after)
    }

    /// The child at `pos`, if any.
    pub(crate) fn get(&self, pos: Pos) -> Option<&Entry> {
        self.blocks.get(pos.block).and_then(|b| b.get(pos.offset))
    }

    /// Removes and returns the child at `pos` (which must be one).
    pub(crate) fn remove_at(&mut self, pos: Pos) -> Entry {
        let entry = self.blocks[pos.block].remove(pos.offset);
        let len = self.blocks[pos.block].len();
        if len == 0 {
            self.blocks.remove(pos.block);
        } else if len < MIN_BLOCK {
            // Join the smaller neighbour when both fit in one block.
            let next = pos.block + 1;
            if next < self.blocks.len() && len + self.blocks[next].len() <= MAX_BLOCK {
                let moved = self.blocks.remove(next);
                self.blocks[pos.block].extend(moved);
            } else if pos.block > 0 && len + self.blocks[pos.block - 1].len() <= MAX_BLOCK {
                let moved = self.blocks.remove(pos.block);
                self.blocks[pos.block - 1].extend(moved);
            }
        }
        entry
    }

    /// Inserts `entry` at `pos` (a place from [`partition_point`](Self::partition_point) taken
    /// with no change in between).
    pub(crate) fn insert_at(&mut self, pos: Pos, entry: Entry) {
        if self.blocks.is_empty() {
            self.blocks.push(vec![entry]);
            return;
        }
        self.blocks[pos.block].insert(pos.offset, entry);
        self.split_if_full(pos.block);
    }

    fn split_if_full(&mut self, block: usize) {
        if self.blocks[block].len() > MAX_BLOCK {
            let half = self.blocks[block].len() / 2;
            let tail = self.blocks[block].split_off(half);
            self.blocks.insert(block + 1, tail);
        }
    }

    /// The children before `pos`, block by block (for writing a prefix of the order).
    pub(crate) fn slices_before(&self, pos: Pos) -> impl Iterator<Item = &[Entry]> + '_ {
        self.blocks.iter().enumerate().map_while(move |(i, b)| match i.cmp(&pos.block) {
            std::cmp::Ordering::Less => Some(b.as_slice()),
            std::cmp::Ordering::Equal => Some(&b[..pos.offset]),
            std::cmp::Ordering::Greater => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(s: &Siblings) -> Vec<NodeIndex> {
        s.nodes().collect()
    }

    #[test]
    fn moving_entries_across_blocks_keeps_the_sequence_a_vector_would_have() {
        let mut s = Siblings::default();
        let mut v: Vec<NodeIndex> = Vec::new();
        for i in 0..1000 {
            s.push(i, None);
            v.push(i);
        }
        // Move entries from the front to a place found by value, as a reposition does.
        let mut x = 7usize;
        for _ in 0..1000 {
            x = (x * 31 + 17) % 1000;
            let node = v[x % v.len()];
            let from = v.iter().position(|&n| n == node).unwrap();
            v.remove(from);
            let to = (x * 13) % (v.len() + 1);
            v.insert(to, node);
            let pos = s.position_in_prefix(node, |_| true).unwrap();
            assert_eq!(s.remove_at(pos).node, node);
            // The place of index `to`: the first entry whose index in `v` (without `node`) is
            // `to` or more.
            let rank: std::collections::HashMap<NodeIndex, usize> =
                v.iter().filter(|&&n| n != node).enumerate().map(|(i, &n)| (n, i)).collect();
            let at = s.partition_point(|e| rank[&e.node] < to);
            s.insert_at(at, Entry { node, client: None });
            assert_eq!(nodes(&s), v);
        }
        assert!(s.blocks.iter().all(|b| !b.is_empty() && b.len() <= MAX_BLOCK));
        assert!(s.remove_node(v[500]));
        v.remove(500);
        assert_eq!(nodes(&s), v);
    }

    #[test]
    fn a_prefix_ends_at_the_partition_point() {
        let mut s = Siblings::default();
        for i in 0..300 {
            s.push(i, Some(ClientId(i as u32)));
        }
        let pos = s.partition_point(|e| e.node < 200);
        let prefix: Vec<NodeIndex> = s.slices_before(pos).flatten().map(|e| e.node).collect();
        assert_eq!(prefix, (0..200).collect::<Vec<_>>());
        let all = s.partition_point(|_| true);
        assert_eq!(s.slices_before(all).map(<[Entry]>::len).sum::<usize>(), 300);
    }
}
