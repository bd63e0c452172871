//! `cargo test` loads the built library as the host does and runs the conformance suite.

use allocator_conformance::{assert_all_pass, run_allocator_checks, this_crate};

#[test]
fn together_passes_conformance() {
    let library = this_crate::build_cdylib(env!("CARGO_MANIFEST_DIR"), env!("CARGO_PKG_NAME"));
    let registry = this_crate::load(&library, &["Together"]);
    let checks = run_allocator_checks(&registry, "Together", 1000.0);
    assert_all_pass("allocator 'Together'", &checks);
}
