//! `cargo test` runs the allocator checks of the conformance suite against `binpack`, loaded
//! from this crate's built library as the host loads it.

use allocator_conformance::{assert_all_pass, run_allocator_checks, this_crate};

#[test]
fn binpack_passes_conformance() {
    let library = this_crate::build_cdylib(env!("CARGO_MANIFEST_DIR"), env!("CARGO_PKG_NAME"));
    let registry = this_crate::load(&library, &["binpack"]);
    assert_all_pass("allocator 'binpack'", &run_allocator_checks(&registry, "binpack", 1000.0));
}
