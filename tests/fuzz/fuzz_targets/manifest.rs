//! The manifest parser never panics on any input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = allocator_host::manifest::parse(text, "fuzz");
});
