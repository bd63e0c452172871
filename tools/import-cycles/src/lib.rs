//! `import-cycles`: finds import cycles among the modules of a crate.
//!
//! # The module tree
//!
//! Each crate root of a package directory is analysed on its own: `src/lib.rs`, `src/main.rs`,
//! `src/bin/*.rs`, `src/bin/*/main.rs`, and the `*.rs` and `*/main.rs` under `tests/`,
//! `benches/` and `examples/` (Cargo's target auto-discovery; `path =` settings in
//! `Cargo.toml` are not read). From the root, the tree follows the `mod` declarations as rustc
//! does: `mod a;` in `src/lib.rs` is `src/a.rs` or `src/a/mod.rs`, `mod b;` in `src/a.rs` is
//! `src/a/b.rs` or `src/a/b/mod.rs`; a file that no `mod` reaches is not part of the crate and
//! is not read. A `#[path = "…"]` attribute on a `mod` is honoured as rustc honours it
//! (relative to the declaring file's directory, or inside inline modules to theirs; the file it
//! names looks for its own `mod`s beside itself, like a `mod.rs`), so
//! `#[path = "scheduler_tests.rs"] mod tests;` in `mesos/scheduler.rs` is the module
//! `mesos::scheduler::tests` read from `mesos/scheduler_tests.rs`. An inline `mod x { … }`
//! block is a module of the tree too, a child of the module it is written in, so `super::`
//! inside it means the module around it. Modules behind `#[cfg(…)]` are in the tree like any
//! other: test code (`#[cfg(test)] mod tests;`, a `tests.rs`, an inline `mod tests`) counts the
//! same as the rest, since a cycle through tests still ties the modules' sources together; its
//! references are marked `[test]` in the output, so that an edge made by test code alone can be
//! told apart.
//!
//! # References
//!
//! Comments (doc comments included) and string, character and byte literals are dropped first,
//! so an intra-doc link to `crate::serve` or a string `"crate::serve"` is no reference. Then:
//!
//! * Every path that starts with `crate::`, `$crate::`, `super::` or `self::` is a reference,
//!   wherever it is written: in a `use` declaration (a `use` tree's groups are flattened:
//!   `pub use a::{b, c::{self, d as e}}` gives `a::b`, `a::c`, `a::c::d`; `r#` identifiers
//!   lose their `r#`), in code (`crate::b::f()`, `super::b::T`,
//!   `<crate::b::T as super::Tr>::X`), in types, attributes and macro bodies. `super` and
//!   `self` resolve from the module the path is written in.
//! * A path *names* the deepest module of the tree its leading segments walk to:
//!   `crate::serve::http::Server` names `serve::http` if that module exists, else `serve`.
//!   Where the rest of the path goes through a name that a module-level `use` binds in that
//!   module (a re-export such as `pub use containment::Engine;`, a rename `use x::Y as Z;`),
//!   the binding is followed, recursively, to the module that holds what it names, which the
//!   path then *reaches* too. Both count: the `use` is an item of the module that holds it, and
//!   what it re-exports is an item of the module it comes from. So `crate::simulation::Setup`
//!   with `pub use crate::master::Setup;` in `simulation` is a reference to `simulation` and to
//!   `master` (shown with `(re-exported from master)`), and `crate::ModuleError` with
//!   `pub use error::ModuleError;` at the root is a reference to `error`. A binding of another
//!   crate's item leads nowhere.
//! * A bare name (not after `.` or `::`; capitalised, or followed by `(`, `::` or `!`) in a
//!   module with a module-level glob import (`use super::*;`) is a reference where the glob's
//!   module binds that name with a `use` and the module itself neither declares nor binds it:
//!   `RunState` in `hierarchical/quota.rs`, whose parent has `use run::RunState;`, reaches
//!   `hierarchical::run` (shown as `RunState (through use super::*)`). Names the glob's module
//!   declares itself are references to that module, which its `use` already makes.
//! * Paths that start with anything else are not followed: another crate's path
//!   (`allocator_host::registry::X` is not the local `registry`; `::x::y`), a name brought in
//!   by a `use` (the `use` is the reference), and a child module named from its parent
//!   (`child::X`: a parent-to-child reference, which never makes a cycle).
//!
//! # Edges and cycles
//!
//! For each module `M`, the sibling graph of `M` has `M`'s direct child modules as nodes and
//! an edge `A -> B` when some file (or inline module) in `A`'s subtree holds a reference that
//! names or reaches a module in `B`'s subtree. A reference between a module and one of its own
//! ancestors (a child's `super::Thing` defined in the parent's own file, a parent's
//! `pub use child::X`) makes no edge. A *cycle* is a strongly connected component of more than
//! one node in one of these sibling graphs; it is named by its parent's path and its members,
//! sorted: `{driver, serve}` for siblings at the crate root, `master::{ledger, state}` deeper,
//! with a `[src/main.rs] ` prefix for a crate root other than `src/lib.rs`.
//!
//! # Limits
//!
//! This is a token scanner, not a compiler. Macros are taken as written where they are
//! defined (`super::` in a `macro_rules!` body resolves there, not where the macro is used);
//! what a macro expands to at its call sites, a macro found by textual scope (`#[macro_use]`),
//! and `include!` are not seen. A glob that imports another glob's names (a glob of a module
//! that itself has `use x::*;`) is followed one level only, and a bare name that a glob brings
//! in is missed where it is neither capitalised nor called (`.map(helper)`); a local variable
//! that shadows a glob-imported function of the same name and is called would count, and so
//! would a call to a function declared inside a function body with such a name. `#[path]` is
//! read only in its plain form `#[path = "file.rs"]` (`#[cfg_attr(…, path = …)]` is not), and
//! of alternative `use`s of one name under different `#[cfg]`s, the first is followed.

#![deny(missing_docs)]

mod lex;
mod scan;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use scan::{Module, Scan, scan_root};

/// A reference written in a file: where it is and what it says.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reference {
    /// The file, relative to its crate root's directory (`simulation.rs`, `master/ledger.rs`).
    pub file: String,
    /// The 1-based line.
    pub line: usize,
    /// The path as written, a `use` tree's leaf flattened: `use crate::serve::X`,
    /// `crate::serve::f`.
    pub text: String,
    /// Written in a `#[cfg(test)]` module (or one inside it); it counts like any other.
    pub test: bool,
}

/// `file:line text`, with ` [test]` after a reference from test code.
impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{} {}", self.file, self.line, self.text)?;
        if self.test {
            write!(f, " [test]")?;
        }
        Ok(())
    }
}

/// An edge of a sibling graph: some file under `from` references something under `to`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The referring sibling's name.
    pub from: String,
    /// The referenced sibling's name.
    pub to: String,
    /// Every reference that makes the edge, in file and line order.
    pub references: Vec<Reference>,
}

/// A cycle: siblings (children of one module) that reach each other through references.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cycle {
    /// The crate root, relative to the package directory (`src/lib.rs`, `src/main.rs`); empty
    /// for sources given to [`check_sources`].
    pub root: String,
    /// The path of the siblings' parent module (`master::clients`); empty for the crate root.
    pub parent: String,
    /// The siblings' names, sorted.
    pub members: Vec<String>,
    /// The edges among the members, sorted by `from` and `to`.
    pub edges: Vec<Edge>,
}

impl Cycle {
    /// The cycle's name: `{a, b}`, `parent::{a, b}`, or with a `[src/main.rs] ` prefix where
    /// the crate root is not the library's.
    pub fn key(&self) -> String {
        let mut key = String::new();
        if !self.root.is_empty() && self.root != "src/lib.rs" {
            key.push_str(&format!("[{}] ", self.root));
        }
        if !self.parent.is_empty() {
            key.push_str(&self.parent);
            key.push_str("::");
        }
        key.push('{');
        key.push_str(&self.members.join(", "));
        key.push('}');
        key
    }
}

/// Shows the key, then one indented line per edge with its first reference and how many
/// more there are (and `[test code only]` where every one is in test code); `{:#}` lists
/// every reference of every edge.
impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.key())?;
        for edge in &self.edges {
            write!(f, "\n  {} -> {} ", edge.from, edge.to)?;
            if edge.references.iter().all(|r| r.test) {
                write!(f, "[test code only] ")?;
            }
            write!(f, "(")?;
            if f.alternate() {
                let all: Vec<String> = edge.references.iter().map(|r| r.to_string()).collect();
                write!(f, "{})", all.join("; "))?;
            } else {
                write!(f, "{}", edge.references[0])?;
                match edge.references.len() - 1 {
                    0 => write!(f, ")")?,
                    more => write!(f, "; {more} more)")?,
                }
            }
        }
        Ok(())
    }
}

/// The sibling graph of one module: the edges among its direct children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    /// The crate root, as in [`Cycle::root`].
    pub root: String,
    /// The path of the module whose children are the nodes; empty for the crate root.
    pub parent: String,
    /// The edges, sorted by `from` and `to`.
    pub edges: Vec<Edge>,
}

/// Shows the parent (`crate` for the root), then one indented line per edge with all its
/// references.
impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.root.is_empty() && self.root != "src/lib.rs" {
            write!(f, "[{}] ", self.root)?;
        }
        write!(f, "{}", if self.parent.is_empty() { "crate" } else { &self.parent })?;
        for edge in &self.edges {
            let all: Vec<String> = edge.references.iter().map(|r| r.to_string()).collect();
            write!(f, "\n  {} -> {} ({})", edge.from, edge.to, all.join("; "))?;
        }
        Ok(())
    }
}

/// What the checker found in a package directory or a set of sources.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The cycles, by crate root, then parent module, then members.
    pub cycles: Vec<Cycle>,
    /// Every sibling graph that has an edge, cycle or not, by crate root, then parent.
    pub graphs: Vec<Graph>,
    /// Things the scanner could not follow: a `mod x;` with no file, a file reached twice. Each
    /// means part of the crate went unchecked.
    pub warnings: Vec<String>,
}

/// The full path of a module (`a::b`; empty for the root).
fn module_path(modules: &[Module], mut id: usize) -> String {
    let mut names = Vec::new();
    while let Some(parent) = modules[id].parent {
        names.push(modules[id].name.as_str());
        id = parent;
    }
    names.reverse();
    names.join("::")
}

/// How paths resolve in one crate root: its module tree and its modules' `use` bindings.
struct Resolver<'a> {
    modules: &'a [Module],
    bindings: BTreeMap<(usize, &'a str), &'a [String]>,
}

impl<'a> Resolver<'a> {
    fn new(scan: &'a Scan) -> Self {
        let mut bindings = BTreeMap::new();
        for binding in &scan.bindings {
            // The first of several (`#[cfg]` alternatives) wins.
            bindings
                .entry((binding.module, binding.name.as_str()))
                .or_insert(binding.segments.as_slice());
        }
        Resolver { modules: &scan.modules, bindings }
    }

    /// The module a path written in `from` names: the deepest module of the tree its leading
    /// segments walk to; `None` where `super` would climb past the crate root.
    fn named(&self, from: usize, segments: &[String]) -> Option<usize> {
        let mut module = match segments.first()?.as_str() {
            "crate" => 0,
            "self" => from,
            "super" => self.modules[from].parent?,
            _ => return None,
        };
        for segment in &segments[1..] {
            match segment.as_str() {
                "super" => module = self.modules[module].parent?,
                "self" => {}
                name => match self.modules[module].children.get(name) {
                    Some(&child) => module = child,
                    None => break,
                },
            }
        }
        Some(module)
    }

    /// Where a path written in `from` leads once `use` bindings (re-exports included) are
    /// followed: the module holding what it names, and whether every segment named a module.
    /// `None` where it leaves the crate (a binding of another crate's item) or cannot be
    /// resolved.
    fn defined(&self, from: usize, segments: &[String], depth: usize) -> Option<(usize, bool)> {
        if depth > 32 {
            return None;
        }
        let (first, rest) = segments.split_first()?;
        let mut module = match first.as_str() {
            "crate" => 0,
            "self" => from,
            "super" => self.modules[from].parent?,
            name => match self.modules[from].children.get(name) {
                Some(&child) => child,
                None => {
                    // A name in scope (only `use` paths start this way): a binding, or else
                    // another crate.
                    let target = self.bindings.get(&(from, name))?;
                    match self.defined(from, target, depth + 1)? {
                        (module, true) => module,
                        item => return Some(item),
                    }
                }
            },
        };
        for segment in rest {
            match segment.as_str() {
                "super" => module = self.modules[module].parent?,
                "self" | "*" => {}
                name => {
                    if let Some(&child) = self.modules[module].children.get(name) {
                        module = child;
                    } else if let Some(target) = self.bindings.get(&(module, name)) {
                        match self.defined(module, target, depth + 1)? {
                            (target, true) => module = target,
                            item => return Some(item),
                        }
                    } else {
                        return Some((module, false));
                    }
                }
            }
        }
        Some((module, true))
    }
}

/// The chain of modules from the root down to `id`.
fn chain(modules: &[Module], mut id: usize) -> Vec<usize> {
    let mut chain = vec![id];
    while let Some(parent) = modules[id].parent {
        chain.push(parent);
        id = parent;
    }
    chain.reverse();
    chain
}

/// The sibling-graph edge a reference from `from` to `to` makes: `(parent, a, b)`, or `None`
/// where one is the other or an ancestor of it.
fn sibling_edge(modules: &[Module], from: usize, to: usize) -> Option<(usize, usize, usize)> {
    let from = chain(modules, from);
    let to = chain(modules, to);
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    if common == from.len() || common == to.len() {
        return None;
    }
    Some((from[common - 1], from[common], to[common]))
}

/// Tarjan's strongly connected components of a graph over `0..n`.
fn components(n: usize, out: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        out: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        found: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.out[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(index) if s.on_stack[w] => s.low[v] = s.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.found.push(component);
        }
    }
    let mut s = State {
        out,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.found
}

/// The sibling graphs of one scanned crate root that have an edge.
fn graphs_of(scan: &Scan, root: &str) -> Vec<Graph> {
    let modules = &scan.modules;
    // (parent, from child, to child) -> the references making the edge.
    let mut edges: BTreeMap<(usize, usize, usize), Vec<Reference>> = BTreeMap::new();
    let resolver = Resolver::new(scan);
    for raw in &scan.refs {
        let named = resolver.named(raw.module, &raw.segments);
        let defined = resolver.defined(raw.module, &raw.segments, 0).map(|(module, _)| module);
        let mut add = |target: usize, text: String| {
            if let Some(edge) = sibling_edge(modules, raw.module, target) {
                let reference = Reference {
                    file: raw.file.clone(),
                    line: raw.line,
                    text,
                    test: modules[raw.module].test,
                };
                edges.entry(edge).or_default().push(reference);
            }
        };
        if let Some(named) = named {
            add(named, raw.text.clone());
        }
        if let Some(defined) = defined
            && Some(defined) != named
        {
            let path = module_path(modules, defined);
            let path = if path.is_empty() { "crate" } else { path.as_str() };
            add(defined, format!("{} (re-exported from {path})", raw.text));
        }
    }
    // Bare names that a glob import (`use super::*;`) brings in from a `use` binding of the
    // glob's module: `RunState` in a child of a module that has `use run::RunState;`.
    for bare in &scan.bare {
        let name = bare.name.as_str();
        let shadowed = modules[bare.module].children.contains_key(name)
            || resolver.bindings.contains_key(&(bare.module, name))
            || scan.items.contains(&(bare.module, bare.name.clone()));
        if shadowed {
            continue;
        }
        for (module, path) in &scan.globs {
            if *module != bare.module {
                continue;
            }
            let Some((glob, true)) = resolver.defined(*module, path, 0) else { continue };
            if let Some(binding) = resolver.bindings.get(&(glob, name)) {
                if let Some((target, _)) = resolver.defined(glob, binding, 0)
                    && let Some(edge) = sibling_edge(modules, bare.module, target)
                {
                    edges.entry(edge).or_default().push(Reference {
                        file: bare.file.clone(),
                        line: bare.line,
                        text: format!("{name} (through use {}::*)", path.join("::")),
                        test: modules[bare.module].test,
                    });
                }
                break;
            }
            if modules[glob].children.contains_key(name)
                || scan.items.contains(&(glob, bare.name.clone()))
            {
                break;
            }
        }
    }
    let mut graphs: BTreeMap<usize, Graph> = BTreeMap::new();
    for ((parent, from, to), mut references) in edges {
        references.sort();
        references.dedup();
        let graph = graphs.entry(parent).or_insert_with(|| Graph {
            root: root.to_string(),
            parent: module_path(modules, parent),
            edges: Vec::new(),
        });
        graph.edges.push(Edge {
            from: modules[from].name.clone(),
            to: modules[to].name.clone(),
            references,
        });
    }
    let mut graphs: Vec<Graph> = graphs.into_values().collect();
    for graph in &mut graphs {
        graph.edges.sort_by(|x, y| (&x.from, &x.to).cmp(&(&y.from, &y.to)));
    }
    graphs.sort_by(|x, y| x.parent.cmp(&y.parent));
    graphs
}

/// The cycles of a sibling graph: its strongly connected components of more than one node.
fn cycles_in(graph: &Graph) -> Vec<Cycle> {
    let names: Vec<&str> = graph
        .edges
        .iter()
        .flat_map(|e| [e.from.as_str(), e.to.as_str()])
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let index = |name: &str| names.binary_search(&name).expect("a node");
    let mut out = vec![BTreeSet::new(); names.len()];
    for edge in &graph.edges {
        out[index(&edge.from)].insert(index(&edge.to));
    }
    let mut cycles: Vec<Cycle> = components(names.len(), &out)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            let mut members: Vec<String> =
                component.iter().map(|&n| names[n].to_string()).collect();
            members.sort();
            let edges = graph
                .edges
                .iter()
                .filter(|e| members.contains(&e.from) && members.contains(&e.to))
                .cloned()
                .collect();
            Cycle { root: graph.root.clone(), parent: graph.parent.clone(), members, edges }
        })
        .collect();
    cycles.sort_by(|x, y| x.members.cmp(&y.members));
    cycles
}

/// A report from the sibling graphs of crate roots.
fn report(graphs: Vec<Graph>, warnings: Vec<String>) -> Report {
    let cycles = graphs.iter().flat_map(cycles_in).collect();
    Report { cycles, graphs, warnings }
}

/// Checks sources held in memory, as one crate whose root is `lib.rs`: `files` are
/// `(path, text)` pairs with paths relative to the crate root's directory (`lib.rs`, `a.rs`,
/// `a/mod.rs`, `a/b.rs`).
pub fn check_sources(files: &[(&str, &str)]) -> Report {
    let files: BTreeMap<PathBuf, &str> =
        files.iter().map(|(path, text)| (PathBuf::from(path), *text)).collect();
    let read = |path: &Path| files.get(path).map(|text| text.to_string());
    let scan = scan_root(Path::new("lib.rs"), &read);
    report(graphs_of(&scan, ""), scan.warnings)
}

/// The crate roots of a package directory, by Cargo's target auto-discovery, relative to it.
pub fn crate_roots(package: &Path) -> io::Result<Vec<PathBuf>> {
    let mut roots = Vec::new();
    for file in ["src/lib.rs", "src/main.rs"] {
        if package.join(file).is_file() {
            roots.push(PathBuf::from(file));
        }
    }
    for dir in ["src/bin", "tests", "benches", "examples"] {
        let Ok(entries) = fs::read_dir(package.join(dir)) else { continue };
        let mut found = Vec::new();
        for entry in entries {
            let path = entry?.path();
            let name = path.file_name().unwrap_or_default();
            if path.is_file() && path.extension().is_some_and(|e| e == "rs") {
                found.push(Path::new(dir).join(name));
            } else if path.join("main.rs").is_file() {
                found.push(Path::new(dir).join(name).join("main.rs"));
            }
        }
        found.sort();
        roots.extend(found);
    }
    Ok(roots)
}

/// Checks every crate root of the package directory `package` (see [`crate_roots`]).
pub fn check_package(package: &Path) -> io::Result<Report> {
    let mut graphs = Vec::new();
    let mut warnings = Vec::new();
    let read = |path: &Path| fs::read_to_string(path).ok();
    for root in crate_roots(package)? {
        let shown = root.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>();
        let shown = shown.join("/");
        let scan = scan_root(&package.join(&root), &read);
        graphs.extend(graphs_of(&scan, &shown));
        warnings.extend(scan.warnings.into_iter().map(|w| format!("{shown}: {w}")));
    }
    Ok(report(graphs, warnings))
}

#[cfg(test)]
mod tests;
