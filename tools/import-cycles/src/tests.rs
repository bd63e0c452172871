use super::*;

fn keys(report: &Report) -> Vec<String> {
    report.cycles.iter().map(Cycle::key).collect()
}

fn edges(report: &Report) -> Vec<String> {
    let mut all = Vec::new();
    for cycle in &report.cycles {
        for edge in &cycle.edges {
            for reference in &edge.references {
                all.push(format!("{} -> {}: {reference}", edge.from, edge.to));
            }
        }
    }
    all
}

#[test]
fn two_cycle_through_use_and_code_paths() {
    let report = check_sources(&[
        ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        ("b.rs", "pub struct B;\npub fn f() { let _ = crate::a::A; crate::c::g(); }\n"),
        ("c.rs", "pub fn g() {}\n"),
    ]);
    assert_eq!(report.warnings, Vec::<String>::new());
    assert_eq!(keys(&report), ["{a, b}"]);
    assert_eq!(edges(&report), ["a -> b: a.rs:1 use crate::b::B", "b -> a: b.rs:2 crate::a::A"]);
    assert_eq!(
        report.cycles[0].to_string(),
        "{a, b}\n  a -> b (a.rs:1 use crate::b::B)\n  b -> a (b.rs:2 crate::a::A)"
    );
}

#[test]
fn three_cycle_in_a_nested_module_with_super_paths() {
    let report = check_sources(&[
        ("lib.rs", "mod m;\n"),
        ("m/mod.rs", "mod x;\nmod y;\nmod z;\npub struct InParent;\n"),
        ("m/x.rs", "use super::y::Y;\nuse super::InParent;\npub struct X;\n"),
        ("m/y.rs", "pub struct Y;\nfn f() -> super::z::Z { todo!() }\n"),
        ("m/z.rs", "pub struct Z;\nimpl From<Z> for super::super::m::x::X { }\n"),
    ]);
    assert_eq!(keys(&report), ["m::{x, y, z}"]);
    assert_eq!(
        edges(&report),
        [
            "x -> y: m/x.rs:1 use super::y::Y",
            "y -> z: m/y.rs:2 super::z::Z",
            "z -> x: m/z.rs:2 super::super::m::x::X",
        ]
    );
}

#[test]
fn use_groups_renames_self_and_raw_identifiers() {
    let report = check_sources(&[
        ("lib.rs", "mod a;\nmod b;\nmod r#type;\n"),
        (
            "a.rs",
            "pub use crate::{b::{self as bee, inner::{One, Two as Deux}}, r#type::*};\npub struct A;\n",
        ),
        ("b.rs", "pub mod inner;\n"),
        ("b/inner.rs", "pub struct One;\npub struct Two;\nuse self::super::super::a::A;\n"),
        ("type.rs", "use crate::a as _;\n"),
    ]);
    assert_eq!(keys(&report), ["{a, b, type}"]);
    assert_eq!(
        edges(&report),
        [
            "a -> b: a.rs:1 use crate::b",
            "a -> b: a.rs:1 use crate::b::inner::One",
            "a -> b: a.rs:1 use crate::b::inner::Two",
            "a -> type: a.rs:1 use crate::type::*",
            "b -> a: b/inner.rs:3 use self::super::super::a::A",
            "type -> a: type.rs:1 use crate::a",
        ]
    );
}

#[test]
fn comments_strings_and_external_crates_make_no_edges() {
    let report = check_sources(&[
        ("lib.rs", "pub mod registry;\npub mod serve;\n"),
        (
            "registry.rs",
            concat!(
                "//! Served by [`crate::serve`].\n",
                "// use crate::serve::X;\n",
                "/* crate::serve::Y /* nested */ crate::serve::Z */\n",
                "/// See [`crate::serve::W`].\n",
                "pub const S: &str = \"crate::serve::V\";\n",
                "pub const R: &str = r#\"crate::serve::\"U\"#;\n",
                "pub const C: char = '\"';\n",
                "pub fn f<'a>(x: &'a str) -> &'a str { x }\n",
            ),
        ),
        (
            "serve.rs",
            concat!(
                "use allocator_host::registry::Registry;\n",
                "use ::registry::Other;\n",
                "pub fn g() { std::registry::h(); crate::registry::f(\"\"); }\n",
            ),
        ),
    ]);
    assert_eq!(report.cycles, []);
}

#[test]
fn parent_and_child_references_are_not_cycles() {
    let report = check_sources(&[
        ("lib.rs", "pub mod a;\npub use a::Child;\npub struct Root;\nuse crate::a::b::Deep;\n"),
        ("a.rs", "pub mod b;\npub struct Child;\nuse super::Root;\nuse self::b::Deep;\n"),
        (
            "a/b.rs",
            "pub struct Deep;\nuse super::Child;\nuse crate::Root;\nuse super::super::a::*;\n",
        ),
    ]);
    assert_eq!(report.cycles, []);
    assert_eq!(report.warnings, Vec::<String>::new());
}

#[test]
fn inline_modules_are_modules_and_super_inside_them_is_their_parent() {
    let report = check_sources(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        // `super::` in `a::tests` is `a`, so this is a reference from a to a's own child.
        ("a.rs", "pub struct A;\n#[cfg(test)]\nmod tests {\n    use super::A;\n}\n"),
        (
            "b.rs",
            concat!(
                "pub mod inner {\n",
                "    pub fn f() { super::super::a::A; }\n",
                "}\n",
                "pub fn g() {}\n",
            ),
        ),
    ]);
    assert_eq!(report.cycles, []);
    // A reference from tests in `a` to `b` makes a cycle with `b`'s inline module's use of `a`.
    let report = check_sources(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "pub struct A;\n#[cfg(test)]\nmod tests {\n    use crate::b::inner::f;\n}\n"),
        ("b.rs", "pub mod inner {\n    pub fn f() { let _ = super::super::a::A; }\n}\n"),
    ]);
    assert_eq!(
        edges(&report),
        ["a -> b: a.rs:4 use crate::b::inner::f [test]", "b -> a: b.rs:2 super::super::a::A"]
    );
}

#[test]
fn path_attribute_and_mod_rs_files() {
    let report = check_sources(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a/mod.rs", "mod s;\n"),
        ("a/s.rs", "#[cfg(test)]\n#[path = \"s_tests.rs\"]\nmod tests;\n"),
        ("a/s_tests.rs", "use crate::b::B;\n"),
        ("b.rs", "pub struct B;\nuse crate::a::*;\n"),
    ]);
    assert_eq!(report.warnings, Vec::<String>::new());
    assert_eq!(
        edges(&report),
        ["a -> b: a/s_tests.rs:1 use crate::b::B [test]", "b -> a: b.rs:2 use crate::a::*"]
    );
}

#[test]
fn generics_casts_and_dollar_crate() {
    let report = check_sources(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "pub fn f() -> usize { crate::b::Thing::<u8>::new() as usize + <crate::b::T as X>::N }\n",
        ),
        ("b.rs", "macro_rules! m { () => { $crate::a::f() } }\n"),
    ]);
    assert_eq!(
        edges(&report),
        [
            "a -> b: a.rs:1 crate::b::T",
            "a -> b: a.rs:1 crate::b::Thing",
            "b -> a: b.rs:1 $crate::a::f"
        ]
    );
}

#[test]
fn a_mod_without_a_file_is_a_warning() {
    let report = check_sources(&[("lib.rs", "mod gone;\n")]);
    assert_eq!(report.cycles, []);
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(report.warnings[0].contains("mod gone;"), "{:?}", report.warnings);
}

#[test]
fn re_exports_are_followed_to_the_defining_module() {
    let report = check_sources(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\npub use a::Thing;\n"),
        // `crate::Thing` names the root, which re-exports it from `a`.
        ("a.rs", "pub struct Thing;\nuse crate::c::C;\n"),
        ("b.rs", "pub use crate::a::Thing as Renamed;\n"),
        // Through `b`'s re-export: `c` names `b` (an edge to `b`: the `pub use` is an item
        // of `b`) and reaches `a` (an edge to `a`).
        ("c.rs", "pub struct C;\nfn f(_: crate::b::Renamed, _: crate::Thing) {}\n"),
    ]);
    assert_eq!(keys(&report), ["{a, b, c}"]);
    assert_eq!(
        edges(&report),
        [
            "a -> c: a.rs:2 use crate::c::C",
            "b -> a: b.rs:1 use crate::a::Thing",
            "c -> a: c.rs:2 crate::Thing (re-exported from a)",
            "c -> a: c.rs:2 crate::b::Renamed (re-exported from a)",
            "c -> b: c.rs:2 crate::b::Renamed",
        ]
    );
    // Without `b`'s part, the root's re-export alone still makes the cycle.
    let report = check_sources(&[
        ("lib.rs", "mod a;\nmod c;\npub use a::Thing;\n"),
        ("a.rs", "pub struct Thing;\nuse crate::c::C;\n"),
        ("c.rs", "pub struct C;\nfn f(_: crate::Thing) {}\n"),
    ]);
    assert_eq!(keys(&report), ["{a, c}"]);
}

#[test]
fn names_from_a_glob_of_the_parent_reach_the_siblings_it_imported() {
    let report = check_sources(&[
        ("lib.rs", "mod h;\n"),
        ("h.rs", "mod p;\nmod q;\nuse p::Pt;\nuse q::{helper, Other};\nstruct Own;\n"),
        // `Pt` and `helper` come from the parent's `use`s; `Own` is the parent's own item;
        // `.helper()` is a method, `let helper` a local.
        (
            "h/p.rs",
            "use super::*;\npub struct Pt;\nfn f(x: Own) { helper(); x.helper(); let helper = 1; }\n",
        ),
        ("h/q.rs", "use super::*;\npub fn helper() -> Pt { Pt }\npub struct Other;\n"),
    ]);
    assert_eq!(keys(&report), ["h::{p, q}"]);
    assert_eq!(
        edges(&report),
        [
            "p -> q: h/p.rs:3 helper (through use super::*)",
            "q -> p: h/q.rs:2 Pt (through use super::*)",
        ]
    );
}

#[test]
fn references_from_test_modules_count_and_are_marked() {
    let report = check_sources(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "pub struct A;\n#[cfg(test)]\nmod tests;\n"),
        ("a/tests.rs", "use crate::b::B;\n"),
        ("b.rs", "pub struct B;\nuse crate::a::A;\n"),
    ]);
    assert_eq!(keys(&report), ["{a, b}"]);
    assert_eq!(
        report.cycles[0].to_string(),
        "{a, b}\n  a -> b [test code only] (a/tests.rs:1 use crate::b::B [test])\n  b -> a (b.rs:2 use crate::a::A)"
    );
}

#[test]
fn a_multi_line_use_group_gives_each_leaf_its_own_line() {
    let report = check_sources(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use crate::b::{\n    One,\n    inner::{\n        Two,\n    },\n};\n"),
        ("b.rs", "pub mod inner;\npub struct One;\nuse crate::a as _;\n"),
        ("b/inner.rs", "pub struct Two;\n"),
    ]);
    assert_eq!(
        edges(&report),
        [
            "a -> b: a.rs:2 use crate::b::One",
            "a -> b: a.rs:4 use crate::b::inner::Two",
            "b -> a: b.rs:3 use crate::a",
        ]
    );
}
