//! Unit and property tests for resources and quantities.

use proptest::prelude::*;

use super::*;

fn res(s: &str) -> Resources {
    s.parse().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn parse_and_print_canonical_order() {
    let r = res("mem:1024;cpus:2;ports:[31000-32000]");
    assert_eq!(r.to_string(), "cpus:2;mem:1024;ports:[31000-32000]");
}

#[test]
fn empty_string_is_empty_set() {
    assert!(res("").is_empty());
    assert_eq!(res("").to_string(), "");
}

#[test]
fn same_key_entries_merge() {
    assert_eq!(res("cpus:1;cpus:2.5").to_string(), "cpus:3.5");
    assert_eq!(res("ports:[1-3];ports:[4-6,10-12]").to_string(), "ports:[1-6,10-12]");
    assert_eq!(res("zones:{b,a};zones:{c,a}").to_string(), "zones:{a,b,c}");
}

#[test]
fn zero_scalars_are_dropped() {
    assert_eq!(res("cpus:0;mem:10").to_string(), "mem:10");
}

#[test]
fn reservations_flags_and_volumes_round_trip() {
    for text in [
        "cpus(role1):1;mem(role1):512",
        "cpus(role1){dynamic}:1",
        "cpus{revocable}:10",
        "disk(role1)[vol1]{shared}:100",
        "disk(role1)[vol1]{shared}:100;disk(role1)[vol1]{shared}:100",
    ] {
        assert_eq!(res(text).to_string(), text);
    }
}

#[test]
fn star_role_means_unreserved() {
    assert_eq!(res("cpus(*):1;cpus:1").to_string(), "cpus:2");
}

#[test]
fn different_keys_stay_separate() {
    let r = res("cpus:1;cpus(a):1;cpus{revocable}:1");
    assert_eq!(r.entries().len(), 3);
    assert_eq!(r.scalar("cpus"), Scalar::from_units(3));
}

#[test]
fn shared_copies_count_once_in_quantities() {
    let r = res("disk(a)[v]{shared}:100;disk(a)[v]{shared}:100;disk:5");
    assert_eq!(r.entries().len(), 3);
    assert_eq!(r.scalar_quantities().get("disk"), Scalar::from_units(105));
}

#[test]
fn subtracting_a_shared_copy_removes_one() {
    let mut r = res("disk(a)[v]{shared}:100;disk(a)[v]{shared}:100");
    r.subtract(&res("disk(a)[v]{shared}:100"));
    assert_eq!(r.to_string(), "disk(a)[v]{shared}:100");
    assert!(r.contains(&res("disk(a)[v]{shared}:100")));
    assert!(!r.contains(&res("disk(a)[v]{shared}:100;disk(a)[v]{shared}:100")));
}

#[test]
fn subtraction_saturates() {
    assert_eq!((res("cpus:1;mem:10") - &res("cpus:2;disk:3")).to_string(), "mem:10");
    assert_eq!((res("ports:[1-10]") - &res("ports:[3-4,9-20]")).to_string(), "ports:[1-2,5-8]");
}

#[test]
fn contains_needs_matching_reservation() {
    let r = res("cpus(a):2;mem:10");
    assert!(r.contains(&res("cpus(a):1")));
    assert!(!r.contains(&res("cpus:1")));
    assert!(!r.contains(&res("cpus(a):3")));
    assert!(r.contains(&res("")));
}

#[test]
fn allocatable_to_includes_ancestor_reservations() {
    let r = res("cpus:1;cpus(a):2;cpus(a/b):3;cpus(a/bc):4;cpus(c):5");
    assert_eq!(r.allocatable_to("a/b").to_string(), "cpus:1;cpus(a):2;cpus(a/b):3");
    assert_eq!(r.allocatable_to("a").to_string(), "cpus:1;cpus(a):2");
    assert_eq!(r.allocatable_to("x").to_string(), "cpus:1");
}

#[test]
fn revocable_pools_under_plain_name() {
    let q = res("cpus:1;cpus{revocable}:2;cpus(r):3").scalar_quantities();
    assert_eq!(q.to_string(), "cpus:6");
}

#[test]
fn shrink_drops_or_keeps_unbounded_names() {
    let r = res("cpus:4;mem:100;disk:50;ports:[1-5]");
    let limit = Quantities::parse("cpus:1.5;mem:200").unwrap();
    assert_eq!(r.shrink(&limit, false).to_string(), "cpus:1.5;mem:100");
    assert_eq!(r.shrink(&limit, true).to_string(), "cpus:1.5;disk:50;mem:100;ports:[1-5]");
}

#[test]
fn shrink_never_splits_a_volume() {
    let r = res("disk(a)[v]:100;disk:40");
    let limit = Quantities::parse("disk:60").unwrap();
    assert_eq!(r.shrink(&limit, false).to_string(), "disk:40");
}

#[test]
fn quantities_keep_zero_and_reject_roles() {
    let q = Quantities::parse("cpus:0;mem:32").unwrap();
    assert!(q.has("cpus"));
    assert_eq!(q.to_string(), "cpus:0;mem:32");
    assert!(Quantities::parse("cpus(a):1").is_err());
    assert!(Quantities::parse("ports:[1-2]").is_err());
}

#[test]
fn contains_quantities_counts_range_elements() {
    let r = res("cpus:0.5;ports:[1-10]");
    assert!(r.contains_quantities(&Quantities::parse("ports:10").unwrap()));
    assert!(!r.contains_quantities(&Quantities::parse("ports:11").unwrap()));
    assert!(!r.contains_quantities(&Quantities::parse("cpus:0.5;mem:1").unwrap()));
}

#[test]
fn errors_quote_the_string_and_position() {
    let e = "cpus:1;mem:x".parse::<Resources>().unwrap_err();
    assert_eq!(e.position, 11);
    assert_eq!(
        e.to_string(),
        "invalid resources \"cpus:1;mem:x\": expected a decimal number at position 11"
    );
    for bad in [
        "cpus",
        "cpus:-1",
        "cpus(:1",
        "cpus{bogus}:1",
        "cpus{dynamic}:1",
        "disk{shared}:1",
        "ports:[5-1]",
        "ports:[1-2",
        "cpus:1;cpus:[1-2]",
        "c pus:1",
        "cpus(a//b):1",
        ":1",
    ] {
        assert!(bad.parse::<Resources>().is_err(), "{bad} should not parse");
    }
}

fn arb_resource() -> impl Strategy<Value = Resource> {
    let name = prop::sample::select(vec!["cpus", "mem", "disk", "gpus"]);
    let role = prop::sample::select(vec!["", "a", "a/b", "c"]);
    let flags = prop::sample::select(vec![
        ResourceFlags::NONE,
        ResourceFlags::REVOCABLE,
        ResourceFlags::DYNAMIC,
    ]);
    let scalar = (name, role, flags, 0i64..100_000).prop_map(|(n, r, f, v)| {
        let f = if r.is_empty() { f.without(ResourceFlags::DYNAMIC) } else { f };
        Resource {
            name: n.into(),
            reservation: r.into(),
            volume: Name::default(),
            flags: f,
            value: Value::Scalar(Scalar::from_millis(v)),
        }
    });
    let ports = prop::collection::vec((0u64..200, 0u64..20), 0..4).prop_map(|rs| Resource {
        name: "ports".into(),
        reservation: Name::default(),
        volume: Name::default(),
        flags: ResourceFlags::NONE,
        value: Value::Ranges(ranges::normalize(
            rs.into_iter().map(|(b, l)| Range { begin: b, end: b + l }).collect(),
        )),
    });
    let volume = (0i64..3).prop_map(|v| Resource {
        name: "disk".into(),
        reservation: "a".into(),
        volume: format!("v{v}").as_str().into(),
        flags: ResourceFlags::SHARED,
        value: Value::Scalar(Scalar::from_units(10 + v)),
    });
    prop_oneof![4 => scalar, 1 => ports, 1 => volume]
}

fn arb_resources() -> impl Strategy<Value = Resources> {
    prop::collection::vec(arb_resource(), 0..8).prop_map(Resources::from_entries)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parse_print_round_trips(r in arb_resources()) {
        let text = r.to_string();
        prop_assert_eq!(res(&text), r);
    }

    /// Scalars and shared copies form a multiset, so `a + b - b == a` always; ranges are sets,
    /// so the identity needs `b`'s ranges to be disjoint from `a`'s.
    #[test]
    fn add_then_subtract_is_identity(a in arb_resources(), b in arb_resources()) {
        let a_ranges = a.filter(|r| !r.is_scalar());
        let overlap = a_ranges.clone() - &(a_ranges.clone() - &b);
        prop_assume!(overlap.is_empty());
        prop_assert_eq!((a.clone() + &b) - &b, a);
    }

    #[test]
    fn sum_contains_both_parts(a in arb_resources(), b in arb_resources()) {
        let sum = a.clone() + &b;
        prop_assert!(sum.contains(&a));
        prop_assert!(sum.contains(&b));
    }

    #[test]
    fn contains_is_consistent_with_subtraction(a in arb_resources(), b in arb_resources()) {
        if a.contains(&b) {
            prop_assert_eq!((a.clone() - &b) + &b, a);
        } else {
            prop_assert_ne!((a.clone() - &b) + &b, a);
        }
    }

    #[test]
    fn difference_never_grows(a in arb_resources(), b in arb_resources()) {
        prop_assert!(a.contains(&(a.clone() - &b)));
    }

    #[test]
    fn shrink_respects_the_bound(a in arb_resources(), cpus in 0i64..50_000) {
        let mut bound = Quantities::new();
        bound.set("cpus", Scalar::from_millis(cpus));
        let shrunk = a.shrink(&bound, true);
        prop_assert!(shrunk.scalar("cpus") <= Scalar::from_millis(cpus));
        prop_assert!(a.contains(&shrunk));
    }
}

#[test]
fn intersection_takes_the_smaller_scalar_and_common_ranges_and_items() {
    let a = res("cpus:4;mem:1024;ports:[1-10];zones:{a,b}");
    let b = res("cpus:2;mem:4096;ports:[5-20];zones:{b,c};gpus:1");
    assert_eq!(a.intersection(&b).to_string(), "cpus:2;mem:1024;ports:[5-10];zones:{b}");
}

#[test]
fn intersection_keeps_reservations_apart() {
    let a = res("cpus:2;cpus(r1):2");
    let b = res("cpus(r1):1;cpus(r2):5");
    assert_eq!(a.intersection(&b).to_string(), "cpus(r1):1");
}

#[test]
fn intersection_keeps_the_fewer_copies_of_a_shared_volume() {
    let a = res("disk(a)[v]{shared}:100;disk(a)[v]{shared}:100;disk(a)[v]{shared}:100");
    let b = res("disk(a)[v]{shared}:100;disk(a)[v]{shared}:100");
    assert_eq!(a.intersection(&b), b);
}

#[test]
fn remaining_after_keeps_used_up_limits_as_zero() {
    let limits = Quantities::parse("cpus:4;gpus:0;mem:100").unwrap();
    let used = Quantities::parse("cpus:6;disk:5;mem:40").unwrap();
    assert_eq!(limits.remaining_after(&used).to_string(), "cpus:0;gpus:0;mem:60");
    let mut dropped = limits.clone();
    dropped.subtract(&used);
    assert!(!dropped.has("cpus"), "subtract forgets a used-up limit: {dropped}");
}

fn arb_quantities() -> impl Strategy<Value = Quantities> {
    prop::collection::vec((prop::sample::select(vec!["cpus", "mem", "gpus"]), 0i64..10_000), 0..4)
        .prop_map(|entries| {
            let mut q = Quantities::new();
            for (n, v) in entries {
                q.set(n, Scalar::from_millis(v));
            }
            q
        })
}

/// Set-valued resources (`zones:{…}`) over a small alphabet, so that containment happens.
fn arb_set_resources() -> impl Strategy<Value = Resources> {
    prop::collection::btree_set(prop::sample::select(vec!["a", "b", "c", "d", "e"]), 0..5).prop_map(
        |items| {
            if items.is_empty() {
                Resources::new()
            } else {
                let list: Vec<&str> = items.into_iter().collect();
                res(&format!("zones:{{{}}}", list.join(",")))
            }
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn intersection_is_commutative(a in arb_resources(), b in arb_resources()) {
        prop_assert_eq!(a.intersection(&b), b.intersection(&a));
    }

    #[test]
    fn intersection_is_contained_in_both(a in arb_resources(), b in arb_resources()) {
        let common = a.intersection(&b);
        prop_assert!(a.contains(&common));
        prop_assert!(b.contains(&common));
    }

    #[test]
    fn intersection_with_a_contained_part_is_that_part(a in arb_resources(), b in arb_resources()) {
        let part = a.intersection(&b);
        prop_assert_eq!(a.intersection(&part), part);
    }

    #[test]
    fn intersection_plus_difference_is_the_whole(a in arb_resources(), b in arb_resources()) {
        prop_assert_eq!(a.intersection(&b) + &(a.clone() - &b), a);
    }

    #[test]
    fn intersection_is_what_authors_spelled_by_hand(a in arb_resources(), b in arb_resources()) {
        prop_assert_eq!(a.intersection(&b), a.clone() - &(a.clone() - &b));
    }

    #[test]
    fn resources_contain_their_own_scalar_quantities(a in arb_resources()) {
        prop_assert!(a.contains_quantities(&a.scalar_quantities()));
    }

    #[test]
    fn containment_implies_quantity_containment(a in arb_resources(), b in arb_resources()) {
        let part = a.intersection(&b);
        prop_assert!(a.contains_quantities(&part.scalar_quantities()));
        prop_assert!(a.scalar_quantities().contains(&part.scalar_quantities()));
    }

    #[test]
    fn scalar_view_of_a_sum_covers_each_part(a in arb_resources(), b in arb_resources()) {
        let sum = (a.clone() + &b).scalar_quantities();
        prop_assert!(sum.contains(&a.scalar_quantities()));
        prop_assert!(sum.contains(&b.scalar_quantities()));
    }

    #[test]
    fn scalar_view_sums_each_name(a in arb_resources()) {
        let q = a.scalar_quantities();
        for name in ["cpus", "mem", "gpus"] {
            prop_assert_eq!(q.get(name), a.scalar(name));
        }
    }

    #[test]
    fn remaining_after_keeps_every_limited_name(limits in arb_quantities(), used in arb_quantities()) {
        let left = limits.remaining_after(&used);
        let names = |q: &Quantities| q.iter().map(|e| e.name).collect::<Vec<_>>();
        prop_assert_eq!(names(&left), names(&limits));
        for q in left.iter() {
            prop_assert_eq!(q.value, limits.get(&q.name).saturating_sub(used.get(&q.name)));
        }
    }

    #[test]
    fn remaining_after_without_zeros_is_subtract(limits in arb_quantities(), used in arb_quantities()) {
        let mut dropped = limits.clone();
        dropped.subtract(&used);
        let mut kept = Quantities::new();
        for q in limits.remaining_after(&used).iter().filter(|q| !q.value.is_zero()) {
            kept.set(q.name, q.value);
        }
        // `subtract` also keeps entries that were zero to begin with and had nothing taken.
        for q in dropped.iter().filter(|q| q.value.is_zero()) {
            kept.set(q.name, q.value);
        }
        prop_assert_eq!(kept, dropped);
    }

    /// Containment (a linear merge of entries, ranges and set items) agrees with subtraction:
    /// `a` contains `b` exactly when nothing of `b` is left once `a` is taken away.
    #[test]
    fn contains_exactly_when_nothing_is_left_over(a in arb_resources(), b in arb_resources()) {
        prop_assert_eq!(a.contains(&b), (b.clone() - &a).is_empty());
        let sum = a.clone() + &b;
        prop_assert_eq!(sum.contains(&b), (b.clone() - &sum).is_empty());
    }

    #[test]
    fn set_containment_is_subset(a in arb_set_resources(), b in arb_set_resources()) {
        prop_assert_eq!(a.contains(&b), (b.clone() - &a).is_empty());
        prop_assert!((a.clone() + &b).contains(&b));
    }
}

/// Entries as a module could hand them over, bypassing the constructors.
fn raw(entries: Vec<Resource>) -> Resources {
    Resources { items: entries.into() }
}

fn scalar_entry(name: &str, millis: i64) -> Resource {
    Resource::scalar(name, Scalar::from_millis(millis))
}

#[test]
fn checked_keeps_a_canonical_value_as_is() {
    let r = res("cpus:2;mem:1024;ports:[1-5];zones:{a,b}");
    assert!(matches!(r.checked(), Ok(std::borrow::Cow::Borrowed(_))));
}

#[test]
fn checked_canonicalises_unsorted_duplicate_and_zero_entries() {
    let r = raw(vec![
        scalar_entry("mem", 1_000_000),
        scalar_entry("cpus", 1000),
        scalar_entry("disk", 0),
        scalar_entry("cpus", 2000),
    ]);
    assert_eq!(r.checked().unwrap().into_owned(), res("cpus:3;mem:1000"));
}

#[test]
fn checked_canonicalises_overlapping_ranges_and_unsorted_sets() {
    let mut ports = scalar_entry("ports", 0);
    ports.value =
        Value::Ranges(vec![Range { begin: 5, end: 9 }, Range { begin: 1, end: 6 }].into());
    let mut zones = scalar_entry("zones", 0);
    zones.value = Value::Set(vec!["b".into(), "a".into(), "b".into()].into());
    let r = raw(vec![zones, ports]);
    assert_eq!(r.checked().unwrap().into_owned(), res("ports:[1-9];zones:{a,b}"));
}

#[test]
fn checked_rejects_a_negative_amount() {
    let r = raw(vec![
        scalar_entry("mem", 1_000_000),
        scalar_entry("cpus", -5000),
        scalar_entry("cpus", 1_000_000),
    ]);
    let e = r.checked().unwrap_err();
    assert_eq!(e.reason, "a negative amount", "{e}");
}

#[test]
fn checked_rejects_an_inverted_range() {
    let mut ports = scalar_entry("ports", 0);
    ports.value = Value::Ranges(vec![Range { begin: 9, end: 5 }].into());
    assert!(raw(vec![ports]).checked().unwrap_err().reason.contains("begins after it ends"));
}

#[test]
fn checked_rejects_bad_names_roles_and_mixed_value_types() {
    let bad_name = scalar_entry("cp;us", 1000);
    assert!(raw(vec![bad_name]).checked().is_err());
    let mut bad_role = scalar_entry("cpus", 1000);
    bad_role.reservation = "../etc".into();
    assert!(raw(vec![bad_role]).checked().is_err());
    let mut ports = scalar_entry("cpus", 0);
    ports.value = Value::Ranges(vec![Range { begin: 1, end: 2 }].into());
    let e = raw(vec![scalar_entry("cpus", 1000), ports]).checked().unwrap_err();
    assert!(e.reason.contains("two value types"), "{e}");
}

#[test]
fn resource_names_with_control_characters_are_refused_by_the_parser() {
    let e = "cp\u{1}us:1".parse::<Resources>().unwrap_err();
    assert!(e.to_string().contains("resource name contains a control character"), "{e}");
    let e = "cpus\0:1".parse::<Resources>().unwrap_err();
    assert!(e.to_string().contains("control character"), "{e}");
}

#[test]
fn reservations_follow_the_role_name_rules() {
    for bad in ["cpus(a/../b):1", "cpus(-a):1", "cpus(a b):1", "cpus(a/./b):1", "cpus(/a):1"] {
        assert!(bad.parse::<Resources>().is_err(), "{bad}");
    }
    assert!("cpus(a/b):1".parse::<Resources>().is_ok());
}

#[test]
fn resources_are_equal_exactly_when_their_canonical_text_is() {
    // Range lists compare as memory (Value's equality): the same answer as range by range.
    let cases = [
        "cpus:2;ports:[1-10,20-30]",
        "cpus:2;ports:[1-10,20-31]",
        "cpus:2;ports:[1-10]",
        "cpus:2;ports:[0-10,20-30]",
        "cpus:2;ports:[1-10,20-30];zones:{a,b}",
        "cpus:2;ports:[1-10,20-30];zones:{a,c}",
        "cpus(r1):2;ports:[1-10,20-30]",
        "cpus{revocable}:2;ports:[1-10,20-30]",
        "cpus:3;ports:[1-10,20-30]",
        "",
    ];
    for a in cases {
        for b in cases {
            let (ra, rb) = (a.parse::<Resources>().unwrap(), b.parse::<Resources>().unwrap());
            assert_eq!(ra == rb, a == b, "{a} vs {b}");
        }
    }
}
