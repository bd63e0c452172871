//! Scalar quantities by name, without reservations, volumes or flags.

use std::fmt;

use abi_stable::StableAbi;
use abi_stable::std_types::RVec;

use super::parse::{ParseError, split_entries};
use super::{Name, Scalar};

/// One named amount.
#[repr(C)]
#[derive(StableAbi, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Quantity {
    /// The resource name, interned.
    pub name: Name,
    /// The amount (zero is allowed: in quota limits it means "none of this resource").
    pub value: Scalar,
}

/// Amounts by resource name, sorted by name, one entry per name.
///
/// Used for sorter pools, quota guarantees and limits, min-allocatable sets and allocation
/// queries. The text form is the resource syntax without roles, volumes or flags
/// (`cpus:1;mem:1024`). Unlike [`Resources`](super::Resources), a zero amount is kept: for quota
/// limits `cpus:0` means "no cpus", while an absent name means "no limit".
#[repr(C)]
#[derive(StableAbi, Clone, PartialEq, Eq, Hash, Default)]
pub struct Quantities {
    items: RVec<Quantity>,
}

impl Quantities {
    /// No quantities.
    pub const fn new() -> Quantities {
        Quantities { items: RVec::new() }
    }

    /// The entries, sorted by name.
    pub fn iter(&self) -> std::slice::Iter<'_, Quantity> {
        self.items.iter()
    }

    /// `true` when there is no entry at all.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// `true` when every entry is zero (or there is none).
    pub fn is_zero(&self) -> bool {
        self.items.iter().all(|q| q.value.is_zero())
    }

    /// Removes every entry, keeping the allocation.
    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// The amount for `name`, or zero when absent.
    pub fn get(&self, name: &str) -> Scalar {
        self.find(name).map_or(Scalar::ZERO, |i| self.items[i].value)
    }

    /// `true` when `name` has an entry (even a zero one).
    pub fn has(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// Mutable access to the amount for `name`, if present.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Scalar> {
        self.find(name).map(|i| &mut self.items[i].value)
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.items.binary_search_by(|q| q.name.as_str().cmp(name)).ok()
    }

    /// Sets `name` to `value` (keeping a zero entry).
    pub fn set(&mut self, name: impl AsRef<str> + Into<Name>, value: Scalar) {
        match self.items.binary_search_by(|q| q.name.as_str().cmp(name.as_ref())) {
            Ok(i) => self.items[i].value = value,
            Err(i) => self.items.insert(i, Quantity { name: name.into(), value }),
        }
    }

    /// Adds `value` to `name` (creating the entry).
    pub fn add_amount(&mut self, name: impl AsRef<str> + Into<Name>, value: Scalar) {
        match self.items.binary_search_by(|q| q.name.as_str().cmp(name.as_ref())) {
            Ok(i) => self.items[i].value = self.items[i].value.saturating_add(value),
            Err(i) => self.items.insert(i, Quantity { name: name.into(), value }),
        }
    }

    /// Adds every entry of `other`.
    pub fn add(&mut self, other: &Quantities) {
        for q in other.iter() {
            self.add_amount(q.name, q.value);
        }
    }

    /// Subtracts `other`, saturating at zero; entries that reach zero are **removed**. Right for
    /// amounts (an allocation, a pool); wrong for quota limits, where a zero means "none of
    /// this" and an absent name means "no limit": use
    /// [`remaining_after`](Self::remaining_after) there.
    pub fn subtract(&mut self, other: &Quantities) {
        for q in other.iter() {
            if let Some(i) = self.find(&q.name) {
                let v = self.items[i].value.saturating_sub(q.value);
                if v.is_zero() {
                    self.items.remove(i);
                } else {
                    self.items[i].value = v;
                }
            }
        }
    }

    /// For every name here, what is left after `used` (saturating at zero); **zero entries are
    /// kept**, and names only in `used` do not appear. This is limit headroom: for quota limits
    /// `cpus:4` and consumption `cpus:6;mem:10`, `remaining_after` gives `cpus:0` (no more cpus;
    /// mem still unlimited), where [`subtract`](Self::subtract) would give the empty value (no
    /// limit at all). [`Quota::limit_headroom`](crate::Quota::limit_headroom) applies it to a
    /// quota.
    ///
    /// Laws (property-tested): the result has exactly the names of `self`; each amount is
    /// `max(self[n] - used[n], 0)`; dropping the zero entries gives `self - used`.
    ///
    /// ```
    /// use allocator_api::Quantities;
    /// let limits: Quantities = "cpus:4;gpus:0".parse().unwrap();
    /// let consumed: Quantities = "cpus:6;mem:10".parse().unwrap();
    /// assert_eq!(limits.remaining_after(&consumed).to_string(), "cpus:0;gpus:0");
    /// ```
    pub fn remaining_after(&self, used: &Quantities) -> Quantities {
        Quantities {
            items: self
                .items
                .iter()
                .map(|q| Quantity {
                    name: q.name,
                    value: q.value.saturating_sub(used.get(&q.name)),
                })
                .collect(),
        }
    }

    /// `true` when every entry of `other` is at most the amount here (absent counts as zero).
    pub fn contains(&self, other: &Quantities) -> bool {
        other.iter().all(|q| self.get(&q.name) >= q.value)
    }

    /// Parses the quantity text form (`cpus:1;mem:32`). Roles, volumes, flags, ranges and sets
    /// are rejected; zeros are kept; repeated names add up.
    pub fn parse(text: &str) -> Result<Quantities, ParseError> {
        let mut out = Quantities::new();
        for (start, entry) in split_entries(text) {
            let err = |offset: usize, msg: &str| ParseError::new(text, start + offset, msg);
            let Some(colon) = entry.find(':') else {
                return Err(err(entry.len(), "expected ':' and an amount"));
            };
            let name = entry[..colon].trim();
            if name.is_empty() {
                return Err(err(0, "expected a resource name"));
            }
            if let Some(p) = name.find(|c: char| "()[]{}".contains(c) || c.is_whitespace()) {
                return Err(err(p, "quantities take no roles, volumes or flags"));
            }
            let raw = &entry[colon + 1..];
            let value_text = raw.trim();
            let value_at = colon + 1 + (raw.len() - raw.trim_start().len());
            let value = Scalar::parse_decimal(value_text).map_err(|m| err(value_at, m))?;
            out.add_amount(name, value);
        }
        Ok(out)
    }
}

impl fmt::Display for Quantities {
    /// `cpus:1;mem:1024`, sorted by name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, q) in self.items.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            write!(f, "{}:{}", q.name, q.value)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Quantities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Quantities({self})")
    }
}

impl std::str::FromStr for Quantities {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Quantities, ParseError> {
        Quantities::parse(s)
    }
}

impl<'a> IntoIterator for &'a Quantities {
    type Item = &'a Quantity;
    type IntoIter = std::slice::Iter<'a, Quantity>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}
