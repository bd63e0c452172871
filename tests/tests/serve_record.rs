//! `serve --record FILE` (SPEC 6.3): a live session, with an operator change in the middle, is
//! written as a scenario that replays to the same offers.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use workspace_tests::{master, workspace_root};

/// The offers of an event stream: (time in microseconds, framework, role, agent, resources).
fn offers(path: &std::path::Path) -> Vec<(i64, String, String, String, String)> {
    let text = std::fs::read_to_string(path).expect("an event stream");
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON lines"))
        .filter(|v| v["event"] == "offer")
        .map(|v| {
            let s = |k: &str| v[k].as_str().expect("text field").to_owned();
            let t = (v["time"].as_f64().expect("time") * 1e6).round() as i64;
            (t, s("framework"), s("role"), s("agent"), s("resources"))
        })
        .collect()
}

fn post(addr: &str, path: &str, body: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut s, &mut answer).unwrap();
    answer
}

#[test]
fn a_recorded_live_session_replays_to_the_same_offers() {
    let dir = std::env::temp_dir().join(format!("serve-record-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (record, live, replay) =
        (dir.join("rec.json"), dir.join("live.jsonl"), dir.join("replay.jsonl"));
    let mut child = Command::new(master())
        .args(["serve", "--listen", "127.0.0.1:0", "--speed", "200", "--duration", "3"])
        .arg("--record")
        .arg(&record)
        .arg("--output")
        .arg(&live)
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
    std::thread::sleep(Duration::from_millis(400));
    let answer = post(&addr, "/weights", r#"{"weights": {"analytics": 3}}"#);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let status = child.wait().unwrap();
    assert!(status.success(), "serve ended with {status}");

    let replayed = Command::new(master())
        .arg("--scenario")
        .arg(&record)
        .arg("--output")
        .arg(&replay)
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert!(replayed.status.success(), "{}", String::from_utf8_lossy(&replayed.stderr));
    let recording = std::fs::read_to_string(&record).unwrap();
    assert!(recording.contains(r#""op":"update_weights""#), "the operator change is recorded");
    let (live, replay) = (offers(&live), offers(&replay));
    assert!(live.len() > 100, "the live session made {} offers", live.len());
    assert_eq!(live, replay, "the replay makes the live session's offers");
    std::fs::remove_dir_all(&dir).unwrap();
}
