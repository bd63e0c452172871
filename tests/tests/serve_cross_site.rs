//! A page on another site cannot change the live master through a visitor's browser (issue
//! 43, "Browsers"): state-changing requests a browser marks as cross-site are refused before
//! authentication, a request naming the master by a name it was not given (DNS rebinding) is
//! refused, and the web page cannot be framed. Programs, which send neither `Origin` nor
//! `Sec-Fetch-Site` and name the master by its address, are not affected.

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::Value;
use workspace_tests::serve::{Serve, header};

const SCENARIO: &str = r#"{"description": "cross-site test", "events": [
  {"op": "add_agent", "agent": "a1", "resources": "cpus:8;mem:800"},
  {"op": "add_framework", "framework": "fa", "roles": ["a"]}
]}"#;

fn start(test: &str) -> Serve {
    start_with(test, &[])
}

fn start_with(test: &str, extra: &[&str]) -> Serve {
    let dir = std::env::temp_dir().join(format!("serve-cross-site-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{test}.json"));
    std::fs::write(&path, SCENARIO).unwrap();
    let mut args = vec!["--duration", "120", "--scenario", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    Serve::start(&args)
}

/// The status of `GET /state` sent with `Host: {host}`.
fn state_status_for_host(live: &Serve, host: &str) -> u16 {
    let mut s = TcpStream::connect(&live.addr).unwrap();
    write!(s, "GET /state HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer.split(' ').nth(1).and_then(|c| c.parse().ok()).expect("a status line")
}

/// Role `a`'s weight as `GET /state` shows it.
fn weight_of_a(live: &Serve) -> Value {
    let (status, body) = live.request("GET", "/state", "");
    assert_eq!(status, 200, "{body}");
    let state: Value = serde_json::from_str(&body).unwrap();
    state["roles"].as_array().unwrap().iter().find(|r| r["role"] == "a").unwrap()["weight"].clone()
}

const CHANGE: &str = r#"{"weights": {"a": 7}}"#;

#[test]
fn a_text_plain_post_from_another_origin_changes_nothing() {
    let live = start("origin");
    let before = weight_of_a(&live);
    let (status, _, body) = live.request_with(
        "POST",
        "/weights",
        &["Content-Type: text/plain", "Origin: http://evil.example"],
        CHANGE,
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("Cross-site"), "{body}");
    assert_eq!(weight_of_a(&live), before);
}

#[test]
fn a_request_a_browser_marks_cross_site_changes_nothing() {
    let live = start("fetch-site");
    let before = weight_of_a(&live);
    for site in ["cross-site", "same-site"] {
        let (status, _, body) = live.request_with(
            "POST",
            "/weights",
            &["Content-Type: application/json", &format!("Sec-Fetch-Site: {site}")],
            CHANGE,
        );
        assert_eq!(status, 403, "{site}: {body}");
    }
    let (status, _, _) = live.request_with(
        "PUT",
        "/master/weights",
        &["Origin: null"],
        r#"[{"role": "a", "weight": 7}]"#,
    );
    assert_eq!(status, 403, "an opaque origin (a sandboxed frame, a file) is not this master");
    assert_eq!(weight_of_a(&live), before);
}

#[test]
fn the_master_s_own_page_and_programs_may_change_it() {
    let live = start("same-origin");
    let origin = format!("Origin: http://{}", live.addr);
    let (status, _, body) = live.request_with(
        "POST",
        "/weights",
        &["Content-Type: application/json", &origin, "Sec-Fetch-Site: same-origin"],
        CHANGE,
    );
    assert_eq!(status, 200, "the page's own request: {body}");
    assert_eq!(weight_of_a(&live), 7.0);
    // A program sends no Origin and no Sec-Fetch-Site.
    let (status, body) = live.request("POST", "/weights", r#"{"weights": {"a": 3}}"#);
    assert_eq!(status, 200, "{body}");
    assert_eq!(weight_of_a(&live), 3.0);
}

#[test]
fn the_web_page_cannot_be_framed() {
    let live = start("frame");
    let (status, headers, _) = live.request_with("GET", "/", &["Accept: text/html"], "");
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "X-Frame-Options"), Some("DENY"));
    assert_eq!(header(&headers, "Content-Security-Policy"), Some("frame-ancestors 'none'"));
}

#[test]
fn a_name_the_master_was_not_given_is_refused_against_dns_rebinding() {
    let live = start("rebinding");
    let port = live.addr.rsplit(':').next().unwrap().to_owned();
    assert_eq!(state_status_for_host(&live, &format!("attacker.example:{port}")), 403);
    assert_eq!(state_status_for_host(&live, &format!("127.0.0.1:{port}")), 200);
    assert_eq!(state_status_for_host(&live, &format!("localhost:{port}")), 200);
    assert_eq!(state_status_for_host(&live, &format!("[::1]:{port}")), 200);
}

#[test]
fn the_name_given_with_hostname_is_accepted_and_advertised() {
    let live = start_with("hostname", &["--hostname", "master.example"]);
    let port = live.addr.rsplit(':').next().unwrap().to_owned();
    assert_eq!(state_status_for_host(&live, &format!("master.example:{port}")), 200);
    assert_eq!(state_status_for_host(&live, &format!("other.example:{port}")), 403);
    let (status, body) = live.request("GET", "/master/state", "");
    assert_eq!(status, 200, "{body}");
    let state: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(state["hostname"], "master.example");
}
