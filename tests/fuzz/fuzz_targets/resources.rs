//! The resource parser never panics, and what it accepts prints and parses back to itself.
#![no_main]

use allocator_api::{Quantities, Resources};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(r) = text.parse::<Resources>() {
        let again: Resources = r.to_string().parse().expect("printed resources parse");
        assert_eq!(again, r);
        let _ = r.scalar_quantities();
        let doubled = r.clone() + &r;
        assert!(doubled.contains(&r));
    }
    if let Ok(q) = Quantities::parse(text) {
        let again = Quantities::parse(&q.to_string()).expect("printed quantities parse");
        assert_eq!(again, q);
    }
});
