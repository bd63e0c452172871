//! The root symbol, and the export helpers at work: panics in calls, drops and factories stay
//! inside the module, poison the instance, and come back as errors; ABI 2 sorters carry the
//! two added calls and ABI 1 sorters keep the plain trait's defaults for them.

use abi_stable::std_types::{RSlice, RVec};

use super::ROOT_SYMBOL;
use super::export_helpers::{run_factory, sorter_box, sorter_box_v2};
use crate::error::{ErrorKind, ModuleError, Result};
use crate::ids::ClientId;
use crate::sorter::Sorter;

#[test]
fn root_symbol_matches_abi_stable() {
    assert_eq!(ROOT_SYMBOL, abi_stable::library::ROOT_MODULE_LOADER_NAME);
}

struct Panicky;

impl Sorter for Panicky {
    fn add(&mut self, _: ClientId, path: &str) -> Result<()> {
        panic!("cannot add {path}")
    }
    fn remove(&mut self, _: ClientId) -> Result<()> {
        Ok(())
    }
    fn activate(&mut self, _: ClientId) -> Result<()> {
        Ok(())
    }
    fn deactivate(&mut self, _: ClientId) -> Result<()> {
        Err(ModuleError::rejected("no"))
    }
    fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()> {
        out.clear();
        Ok(())
    }
    fn contains(&self, _: ClientId) -> bool {
        false
    }
    fn count(&self) -> usize {
        0
    }
}

#[test]
fn a_panic_becomes_an_error_and_poisons_the_instance() {
    let mut s = sorter_box(Panicky);
    let e = Sorter::add(&mut s, ClientId(1), "a").unwrap_err();
    assert_eq!(e.kind, ErrorKind::PANICKED);
    assert_eq!(e.message.as_str(), "add: cannot add a");
    let e = Sorter::remove(&mut s, ClientId(1)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::POISONED);
}

/// Panics when dropped.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("drop panics on purpose");
    }
}

/// A sorter that holds a value whose `Drop` panics, and panics with such a payload.
struct HostileDrop(#[allow(dead_code)] PanicsOnDrop);

impl Sorter for HostileDrop {
    fn add(&mut self, _: ClientId, _: &str) -> Result<()> {
        std::panic::panic_any(PanicsOnDrop)
    }
    fn remove(&mut self, _: ClientId) -> Result<()> {
        Ok(())
    }
    fn activate(&mut self, _: ClientId) -> Result<()> {
        Ok(())
    }
    fn deactivate(&mut self, _: ClientId) -> Result<()> {
        Ok(())
    }
    fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()> {
        out.clear();
        Ok(())
    }
    fn contains(&self, _: ClientId) -> bool {
        false
    }
    fn count(&self) -> usize {
        0
    }
}

#[test]
fn a_panic_in_a_module_instances_drop_stays_inside_the_export_helpers() {
    let s = sorter_box(HostileDrop(PanicsOnDrop));
    drop(s); // would unwind through the vtable's destructor and exit the process
}

#[test]
fn a_panic_payload_that_panics_when_dropped_is_contained() {
    let mut s = sorter_box(HostileDrop(PanicsOnDrop));
    let e = Sorter::add(&mut s, ClientId(1), "a").unwrap_err();
    assert_eq!(e.kind, ErrorKind::PANICKED);
    std::mem::forget(s);
}

#[test]
fn a_factory_error_whose_drop_panics_is_contained() {
    struct BadError;
    impl std::fmt::Display for BadError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("bad")
        }
    }
    impl Drop for BadError {
        fn drop(&mut self) {
            panic!("error drop panics");
        }
    }
    let r = run_factory(
        &(),
        RSlice::from_slice(&[]),
        |_, _| -> std::result::Result<Panicky, BadError> { Err(BadError) },
        sorter_box,
    );
    assert_eq!(r.into_result().err().unwrap().kind, ErrorKind::PANICKED);
}

#[test]
fn a_refusal_is_not_a_fault() {
    let mut s = sorter_box(Panicky);
    let e = Sorter::deactivate(&mut s, ClientId(1)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::REJECTED);
    assert!(!e.is_fault());
    assert!(Sorter::activate(&mut s, ClientId(1)).is_ok(), "a refusal does not poison");
}

#[test]
fn a_panicking_factory_is_reported() {
    let r = run_factory(
        &(),
        RSlice::from_slice(&[]),
        |_, _| -> std::result::Result<Panicky, String> { panic!("bad config") },
        sorter_box,
    );
    let e = r.into_result().err().unwrap();
    assert_eq!(e.kind, ErrorKind::PANICKED);
    assert_eq!(e.message.as_str(), "create: bad config");
}

/// Answers a scripted prefix, keeps scalars only, and panics in `sort_prefix` when asked
/// for more than 10 clients.
struct Prefixed;

impl Sorter for Prefixed {
    fn add(&mut self, _: ClientId, _: &str) -> Result<()> {
        Ok(())
    }
    fn remove(&mut self, _: ClientId) -> Result<()> {
        Ok(())
    }
    fn activate(&mut self, _: ClientId) -> Result<()> {
        Ok(())
    }
    fn deactivate(&mut self, _: ClientId) -> Result<()> {
        Ok(())
    }
    fn sort(&mut self, out: &mut RVec<ClientId>) -> Result<()> {
        out.clear();
        out.extend([ClientId(4), ClientId(2), ClientId(9)]);
        Ok(())
    }
    fn sort_prefix(&mut self, len: usize, out: &mut RVec<ClientId>) -> Result<bool> {
        assert!(len <= 10, "asked for {len}");
        self.sort(out)?;
        out.truncate(len);
        Ok(len >= 3)
    }
    fn keep_scalars_only(&mut self) -> bool {
        true
    }
    fn contains(&self, _: ClientId) -> bool {
        false
    }
    fn count(&self) -> usize {
        3
    }
}

#[test]
fn an_abi2_sorter_answers_sort_prefix_and_keep_scalars_only_across_the_boundary() {
    let mut s = sorter_box_v2(Prefixed);
    assert!(Sorter::keep_scalars_only(&mut s));
    let mut out = RVec::new();
    assert!(!Sorter::sort_prefix(&mut s, 1, &mut out).unwrap());
    assert_eq!(out.as_slice(), &[ClientId(4)]);
    assert!(Sorter::sort_prefix(&mut s, 3, &mut out).unwrap());
    assert_eq!(out.as_slice(), &[ClientId(4), ClientId(2), ClientId(9)]);
}

#[test]
fn a_panic_in_sort_prefix_becomes_an_error_and_poisons_the_instance() {
    let mut s = sorter_box_v2(Prefixed);
    let mut out = RVec::new();
    let e = Sorter::sort_prefix(&mut s, 11, &mut out).unwrap_err();
    assert_eq!(e.kind, ErrorKind::PANICKED);
    assert_eq!(e.message.as_str(), "sort_prefix: asked for 11");
    let e = Sorter::sort(&mut s, &mut out).unwrap_err();
    assert_eq!(e.kind, ErrorKind::POISONED);
    assert!(!Sorter::keep_scalars_only(&mut s), "a poisoned instance answers false");
}

#[test]
fn an_abi1_sorter_keeps_the_trait_defaults_for_the_abi2_calls() {
    let mut s = sorter_box(Prefixed);
    assert!(!Sorter::keep_scalars_only(&mut s), "ABI 1 cannot carry the call");
    let mut out = RVec::new();
    assert!(Sorter::sort_prefix(&mut s, 1, &mut out).unwrap(), "one whole sort");
    assert_eq!(out.len(), 3);
}
