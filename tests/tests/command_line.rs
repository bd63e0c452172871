//! The command line as a newcomer meets it (SPEC section 1, issue 20): signals stop long runs
//! cleanly with the summary so far, long runs show signs of life, and the module listing is
//! readable.

use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use workspace_tests::{master, run_master, stderr_lines, wait_for_line, workspace_root};

/// A scenario that runs for hours: millions of tiny tasks on one huge agent.
const LONG_SCENARIO: &str = r#"{"events": [
  {"op": "add_agent", "agent": "a1", "resources": "cpus:100000;mem:100000000"},
  {"op": "add_framework", "framework": "f1", "roles": ["r"],
   "tasks": {"resources": "cpus:0.001;mem:1", "duration": 0.001}},
  {"op": "advance", "seconds": 1000000}]}"#;

fn long_scenario() -> std::path::PathBuf {
    let dir = workspace_tests::target_dir().join("command-line");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("long-{}.json", std::process::id()));
    std::fs::write(&path, LONG_SCENARIO).unwrap();
    path
}

/// Starts the master with `args`, stdout and stderr piped; stderr lines arrive on the channel.
fn spawn(args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(master())
        .args(args)
        .current_dir(workspace_root())
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start allocator-master");
    let rx = stderr_lines(&mut child);
    (child, rx)
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill").args([name, &child.id().to_string()]).status().unwrap();
    assert!(status.success(), "kill {name}");
}

/// Waits for a stderr line containing `fragment`; all lines seen so far.
fn wait_for(rx: &mpsc::Receiver<String>, fragment: &str) -> Vec<String> {
    wait_for_line(rx, fragment, Duration::from_secs(120))
}

#[test]
fn a_long_run_shows_progress_and_sigint_stops_it_with_the_summary_so_far() {
    let path = long_scenario();
    let (child, rx) = spawn(&["--scenario", path.to_str().unwrap()]);
    // Not a terminal: a plain progress line every few seconds, after the first two.
    let seen = wait_for(&rx, "tasks launched from the current offer");
    assert!(seen.iter().any(|l| l.contains("1/3 events")), "{seen:?}");
    signal(&child, "-INT");
    let out = child.wait_with_output().unwrap();
    let rest: Vec<String> = rx.iter().collect(); // every line: the reader ends at EOF
    assert_eq!(out.status.code(), Some(130), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("stopped by SIGINT")), "{rest:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("allocation run latency"), "the summary so far: {stdout}");
}

#[test]
fn sigterm_stops_a_long_run_with_the_shells_code_for_it() {
    let path = long_scenario();
    let (child, rx) = spawn(&["--scenario", path.to_str().unwrap(), "--output", "-"]);
    wait_for(&rx, "tasks launched from the current offer");
    signal(&child, "-TERM");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().last().is_some_and(|l| l.contains(r#""event":"summary""#)),
        "the event stream ends with the summary: {stdout}"
    );
}

#[test]
fn serve_stops_cleanly_on_sigterm_printing_the_summary() {
    let (child, rx) =
        spawn(&["serve", "--listen", "127.0.0.1:0", "--speed", "10", "--output", "-"]);
    wait_for(&rx, "on http://127.0.0.1:");
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, "-TERM");
    let out = child.wait_with_output().unwrap();
    let rest: Vec<String> = rx.iter().collect(); // every line: the reader ends at EOF
    assert_eq!(out.status.code(), Some(0), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("serve stopped by SIGTERM")), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("allocation run latency")), "summary: {rest:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().last().is_some_and(|l| l.contains(r#""event":"summary""#)));
}

#[test]
fn serve_stops_cleanly_on_sigint() {
    let (child, rx) = spawn(&["serve", "--listen", "127.0.0.1:0"]);
    wait_for(&rx, "on http://127.0.0.1:");
    signal(&child, "-INT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("allocation run latency"));
}

#[test]
fn the_module_listing_aligns_every_column() {
    let out = run_master(&["--modules", "examples/modules.json", "--list-modules"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let listing = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = listing.lines().collect();
    let header = lines[0];
    for column in ["KIND", "API", "AUTHOR", "LIBRARY", "DESCRIPTION"] {
        let at = header.find(column).unwrap();
        for line in &lines[1..] {
            let before = &line[..at];
            assert!(
                before.ends_with("  ") && line[at..].chars().next().is_some_and(|c| c != ' '),
                "column {column} does not start at {at} in:\n{listing}"
            );
        }
    }
}

#[test]
fn the_shipped_modules_are_built_by_cargo_build_alone() {
    // `cargo build` builds the workspace's default members, which include the sorter modules
    // that examples/modules.json names.
    let manifest: toml_like::Members = toml_like::default_members();
    for module in [
        "plugins/drf_sorter",
        "plugins/weighted_priority_sorter",
        "plugins/random_sorter",
        "plugins/drf_decay_sorter",
    ] {
        assert!(manifest.0.iter().any(|m| m == module), "{module} not in default-members");
    }
}

/// Reads `default-members` from the workspace's Cargo.toml (a list of strings on its lines).
mod toml_like {
    pub struct Members(pub Vec<String>);

    pub fn default_members() -> Members {
        let text =
            std::fs::read_to_string(workspace_tests::workspace_root().join("Cargo.toml")).unwrap();
        let start = text.find("default-members").expect("default-members");
        let list = &text[start..];
        let list = &list[list.find('[').unwrap() + 1..list.find(']').unwrap()];
        Members(
            list.split(',')
                .map(|s| s.trim().trim_matches('"').to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
        )
    }
}

#[test]
fn explaining_a_role_the_master_never_knew_warns_of_a_typo() {
    let out = workspace_tests::run_master(&["--explain", "analytcs", "--output", "/dev/null"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("warning: --explain 'analytcs'"), "{stderr}");
    let known = workspace_tests::run_master(&["--explain", "analytics", "--output", "/dev/null"]);
    assert!(!String::from_utf8_lossy(&known.stderr).contains("warning"), "a role it knows");
}

/// A module that takes no quota (the trait's default) runs the embedded default workload, whose
/// `update_quota` it does not implement: a warning naming the call and the module, and the run
/// goes on, as `serve` does (issue 45, item 5).
#[test]
fn a_module_that_takes_no_quota_runs_the_default_workload_with_a_warning() {
    let m = workspace_tests::manifest_for("faulty_modules", &["faulty_allocator"]);
    let out = workspace_tests::run_master(&[
        "--modules",
        &m,
        "--allocator",
        "faulty_allocator",
        "--output",
        "/dev/null",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("allocator 'faulty_allocator' does not implement")
            && stderr.contains("update_quota")
            && stderr.contains("the run goes on"),
        "{stderr}"
    );
}
