//! Fallback: when a module fails, the host replaces it with the built-in, rebuilt from the
//! host's own records so that no allocation is lost or duplicated.
//!
//! The host (not the module) is the source of truth: it keeps its own record of agents,
//! frameworks, weights, quotas, the whitelist and a ledger of what every framework holds. A
//! failed allocator module is replaced by [`rebuild_builtin`] (and a restarted one is given the
//! same records by [`replay`]); a failed sorter module inside the
//! built-in allocator by [`builtin_drf`] through
//! [`HierarchicalAllocator::replace_sorters`].

use std::collections::BTreeMap;

use allocator_api::{
    Allocation, Allocator, AllocatorOptions, ModuleError, Quota, RString, RoleWeight, Sorter,
    SorterConfig,
};

use super::records::{AgentRecord, FrameworkRecord};
use crate::hierarchical::{HierarchicalAllocator, SorterFactory};
use crate::registry::BUILTIN_SORTER;

/// The built-in DRF sorter, linked in: what a failed sorter module is replaced by.
pub fn builtin_drf() -> SorterFactory {
    Box::new(|c: &SorterConfig| Ok(Box::new(drf_sorter::create(c)) as Box<dyn Sorter>))
}

/// Everything the host records about the cluster, borrowed for a rebuild.
#[derive(Clone, Debug)]
pub struct Records<'a> {
    /// The virtual (or real) time now.
    pub now: f64,
    /// The allocator options the master runs with (its sorters are replaced by `drf`).
    pub options: &'a AllocatorOptions,
    /// Role weights.
    pub weights: &'a BTreeMap<String, f64>,
    /// Quotas by role.
    pub quotas: &'a BTreeMap<String, Quota>,
    /// The whitelist, if any.
    pub whitelist: Option<&'a [RString]>,
    /// Present frameworks, in id order.
    pub frameworks: Vec<&'a FrameworkRecord>,
    /// Present agents, each with what the host's ledger holds on it (offered or allocated).
    pub agents: Vec<(&'a AgentRecord, Vec<Allocation>)>,
    /// Whether allocation is paused.
    pub paused: bool,
}

/// A fresh built-in allocator with `drf` sorters holding `records` (see [`replay`]). One line
/// naming the call on failure.
pub fn rebuild_builtin(records: &Records<'_>) -> Result<HierarchicalAllocator, String> {
    let mut options = records.options.clone();
    options.role_sorter = BUILTIN_SORTER.into();
    options.framework_sorter = BUILTIN_SORTER.into();
    let mut b = HierarchicalAllocator::new(&options, builtin_drf(), builtin_drf())?;
    replay(&mut b, records).map_err(|e| format!("rebuilding the built-in allocator: {e}"))?;
    Ok(b)
}

/// Gives a freshly created allocator (the built-in on fallback, a restarted module under
/// `--on_module_failure restart`) the host's `records`: time, weights, quotas, whitelist,
/// frameworks, then agents with what the ledger holds on them (so nothing is offered twice),
/// deactivations, and the pause. Refuse filters are not part of the host's records: a rebuilt
/// allocator starts without them. Fails with the first call the allocator fails, named.
pub fn replay(target: &mut dyn Allocator, records: &Records<'_>) -> Result<(), ModuleError> {
    target.set_time(records.now)?;
    let weights: Vec<RoleWeight> = records
        .weights
        .iter()
        .map(|(r, w)| RoleWeight { role: r.as_str().into(), weight: *w })
        .collect();
    target.update_weights(&weights)?;
    for (role, q) in records.quotas {
        target.update_quota(role, q)?;
    }
    target.update_whitelist(records.whitelist)?;
    for f in &records.frameworks {
        target.add_framework(&f.info, &[], f.active, &f.options)?;
    }
    for (a, allocations) in &records.agents {
        target.add_agent(&a.info, a.unavailability.as_ref(), &a.total, allocations)?;
        if !a.activated {
            target.deactivate_agent(a.info.id)?;
        }
    }
    if records.paused {
        target.pause()?;
    }
    Ok(())
}
