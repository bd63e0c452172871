//! A page on another site cannot change the live master through a visitor's browser (issue
//! 43, "Browsers"): state-changing requests a browser marks as cross-site are refused before
//! authentication, and the web page cannot be framed. Programs, which send neither `Origin`
//! nor `Sec-Fetch-Site`, are not affected.

use serde_json::Value;
use workspace_tests::serve::{Serve, header};

const SCENARIO: &str = r#"{"description": "cross-site test", "events": [
  {"op": "add_agent", "agent": "a1", "resources": "cpus:8;mem:800"},
  {"op": "add_framework", "framework": "fa", "roles": ["a"]}
]}"#;

fn start(test: &str) -> Serve {
    let dir = std::env::temp_dir().join(format!("serve-cross-site-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{test}.json"));
    std::fs::write(&path, SCENARIO).unwrap();
    Serve::start(&["--duration", "120", "--scenario", path.to_str().unwrap()])
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
