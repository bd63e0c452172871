//! The web page of `serve` (issues 36 and 44) in a real browser: headless Chromium driven
//! through WebDriver (Debian's `chromium` and `chromium-driver`) by selenium from the tests'
//! venv, with `tests/python/web_checks.py`. The page must show the cluster of a known scenario,
//! an explanation and a plan, change the shares when a weight is changed through it, and
//! change nothing for a visitor without credentials when authentication is on; send only what
//! the operator typed, after a confirmation of before → after; read a refusal as one; show the
//! totals `/master/state` sums; draw the master's share history from before it was opened; tell
//! past and upcoming maintenance apart; follow the operator event stream rather than poll; and
//! ask for no `favicon.ico`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use workspace_tests::serve::{Serve, pymesos_python};
use workspace_tests::{target_dir, workspace_root};

const CLUSTER: &str = "tests/fixtures/web/cluster.json";
/// Three agents and five long tasks: nothing changes once they run.
const QUIET: &str = "tests/fixtures/web/totals.json";

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

/// A credentials file of one principal, `operator`, for the test `name`.
fn credentials(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("serve-web-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let credentials = dir.join("credentials");
    std::fs::write(&credentials, "operator s3cret\n").unwrap();
    credentials
}

#[test]
fn an_unauthenticated_visitor_changes_nothing() {
    let credentials = credentials("unauthenticated");
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

/// `GET` `path` as JSON.
fn get(serve: &Serve, path: &str) -> Value {
    let (status, body) = serve.request("GET", path, "");
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

#[test]
fn no_form_sends_a_value_the_operator_did_not_type() {
    let serve = Serve::start(&[
        "--modules",
        "examples/modules.json",
        "--role_sorter",
        "random",
        "--framework_sorter",
        "weighted_priority",
        "--scenario",
        CLUSTER,
        "--duration",
        "90",
    ]);
    let (status, body) =
        serve.request("POST", "/quota", r#"{"role": "a", "guarantees": "cpus:2"}"#);
    assert_eq!(status, 200, "{body}");
    let seen = check(&serve, "typed_only", &[]);
    // The forms hold no values: what the master has now is only their placeholders.
    for (field, value) in seen["values"].as_object().unwrap() {
        assert_eq!(value, "", "{field} holds a value nobody typed: {seen}");
    }
    assert!(text(&seen["placeholders"]["sorter-role"]).contains("random"), "{seen}");
    assert!(text(&seen["placeholders"]["sorter-framework"]).contains("weighted_priority"));
    // Each form clicked empty sends nothing and says what is missing.
    assert_eq!(seen["sent_when_empty"], serde_json::json!([]), "{seen}");
    for (form, said) in seen["empty"].as_object().unwrap() {
        let said = text(said);
        assert!(said.contains("not sent") || said.contains("nothing to plan"), "{form}: {said}");
    }
    assert!(text(&seen["cancelled"]).contains("nothing sent"), "{seen}");
    // The confirmations showed before → after, from the live state.
    assert!(text(&seen["cancelled_dialog"]).contains("weight of b: 1 → 2"), "{seen}");
    assert!(text(&seen["sorters_dialog"]).contains("framework sorter: weighted_priority → drf"));
    assert!(!text(&seen["sorters_dialog"]).contains("role sorter"), "{seen}");
    assert!(text(&seen["quota_dialog"]).contains("limits of b: none → cpus:6"), "{seen}");
    assert!(text(&seen["weights_dialog"]).contains("weight of b: 1 → 2"), "{seen}");
    // Limits alone for a role with a guarantee would remove it: refused, saying so.
    let refused = text(&seen["quota_refused"]);
    assert!(refused.contains("not sent") && refused.contains("cpus:2"), "{refused}");
    for applied in ["sorters", "quota", "weights"] {
        assert!(text(&seen[applied]).contains("applied"), "{applied}: {seen}");
    }
    // What was sent is exactly what was typed, and nothing else.
    let sent = serde_json::json!([
        {"path": "/sorters", "body": {"framework_sorter": "drf"}},
        {"path": "/quota", "body": {"role": "b", "limits": "cpus:6"}},
        {"path": "/weights", "body": {"weights": {"b": 2}}},
    ]);
    assert_eq!(seen["sent"], sent, "{seen}");
    let state = get(&serve, "/state");
    assert_eq!(state["role_sorter"], "random", "the role sorter was not sent back: {state}");
    assert_eq!(state["framework_sorter"], "drf");
    let a = state["roles"].as_array().unwrap().iter().find(|r| r["role"] == "a").unwrap();
    assert_eq!(a["quota"]["guarantees"], "cpus:2", "a's guarantee stays: {a}");
}

#[test]
fn a_refused_action_or_read_reads_as_not_allowed_with_the_login_in_view() {
    let credentials = credentials("refusal");
    let credentials = credentials.to_str().unwrap();
    let common = ["--scenario", CLUSTER, "--duration", "60", "--credentials", credentials];
    let writes = Serve::start(&[&common[..], &["--authenticate_http_readwrite"]].concat());
    let seen = check(&writes, "refusal", &[]);
    let action = text(&seen["action"]);
    assert!(action.contains("not allowed") && action.contains("401"), "{seen}");
    assert_eq!(seen["login_in_view"], true, "{seen}");
    assert_eq!(seen["focused"], "principal", "{seen}");
    let reads = Serve::start(&[&common[..], &["--authenticate_http_readonly"]].concat());
    let seen = check(&reads, "read_refused", &[]);
    let status = text(&seen["status"]);
    assert!(status.contains("not allowed") && !status.contains("unreachable"), "{seen}");
    assert_eq!(seen["login_in_view"], true, "{seen}");
}

/// A scalar in the page's human units, as the test expects it.
fn human(name: &str, v: f64) -> String {
    let num = |v: f64| {
        let places = if v.abs() >= 100.0 {
            0
        } else if v.abs() >= 10.0 {
            1
        } else {
            2
        };
        let scale = 10f64.powi(places);
        let r = (v * scale).round() / scale;
        if r.fract() == 0.0 { format!("{}", r as i64) } else { format!("{r}") }
    };
    match name {
        "cpus" => format!("{} {}", num(v), if v == 1.0 { "core" } else { "cores" }),
        "mem" | "disk" if v.abs() >= 1024.0 * 1024.0 => format!("{} TiB", num(v / 1048576.0)),
        "mem" | "disk" if v.abs() >= 1024.0 => format!("{} GiB", num(v / 1024.0)),
        "mem" | "disk" => format!("{} MiB", num(v)),
        "gpus" => format!("{} {}", num(v), if v == 1.0 { "GPU" } else { "GPUs" }),
        _ => num(v),
    }
}

#[test]
fn the_totals_the_page_shows_are_master_states_sums() {
    let serve = Serve::start(&["--scenario", QUIET, "--duration", "60"]);
    let shot = target_dir().join("web-page-1400.png");
    let seen = check(&serve, "totals", &["5", shot.to_str().unwrap()]);
    let state = get(&serve, "/master/state");
    let mut sums: std::collections::BTreeMap<String, [f64; 3]> = Default::default();
    for agent in state["slaves"].as_array().unwrap() {
        for (i, field) in ["resources", "used_resources", "offered_resources"].iter().enumerate() {
            for (name, v) in agent[field].as_object().unwrap() {
                if let Some(v) = v.as_f64() {
                    sums.entry(name.clone()).or_default()[i] += v;
                }
            }
        }
    }
    assert!(sums["cpus"][1] > 0.0 && sums["gpus"][0] == 1.0, "{sums:?}");
    let shown = seen["totals"].as_object().unwrap();
    assert_eq!(shown.len(), sums.len(), "one row per resource: {seen}");
    for (name, [total, used, offered]) in &sums {
        let idle = total - used - offered;
        for (kind, v) in [("total", total), ("used", used), ("offered", offered), ("idle", &idle)] {
            let cell = &shown[name][kind];
            assert_eq!(cell["value"].as_f64(), Some(*v), "{name} {kind}: {seen}");
            assert_eq!(cell["text"], human(name, *v), "{name} {kind} in human units: {seen}");
        }
    }
    let mut by_state: std::collections::BTreeMap<String, u64> = Default::default();
    for framework in state["frameworks"].as_array().unwrap() {
        for task in framework["tasks"].as_array().unwrap() {
            *by_state.entry(text(&task["state"]).to_owned()).or_default() += 1;
        }
    }
    assert_eq!(by_state["TASK_RUNNING"], 5, "{state}");
    for (s, n) in seen["tasks"].as_object().unwrap() {
        assert_eq!(n.as_u64(), Some(by_state.get(s).copied().unwrap_or(0)), "{s}: {seen}");
    }
    assert_eq!(seen["overflow"], serde_json::json!([]), "tables wider than their box: {seen}");
    assert!(shot.exists());
}

#[test]
fn the_chart_starts_from_the_masters_history() {
    let serve = Serve::start(&["--scenario", CLUSTER, "--duration", "60"]);
    std::thread::sleep(std::time::Duration::from_secs(5));
    let opened = get(&serve, "/state")["time"].as_f64().unwrap();
    let seen = check(&serve, "history", &[]);
    let t0 = seen["t0"].as_f64().unwrap();
    assert!(
        t0 <= opened - 3.0,
        "the chart starts at {t0} s, the page opened at {opened} s: {seen}"
    );
    assert!(seen["samples"].as_u64().unwrap() >= 3 && seen["lines"] == 2, "{seen}");
}

#[test]
fn past_now_and_upcoming_maintenance_are_told_apart() {
    let serve = Serve::start(&["--scenario", QUIET, "--duration", "60"]);
    let ns = |s: f64| serde_json::json!({"nanoseconds": (s * 1e9) as i64});
    let window = |host: &str, start: f64, duration: Option<f64>| {
        let mut u = serde_json::json!({"start": ns(start)});
        if let Some(d) = duration {
            u["duration"] = ns(d);
        }
        serde_json::json!({"machine_ids": [{"hostname": host}], "unavailability": u})
    };
    let call = serde_json::json!({"type": "UPDATE_MAINTENANCE_SCHEDULE",
        "update_maintenance_schedule": {"schedule": {"windows": [
            window("a1", 0.0, Some(0.5)), window("a2", 100_000.0, Some(60.0)), window("a3", 0.0, None)]}}});
    let (status, body) = serve.request("POST", "/api/v1", &call.to_string());
    assert_eq!(status, 200, "{body}");
    std::thread::sleep(std::time::Duration::from_secs(1));
    let seen = check(&serve, "windows", &[]);
    for (agent, kind) in [("a1", "past"), ("a2", "upcoming"), ("a3", "now")] {
        let w = &seen["windows"][agent];
        assert!(text(&w["class"]).split(' ').any(|c| c == kind), "{agent}: {seen}");
        assert!(text(&w["text"]).starts_with(kind), "{agent}: {seen}");
    }
}

#[test]
fn the_page_follows_the_event_stream_instead_of_polling() {
    let serve = Serve::start(&["--scenario", QUIET, "--duration", "60"]);
    let seen = check(&serve, "follows", &[]);
    assert_eq!(seen["subscribed"], true, "{seen}");
    assert_eq!(seen["quiet_reads"], 0, "no reads while nothing happens: {seen}");
    assert_eq!(seen["scheduler_status"], 200, "{seen}");
    assert!(seen["shown_after_s"].as_f64().unwrap() < 4.0, "{seen}");
}

#[test]
fn a_visit_asks_for_no_favicon() {
    let serve = Serve::start(&["--scenario", CLUSTER, "--duration", "60"]);
    let seen = check(&serve, "favicon", &[]);
    let paths: Vec<&str> = seen["paths"].as_array().unwrap().iter().map(text).collect();
    assert!(paths.contains(&"/state"), "the log holds the page's requests: {seen}");
    assert!(!paths.iter().any(|p| p.contains("favicon")), "{seen}");
}
