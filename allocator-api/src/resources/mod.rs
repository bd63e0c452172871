//! Resources, quantities and their arithmetic, shared by the host and every module.
//!
//! The text format is SPEC section 3 (Mesos's syntax with extensions):
//!
//! ```text
//! resources := '' | resource (';' resource)*
//! resource  := name ['(' role ')'] ['[' volume_id ']'] ['{' flag (',' flag)* '}'] ':' value
//! flag      := 'revocable' | 'shared' | 'dynamic'
//! value     := scalar | '[' begin '-' end (',' begin '-' end)* ']' | '{' item (',' item)* '}'
//! ```
//!
//! ```
//! use allocator_api::resources::Resources;
//! let total: Resources = "cpus:2;mem:1024;ports:[31000-32000]".parse().unwrap();
//! let used: Resources = "cpus:0.5;mem:256".parse().unwrap();
//! let free = total.clone() - &used;
//! assert_eq!(free.to_string(), "cpus:1.5;mem:768;ports:[31000-32000]");
//! assert!(total.contains(&used));
//! ```
//!
//! A [`Resources`] value is always canonical: entries are sorted, entries with the same name,
//! role, volume and flags are merged (scalars add, ranges and sets unite), and empty entries
//! (zero scalars, empty ranges or sets) are dropped. The one exception is shared resources:
//! every occurrence of a shared resource is one more copy of it and stays a separate entry.

mod devices;
mod name;
mod parse;
mod quantities;
mod ranges;
mod scalar;

use std::cmp::Ordering;
use std::fmt;

use abi_stable::StableAbi;
use abi_stable::std_types::{RString, RVec};

pub use devices::{
    DEVICE_MILLI, Demand, Device, GPUS, GpuAsk, MODEL_ATTRIBUTE, MODELS_REQUEST, device_entries,
    device_order, lowest_free, take_gpus, tightest_fit,
};
pub use name::{Name, Role};
pub use parse::ParseError;
pub use quantities::{Quantities, Quantity};
pub use ranges::Range;
pub use scalar::Scalar;

/// Flags of one resource entry, as a bit set (so that later versions can add flags without
/// changing the layout).
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct ResourceFlags(pub u8);

impl ResourceFlags {
    /// No flag set.
    pub const NONE: ResourceFlags = ResourceFlags(0);
    /// Oversubscribed, revocable resources (`{revocable}`).
    pub const REVOCABLE: ResourceFlags = ResourceFlags(1);
    /// A shared persistent volume (`{shared}`); it may be offered while in use.
    pub const SHARED: ResourceFlags = ResourceFlags(2);
    /// A dynamic reservation, as a `reserve` operation makes it (`{dynamic}`).
    pub const DYNAMIC: ResourceFlags = ResourceFlags(4);

    /// `true` when every flag of `other` is set in `self`.
    pub const fn has(self, other: ResourceFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// `self` with the flags of `other` added.
    pub const fn with(self, other: ResourceFlags) -> ResourceFlags {
        ResourceFlags(self.0 | other.0)
    }

    /// `self` with the flags of `other` removed.
    pub const fn without(self, other: ResourceFlags) -> ResourceFlags {
        ResourceFlags(self.0 & !other.0)
    }
}

/// The value of one resource entry.
///
/// Equality is by value, as derived; range lists are compared as memory (two `u64`s a range),
/// which answers the common question "is this the value I gave out?" (a declined offer, a
/// refuse filter checked against the offer it refused) in one `memcmp` instead of a range at a
/// time. It agrees with the derived `Hash` and `Ord`.
#[repr(u8)]
#[allow(clippy::derived_hash_with_manual_eq)] // the manual equality is the derived one, faster
#[derive(StableAbi, Clone, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Value {
    /// A decimal amount (`cpus:1.5`).
    Scalar(Scalar),
    /// Sorted, disjoint, non-adjacent inclusive ranges (`ports:[31000-32000]`).
    Ranges(RVec<Range>),
    /// A sorted set of distinct items (`zones:{a,b}`).
    Set(RVec<RString>),
}

impl PartialEq for Value {
    #[inline]
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Scalar(a), Value::Scalar(b)) => a == b,
            (Value::Ranges(a), Value::Ranges(b)) => ranges::same(a, b),
            (Value::Set(a), Value::Set(b)) => a == b,
            _ => false,
        }
    }
}

impl Value {
    fn kind(&self) -> u8 {
        match self {
            Value::Scalar(_) => 0,
            Value::Ranges(_) => 1,
            Value::Set(_) => 2,
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Value::Scalar(s) => s.millis() <= 0,
            Value::Ranges(r) => r.is_empty(),
            Value::Set(s) => s.is_empty(),
        }
    }

    /// The quantity of this value: the scalar itself, or the number of range or set elements.
    pub fn quantity(&self) -> Scalar {
        match self {
            Value::Scalar(s) => *s,
            Value::Ranges(r) => Scalar::from_units(ranges::count(r) as i64),
            Value::Set(s) => Scalar::from_units(s.len() as i64),
        }
    }
}

/// One resource entry: a name, an optional reservation and volume, flags and a value.
#[repr(C)]
#[derive(StableAbi, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Resource {
    /// The resource name (`cpus`, `mem`, `ports`, …), interned.
    pub name: Name,
    /// The role the resource is reserved to; empty for unreserved (`*`) resources. Interned,
    /// like the name.
    pub reservation: Name,
    /// The persistent volume id; empty when the resource is not a volume. Interned, like the
    /// name (a process sees each volume id once per volume it ever creates).
    pub volume: Name,
    /// Revocable, shared and dynamic markers.
    pub flags: ResourceFlags,
    /// The amount.
    pub value: Value,
}

impl Resource {
    /// An unreserved scalar resource without flags.
    pub fn scalar(name: &str, value: Scalar) -> Resource {
        Resource {
            name: name.into(),
            reservation: Name::default(),
            volume: Name::default(),
            flags: ResourceFlags::NONE,
            value: Value::Scalar(value),
        }
    }

    /// `true` for unreserved resources.
    pub fn is_unreserved(&self) -> bool {
        self.reservation.is_empty()
    }

    /// `true` for revocable resources.
    pub fn is_revocable(&self) -> bool {
        self.flags.has(ResourceFlags::REVOCABLE)
    }

    /// `true` for shared resources.
    pub fn is_shared(&self) -> bool {
        self.flags.has(ResourceFlags::SHARED)
    }

    /// `true` for scalar resources.
    pub fn is_scalar(&self) -> bool {
        matches!(self.value, Value::Scalar(_))
    }

    /// `true` when the resource may be offered to `role`: it is unreserved, or reserved to
    /// `role` or to a strict ancestor of `role` (`a` is an ancestor of `a/b`).
    pub fn is_allocatable_to(&self, role: &str) -> bool {
        self.is_unreserved()
            || self.reservation == role
            || is_strict_ancestor(&self.reservation, role)
    }

    /// A refined reservation: a dynamic reservation to a nested role (`a/b`), which only
    /// RESERVATION_REFINEMENT frameworks may receive.
    pub fn is_refined_reservation(&self) -> bool {
        self.flags.has(ResourceFlags::DYNAMIC) && self.reservation.contains('/')
    }

    /// Compares everything but the value (the merge key), then the value kind.
    /// Names (resource name, reservation, volume) compare by identity first: see
    /// [`Name`]'s `Ord`.
    fn key_cmp(&self, other: &Resource) -> Ordering {
        self.name
            .cmp(&other.name)
            .then_with(|| self.value.kind().cmp(&other.value.kind()))
            .then_with(|| self.reservation.cmp(&other.reservation))
            .then_with(|| self.volume.cmp(&other.volume))
            .then_with(|| self.flags.cmp(&other.flags))
    }

    fn canonical_cmp(&self, other: &Resource) -> Ordering {
        self.key_cmp(other).then_with(|| self.value.cmp(&other.value))
    }

    /// Adds `other`'s value into `self` (same key, not shared).
    fn merge(&mut self, other: &Value) {
        match (&mut self.value, other) {
            (Value::Scalar(a), Value::Scalar(b)) => *a = a.saturating_add(*b),
            (Value::Ranges(a), Value::Ranges(b)) => ranges::union_in_place(a, b),
            (Value::Set(a), Value::Set(b)) => *a = set_union(a, b),
            _ => unreachable!("key_cmp includes the value kind"),
        }
    }

    /// Whether `self`'s value contains `other`'s (same key).
    fn value_contains(&self, other: &Value) -> bool {
        match (&self.value, other) {
            (Value::Scalar(a), Value::Scalar(b)) => a >= b,
            (Value::Ranges(a), Value::Ranges(b)) => ranges::contains(a, b),
            (Value::Set(a), Value::Set(b)) => set_contains(a, b),
            _ => false,
        }
    }

    /// The part of `self`'s value also in `other`'s (same key, not shared): the smaller scalar,
    /// the common ranges or set items.
    fn common_value(&self, other: &Value) -> Option<Value> {
        match (&self.value, other) {
            (Value::Scalar(a), Value::Scalar(b)) => Some(Value::Scalar(*a.min(b))),
            (Value::Ranges(a), Value::Ranges(b)) => Some(Value::Ranges(ranges::intersection(a, b))),
            (Value::Set(a), Value::Set(b)) => {
                Some(Value::Set(a.iter().filter(|x| b.binary_search(x).is_ok()).cloned().collect()))
            }
            _ => None,
        }
    }

    /// Removes `other`'s value from `self` (same key, not shared), saturating at empty.
    fn remove_value(&mut self, other: &Value) {
        match (&mut self.value, other) {
            (Value::Scalar(a), Value::Scalar(b)) => *a = a.saturating_sub(*b),
            (Value::Ranges(a), Value::Ranges(b)) => *a = ranges::difference(a, b),
            (Value::Set(a), Value::Set(b)) => a.retain(|x| b.binary_search(x).is_err()),
            _ => {}
        }
    }
}

/// `true` when every item of `b` is in `a` (both sorted and distinct): one linear merge.
fn set_contains(a: &[RString], b: &[RString]) -> bool {
    if b.len() > a.len() {
        return false;
    }
    let mut i = 0;
    for x in b {
        while i < a.len() && a[i] < *x {
            i += 1;
        }
        if a.get(i) != Some(x) {
            return false;
        }
        i += 1;
    }
    true
}

/// `true` when `ancestor` is a strict ancestor of `role` in the role tree.
pub fn is_strict_ancestor(ancestor: &str, role: &str) -> bool {
    !ancestor.is_empty()
        && role.len() > ancestor.len()
        && role.starts_with(ancestor)
        && role.as_bytes()[ancestor.len()] == b'/'
}

fn set_union(a: &RVec<RString>, b: &RVec<RString>) -> RVec<RString> {
    let mut out: Vec<RString> = a.iter().chain(b.iter()).cloned().collect();
    out.sort();
    out.dedup();
    out.into()
}

/// Why a [`Resources`] value built outside the constructors (by hand, across the module
/// boundary) cannot be taken as resources. Its `Display` is one line naming the entry and the
/// rule it breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MalformedResources {
    /// The offending entry, as text.
    pub entry: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for MalformedResources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed resource entry '{}': {}", self.entry, self.reason)
    }
}

impl std::error::Error for MalformedResources {}

/// Checks one entry's own rules (not its place among the others).
fn check_entry(r: &Resource) -> Result<(), MalformedResources> {
    let fail = |reason: String| Err(MalformedResources { entry: r.to_string(), reason });
    if let Err((_, why)) = parse::check_text_word(&r.name) {
        return fail(format!("the resource name {why}"));
    }
    if !r.reservation.is_empty()
        && let Err(e) = crate::roles::validate(&r.reservation)
    {
        return fail(e.to_string());
    }
    if !r.volume.is_empty()
        && let Err((_, why)) = parse::check_text_word(&r.volume)
    {
        return fail(format!("the volume id {why}"));
    }
    let known = ResourceFlags::REVOCABLE.with(ResourceFlags::SHARED).with(ResourceFlags::DYNAMIC);
    if r.flags.without(known) != ResourceFlags::NONE {
        return fail(format!("unknown flag bits {:#x}", r.flags.0));
    }
    if r.flags.has(ResourceFlags::DYNAMIC) && r.reservation.is_empty() {
        return fail("a dynamic reservation needs a role".into());
    }
    if r.is_shared() && r.volume.is_empty() {
        return fail("only persistent volumes can be shared".into());
    }
    if let Some(why) = devices::device_entry_error(r) {
        return fail(why.into());
    }
    match &r.value {
        Value::Scalar(s) if s.millis() < 0 => fail("a negative amount".into()),
        Value::Ranges(list) if list.iter().any(|x| x.begin > x.end) => {
            fail("a range begins after it ends".into())
        }
        Value::Set(items) => match items.iter().find_map(|i| parse::check_text_word(i).err()) {
            Some((_, why)) => fail(format!("a set item {why}")),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Whether one entry's value is in canonical form (non-empty, sorted, disjoint).
fn value_is_canonical(v: &Value) -> bool {
    match v {
        Value::Scalar(s) => s.millis() > 0,
        Value::Ranges(list) => {
            !list.is_empty() && list.windows(2).all(|w| w[1].begin > w[0].end.saturating_add(1))
        }
        Value::Set(items) => !items.is_empty() && items.windows(2).all(|w| w[0] < w[1]),
    }
}

/// A canonical multiset of resource entries. See the [module documentation](self).
///
/// Arithmetic: `+` merges, `-` subtracts entry by entry and never goes below empty (what is not
/// there is ignored), [`contains`](Resources::contains) is consistent with subtraction:
/// `a.contains(b)` implies `(a - b) + b == a`.
#[repr(C)]
#[derive(StableAbi, Clone, PartialEq, Eq, Hash, Default)]
pub struct Resources {
    items: RVec<Resource>,
}

impl Resources {
    /// The empty set of resources.
    pub const fn new() -> Resources {
        Resources { items: RVec::new() }
    }

    /// Builds a canonical value from arbitrary entries (merging and dropping empty ones).
    pub fn from_entries<I: IntoIterator<Item = Resource>>(entries: I) -> Resources {
        let mut out = Resources::new();
        for r in entries {
            out.add_resource(r);
        }
        out
    }

    /// Checks a value that may not have been built by the constructors: a module can hand the
    /// host any entry list. Returns the value itself when it is canonical; a canonical copy when
    /// entries are unsorted, duplicated, zero or empty, or have overlapping ranges or unsorted
    /// sets; and an error when an entry is negative, has a range that begins after it ends, a
    /// name, role, volume or set item that the text format refuses, unknown flags, or a name
    /// used with two value types. (Scalars are fixed point: NaN and infinities cannot occur.)
    ///
    /// ```
    /// use allocator_api::resources::Resources;
    /// let r: Resources = "cpus:1;mem:2".parse().unwrap();
    /// assert!(matches!(r.checked(), Ok(std::borrow::Cow::Borrowed(_))));
    /// ```
    pub fn checked(&self) -> Result<std::borrow::Cow<'_, Resources>, MalformedResources> {
        let mut canonical = true;
        let mut prev: Option<&Resource> = None;
        for r in self.items.iter() {
            check_entry(r)?;
            if let Some(p) = prev {
                if p.name == r.name && p.value.kind() != r.value.kind() {
                    return Err(MalformedResources {
                        entry: r.to_string(),
                        reason: format!("'{}' is used with two value types", r.name),
                    });
                }
                let order = if r.is_shared() { p.canonical_cmp(r) } else { p.key_cmp(r) };
                let in_order = match order {
                    Ordering::Less => true,
                    Ordering::Equal => r.is_shared(),
                    Ordering::Greater => false,
                };
                canonical &= in_order;
            }
            canonical &= value_is_canonical(&r.value);
            prev = Some(r);
        }
        if canonical {
            return Ok(std::borrow::Cow::Borrowed(self));
        }
        // Entries out of order may still use one name with two value types.
        let mut kinds: Vec<(&Name, u8)> = Vec::new();
        for r in self.items.iter() {
            match kinds.iter().find(|(n, _)| **n == r.name) {
                Some((_, k)) if *k != r.value.kind() => {
                    return Err(MalformedResources {
                        entry: r.to_string(),
                        reason: format!("'{}' is used with two value types", r.name),
                    });
                }
                Some(_) => {}
                None => kinds.push((&r.name, r.value.kind())),
            }
        }
        let fixed = self.items.iter().map(|r| {
            let mut r = r.clone();
            match &mut r.value {
                Value::Ranges(list) => *list = ranges::normalize(list.to_vec()),
                Value::Set(items) => {
                    let mut v = items.to_vec();
                    v.sort();
                    v.dedup();
                    *items = v.into();
                }
                Value::Scalar(_) => {}
            }
            r
        });
        Ok(std::borrow::Cow::Owned(Resources::from_entries(fixed)))
    }

    /// The canonical entries, sorted.
    pub fn entries(&self) -> &[Resource] {
        &self.items
    }

    /// Iterates over the canonical entries.
    pub fn iter(&self) -> std::slice::Iter<'_, Resource> {
        self.items.iter()
    }

    /// `true` when there are no resources.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Removes every entry, keeping the allocation (for reuse as a caller buffer).
    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// Adds one entry (merging with an equal-key entry unless it is shared).
    pub fn add_resource(&mut self, r: Resource) {
        if r.value.is_empty() {
            return;
        }
        if r.is_shared() {
            let pos = self.items.partition_point(|e| e.canonical_cmp(&r) != Ordering::Greater);
            self.items.insert(pos, r);
            return;
        }
        match self.items.binary_search_by(|e| e.key_cmp(&r)) {
            Ok(i) => self.items[i].merge(&r.value),
            Err(i) => self.items.insert(i, r),
        }
    }

    /// Adds every entry of `other`.
    pub fn add(&mut self, other: &Resources) {
        if self.is_empty() {
            self.items = other.items.clone();
            return;
        }
        for r in other.iter() {
            if r.value.is_empty() {
                continue;
            }
            if !r.is_shared()
                && let Ok(i) = self.items.binary_search_by(|e| e.key_cmp(r))
            {
                // Merging needs only the value: no clone of the entry.
                self.items[i].merge(&r.value);
                continue;
            }
            self.add_resource(r.clone());
        }
    }

    /// Subtracts one entry: the matching entry loses that much (and disappears when empty);
    /// a shared entry loses one identical copy. Amounts that are not there are ignored.
    pub fn subtract_resource(&mut self, r: &Resource) {
        if r.is_shared() {
            if let Ok(i) = self.items.binary_search_by(|e| e.canonical_cmp(r)) {
                self.items.remove(i);
            }
            return;
        }
        if let Ok(i) = self.items.binary_search_by(|e| e.key_cmp(r)) {
            self.items[i].remove_value(&r.value);
            if self.items[i].value.is_empty() {
                self.items.remove(i);
            }
        }
    }

    /// Subtracts every entry of `other` (saturating; see [`subtract_resource`](Self::subtract_resource)).
    pub fn subtract(&mut self, other: &Resources) {
        if self.items == other.items {
            // Everything goes (an agent offered whole): no per-entry work.
            self.items.clear();
            return;
        }
        for r in other.iter() {
            self.subtract_resource(r);
        }
    }

    /// `true` when `other` is a sub-multiset of `self`: every entry of `other` is covered by the
    /// entry with the same name, reservation, volume and flags (shared entries by copies).
    ///
    /// Both sides are sorted by that key, so this is one linear merge of the two entry lists.
    pub fn contains(&self, other: &Resources) -> bool {
        // Equal values (a refuse filter checked against the offer it refused, resources
        // recovered whole) need one entry-by-entry equality, no key ordering.
        if self.items.len() == other.items.len() && self.items == other.items {
            return true;
        }
        let mut i = 0;
        // The first entry of `self` whose key is not below the current entry of `other`.
        let mut j = 0;
        while i < other.items.len() {
            let r = &other.items[i];
            if r.is_shared() {
                let copies = other.items[i..].iter().take_while(|x| *x == r).count();
                let have = self.items.iter().filter(|x| *x == r).count();
                if have < copies {
                    return false;
                }
                i += copies;
                continue;
            }
            while j < self.items.len() && self.items[j].key_cmp(r) == Ordering::Less {
                j += 1;
            }
            match self.items.get(j) {
                Some(e) if e.key_cmp(r) == Ordering::Equal && e.value_contains(&r.value) => {}
                _ => return false,
            }
            i += 1;
        }
        true
    }

    /// What `self` and `other` have in common: for each name, reservation, volume and flags, the
    /// smaller scalar, the common ranges and set items, and the smaller number of copies of a
    /// shared volume. This is the operation authors otherwise spell `a - &(a - b)`.
    ///
    /// Laws (property-tested): `a ∩ b == b ∩ a`; both `a` and `b` contain `a ∩ b`; when `a`
    /// contains `b`, `a ∩ b == b`; and `(a ∩ b) + (a - b) == a`.
    ///
    /// ```
    /// use allocator_api::Resources;
    /// let free: Resources = "cpus:4;mem:1024;ports:[1-10]".parse().unwrap();
    /// let refused: Resources = "cpus:2;mem:4096;ports:[5-20];gpus:1".parse().unwrap();
    /// assert_eq!(free.intersection(&refused).to_string(), "cpus:2;mem:1024;ports:[5-10]");
    /// ```
    pub fn intersection(&self, other: &Resources) -> Resources {
        let mut out = Resources::new();
        let mut i = 0;
        while i < self.items.len() {
            let r = &self.items[i];
            if r.is_shared() {
                let mine = self.items[i..].iter().take_while(|x| *x == r).count();
                let theirs = other.items.iter().filter(|x| *x == r).count();
                out.items.extend(std::iter::repeat_n(r.clone(), mine.min(theirs)));
                i += mine;
                continue;
            }
            if let Ok(j) = other.items.binary_search_by(|e| e.key_cmp(r))
                && let Some(value) = r.common_value(&other.items[j].value)
                && !value.is_empty()
            {
                out.items.push(Resource { value, ..r.clone() });
            }
            i += 1;
        }
        out
    }

    /// `true` when one entry (or one more copy of a shared entry) is covered by `self`.
    pub fn contains_resource(&self, r: &Resource) -> bool {
        if r.is_shared() {
            return self.items.binary_search_by(|e| e.canonical_cmp(r)).is_ok();
        }
        match self.items.binary_search_by(|e| e.key_cmp(r)) {
            Ok(j) => self.items[j].value_contains(&r.value),
            Err(_) => r.value.is_empty(),
        }
    }

    /// The entries for which `keep` is true.
    pub fn filter(&self, mut keep: impl FnMut(&Resource) -> bool) -> Resources {
        Resources { items: self.items.iter().filter(|r| keep(r)).cloned().collect() }
    }

    /// Unreserved entries.
    pub fn unreserved(&self) -> Resources {
        self.filter(Resource::is_unreserved)
    }

    /// Entries reserved to exactly `role`.
    pub fn reserved_to(&self, role: &str) -> Resources {
        self.filter(|r| r.reservation == role)
    }

    /// Entries reserved to any role.
    pub fn reserved(&self) -> Resources {
        self.filter(|r| !r.is_unreserved())
    }

    /// Entries that may be offered to `role`: unreserved ones plus those reserved to `role` or
    /// to one of its ancestors (see [`Resource::is_allocatable_to`]).
    pub fn allocatable_to(&self, role: &str) -> Resources {
        self.filter(|r| r.is_allocatable_to(role))
    }

    /// Revocable entries.
    pub fn revocable(&self) -> Resources {
        self.filter(Resource::is_revocable)
    }

    /// Non-revocable entries.
    pub fn non_revocable(&self) -> Resources {
        self.filter(|r| !r.is_revocable())
    }

    /// Shared entries.
    pub fn shared(&self) -> Resources {
        self.filter(Resource::is_shared)
    }

    /// Scalar entries.
    pub fn scalars(&self) -> Resources {
        self.filter(Resource::is_scalar)
    }

    /// The sum of each scalar name over all entries, stripped of reservations, volumes and
    /// flags (revocable `cpus` count as `cpus`). A shared entry counts once however many copies
    /// there are.
    pub fn scalar_quantities(&self) -> Quantities {
        let mut q = Quantities::new();
        self.add_scalar_quantities_to(&mut q);
        q
    }

    /// Adds [`scalar_quantities`](Self::scalar_quantities) into `out` without allocating a new value.
    pub fn add_scalar_quantities_to(&self, out: &mut Quantities) {
        let mut prev: Option<&Resource> = None;
        for r in self.iter() {
            if let Value::Scalar(s) = r.value {
                let duplicate_copy = r.is_shared() && prev == Some(r);
                if !duplicate_copy {
                    out.add_amount(r.name, s);
                }
            }
            prev = Some(r);
        }
    }

    /// The total of scalar `name` (all reservations and flags).
    pub fn scalar(&self, name: &str) -> Scalar {
        self.iter()
            .filter(|r| r.name == name)
            .filter_map(|r| match r.value {
                Value::Scalar(s) => Some(s),
                _ => None,
            })
            .fold(Scalar::ZERO, Scalar::saturating_add)
    }

    /// Mesos's `allocatable` (R17): `true` when these resources are not empty and contain at
    /// least one of `sets` in full ([`Resources::contains_quantities`]); an empty list of sets
    /// accepts any non-empty resources. Take the sets from
    /// [`FrameworkOptions::min_allocatable_for`](crate::FrameworkOptions::min_allocatable_for).
    pub fn meets_minimum(&self, sets: &[Quantities]) -> bool {
        !self.is_empty() && (sets.is_empty() || sets.iter().any(|q| self.contains_quantities(q)))
    }

    /// `true` when, for every name in `q`, the sum of scalar values (or the count of range and
    /// set elements) over all entries is at least the quantity. This is how min-allocatable
    /// sets are checked.
    pub fn contains_quantities(&self, q: &Quantities) -> bool {
        q.iter().all(|want| {
            let have = self
                .iter()
                .filter(|r| r.name == want.name)
                .map(|r| r.value.quantity())
                .fold(Scalar::ZERO, Scalar::saturating_add);
            have >= want.value
        })
    }

    /// Shrinks scalars to the bound `limit` (at most that much of each named scalar, taken in
    /// canonical order). Names absent from `limit` are dropped when `keep_unbounded` is false
    /// (Mesos's `shrinkResources(…, ResourceQuantities)`) and kept whole when it is true
    /// (`shrinkResources(…, ResourceLimits)`). Persistent volumes cannot be split: one that does
    /// not fit is left out whole. Non-scalar entries follow the same presence rule and are
    /// never split.
    pub fn shrink(&self, limit: &Quantities, keep_unbounded: bool) -> Resources {
        let mut left = limit.clone();
        let mut out = Resources::new();
        for r in self.iter() {
            let Some(bound) = left.get_mut(&r.name) else {
                if keep_unbounded {
                    out.items.push(r.clone());
                }
                continue;
            };
            let Value::Scalar(s) = r.value else {
                continue;
            };
            let take = if s <= *bound {
                s
            } else if r.volume.is_empty() {
                *bound
            } else {
                Scalar::ZERO
            };
            if take.is_positive() {
                *bound = bound.saturating_sub(take);
                let mut piece = r.clone();
                piece.value = Value::Scalar(take);
                out.items.push(piece);
            }
        }
        out
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if !self.reservation.is_empty() {
            write!(f, "({})", self.reservation)?;
        }
        if !self.volume.is_empty() {
            write!(f, "[{}]", self.volume)?;
        }
        if self.flags != ResourceFlags::NONE {
            let names = [
                (ResourceFlags::REVOCABLE, "revocable"),
                (ResourceFlags::SHARED, "shared"),
                (ResourceFlags::DYNAMIC, "dynamic"),
            ];
            let set: Vec<&str> =
                names.iter().filter(|(fl, _)| self.flags.has(*fl)).map(|(_, n)| *n).collect();
            write!(f, "{{{}}}", set.join(","))?;
        }
        f.write_str(":")?;
        match &self.value {
            Value::Scalar(s) => write!(f, "{s}"),
            Value::Ranges(rs) => {
                f.write_str("[")?;
                for (i, r) in rs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}-{}", r.begin, r.end)?;
                }
                f.write_str("]")
            }
            Value::Set(items) => {
                f.write_str("{")?;
                for (i, s) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    f.write_str(s)?;
                }
                f.write_str("}")
            }
        }
    }
}

impl fmt::Display for Resources {
    /// The canonical text form; parsing it gives back an equal value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Resources({self})")
    }
}

impl std::str::FromStr for Resources {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Resources, ParseError> {
        let parsed = parse::parse_resources(s)?;
        // A device is checked after merging: `gpus[0]:0.6;gpus[0]:0.6` is 1.2 on one device.
        match parsed.iter().find_map(|r| devices::device_entry_error(r).map(|why| (r, why))) {
            Some((r, why)) => {
                let name = format!("gpus[{}]", r.volume);
                Err(ParseError::new(s, s.find(&name).unwrap_or(0), why))
            }
            None => Ok(parsed),
        }
    }
}

impl std::ops::Add<&Resources> for Resources {
    type Output = Resources;
    fn add(mut self, rhs: &Resources) -> Resources {
        Resources::add(&mut self, rhs);
        self
    }
}

impl std::ops::Sub<&Resources> for Resources {
    type Output = Resources;
    fn sub(mut self, rhs: &Resources) -> Resources {
        self.subtract(rhs);
        self
    }
}

impl std::ops::AddAssign<&Resources> for Resources {
    fn add_assign(&mut self, rhs: &Resources) {
        self.add(rhs);
    }
}

impl std::ops::SubAssign<&Resources> for Resources {
    fn sub_assign(&mut self, rhs: &Resources) {
        self.subtract(rhs);
    }
}

impl<'a> IntoIterator for &'a Resources {
    type Item = &'a Resource;
    type IntoIter = std::slice::Iter<'a, Resource>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests;
