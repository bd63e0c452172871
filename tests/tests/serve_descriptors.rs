//! The live master and its open-file limit (issue 43, "Descriptors"): it raises the soft
//! limit a service manager leaves at 1,024 to the hard limit, and when even that is low it
//! sizes its connection and stream places to fit, keeping descriptors for its registry.

use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use workspace_tests::{master, stderr_lines, wait_for_line, workspace_root};

/// Starts `serve` for a few seconds under the shell's `ulimit` arguments; returns the child
/// (the master itself: the shell `exec`s it) and its stderr lines as they come.
fn serve_under(ulimit: &str) -> (Child, mpsc::Receiver<String>) {
    let script = format!("ulimit {ulimit} && exec \"$0\" serve --listen 127.0.0.1:0 --duration 30");
    let mut child = Command::new("bash")
        .args(["-c", &script])
        .arg(master())
        .current_dir(workspace_root())
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start serve under bash");
    let rx = stderr_lines(&mut child);
    (child, rx)
}

/// Lines up to and including `serving on …`.
fn until_serving(rx: &mpsc::Receiver<String>) -> Vec<String> {
    wait_for_line(rx, "serving on", Duration::from_secs(60))
}

/// The soft and hard open-file limits of process `pid`.
fn open_files(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap();
    let fields: Vec<&str> = line.split_whitespace().collect();
    (fields[3].to_owned(), fields[4].to_owned())
}

#[test]
fn the_soft_open_file_limit_is_raised_to_the_hard_limit() {
    let (mut child, rx) = serve_under("-S -n 256");
    until_serving(&rx);
    let (soft, hard) = open_files(child.id());
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(soft, hard, "the soft limit was left below the hard one");
}

#[test]
fn connection_places_shrink_to_fit_a_low_hard_limit() {
    let (mut child, rx) = serve_under("-n 512");
    let lines = until_serving(&rx);
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("the open-file limit is 512: 224 request and 224 stream places")),
        "{lines:?}"
    );
}
