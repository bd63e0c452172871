//! `cargo test` runs the conformance suite (`allocator-conformance`, the checks of
//! `allocator-master conformance`) against this crate's modules, loaded from the built library
//! exactly as the host loads them.

use allocator_conformance::{assert_all_pass, run_allocator_checks, run_sorter_checks, this_crate};

/// The module names `export_modules!` gives in `src/lib.rs`.
const ALLOCATOR: &str = "template_first_fit";
const SORTER: &str = "template_fifo";

/// Longest acceptable periodic allocation run on the suite's 1,000-agent cluster (the
/// `--time_bound_ms` of `allocator-master conformance`).
const TIME_BOUND_MS: f64 = 1000.0;

fn registry() -> allocator_host::ModuleRegistry {
    let library = this_crate::build_cdylib(env!("CARGO_MANIFEST_DIR"), env!("CARGO_PKG_NAME"));
    this_crate::load(&library, &[ALLOCATOR, SORTER])
}

#[test]
fn the_allocator_passes_conformance() {
    let checks = run_allocator_checks(&registry(), ALLOCATOR, TIME_BOUND_MS);
    assert_all_pass(&format!("allocator '{ALLOCATOR}'"), &checks);
}

#[test]
fn the_sorter_passes_conformance() {
    let checks = run_sorter_checks(&registry(), SORTER);
    assert!(checks.iter().all(|c| c.skipped.is_none()), "every sorter check applies: {checks:?}");
    assert_all_pass(&format!("sorter '{SORTER}'"), &checks);
}
