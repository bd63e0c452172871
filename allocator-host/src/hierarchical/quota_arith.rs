//! Quota arithmetic (R18–R22): what counts toward quota and what is left of a bound, with no
//! allocator state. The quota stages ([`super::quota`]) and the run ([`super::run`]) both use
//! it; it depends on neither.

use allocator_api::{Quantities, Resources};

/// The top-level role of a role path (`a` for `a/b/c`).
pub(super) fn top_level(role: &str) -> &str {
    role.split('/').next().unwrap_or(role)
}

/// What counts toward quota: unreserved, non-revocable, non-shared resources.
pub(super) fn is_quota_resource(r: &allocator_api::Resource) -> bool {
    r.is_unreserved() && !r.is_revocable() && !r.is_shared()
}

/// Adds the quota scalars of `res` (see [`is_quota_resource`]) to `out`, without allocating.
pub(super) fn add_quota_scalars(out: &mut Quantities, res: &Resources) {
    for r in res.iter().filter(|r| is_quota_resource(r) && r.is_scalar()) {
        out.add_amount(r.name, r.value.quantity());
    }
}

/// The entries of `res` that count toward quota.
pub(super) fn quota_resources(res: &Resources) -> Resources {
    res.filter(is_quota_resource)
}

/// For every name in `bound`: what is left of it after `used` (never negative; zeros kept, so a
/// used-up limit still limits).
pub(super) fn remaining(bound: &Quantities, used: &Quantities) -> Quantities {
    let mut out = Quantities::new();
    for q in bound.iter() {
        out.set(q.name, q.value.saturating_sub(used.get(&q.name)));
    }
    out
}

/// `a - b` per name, saturating at zero (zeros kept).
pub(super) fn saturating_sub(a: &Quantities, b: &Quantities) -> Quantities {
    remaining(a, b)
}
