//! The web page of `serve` (issue 36) in a real browser: headless Chromium driven through
//! WebDriver (Debian's `chromium` and `chromium-driver`) by selenium from the tests' venv, with
//! `tests/python/web_checks.py`. The page must show the cluster of a known scenario, an
//! explanation and a plan, change the shares when a weight is changed through it, and change
//! nothing for a visitor without credentials when authentication is on.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use workspace_tests::serve::{Serve, pymesos_python};
use workspace_tests::{target_dir, workspace_root};

const CLUSTER: &str = "tests/fixtures/web/cluster.json";

/// The venv's python, once Chromium and its driver are there (else a failure saying how).
fn python() -> PathBuf {
    for (path, package) in
        [("/usr/bin/chromium", "chromium"), ("/usr/bin/chromedriver", "chromium-driver")]
    {
        assert!(
            Path::new(path).exists(),
            "no {path}: the browser tests need Debian's {package} (apt-get install chromium chromium-driver; .ci/run installs them)"
        );
    }
    pymesos_python().expect("the tests' venv")
}

fn check(serve: &Serve, name: &str, extra: &[&str]) -> Value {
    let out = Command::new(python())
        .current_dir(workspace_root())
        .arg("tests/python/web_checks.py")
        .args([serve.addr.as_str(), name])
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{name}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn share(v: &Value) -> f64 {
    v["share"].as_str().unwrap().trim_end_matches('%').parse().unwrap()
}

#[test]
fn the_page_shows_the_cluster_an_explanation_and_a_plan() {
    let serve = Serve::start(&["--scenario", CLUSTER, "--duration", "90"]);
    let shot = target_dir().join("web-page.png");
    let seen = check(&serve, "cluster", &[shot.to_str().unwrap()]);
    assert_eq!(seen["title"], "allocator-master");
    assert_eq!(seen["agents"], 1, "{seen}");
    assert_eq!(seen["frameworks"], serde_json::json!(["A", "B"]), "{seen}");
    assert!(seen["roles"]["a"].is_object() && seen["roles"]["b"].is_object(), "{seen}");
    assert!(seen["explanation"].as_str().unwrap().contains("role a"), "{seen}");
    assert!(seen["plan"].as_str().unwrap().contains("offers without the change"), "{seen}");
    assert!(seen["chart_lines"].as_u64().unwrap() >= 2, "{seen}");
    assert!(shot.exists());
}

#[test]
fn a_weight_changed_through_the_page_changes_the_shares_it_shows() {
    let serve = Serve::start(&["--scenario", CLUSTER, "--duration", "90"]);
    let seen = check(&serve, "weight_change", &[]);
    assert_eq!(seen["before"]["b"]["weight"], "1", "{seen}");
    assert_eq!(seen["after"]["b"]["weight"], "4", "{seen}");
    let (a, b) = (share(&seen["after"]["a"]), share(&seen["after"]["b"]));
    assert!(b > a, "with weight 4, b holds more than a: {seen}");
}

#[test]
fn an_unauthenticated_visitor_changes_nothing() {
    let dir = std::env::temp_dir().join(format!("serve-web-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let credentials = dir.join("credentials");
    std::fs::write(&credentials, "operator s3cret\n").unwrap();
    let serve = Serve::start(&[
        "--scenario",
        CLUSTER,
        "--duration",
        "90",
        "--credentials",
        credentials.to_str().unwrap(),
        "--authenticate_http_readwrite",
    ]);
    let seen = check(&serve, "unauthenticated", &[]);
    assert_eq!(seen["status"], "live", "reading needs no credentials here: {seen}");
    assert!(seen["action"].as_str().unwrap().contains("401"), "{seen}");
    let (_, state) = serve.request("GET", "/state", "");
    let state: Value = serde_json::from_str(&state).unwrap();
    let roles = state["roles"].as_array().unwrap();
    assert!(roles.iter().all(|r| r["weight"] == 1.0), "nothing changed: {roles:?}");
}

#[test]
fn a_maintenance_window_scheduled_through_the_page_shows_beside_its_agent() {
    let serve = Serve::start(&["--scenario", CLUSTER, "--duration", "90"]);
    let seen = check(&serve, "maintenance", &[]);
    assert!(seen["agent_row"].as_str().unwrap().contains("from 60 s for 300 s"), "{seen}");
}
