//! The docs cannot drift from the program: the commands in `README.md` and `docs/**/*.md` are
//! run or parsed by the built binary, the command-line reference is `--help` itself, every
//! metric the master writes is documented, and every relative link resolves inside the
//! repository. The rules are in `docs/README.md`, "How these docs are tested".
//!
//! * A fenced block marked `console` is run: `$ ` starts a command (`\` at the end of a line
//!   continues it), the lines up to the next `$ ` are its expected stdout then stderr; a line
//!   `...` stands for any number of lines, a line ending in `...` for any line with that
//!   prefix; `# exit N` as the first expected line expects exit code N (else 0).
//! * A block marked `sh` or `bash` is not run; each `allocator-master` command in it is run
//!   with `--help` appended, which exits 0 only if every subcommand and flag it names parses.
//!
//! `UPDATE_DOCS=1 cargo test -p workspace-tests --test doc_commands` rewrites the generated
//! command-line reference (`docs/operators/reference.md`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use workspace_tests::{master, workspace_root};

/// The generated reference, relative to the workspace root.
const REFERENCE: &str = "docs/operators/reference.md";
/// The metrics page, relative to the workspace root.
const METRICS: &str = "docs/operators/metrics.md";
/// The longest a documented command may run.
const COMMAND_LIMIT: Duration = Duration::from_secs(120);

/// `README.md` and every Markdown file under `docs/`, relative to the root, sorted.
fn doc_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let root = workspace_root();
    let mut files = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut files);
    files.into_iter().map(|p| p.strip_prefix(&root).unwrap().to_owned()).collect()
}

/// A fenced block: its info string, its first line's number (1-based) and its lines.
struct Block {
    info: String,
    line: usize,
    lines: Vec<String>,
}

/// The fenced blocks of `text` (backtick fences of three or more, closed by as many).
fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Block)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let ticks = trimmed.chars().take_while(|&c| c == '`').count();
        match &mut open {
            None if ticks >= 3 => {
                let info = trimmed[ticks..].trim().to_owned();
                open = Some((ticks, Block { info, line: i + 2, lines: Vec::new() }));
            }
            Some((fence, _)) if ticks >= *fence && trimmed[ticks..].trim().is_empty() => {
                out.push(open.take().unwrap().1);
            }
            Some((_, block)) => block.lines.push(line.to_owned()),
            None => {}
        }
    }
    out
}

/// The binary's spellings in the docs, each replaced by `allocator-master` (found on `PATH`).
fn normalise_invocation(command: &str) -> String {
    command
        .replace("target/release/allocator-master", "allocator-master")
        .replace("cargo run --release -- ", "allocator-master ")
        .replace("cargo run --release", "allocator-master")
}

/// Runs `command` with `sh` in the workspace root, the built binary first on `PATH`; returns
/// the exit code and stdout followed by stderr.
fn run_shell(command: &str) -> (i32, String) {
    let bin_dir = master().parent().unwrap().to_owned();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path =
        std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(&path))).unwrap();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(normalise_invocation(command))
        .current_dir(workspace_root())
        .env("PATH", path)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run sh");
    let started = Instant::now();
    // Read both pipes on threads so a chatty command cannot block on a full pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).ok();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).ok();
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > COMMAND_LIMIT {
            child.kill().ok();
            panic!("`{command}` ran longer than {COMMAND_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = out.join().unwrap() + &err.join().unwrap();
    (status.code().unwrap_or(-1), text)
}

/// Whether `actual` matches `expected`, where a line `...` is any number of lines and a line
/// ending in `...` any line with that prefix.
fn matches(expected: &[&str], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((&"...", rest)) => (0..=actual.len()).any(|skip| matches(rest, &actual[skip..])),
        Some((line, rest)) => match actual.split_first() {
            None => false,
            Some((first, more)) => {
                let ok = match line.strip_suffix("...") {
                    Some(prefix) => first.starts_with(prefix),
                    None => first.trim_end() == line.trim_end(),
                };
                ok && matches(rest, more)
            }
        },
    }
}

/// A command of a `console` block and what it should print.
struct Example {
    command: String,
    expected: Vec<String>,
    exit: i32,
    line: usize,
}

fn console_examples(block: &Block) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let mut continuing = false;
    for (i, line) in block.lines.iter().enumerate() {
        if continuing {
            let example = out.last_mut().unwrap();
            continuing = line.ends_with('\\');
            example.command.push('\n');
            example.command.push_str(line);
        } else if let Some(command) = line.strip_prefix("$ ") {
            continuing = command.ends_with('\\');
            out.push(Example {
                command: command.to_owned(),
                expected: Vec::new(),
                exit: 0,
                line: block.line + i,
            });
        } else {
            let example = out.last_mut().expect("a console block starts with a `$ ` command");
            match line.strip_prefix("# exit ") {
                Some(code) if example.expected.is_empty() => {
                    example.exit = code.trim().parse().expect("# exit N");
                }
                _ => example.expected.push(line.clone()),
            }
        }
    }
    out
}

#[test]
fn every_console_block_runs_and_prints_what_the_docs_show() {
    let root = workspace_root();
    let mut failures = Vec::new();
    let mut ran = 0;
    for file in doc_files() {
        let text = std::fs::read_to_string(root.join(&file)).unwrap();
        for block in blocks(&text).iter().filter(|b| b.info == "console") {
            for example in console_examples(block) {
                let (code, output) = run_shell(&example.command);
                ran += 1;
                let expected: Vec<&str> = example.expected.iter().map(String::as_str).collect();
                let actual: Vec<&str> = output.lines().collect();
                if code != example.exit || !matches(&expected, &actual) {
                    failures.push(format!(
                        "{}:{}: `{}` exited {code} (expected {}) and printed:\n{output}\n-- expected:\n{}",
                        file.display(),
                        example.line,
                        example.command,
                        example.exit,
                        example.expected.join("\n")
                    ));
                }
            }
        }
    }
    assert!(ran >= 10, "only {ran} console commands found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A word of shell text, or an operator (`|`, `&&`, `>`, a newline, …).
#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Op(String),
}

/// Splits shell text into words and operators: quotes, `\` escapes and line continuations,
/// `#` comments; enough for the commands the docs show.
fn shell_tokens(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars().peekable();
    fn end(word: &mut Option<String>, tokens: &mut Vec<Token>) {
        if let Some(w) = word.take() {
            tokens.push(Token::Word(w));
        }
    }
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(next) => word.get_or_insert_default().push(next),
                None => {}
            },
            '\'' => {
                let w = word.get_or_insert_default();
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    w.push(c);
                }
            }
            '"' => {
                let w = word.get_or_insert_default();
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$')) => {
                            w.push(chars.next().unwrap())
                        }
                        c => w.push(c),
                    }
                }
            }
            '#' if word.is_none() => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        tokens.push(Token::Op("\n".into()));
                        break;
                    }
                }
            }
            ' ' | '\t' => end(&mut word, &mut tokens),
            '\n' | ';' | '|' | '&' | '>' | '<' => {
                let redirect_fd = c == '>' && word.as_deref().is_some_and(|w| w == "2" || w == "1");
                if redirect_fd {
                    word = None;
                } else {
                    end(&mut word, &mut tokens);
                }
                let mut op = c.to_string();
                while let Some(&next) = chars.peek() {
                    if matches!(next, '|' | '&' | '>') && c != '\n' && c != ';' {
                        op.push(next);
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push(Token::Op(op));
            }
            c => word.get_or_insert_default().push(c),
        }
    }
    end(&mut word, &mut tokens);
    tokens
}

/// The argument lists of the `allocator-master` commands in shell text, with `$VAR`s set
/// earlier in the text expanded.
fn master_invocations(text: &str) -> Vec<Vec<String>> {
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    let mut commands: Vec<Vec<String>> = vec![Vec::new()];
    let mut after_redirect = false;
    for token in shell_tokens(text) {
        match token {
            Token::Op(op) if op.starts_with('>') || op.starts_with('<') => after_redirect = true,
            Token::Op(_) => commands.push(Vec::new()),
            Token::Word(_) if after_redirect => after_redirect = false,
            Token::Word(w) => commands.last_mut().unwrap().push(w),
        }
    }
    let mut out = Vec::new();
    for words in commands {
        let expand = |w: &str, vars: &BTreeMap<String, String>| {
            let mut w = w.to_owned();
            for (k, v) in vars {
                w = w.replace(&format!("${{{k}}}"), v).replace(&format!("${k}"), v);
            }
            w
        };
        // Leading assignments: the whole command (`T=dir`), or an environment for it.
        let mut rest = &words[..];
        while let Some((first, more)) = rest.split_first() {
            match first.split_once('=') {
                Some((k, v))
                    if !k.is_empty()
                        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
                {
                    if more.is_empty() {
                        vars.insert(k.to_owned(), expand(v, &vars));
                    }
                    rest = more;
                }
                _ => break,
            }
        }
        let args: &[String] = match rest {
            [bin, args @ ..] if bin == "allocator-master" || bin.ends_with("/allocator-master") => {
                args
            }
            [cargo, run, release, args @ ..]
                if cargo == "cargo" && run == "run" && release == "--release" =>
            {
                match args.split_first() {
                    Some((dashes, args)) if dashes == "--" => args,
                    None => args,
                    Some(_) => continue, // another package (`-p embed-master`)
                }
            }
            _ => continue,
        };
        out.push(args.iter().map(|a| expand(a, &vars)).collect());
    }
    out
}

#[test]
fn every_allocator_master_command_of_an_sh_block_parses() {
    let root = workspace_root();
    let mut failures = Vec::new();
    let mut checked = 0;
    for file in doc_files() {
        let text = std::fs::read_to_string(root.join(&file)).unwrap();
        for block in blocks(&text) {
            let lang = block.info.split_whitespace().next().unwrap_or("");
            if !matches!(lang, "sh" | "bash" | "shell") {
                continue;
            }
            for args in master_invocations(&block.lines.join("\n")) {
                checked += 1;
                let out = Command::new(master())
                    .args(&args)
                    .arg("--help")
                    .current_dir(&root)
                    .env_remove("RUST_LOG")
                    .output()
                    .unwrap();
                if !out.status.success() {
                    failures.push(format!(
                        "{}:{}: allocator-master {} --help: {}",
                        file.display(),
                        block.line,
                        args.join(" "),
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
            }
        }
    }
    assert!(checked >= 20, "only {checked} allocator-master commands found in sh blocks");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_shell_tokenizer_reads_what_the_docs_write() {
    let args = master_invocations(
        "T=data/x\ntarget/release/allocator-master import a --nodes $T/n.csv \\\n    --pods \"$T/p.csv\" > out.json # c\n\
         cargo run --release -- serve --acls '{\"a\":\n 1}' &\ncurl -s x | jq .\ncargo run -p embed-master -- --seconds 3\n\
         RUST_LOG=info allocator-master --list-modules 2>/dev/null",
    );
    assert_eq!(
        args,
        vec![
            vec!["import", "a", "--nodes", "data/x/n.csv", "--pods", "data/x/p.csv"],
            vec!["serve", "--acls", "{\"a\":\n 1}"],
            vec!["--list-modules"],
        ]
    );
    assert!(matches(&["a", "...", "d..."], &["a", "b", "c", "dd"]));
    assert!(matches(&["..."], &[]));
    assert!(!matches(&["a"], &["a", "b"]));
}

/// The subcommands `allocator-master ARGS --help` lists, each as the arguments that name it.
fn subcommands(args: &[String]) -> Vec<Vec<String>> {
    let out = Command::new(master()).args(args).arg("--help").output().unwrap();
    assert!(out.status.success(), "{args:?} --help");
    let help = String::from_utf8(out.stdout).unwrap();
    let Some(list) = help.split("\nCommands:\n").nth(1) else { return Vec::new() };
    list.lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(|name| args.iter().cloned().chain([name.to_owned()]).collect())
        .collect()
}

/// The reference page as `--help` of the binary and every subcommand writes it.
fn generated_reference() -> String {
    let mut commands = vec![Vec::new()];
    let mut i = 0;
    while i < commands.len() {
        let more = subcommands(&commands[i]);
        commands.extend(more);
        i += 1;
    }
    let mut page = String::from(
        "# Command-line reference\n\n\
         Every flag of `allocator-master` and its subcommands, exactly as `--help` prints them.\n\
         This page is generated and checked by `tests/tests/doc_commands.rs`: after changing a\n\
         flag, run `UPDATE_DOCS=1 cargo test -p workspace-tests --test doc_commands` to rewrite\n\
         it. Flags are also accepted in kebab case (`--role-sorter`); what they mean in context\n\
         is in [the command line](command-line.md) and each guide.\n",
    );
    for args in &commands {
        let name = std::iter::once("allocator-master".to_owned())
            .chain(args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        let out = Command::new(master()).args(args).arg("--help").output().unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        page.push_str(&format!("\n## `{name}`\n\n```console\n$ {name} --help\n"));
        for line in help.lines() {
            page.push_str(line.trim_end());
            page.push('\n');
        }
        page.push_str("```\n");
    }
    page
}

#[test]
fn the_command_line_reference_is_what_help_prints() {
    let path = workspace_root().join(REFERENCE);
    let generated = generated_reference();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == generated,
        "{REFERENCE} differs from --help; rewrite it with \
         UPDATE_DOCS=1 cargo test -p workspace-tests --test doc_commands"
    );
}

/// A metric name with its roles and resources replaced by `<role>` and `<resource>`.
fn metric_pattern(name: &str, roles: &BTreeSet<String>, resources: &BTreeSet<String>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let segments: Vec<&str> = name.split('/').collect();
    let mut i = 0;
    while i < segments.len() {
        let s = segments[i];
        let prev = if i > 0 { segments[i - 1] } else { "" };
        if prev == "roles" {
            // A role may be nested (`a/b`): take the longest known role here.
            let role = (i + 1..=segments.len())
                .rev()
                .map(|j| segments[i..j].join("/"))
                .find(|r| roles.contains(r));
            if let Some(role) = role {
                parts.push("<role>".into());
                i += role.split('/').count();
                continue;
            }
        }
        if prev == "resources" && resources.contains(s) {
            parts.push("<resource>".into());
        } else {
            parts.push(s.to_owned());
        }
        i += 1;
    }
    parts.join("/")
}

#[test]
fn every_metric_the_master_writes_is_on_the_metrics_page() {
    let root = workspace_root();
    let events = std::env::temp_dir().join(format!("doc-metrics-{}.jsonl", std::process::id()));
    let out = Command::new(master())
        .args(["--scenario", "examples/scenarios/quota_with_headroom.json", "--output"])
        .arg(&events)
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&events).unwrap();
    std::fs::remove_file(&events).ok();
    let summary: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "summary")
        .expect("a summary event");
    let mut metrics = summary["metrics"].as_object().expect("the summary's metrics").clone();
    // The live master's snapshot adds Mesos's master and system metrics.
    let serve = workspace_tests::serve::Serve::start(&[
        "--scenario",
        "examples/scenarios/quota_with_headroom.json",
        "--speed",
        "100",
    ]);
    let started = Instant::now();
    let snapshot = loop {
        let (code, body) = serve.request("GET", "/metrics/snapshot", "");
        assert_eq!(code, 200, "{body}");
        let snapshot: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&body).unwrap();
        let runs = snapshot.get("allocator/mesos/allocation_runs").and_then(|v| v.as_u64());
        if runs.unwrap_or(0) >= 2 || started.elapsed() > Duration::from_secs(20) {
            break snapshot;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    serve.stop();
    metrics.extend(snapshot);
    let roles: BTreeSet<String> = ["analytics", "batch"].map(str::to_owned).into();
    let resources: BTreeSet<String> =
        ["cpus", "mem", "disk", "gpus", "ports"].map(str::to_owned).into();
    let page = std::fs::read_to_string(root.join(METRICS)).unwrap();
    let missing: BTreeSet<String> = metrics
        .keys()
        .map(|name| metric_pattern(name, &roles, &resources))
        .filter(|pattern| !page.contains(&format!("`{pattern}`")))
        .collect();
    assert!(metrics.len() >= 10, "{metrics:?}");
    assert!(missing.is_empty(), "metrics missing from {METRICS}: {missing:?}");
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks), numbered as GitHub numbers
/// repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let Some(heading) = line.strip_prefix('#') else { continue };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = slug(&heading.replace('`', ""));
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 { base.clone() } else { format!("{base}-{n}") });
        *n += 1;
    }
    out
}

/// The targets of the inline links and images of `text`, outside code blocks and code spans,
/// with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_code = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        // Drop code spans, then find `](target)`.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            let target = rest[..end].split_whitespace().next().unwrap_or("").to_owned();
            out.push((i + 1, target));
            rest = &rest[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_docs_resolves_inside_the_repository() {
    let root = workspace_root().canonicalize().unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for file in doc_files() {
        let text = std::fs::read_to_string(root.join(&file)).unwrap();
        if text.contains("../shared/") {
            failures
                .push(format!("{}: points at ../shared/, outside the repository", file.display()));
        }
        let dir = root.join(&file).parent().unwrap().to_owned();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() { root.join(&file) } else { dir.join(path) };
            let Ok(resolved) = resolved.canonicalize() else {
                failures.push(format!("{}:{line}: {target}: no such file", file.display()));
                continue;
            };
            if !resolved.starts_with(&root) {
                failures
                    .push(format!("{}:{line}: {target}: outside the repository", file.display()));
                continue;
            }
            if let Some(anchor) = anchor
                && resolved.extension().is_some_and(|e| e == "md")
            {
                let target_text = std::fs::read_to_string(&resolved).unwrap();
                if !anchors(&target_text).contains(anchor) {
                    failures.push(format!(
                        "{}:{line}: {target}: no heading with anchor #{anchor}",
                        file.display()
                    ));
                }
            }
        }
    }
    assert!(checked >= 50, "only {checked} links found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn no_user_doc_narrates_history() {
    // History belongs in CHANGELOG.md, docs/history/ (the benchmark log, kept as written) and
    // git; design notes (docs/design/) are exempt.
    let root = workspace_root();
    let phrases = ["this round", "latest round", "earlier rounds", "previous round", "(was "];
    let mut failures = Vec::new();
    for file in doc_files() {
        if file.starts_with("docs/design")
            || file.starts_with("docs/history")
            || file.ends_with("spec.md")
        {
            continue;
        }
        let text = std::fs::read_to_string(root.join(&file)).unwrap().to_lowercase();
        for (i, line) in text.lines().enumerate() {
            for phrase in phrases {
                if line.contains(phrase) {
                    failures.push(format!("{}:{}: {phrase}", file.display(), i + 1));
                }
            }
            let words: Vec<&str> = line.split(|c: char| !c.is_alphanumeric()).collect();
            if words.windows(2).any(|w| w[0] == "issue" && w[1].parse::<u32>().is_ok()) {
                failures.push(format!("{}:{}: issue N", file.display(), i + 1));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
