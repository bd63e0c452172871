//! No crate of the workspace may have an import cycle among its modules that is not listed in
//! [`KNOWN`], and every cycle listed there must still exist (see the `import_cycles` crate doc
//! for what a cycle is). Run `cargo run -p import-cycles -- <crate dir>` to see a crate's
//! cycles with the references that make them.

use std::path::{Path, PathBuf};

/// The import cycles that exist today, as `(workspace member, cycle)`.
///
/// This list must only shrink: a new cycle fails the test, and so does a listed cycle that is
/// gone (remove its line then). Where a cycle shrinks but stays (a member leaves it), its line
/// changes to the smaller cycle.
const KNOWN: &[(&str, &str)] = &[];

/// The workspace root: this crate is `tools/import-cycles` in it.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `members` of the root `Cargo.toml`'s `[workspace]` table.
fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("the root Cargo.toml");
    let mut lines = manifest.lines().map(|line| line.split('#').next().unwrap_or("").trim());
    let mut list = String::new();
    for line in lines.by_ref() {
        if let Some(rest) = line.strip_prefix("members") {
            let rest = rest.trim_start().strip_prefix('=').expect("members = [").trim_start();
            list.push_str(rest);
            break;
        }
    }
    for line in lines {
        if list.contains(']') {
            break;
        }
        list.push_str(line);
    }
    let list = list.split(']').next().expect("a list").trim_start_matches('[');
    list.split(',')
        .map(|entry| entry.trim().trim_matches('"').to_string())
        .filter(|entry| !entry.is_empty())
        .collect()
}

#[test]
fn the_members_list_is_read() {
    let members = members(&workspace_root());
    assert!(members.iter().any(|m| m == "allocator-master"), "{members:?}");
    assert!(members.iter().any(|m| m == "tools/import-cycles"), "{members:?}");
}

#[test]
fn no_import_cycles_beyond_the_known_ones() {
    let root = workspace_root();
    let mut found = Vec::new();
    let mut new = String::new();
    let mut unfollowed = String::new();
    let mut checked = 0;
    for member in members(&root) {
        let dir = root.join(&member);
        if !dir.join("src").is_dir() {
            continue;
        }
        checked += 1;
        let report = import_cycles::check_package(&dir)
            .unwrap_or_else(|e| panic!("{member}: cannot be read: {e}"));
        for warning in &report.warnings {
            unfollowed.push_str(&format!("  {member}: {warning}\n"));
        }
        for cycle in &report.cycles {
            let key = cycle.key();
            if !KNOWN.contains(&(member.as_str(), key.as_str())) {
                let shown = cycle.to_string().replace('\n', "\n  ");
                new.push_str(&format!("  {member}: {shown}\n"));
            }
            found.push((member.clone(), key));
        }
    }
    assert!(checked > 0, "no workspace member with a src/ directory was found");
    let gone: Vec<String> = KNOWN
        .iter()
        .filter(|(member, key)| !found.iter().any(|(m, k)| m == member && k == key))
        .map(|(member, key)| format!("  ({member:?}, {key:?}),\n"))
        .collect();
    let mut message = String::new();
    if !new.is_empty() {
        message.push_str(&format!(
            "New import cycles (modules that reach each other; break them, for instance by \
             moving what both need into one of them or into a third module; \
             `cargo run -p import-cycles -- --all <member>` lists every reference):\n{new}"
        ));
    }
    if !gone.is_empty() {
        message.push_str(&format!(
            "Listed in KNOWN (tools/import-cycles/tests/workspace.rs) but no longer found: \
             remove these lines (or, where a cycle only shrank, replace them with the new \
             cycle):\n{}",
            gone.concat()
        ));
    }
    if !unfollowed.is_empty() {
        message.push_str(&format!(
            "The scanner could not follow these (so part of a crate went unchecked):\n{unfollowed}"
        ));
    }
    assert!(message.is_empty(), "\n{message}");
}
