//! Inclusive integer ranges and set operations on sorted, disjoint range lists.

use abi_stable::StableAbi;
use abi_stable::std_types::RVec;

/// An inclusive range `begin-end` (`31000-32000` holds 1001 values).
#[repr(C)]
#[derive(StableAbi, Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Range {
    /// First value, inclusive.
    pub begin: u64,
    /// Last value, inclusive; never below `begin`.
    pub end: u64,
}

/// `true` when both lists hold the same ranges: the same answer as comparing them range by
/// range, in one comparison of their memory.
#[inline]
pub(crate) fn same(a: &[Range], b: &[Range]) -> bool {
    a.len() == b.len() && words(a) == words(b)
}

/// The ranges as `u64` words, `begin` then `end` of each.
fn words(ranges: &[Range]) -> &[u64] {
    // SAFETY: `Range` is `#[repr(C)]` with exactly two `u64` fields, so `n` ranges are `2 n`
    // initialized, `u64`-aligned words with no padding, borrowed for the same lifetime.
    unsafe { std::slice::from_raw_parts(ranges.as_ptr().cast::<u64>(), ranges.len() * 2) }
}

/// Sorts and merges overlapping or adjacent ranges into canonical form.
pub(crate) fn normalize(mut v: Vec<Range>) -> RVec<Range> {
    v.sort();
    let mut out: Vec<Range> = Vec::with_capacity(v.len());
    for r in v {
        match out.last_mut() {
            Some(last) if r.begin <= last.end.saturating_add(1) => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out.into()
}

/// Replaces `a` by its union with `b` (both canonical), reusing `a`'s buffer when the result
/// fits in it (the common case: merged ranges coalesce).
pub(crate) fn union_in_place(a: &mut RVec<Range>, b: &[Range]) {
    if b.is_empty() {
        return;
    }
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<Range>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SCRATCH.with(|scratch| {
        let mut out = scratch.borrow_mut();
        out.clear();
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            let next = if j == b.len() || (i < a.len() && a[i] <= b[j]) {
                i += 1;
                a[i - 1]
            } else {
                j += 1;
                b[j - 1]
            };
            match out.last_mut() {
                Some(last) if next.begin <= last.end.saturating_add(1) => {
                    last.end = last.end.max(next.end)
                }
                _ => out.push(next),
            }
        }
        a.clear();
        a.extend_from_copy_slice(&out);
    });
}

/// `a` without the values in `b` (both canonical): one linear merge.
pub(crate) fn difference(a: &[Range], b: &[Range]) -> RVec<Range> {
    let mut out = RVec::with_capacity(a.len());
    let mut j = 0;
    for r in a {
        let mut begin = r.begin;
        // Skip cuts entirely before this range.
        while j < b.len() && b[j].end < begin {
            j += 1;
        }
        let mut k = j;
        let mut alive = true;
        while k < b.len() && b[k].begin <= r.end {
            let cut = b[k];
            if cut.begin > begin {
                out.push(Range { begin, end: cut.begin - 1 });
            }
            if cut.end >= r.end {
                alive = false;
                break;
            }
            begin = cut.end + 1;
            k += 1;
        }
        if alive {
            out.push(Range { begin, end: r.end });
        }
    }
    out
}

/// The values in both `a` and `b` (both canonical).
pub(crate) fn intersection(a: &[Range], b: &[Range]) -> RVec<Range> {
    difference(a, &difference(a, b))
}

/// `true` when every value of `b` is in `a` (both canonical, so each range of `b` must lie
/// inside one range of `a`): one linear merge, since the ranges of `b` that lie inside `a`
/// find their covering ranges in increasing order.
pub(crate) fn contains(a: &[Range], b: &[Range]) -> bool {
    // Equal lists (a refuse filter checked against the very offer it refused) need one
    // comparison of memory, not the walk.
    if a.len() == b.len() && a == b {
        return true;
    }
    let mut i = 0;
    for r in b {
        // Ranges of `a` wholly before `r` cannot cover it nor anything after it.
        while i < a.len() && a[i].end < r.begin {
            i += 1;
        }
        match a.get(i) {
            Some(x) if x.begin <= r.begin && r.end <= x.end => {}
            _ => return false,
        }
    }
    true
}

/// The number of values in a canonical range list (saturating).
pub(crate) fn count(a: &[Range]) -> u64 {
    a.iter().fold(0u64, |n, r| n.saturating_add(r.end - r.begin).saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(v: &[(u64, u64)]) -> Vec<Range> {
        v.iter().map(|&(begin, end)| Range { begin, end }).collect()
    }

    #[test]
    fn containment_walks_both_lists_once_and_finds_each_covering_range() {
        let a = ranges(&[(1, 5), (10, 20), (30, 30)]);
        assert!(contains(&a, &ranges(&[(2, 3), (4, 5), (10, 10), (15, 20), (30, 30)])));
        assert!(contains(&a, &[]));
        assert!(!contains(&a, &ranges(&[(2, 3), (5, 10)])), "spans a gap");
        assert!(!contains(&a, &ranges(&[(21, 29)])), "falls in a gap");
        assert!(!contains(&a, &ranges(&[(30, 31)])), "runs past the last range");
        assert!(!contains(&[], &ranges(&[(1, 1)])));
    }

    #[test]
    fn equal_lists_contain_each_other_and_equal_lengths_alone_decide_nothing() {
        let a = ranges(&[(1, 5), (10, 20)]);
        assert!(contains(&a, &a.clone()));
        assert!(contains(&a, &ranges(&[(1, 2), (4, 5)])), "two ranges inside the first");
        assert!(!contains(&a, &ranges(&[(1, 5), (10, 21)])));
    }
}
