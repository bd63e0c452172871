//! Interned resource names.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, OnceLock};

use abi_stable::StableAbi;
use abi_stable::std_types::{RStr, RString};

/// An interned name: a resource name (`cpus`, `mem`, `ports`, …), a role (see [`Role`]) or a
/// volume id. Copying one is copying a pointer, so
/// resources and quantities can be cloned on the allocation hot path without allocating a
/// string per entry.
///
/// Names compare, order and hash by their text, so a name made by one binary (the host) equals
/// the same name made by another (a module): each binary has its own interner. Interned text
/// is never freed, which is sound across the boundary because module libraries are never
/// unloaded; a process sees a handful of distinct resource names, so the interner stays small.
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone)]
pub struct Name(RStr<'static>);

/// A role (`*`, `analytics`, `eng/ml`), on the Rust side: the same interned type as a resource's
/// [`reservation`](super::Resource::reservation).
///
/// Roles cross the boundary in three spellings — `RString` in [`FrameworkInfo::roles`],
/// [`Allocation::role`], [`RoleWeight`] and [`RoleQuota`]; `&str` in calls such as
/// [`Allocator::recover_resources`]; and [`Name`] in [`Resource::reservation`] — and the
/// conversions between them make the difference invisible:
///
/// * any spelling → `Role`: `Role::from(&info.roles[0])`, `Role::from("eng")`, `r.reservation`;
/// * `Role` → `RString` (to build an [`Allocation`]): `role.into()`;
/// * `Role` or `RString` → `&str` (to call a method taking `&str`): `&role` / `&allocation.role`
///   (both dereference to `str`);
/// * comparisons across spellings: `role == allocation.role`, `allocation.role == role`,
///   `role == "eng"`, `resource.reservation == role`.
///
/// [`FrameworkInfo`] and [`Allocation`] also have helpers that take any spelling
/// ([`FrameworkInfo::has_role`], [`FrameworkInfo::role_iter`], [`Allocation::new`]).
/// Interning takes a lock the first time a text is seen; roles are few, so the interner stays
/// small.
///
/// ```
/// use allocator_api::{Allocation, AgentId, FrameworkId, Role, RString, Resources};
/// let subscribed: RString = "eng/ml".into();            // as in FrameworkInfo::roles
/// let role = Role::from(&subscribed);
/// let offer = Allocation::new(FrameworkId(1), AgentId(0), role, Resources::new());
/// assert!(offer.role == role && role == offer.role && role == "eng/ml");
/// let as_str: &str = &offer.role;                        // what recover_resources takes
/// assert_eq!(Role::from(as_str), role);
/// ```
///
/// [`FrameworkInfo::roles`]: crate::FrameworkInfo::roles
/// [`FrameworkInfo`]: crate::FrameworkInfo
/// [`FrameworkInfo::has_role`]: crate::FrameworkInfo::has_role
/// [`FrameworkInfo::role_iter`]: crate::FrameworkInfo::role_iter
/// [`Allocation`]: crate::Allocation
/// [`Allocation::role`]: crate::Allocation::role
/// [`Allocation::new`]: crate::Allocation::new
/// [`RoleWeight`]: crate::RoleWeight
/// [`RoleQuota`]: crate::RoleQuota
/// [`Allocator::recover_resources`]: crate::Allocator::recover_resources
/// [`Resource::reservation`]: super::Resource::reservation
pub type Role = Name;

fn interner() -> &'static Mutex<HashSet<&'static str>> {
    static INTERNER: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    INTERNER.get_or_init(|| Mutex::new(HashSet::new()))
}

impl Name {
    /// The interned name for `text`.
    pub fn new(text: &str) -> Name {
        // A poisoned lock only means another thread panicked while inserting; the set is
        // still a valid set of leaked strings.
        let mut set = interner().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = set.get(text) {
            return Name(RStr::from_str(s));
        }
        let leaked: &'static str = Box::leak(text.to_owned().into_boxed_str());
        set.insert(leaked);
        Name(RStr::from_str(leaked))
    }

    /// The text of the name.
    pub fn as_str(&self) -> &'static str {
        self.0.as_str()
    }
}

impl Default for Name {
    /// The empty name.
    fn default() -> Name {
        Name(RStr::from_str(""))
    }
}

impl std::ops::Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl Name {
    /// `true` when both are the same interned text (the same pointer): within one binary the
    /// interner makes this the same as equal text. Names from two binaries (the host and a
    /// module, each with its own interner) may be equal text at two pointers, so identity is
    /// only ever a fast path.
    #[inline]
    fn same(&self, other: &Name) -> bool {
        let (a, b) = (self.as_str(), other.as_str());
        a.as_ptr() == b.as_ptr() && a.len() == b.len()
    }

    /// The first byte, where there is one.
    #[inline]
    fn first_byte(&self) -> Option<u8> {
        self.as_str().as_bytes().first().copied()
    }
}

impl PartialEq for Name {
    #[inline]
    fn eq(&self, other: &Name) -> bool {
        // Identity first; then lengths and first bytes, which tell most distinct names apart
        // (`cpus`, `disk`, `gpus`: same length) without comparing the text.
        self.same(other)
            || (self.len() == other.len()
                && self.first_byte() == other.first_byte()
                && self.as_str() == other.as_str())
    }
}

impl Eq for Name {}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    /// Orders by text. The same interned name is equal without looking at the text, and the
    /// first bytes decide most other pairs (also the empty name, which has none and comes
    /// first); only names sharing their first byte compare their text.
    #[inline]
    fn cmp(&self, other: &Name) -> Ordering {
        if self.same(other) {
            return Ordering::Equal;
        }
        match (self.first_byte(), other.first_byte()) {
            (Some(a), Some(b)) if a == b => self.as_str().cmp(other.as_str()),
            (a, b) => a.cmp(&b),
        }
    }
}

impl Hash for Name {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<RString> for Name {
    fn eq(&self, other: &RString) -> bool {
        self.as_str() == other.as_str()
    }
}

impl From<&str> for Name {
    fn from(text: &str) -> Name {
        Name::new(text)
    }
}

impl From<&Name> for Name {
    fn from(name: &Name) -> Name {
        *name
    }
}

impl From<&String> for Name {
    fn from(text: &String) -> Name {
        Name::new(text)
    }
}

impl From<String> for Name {
    fn from(text: String) -> Name {
        Name::new(&text)
    }
}

impl From<RString> for Name {
    fn from(text: RString) -> Name {
        Name::new(&text)
    }
}

impl From<&RString> for Name {
    fn from(text: &RString) -> Name {
        Name::new(text)
    }
}

impl PartialEq<Name> for RString {
    fn eq(&self, other: &Name) -> bool {
        self.as_str() == other.as_str()
    }
}

impl From<Name> for RString {
    fn from(name: Name) -> RString {
        RString::from(name.as_str())
    }
}

impl From<&Name> for RString {
    fn from(name: &Name) -> RString {
        RString::from(name.as_str())
    }
}

impl From<Name> for String {
    fn from(name: Name) -> String {
        name.as_str().to_owned()
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_text_interns_to_the_same_pointer() {
        let a = Name::new("cpus");
        let b = Name::new(&String::from("cpus"));
        assert_eq!(a.as_str().as_ptr(), b.as_str().as_ptr());
        assert_eq!(a, b);
    }

    #[test]
    fn every_role_spelling_converts_to_role_and_back() {
        let text = "eng/ml";
        let rstring = RString::from(text);
        let from_rstring = Role::from(&rstring);
        let from_str = Role::from(text);
        assert_eq!(from_rstring, from_str);
        assert_eq!(RString::from(from_str), rstring);
        assert_eq!(rstring, from_str, "RString == Role");
        assert_eq!(from_str, rstring, "Role == RString");
        assert_eq!(from_str, text, "Role == &str");
        let back: &str = &from_rstring;
        assert_eq!(back, text);
    }

    #[test]
    fn identity_and_first_bytes_order_names_as_their_text_does() {
        let names = ["", "a", "ab", "b", "cpus", "cpusx", "disk", "gpus", "mem", "ports"];
        for x in names {
            for y in names {
                let (a, b) = (Name::new(x), Name(RStr::from_str(y)));
                assert_eq!(a.cmp(&b), x.cmp(y), "{x:?} against {y:?}");
                assert_eq!(a == b, x == y, "{x:?} against {y:?}");
            }
        }
    }

    #[test]
    fn names_compare_by_text_whatever_their_origin() {
        // A name made elsewhere (another binary's interner) has another pointer.
        let foreign = Name(RStr::from_str("mem"));
        assert_eq!(foreign, Name::new("mem"));
        assert!(Name::new("cpus") < foreign);
        assert_eq!(foreign, "mem");
    }
}
