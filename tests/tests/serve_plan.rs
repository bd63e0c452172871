//! `POST /plan` and `GET /explain` on a live master (issue 24): a prediction that changes
//! nothing, and an account with numbers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use workspace_tests::{master, workspace_root};

struct Live(Child, String);

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start() -> Live {
    let mut child = Command::new(master())
        .args(["serve", "--listen", "127.0.0.1:0", "--speed", "20", "--duration", "60"])
        .current_dir(workspace_root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start allocator-master serve");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("serving on http://") {
                let _ = tx.send(addr.to_owned());
            }
        }
    });
    let addr = rx.recv_timeout(Duration::from_secs(60)).expect("the master announces itself");
    Live(child, addr)
}

fn request(live: &Live, method: &str, path: &str, body: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(&live.1).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    let json = body.lines().find(|l| l.starts_with('{')).unwrap_or("null");
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

#[test]
fn post_plan_predicts_the_next_run_and_changes_nothing() {
    let live = start();
    let change = r#"{"op": "update_weights", "weights": {"batch": 10}}"#;
    let (status, plan) = request(&live, "POST", "/plan", change);
    assert_eq!(status, 200, "{plan}");
    assert!(plan["offers"]["with_change"].is_array() && plan["offers"]["without"].is_array());
    assert!(plan["next_allocation_run"].as_f64() > plan["at"].as_f64(), "{plan}");
    let (_, state) = request(&live, "GET", "/state", "");
    let batch = state["roles"].as_array().unwrap().iter().find(|r| r["role"] == "batch");
    assert_eq!(
        batch.map(|r| r["weight"].clone()),
        Some(Value::from(1.0)),
        "the weight is unchanged"
    );
}

#[test]
fn post_plan_with_a_bad_change_is_answered_400() {
    let live = start();
    let (status, answer) = request(&live, "POST", "/plan", r#"{"op": "pause"}"#);
    assert_eq!(status, 400);
    assert!(answer["error"].as_str().unwrap().contains("a change is one scenario event"));
    let (status, _) = request(&live, "GET", "/plan", "");
    assert_eq!(status, 405);
}

#[test]
fn get_explain_accounts_for_a_role_and_a_framework() {
    let live = start();
    let (status, role) = request(&live, "GET", "/explain?role=services", "");
    assert_eq!(status, 200, "{role}");
    assert_eq!(role["role"], "services");
    let order = role["reasons"].as_array().unwrap().iter().find(|r| r["reason"] == "role_order");
    assert!(order.is_some_and(|o| o["rank"].as_u64() >= Some(1)), "{role}");
    let (status, fw) = request(&live, "GET", "/explain?framework=service-0", "");
    assert_eq!(status, 200, "{fw}");
    assert_eq!(fw["framework"], "service-0");
    assert!(fw["roles"][0]["rank"].as_u64() >= Some(1), "{fw}");
    let (status, _) = request(&live, "GET", "/explain", "");
    assert_eq!(status, 400);
}
