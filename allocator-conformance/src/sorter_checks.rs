//! The sorter checks: the behaviours every sorter has (Mesos's sorter tests that hold for any
//! order), each a [`SorterStep`] script whose expectations must all hold. A sorter that does
//! not answer allocation queries (`unsupported`) skips the checks that ask them.

use allocator_api::{Quantities, Resources};
use allocator_host::registry::ModuleRegistry;

use crate::check::Check;
use crate::sorter_script::{self, SorterStep};

use SorterStep::*;

fn s(x: &str) -> String {
    x.to_owned()
}

fn r(text: &str) -> Resources {
    text.parse().expect("valid resource text")
}

fn q(text: &str) -> Quantities {
    Quantities::parse(text).expect("valid quantities")
}

fn set(clients: &[&str]) -> SorterStep {
    ExpectSortSet(clients.iter().map(|c| s(c)).collect())
}

/// Adds `client` and activates it.
fn active(client: &str) -> [SorterStep; 2] {
    [Add(s(client)), Activate(s(client))]
}

/// "Adds clients inactive; activate and deactivate are idempotent; inactive clients stay
/// counted."
fn add_is_inactive() -> Vec<SorterStep> {
    vec![
        Add(s("a")),
        set(&[]),
        ExpectCount(1),
        ExpectContains(s("a"), true),
        Activate(s("a")),
        Activate(s("a")),
        set(&["a"]),
        Add(s("b")),
        Activate(s("b")),
        Deactivate(s("a")),
        Deactivate(s("a")),
        set(&["b"]),
        ExpectCount(2),
        Remove(s("a")),
        ExpectContains(s("a"), false),
        ExpectCount(1),
    ]
}

/// Mesos's RemoveLeafCollapseParent: removing `b/c` turns `b` back into a plain leaf.
fn remove_leaf_collapses_parent() -> Vec<SorterStep> {
    [active("a"), active("b"), active("b/c")]
        .concat()
        .into_iter()
        .chain([
            set(&["a", "b", "b/c"]),
            ExpectCount(3),
            Remove(s("b/c")),
            set(&["a", "b"]),
            ExpectContains(s("b/c"), false),
            ExpectContains(s("b"), true),
            Remove(s("b")),
            set(&["a"]),
        ])
        .collect()
}

/// Mesos's RemoveLeafCollapseParentInactive: `b` keeps its inactive state through the collapse.
fn remove_inactive_leaf_collapses_parent() -> Vec<SorterStep> {
    let mut steps = active("a").to_vec();
    steps.push(Add(s("b")));
    steps.extend(active("b/c"));
    steps.extend([
        set(&["a", "b/c"]),
        Remove(s("b/c")),
        set(&["a"]),
        Activate(s("b")),
        set(&["a", "b"]),
    ]);
    steps
}

/// Mesos's AllocationForInactiveClient: inactive clients keep and gain allocations.
fn allocation_for_inactive_client() -> Vec<SorterStep> {
    vec![
        AddAgent(s("s1"), q("cpus:10;mem:10")),
        Add(s("a")),
        Add(s("b")),
        Activate(s("b")),
        Allocated(s("a"), s("s1"), r("cpus:2;mem:2")),
        Allocated(s("b"), s("s1"), r("cpus:3;mem:3")),
        ExpectAllocation(s("a"), q("cpus:2;mem:2")),
        ExpectAllocation(s("b"), q("cpus:3;mem:3")),
        set(&["b"]),
        Deactivate(s("b")),
        Allocated(s("b"), s("s1"), r("cpus:1")),
        ExpectAllocation(s("b"), q("cpus:4;mem:3")),
    ]
}

/// Mesos's MultipleSlaves / MultipleSlavesUpdateAllocation: allocations add up across agents
/// and come back per agent.
fn multiple_agents() -> Vec<SorterStep> {
    let mut steps =
        vec![AddAgent(s("s1"), q("cpus:10;mem:100")), AddAgent(s("s2"), q("cpus:10;mem:100"))];
    steps.extend(active("f"));
    steps.extend([
        Allocated(s("f"), s("s1"), r("cpus:2;mem:20")),
        Allocated(s("f"), s("s2"), r("cpus:3;mem:30;ports:[1-10]")),
        ExpectAllocation(s("f"), q("cpus:5;mem:50")),
        Unallocated(s("f"), s("s1"), r("cpus:2;mem:20")),
        ExpectAllocation(s("f"), q("cpus:3;mem:30")),
        Update(s("f"), s("s2"), r("cpus:3;mem:30"), r("cpus:1;mem:5;disk:7")),
        ExpectAllocation(s("f"), q("cpus:1;mem:5;disk:7")),
    ]);
    steps
}

/// Mesos's UpdateAllocationNestedClient: updates on a nested client show in its allocation.
fn update_allocation_nested_client() -> Vec<SorterStep> {
    let mut steps = vec![AddAgent(s("s1"), q("cpus:100;mem:100"))];
    steps.extend(active("a/x"));
    steps.extend(active("a/y"));
    steps.extend([
        Allocated(s("a/x"), s("s1"), r("cpus:10;mem:10")),
        Update(s("a/x"), s("s1"), r("cpus:10;mem:10"), r("cpus(a){dynamic}:10;mem:10")),
        ExpectAllocation(s("a/x"), q("cpus:10;mem:10")),
        ExpectAllocation(s("a/y"), q("")),
        set(&["a/x", "a/y"]),
    ]);
    steps
}

/// Mesos's `DRFSorter::remove`: when `a`'s last child `a/x` goes, the inner node `a` collapses
/// back into the leaf of client `a`, which keeps its own allocation and activity; `a/x` leaves
/// with its allocation.
fn remove_last_child_keeps_the_parents_allocation() -> Vec<SorterStep> {
    let mut steps = vec![AddAgent(s("s1"), q("cpus:4;mem:1024"))];
    steps.extend(active("a/x"));
    steps.push(Allocated(s("a/x"), s("s1"), r("cpus:2;mem:512")));
    steps.extend(active("a"));
    steps.push(Allocated(s("a"), s("s1"), r("cpus:1")));
    steps.extend(active("c/d"));
    steps.extend([
        set(&["a", "a/x", "c/d"]),
        Unallocated(s("a/x"), s("s1"), r("cpus:2;mem:512")),
        Remove(s("a/x")),
        ExpectContains(s("a/x"), false),
        ExpectCount(2),
        set(&["a", "c/d"]),
        ExpectAllocation(s("a"), q("cpus:1")),
    ]);
    steps
}

/// The sorter checks, each a name and its script.
pub fn scripts() -> Vec<(&'static str, Vec<SorterStep>)> {
    vec![
        ("adds clients inactive; activate and deactivate are idempotent", add_is_inactive()),
        ("removing a leaf collapses its parent", remove_leaf_collapses_parent()),
        ("a collapsed parent keeps its inactive state", remove_inactive_leaf_collapses_parent()),
        ("tracks allocations of inactive clients", allocation_for_inactive_client()),
        ("tracks allocations over several agents", multiple_agents()),
        ("updates allocations of nested clients", update_allocation_nested_client()),
        (
            "a parent whose last child goes keeps its own allocation",
            remove_last_child_keeps_the_parents_allocation(),
        ),
    ]
}

/// Runs every sorter check against sorter `name` (a loaded sorter module or `drf`), each on a
/// fresh sorter with the default configuration.
pub fn run_sorter_checks(registry: &ModuleRegistry, name: &str) -> Vec<Check> {
    scripts().into_iter().map(|(check, steps)| run_one(registry, name, check, &steps)).collect()
}

fn run_one(
    registry: &ModuleRegistry,
    name: &str,
    check: &'static str,
    steps: &[SorterStep],
) -> Check {
    let mut sorter =
        match registry.create_sorter(name, "the sorter under test", &Default::default()) {
            Ok(sorter) => sorter,
            Err(e) => return Check::new(check, Some(e.to_string())),
        };
    let mut first_failure = None;
    let result = sorter_script::run(sorter.as_mut(), steps, &mut |index, outcome| {
        if !outcome.ok && first_failure.is_none() {
            first_failure = Some(format!(
                "step {index}: expectation failed: {} expected: {} actual: {}",
                steps[index].subject(),
                outcome.expected,
                outcome.actual
            ));
        }
    });
    match result {
        Err(e) if e.error.to_string().contains("is not supported by this module") => Check {
            name: check,
            failure: None,
            skipped: Some(format!("step {}: {}", e.index, e.error)),
        },
        Err(e) => Check::new(
            check,
            Some(format!("step {}: sorter '{name}' failed: {}", e.index, e.error)),
        ),
        Ok(()) => Check::new(check, first_failure),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_asks_something() {
        for (name, steps) in scripts() {
            assert!(steps.iter().any(SorterStep::is_expectation), "{name} expects nothing");
        }
    }
}
