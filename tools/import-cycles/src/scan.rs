//! Reads one crate root and the files its `mod` declarations reach: builds the module tree and
//! collects every `crate::`/`super::`/`self::` path written in code, with the module it is
//! written in.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use crate::lex::{Tok, Token, tokenize};

/// A module of the tree: a file module or an inline `mod x { … }` block.
#[derive(Debug)]
pub(crate) struct Module {
    pub(crate) name: String,
    pub(crate) parent: Option<usize>,
    pub(crate) children: BTreeMap<String, usize>,
    /// Declared under `#[cfg(test)]`, or inside such a module.
    pub(crate) test: bool,
}

/// A path starting with `crate`, `super` or `self`, as written in a module.
#[derive(Debug)]
pub(crate) struct RawRef {
    /// The module the path is written in (an inline module where it is inside one).
    pub(crate) module: usize,
    /// The file, relative to the crate root's directory, with `/` separators.
    pub(crate) file: String,
    pub(crate) line: usize,
    /// The segments, the first being `crate`, `super` or `self`; a group in a `use` tree is
    /// flattened into one path per leaf; a glob ends in `*`.
    pub(crate) segments: Vec<String>,
    /// The path as it is shown: `use crate::a::X` or `crate::a::f`.
    pub(crate) text: String,
}

/// A name a module-level `use` declaration brings into a module: `use a::b::C as D;` binds
/// `D` to `a::b::C` (resolved from the module it is declared in).
#[derive(Debug)]
pub(crate) struct Binding {
    pub(crate) module: usize,
    pub(crate) name: String,
    pub(crate) segments: Vec<String>,
}

/// A bare identifier written in a module, one that may name something a glob `use` brought in:
/// a capitalised name, or one followed by `(`, `::` or `!`, not after `.` or `::` and not the
/// name of what an item declaration or `let` introduces.
#[derive(Debug)]
pub(crate) struct Bare {
    pub(crate) module: usize,
    pub(crate) name: String,
    pub(crate) file: String,
    pub(crate) line: usize,
}

/// One leaf of a path or `use` tree: its segments from the start of the tree, and the name an
/// `as` gives it.
#[derive(Debug)]
struct Leaf {
    segments: Vec<String>,
    rename: Option<String>,
    /// The line of its last segment.
    line: usize,
}

/// The module tree of one crate root (module 0) and the paths written in it.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub(crate) modules: Vec<Module>,
    pub(crate) refs: Vec<RawRef>,
    pub(crate) bindings: Vec<Binding>,
    /// Module-level glob imports (`use super::*;`): the module and the path before the `*`.
    pub(crate) globs: Vec<(usize, Vec<String>)>,
    /// The names of the items declared at module level (`struct`, `enum`, `union`, `trait`,
    /// `fn`, `type`, `const`, `static`, `macro_rules!`), by module.
    pub(crate) items: BTreeSet<(usize, String)>,
    pub(crate) bare: Vec<Bare>,
    pub(crate) warnings: Vec<String>,
}

/// Keywords after which an identifier is being declared, not used.
const DECLARING: [&str; 12] = [
    "fn", "struct", "enum", "union", "trait", "type", "const", "static", "mod", "let", "mut", "ref",
];

/// Keywords that introduce an item's name at module level.
const ITEM_KEYWORDS: [&str; 8] =
    ["struct", "enum", "union", "trait", "fn", "type", "const", "static"];

/// Where the `mod` declarations of a file (or of an inline module in it) look for files, as
/// rustc does: `dir` plus, for a file that is not a `mod.rs`/crate root/`#[path]` file, its own
/// name (`relative`), which `#[path]` attributes outside inline modules leave out.
#[derive(Clone, Debug)]
struct Dirs {
    dir: PathBuf,
    relative: Option<String>,
}

impl Dirs {
    fn with_relative(&self) -> PathBuf {
        match &self.relative {
            Some(name) => self.dir.join(name),
            None => self.dir.clone(),
        }
    }
}

/// An open module while a file is walked: the file module itself, or an inline block.
struct Frame {
    module: usize,
    dirs: Dirs,
    /// The brace depth inside the block; 0 for the file module.
    depth: usize,
}

/// A file still to read: its path, its module and where its `mod`s look.
struct Pending {
    path: PathBuf,
    module: usize,
    dirs: Dirs,
}

fn display_path(path: &Path, base: &Path) -> String {
    let relative = path.strip_prefix(base).unwrap_or(path);
    let parts: Vec<String> =
        relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    parts.join("/")
}

impl Scan {
    fn child(&mut self, parent: usize, name: &str, test: bool) -> usize {
        if let Some(&id) = self.modules[parent].children.get(name) {
            return id;
        }
        let id = self.modules.len();
        let test = test || self.modules[parent].test;
        self.modules.push(Module {
            name: name.to_string(),
            parent: Some(parent),
            children: BTreeMap::new(),
            test,
        });
        self.modules[parent].children.insert(name.to_string(), id);
        id
    }
}

/// Scans the crate root `root` and every file its `mod` declarations reach. `read` gives a
/// file's text, or `None` where there is no such file. File names in references and warnings
/// are relative to the root's directory.
pub(crate) fn scan_root(root: &Path, read: &dyn Fn(&Path) -> Option<String>) -> Scan {
    let base = root.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut scan = Scan {
        modules: vec![Module {
            name: String::new(),
            parent: None,
            children: BTreeMap::new(),
            test: false,
        }],
        ..Scan::default()
    };
    let mut queue = VecDeque::from([Pending {
        path: root.to_path_buf(),
        module: 0,
        dirs: Dirs { dir: base.clone(), relative: None },
    }]);
    let mut seen = BTreeSet::new();
    while let Some(file) = queue.pop_front() {
        let shown = display_path(&file.path, &base);
        if !seen.insert(file.path.clone()) {
            scan.warnings.push(format!("{shown}: reached by more than one `mod`; scanned once"));
            continue;
        }
        let Some(text) = read(&file.path) else {
            scan.warnings.push(format!("{shown}: cannot be read"));
            continue;
        };
        scan_file(&mut scan, &tokenize(&text), &file, &shown, read, &mut queue);
    }
    scan
}

/// Whether `tokens[i..]` starts with `#[cfg(test)]`.
fn cfg_test(tokens: &[Token], i: usize) -> bool {
    tokens.get(i..i + 7).is_some_and(|t| {
        t[0].is_punct('#')
            && t[1].is_punct('[')
            && t[2].is_keyword("cfg")
            && t[3].is_punct('(')
            && t[4].is_keyword("test")
            && t[5].is_punct(')')
            && t[6].is_punct(']')
    })
}

/// Whether `tokens[i..]` starts with `#[path = "…"]`; gives the path and the length.
fn path_attribute(tokens: &[Token], i: usize) -> Option<(String, usize)> {
    let t = tokens.get(i..i + 6)?;
    if t[0].is_punct('#')
        && t[1].is_punct('[')
        && t[2].is_keyword("path")
        && t[3].is_punct('=')
        && t[5].is_punct(']')
        && let Tok::Str(path) = &t[4].tok
    {
        return Some((path.clone(), 6));
    }
    None
}

fn scan_file(
    scan: &mut Scan,
    tokens: &[Token],
    file: &Pending,
    shown: &str,
    read: &dyn Fn(&Path) -> Option<String>,
    queue: &mut VecDeque<Pending>,
) {
    let mut stack = vec![Frame { module: file.module, dirs: file.dirs.clone(), depth: 0 }];
    let mut depth = 0usize;
    let mut path_attr: Option<String> = None;
    let mut test_attr = false;
    let mut in_use = false;
    let mut i = 0;
    while i < tokens.len() {
        let token = &tokens[i];
        if cfg_test(tokens, i) {
            test_attr = true;
            i += 7;
            continue;
        }
        if let Some((path, len)) = path_attribute(tokens, i) {
            path_attr = Some(path);
            i += len;
            continue;
        }
        if token.is_keyword("mod")
            && let Some(Tok::Ident(name, _)) = tokens.get(i + 1).map(|t| &t.tok)
            && let Some(after) = tokens.get(i + 2)
            && (after.is_punct(';') || after.is_punct('{'))
        {
            let frame = stack.last().expect("the file frame is never popped");
            let module = scan.child(frame.module, name, std::mem::take(&mut test_attr));
            let attr = path_attr.take();
            if after.is_punct('{') {
                // An inline module: its own `mod`s look in a directory named after it (or the
                // `#[path]` directory), as rustc does.
                let dir = match &attr {
                    Some(path) => frame.dirs.dir.join(path),
                    None => frame.dirs.with_relative().join(name),
                };
                depth += 1;
                stack.push(Frame { module, dirs: Dirs { dir, relative: None }, depth });
            } else {
                let candidates = match &attr {
                    // A `#[path]` file is relative to the declaring file's directory and is
                    // treated as a `mod.rs` for its own `mod`s.
                    Some(path) => {
                        let path = frame.dirs.dir.join(path);
                        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
                        vec![(path, Dirs { dir, relative: None })]
                    }
                    None => {
                        let dir = frame.dirs.with_relative();
                        vec![
                            (
                                dir.join(format!("{name}.rs")),
                                Dirs { dir: dir.clone(), relative: Some(name.clone()) },
                            ),
                            (
                                dir.join(name).join("mod.rs"),
                                Dirs { dir: dir.join(name), relative: None },
                            ),
                        ]
                    }
                };
                let found = candidates.iter().find(|(path, _)| read(path).is_some());
                match found {
                    Some((path, dirs)) => {
                        queue.push_back(Pending { path: path.clone(), module, dirs: dirs.clone() })
                    }
                    None => {
                        let tried: Vec<String> =
                            candidates.iter().map(|(p, _)| p.display().to_string()).collect();
                        scan.warnings.push(format!(
                            "{shown}:{}: `mod {name};` has no file (tried {})",
                            token.line,
                            tried.join(", ")
                        ));
                    }
                }
            }
            i += 3;
            continue;
        }
        let frame = stack.last().expect("the file frame is never popped");
        let module = frame.module;
        if token.is_keyword("use") && !tokens.get(i + 1).is_some_and(|t| t.is_punct('<')) {
            // (`use<'a>` is a precise-capturing bound, not a `use` declaration.)
            let first = tokens.get(i + 1).map(|t| &t.tok);
            if matches!(first, Some(Tok::Ident(..) | Tok::Punct('{'))) {
                let mut leaves = Vec::new();
                let end = parse_tree(tokens, i + 1, &[], &mut leaves);
                let module_level = depth == frame.depth;
                for leaf in leaves {
                    let starts_local = leaf
                        .segments
                        .first()
                        .is_some_and(|s| ["crate", "super", "self"].contains(&s.as_str()));
                    if starts_local {
                        scan.refs.push(RawRef {
                            module,
                            file: shown.to_string(),
                            line: leaf.line,
                            text: format!("use {}", leaf.segments.join("::")),
                            segments: leaf.segments.clone(),
                        });
                    }
                    if module_level && leaf.segments.last().is_some_and(|s| s == "*") {
                        let mut path = leaf.segments.clone();
                        path.pop();
                        scan.globs.push((module, path));
                    }
                    let name = leaf.rename.or_else(|| leaf.segments.last().cloned());
                    if let Some(name) = name
                        && module_level
                        && name != "*"
                        && name != "_"
                        && leaf.segments.len() > 1
                    {
                        scan.bindings.push(Binding { module, name, segments: leaf.segments });
                    }
                }
                i = end.max(i + 1);
                continue;
            }
            // `use ::krate::…` (another crate) or `use $crate::…` in a macro: the paths are
            // found one by one below.
            in_use = true;
        }
        let starts_path =
            (token.is_keyword("crate") || token.is_keyword("super") || token.is_keyword("self"))
                && tokens.get(i + 1).is_some_and(|t| t.tok == Tok::PathSep)
                && !(i > 0 && tokens[i - 1].tok == Tok::PathSep);
        if starts_path {
            let dollar = i > 0 && tokens[i - 1].is_punct('$');
            let mut leaves = Vec::new();
            let end = parse_tree(tokens, i, &[], &mut leaves);
            for Leaf { segments, line, .. } in leaves {
                let mut text = segments.join("::");
                if dollar {
                    text.insert(0, '$');
                }
                if in_use {
                    text.insert_str(0, "use ");
                }
                scan.refs.push(RawRef { module, file: shown.to_string(), line, segments, text });
            }
            i = end.max(i + 1);
            continue;
        }
        let previous = if i > 0 { Some(&tokens[i - 1]) } else { None };
        if let Tok::Ident(name, raw) = &token.tok {
            let declares =
                |words: &[&str]| previous.is_some_and(|p| words.iter().any(|w| p.is_keyword(w)));
            if depth == frame.depth
                && (declares(&ITEM_KEYWORDS)
                    || (previous.is_some_and(|p| p.is_punct('!'))
                        && i >= 2
                        && tokens[i - 2].is_keyword("macro_rules")))
            {
                scan.items.insert((module, name.clone()));
            }
            let after_path_or_dot =
                previous.is_some_and(|p| p.tok == Tok::PathSep || p.is_punct('.'));
            let next = tokens.get(i + 1);
            let used_like_a_name = name.starts_with(|c: char| c.is_uppercase())
                || next
                    .is_some_and(|n| n.tok == Tok::PathSep || n.is_punct('(') || n.is_punct('!'));
            if (*raw || !is_keyword(name))
                && !after_path_or_dot
                && !declares(&DECLARING)
                && used_like_a_name
            {
                scan.bare.push(Bare {
                    module,
                    name: name.clone(),
                    file: shown.to_string(),
                    line: token.line,
                });
            }
        }
        match &token.tok {
            Tok::Punct('{') => {
                depth += 1;
                path_attr = None;
                test_attr = false;
            }
            Tok::Punct('}') => {
                if stack.len() > 1 && stack.last().is_some_and(|f| f.depth == depth) {
                    stack.pop();
                }
                depth = depth.saturating_sub(1);
                path_attr = None;
                test_attr = false;
            }
            Tok::Punct(';') => {
                in_use = false;
                path_attr = None;
                test_attr = false;
            }
            _ => {}
        }
        i += 1;
    }
}

/// Whether `word` is a keyword of the language (strict or reserved), which no `use` can bind.
fn is_keyword(word: &str) -> bool {
    const KEYWORDS: [&str; 51] = [
        "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn",
        "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
        "return", "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe",
        "use", "where", "while", "async", "await", "dyn", "abstract", "become", "box", "do",
        "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
    ];
    KEYWORDS.contains(&word)
}

/// Parses a path or `use` tree at `tokens[i]`, each of whose leaves continues `prefix`: `a::b`,
/// `a::*`, `a::{…}`, `{…}`, `*`, `self`, each with an optional `as name`. Pushes one path per
/// leaf (`self` in a group stands for the prefix) and gives the index after the tree.
fn parse_tree(tokens: &[Token], mut i: usize, prefix: &[String], leaves: &mut Vec<Leaf>) -> usize {
    let mut path = prefix.to_vec();
    let mut line = tokens.get(i).map_or(0, |t| t.line);
    loop {
        match tokens.get(i).map(|t| &t.tok) {
            Some(Tok::Punct('{')) => return parse_group(tokens, i, &path, leaves),
            Some(Tok::Punct('*')) => {
                path.push("*".to_string());
                leaves.push(Leaf { segments: path, rename: None, line: tokens[i].line });
                return i + 1;
            }
            Some(Tok::Ident(name, raw)) => {
                // `self` inside a group names the group's prefix.
                let names_prefix =
                    !raw && name == "self" && path.len() == prefix.len() && !prefix.is_empty();
                if !names_prefix {
                    path.push(name.clone());
                }
                line = tokens[i].line;
                i += 1;
            }
            _ if path.len() > prefix.len() => break,
            _ => {
                // Not a tree at all: nothing to record.
                return i + 1;
            }
        }
        // Go on past `::` only where a segment, a group or a glob follows (not `::<T>`).
        let continues = tokens.get(i).is_some_and(|t| t.tok == Tok::PathSep)
            && tokens.get(i + 1).is_some_and(|t| {
                matches!(t.tok, Tok::Ident(..)) || t.is_punct('{') || t.is_punct('*')
            });
        if !continues {
            break;
        }
        i += 1;
    }
    let mut rename = None;
    if tokens.get(i).is_some_and(|t| t.is_keyword("as")) {
        if let Some(Tok::Ident(name, _)) = tokens.get(i + 1).map(|t| &t.tok) {
            rename = Some(name.clone());
        }
        i += 2;
    }
    leaves.push(Leaf { segments: path, rename, line });
    i
}

/// Parses a `{…}` group at `tokens[i]`; gives the index after its `}`.
fn parse_group(tokens: &[Token], mut i: usize, prefix: &[String], leaves: &mut Vec<Leaf>) -> usize {
    i += 1;
    while let Some(token) = tokens.get(i) {
        if token.is_punct('}') {
            return i + 1;
        }
        if token.is_punct(',') {
            i += 1;
            continue;
        }
        if token.is_punct(';') {
            // Unbalanced: stop at the end of the declaration.
            return i;
        }
        i = parse_tree(tokens, i, prefix, leaves);
    }
    i
}
