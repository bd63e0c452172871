//! `cargo test` runs the sorter checks of the conformance suite against
//! `least_recently_offered`, loaded from this crate's built library as the host loads it.

use allocator_conformance::{assert_all_pass, run_sorter_checks, this_crate};

#[test]
fn least_recently_offered_passes_conformance() {
    let library = this_crate::build_cdylib(env!("CARGO_MANIFEST_DIR"), env!("CARGO_PKG_NAME"));
    let registry = this_crate::load(&library, &["least_recently_offered"]);
    let checks = run_sorter_checks(&registry, "least_recently_offered");
    assert_all_pass("sorter 'least_recently_offered'", &checks);
}
