//! `allocator-master serve` under hostile clients (issue 31): a chunk size that overflows, a
//! flood of idle keep-alive connections, a slowloris of partial heads, and a scheduler stream
//! among hundreds of idle connections. Each attack is a bounded loop on loopback; each test
//! checks that the attackers get a clear answer (or are closed), that other clients are
//! served throughout, and that no connection place leaks.
//!
//! "Another client" connects from another loopback address (127.0.0.2, …: all of 127.0.0.0/8
//! reaches loopback on Linux), since the server limits connections per client address.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use workspace_tests::serve::{Serve, connect_from};

/// Two agents and one framework: enough for a live master with allocation runs.
const SCENARIO: &str = r#"{"description": "attack test", "events": [
  {"op": "add_agent", "agent": "a1", "resources": "cpus:8;mem:800"},
  {"op": "add_agent", "agent": "a2", "resources": "cpus:8;mem:800"},
  {"op": "add_framework", "framework": "fa", "roles": ["a"],
   "tasks": {"resources": "cpus:1;mem:100", "count": 1, "refuse_seconds": 1000}}
]}"#;

fn start(test: &str, extra: &[&str]) -> Serve {
    let dir = std::env::temp_dir().join(format!("serve-attacks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join(format!("{test}.json"));
    std::fs::write(&scenario, SCENARIO).unwrap();
    let mut args = vec!["--duration", "60", "--scenario", scenario.to_str().unwrap()];
    args.extend_from_slice(extra);
    Serve::start(&args)
}

/// Loopback address 127.0.0.`n`.
fn lo(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, n))
}

/// The status of the answer read from `s` (`None`: closed, reset or timed out without one).
fn status_of(s: &mut TcpStream) -> Option<u16> {
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    answer.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// Reads one answer with a `Content-Length` body; its status (`None`: closed first).
fn read_answer(s: &mut TcpStream) -> Option<u16> {
    let mut data = Vec::new();
    let mut byte = [0u8; 1];
    while !data.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).ok()? != 1 {
            return None;
        }
        data.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&data).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .and_then(|v| v.trim().parse().ok())?;
    let mut body = vec![0u8; length];
    s.read_exact(&mut body).ok()?;
    head.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// A kept-alive connection from `from` that has been answered `GET /version` and now sits
/// idle; `None` when it was refused (`503`) or closed.
fn idle_connection(live: &Serve, from: IpAddr) -> Option<TcpStream> {
    let mut s = connect_from(from, &live.addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n").ok()?;
    (read_answer(&mut s)? == 200).then_some(s)
}

/// `GET path` from `from`: asserts `200` within `within`.
fn served(live: &Serve, from: IpAddr, path: &str, within: Duration) {
    let t = Instant::now();
    let answer = live.request_from(from, "GET", path, "");
    assert!(matches!(answer, Ok((200, _))), "GET {path} from {from}: {answer:?}");
    assert!(t.elapsed() < within, "GET {path} from {from} took {:?}", t.elapsed());
}

/// Issue 31's first attack: requests whose chunk size is `ffffffffffffffff` (a valid, huge
/// size: the body never arrives) or one digit longer (an overflow). Each gets an answer or is
/// closed, others are served meanwhile, and afterwards every connection place is free again.
#[test]
fn chunk_sizes_that_overflow_get_an_answer_and_leak_nothing() {
    let places = 64;
    let live = start(
        "chunks",
        &[
            "--http_body_timeout",
            "1",
            "--http_max_connections",
            "64",
            "--http_max_connections_per_address",
            "64",
        ],
    );
    let mut answers = std::collections::BTreeMap::<String, usize>::new();
    for wave in 0..6 {
        let attackers: Vec<TcpStream> = (0..50)
            .map(|i| {
                let mut s = connect_from(lo(1), &live.addr).expect("connect");
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let size = if i % 3 == 0 { "1ffffffffffffffff" } else { "ffffffffffffffff" };
                let _ = write!(
                    s,
                    "POST /quota HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n{size}\r\n{{\"role\"\r\n"
                );
                if (i + wave) % 2 == 1 {
                    // Half of them go away at once, as the issue's did.
                    let _ = s.shutdown(Shutdown::Write);
                }
                s
            })
            .collect();
        served(&live, lo(2), "/metrics/snapshot", Duration::from_secs(2));
        for mut s in attackers {
            let status = status_of(&mut s);
            assert!(
                matches!(status, None | Some(400 | 408 | 413 | 503)),
                "an attacker was answered {status:?}"
            );
            *answers.entry(format!("{status:?}")).or_default() += 1;
        }
    }
    assert_eq!(answers.values().sum::<usize>(), 300, "{answers:?}");
    // Every place is free again: `places` kept-alive connections are all served at once.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut held = Vec::new();
    while held.len() < places {
        match idle_connection(&live, lo(1)) {
            Some(s) => held.push(s),
            None => {
                assert!(Instant::now() < deadline, "only {} places are free", held.len());
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    eprintln!("answers to 300 attackers: {answers:?}");
}

/// Issue 31's second attack: 300 idle keep-alive connections from one address. The
/// per-address limit (128 by default) refuses the rest with `503`, another address is served
/// at once, and when the idle timeout has closed the idle ones the address is served again.
#[test]
fn an_idle_flood_from_one_address_does_not_shut_out_other_clients() {
    let live = start("idle", &["--http_idle_timeout", "3"]);
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..300 {
        match idle_connection(&live, lo(1)) {
            Some(s) => held.push(s),
            None => refused += 1,
        }
    }
    assert_eq!((held.len(), refused), (128, 172), "the per-address limit is 128");
    served(&live, lo(2), "/state", Duration::from_secs(2));
    let t = Instant::now();
    let same = live.request_from(lo(1), "GET", "/state", "");
    assert!(
        matches!(&same, Ok((503, _))) || same.is_err(),
        "the flooding address is refused: {same:?}"
    );
    assert!(t.elapsed() < Duration::from_secs(2), "refused in {:?}", t.elapsed());
    // The idle timeout (3 s here) closes the idle connections, and the address is back.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !matches!(live.request_from(lo(1), "GET", "/state", ""), Ok((200, _))) {
        assert!(Instant::now() < deadline, "the idle connections were never closed");
        std::thread::sleep(Duration::from_millis(200));
    }
    for mut s in held {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert!(matches!(s.read(&mut [0u8; 16]), Ok(0) | Err(_)), "closed by the server");
    }
}

/// Issue 31's third attack: 200 connections that send a head one byte at a time. They are
/// cut at the header timeout (2 s here), and other clients are served throughout.
#[test]
fn a_slowloris_is_cut_at_the_header_timeout_while_others_are_served() {
    let live = start("slowloris", &["--http_header_timeout", "2"]);
    let head = b"GET /state HTTP/1.1\r\nHost: localhost\r\nX-Slow: ";
    let mut slow: Vec<Option<TcpStream>> = (0..200)
        .map(|i| {
            let s = connect_from(lo(if i % 2 == 0 { 1 } else { 3 }), &live.addr).expect("connect");
            s.set_nonblocking(true).unwrap();
            Some(s)
        })
        .collect();
    let start = Instant::now();
    let mut cut_at = Vec::new();
    let mut probes = 0;
    let mut byte = 0;
    while slow.iter().any(Option::is_some) && start.elapsed() < Duration::from_secs(8) {
        for conn in &mut slow {
            let Some(s) = conn else { continue };
            let mut sink = [0u8; 256];
            let closed = match s.read(&mut sink) {
                Ok(_) => true,
                Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
            } || s.write(&[*head.get(byte).unwrap_or(&b'a')]).is_err();
            if closed {
                cut_at.push(start.elapsed());
                *conn = None;
            }
        }
        byte += 1;
        let from = if probes % 2 == 0 { lo(2) } else { lo(1) };
        served(&live, from, "/metrics/snapshot", Duration::from_secs(1));
        probes += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(cut_at.len(), 200, "every slow connection is cut");
    let (first, last) = (cut_at[0], cut_at[cut_at.len() - 1]);
    assert!(first >= Duration::from_millis(1500), "cut before the header timeout: {first:?}");
    assert!(last <= Duration::from_secs(5), "cut long after the header timeout: {last:?}");
    assert!(probes >= 15, "{probes} probes");
}

/// Issue 31's fourth attack: a scheduler's `SUBSCRIBE` stream keeps receiving events while
/// 300 idle connections fill every request place; the stream does not take one of them.
#[test]
fn a_scheduler_stream_flows_while_idle_connections_fill_every_request_place() {
    let live = start("stream", &["--heartbeat_interval", "0.2", "--http_max_connections", "300"]);
    let mut sub = connect_from(lo(1), &live.addr).expect("connect");
    let body =
        r#"{"type": "SUBSCRIBE", "subscribe": {"framework_info": {"user": "u", "name": "t"}}}"#;
    write!(
        sub,
        "POST /api/v1/scheduler HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let heartbeats = Arc::new(AtomicUsize::new(0));
    let reader = {
        let heartbeats = heartbeats.clone();
        let mut sub = sub.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(n) = sub.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&seen);
                assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
                heartbeats.store(text.matches("\"HEARTBEAT\"").count(), Ordering::SeqCst);
            }
        })
    };
    let wait_for = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while heartbeats.load(Ordering::SeqCst) < n {
            assert!(Instant::now() < deadline, "the stream stopped");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for(1);
    let held: Vec<TcpStream> = (0..300)
        .map(|i| idle_connection(&live, lo(1 + (i % 3) as u8)).expect("room for 300"))
        .collect();
    // Every request place is taken, by idle connections: a new client from another address is
    // served at once, the longest idle one closed to make room (issue 43: it was refused `503`,
    // which let idle sockets shut everybody out).
    served(&live, lo(4), "/state", Duration::from_secs(2));
    // The stream goes on: heartbeats every 0.2 s.
    let now = heartbeats.load(Ordering::SeqCst);
    wait_for(now + 5);
    // One idle connection goes: its place serves another client.
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !matches!(live.request_from(lo(4), "GET", "/state", ""), Ok((200, _))) {
        assert!(Instant::now() < deadline, "the places were never given back");
        std::thread::sleep(Duration::from_millis(50));
    }
    let now = heartbeats.load(Ordering::SeqCst);
    wait_for(now + 1);
    let _ = sub.shutdown(Shutdown::Both);
    reader.join().unwrap();
}

/// Issue 43's sixth attack: idle keep-alive connections (128) and stalled heads (128) spread
/// over eight addresses, under the per-address limit, fill every request place (256 here).
/// Clients from other addresses are served at once, each closing the connection idle or
/// stalled the longest (before: refused `503` until the attacker let go).
#[test]
fn idle_and_stalled_connections_on_many_addresses_make_room_for_new_clients() {
    let live = start("pressure", &["--http_max_connections", "256"]);
    let mut held: Vec<TcpStream> =
        (0..128).map(|i| idle_connection(&live, lo(1 + (i % 8) as u8)).expect("a place")).collect();
    for i in 0..128 {
        let mut s = connect_from(lo(1 + (i % 8) as u8), &live.addr).expect("connect");
        s.write_all(b"GET /state HTTP/1.1\r\nHost: localhost\r\nX-Slow: ").unwrap();
        held.push(s);
    }
    // The heads stall (the header timeout is 10 s); past a second they may be closed.
    std::thread::sleep(Duration::from_millis(1500));
    let newcomers: Vec<TcpStream> = (0..40)
        .map(|i| idle_connection(&live, lo(20 + (i % 4) as u8)).expect("served, not refused"))
        .collect();
    served(&live, lo(30), "/metrics/snapshot", Duration::from_secs(2));
    let closed = held
        .iter_mut()
        .map(|s| {
            s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            matches!(s.read(&mut [0u8; 64]), Ok(0) | Err(_))
        })
        .filter(|closed| *closed)
        .count();
    assert!(closed >= 40, "only {closed} attacker connections made room for 40 newcomers");
    drop(newcomers);
}

/// Red team breach B8 (issue 43): a slowloris from a handful of addresses (`slowloris.py`:
/// each connection sends one byte of its head every 0.3 s, so it is never silent for a second)
/// holds every request place; before, a newcomer from another address was refused `503` until
/// the header timeout. A head still arriving a second after it began is now stalled: each
/// newcomer is served, closing the connection in its head the longest.
#[test]
fn trickling_heads_from_a_few_addresses_make_room_for_newcomers() {
    let live = start("trickle", &["--http_max_connections", "64"]);
    let trickling: Vec<TcpStream> = (0..64)
        .map(|i| {
            let mut s = connect_from(lo(2 + (i % 4) as u8), &live.addr).expect("connect");
            s.write_all(b"G").unwrap();
            s
        })
        .collect();
    let trickler = std::thread::spawn(move || {
        let mut trickling = trickling;
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(4) {
            for s in &mut trickling {
                let _ = s.write_all(b"E");
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        trickling
    });
    std::thread::sleep(Duration::from_millis(1500));
    // Five newcomers keep their connections (each needs a place of its own), then a sixth.
    let newcomers: Vec<TcpStream> = (0..5)
        .map(|i| {
            let t = Instant::now();
            let s = idle_connection(&live, lo(30 + i)).expect("served, not refused");
            assert!(t.elapsed() < Duration::from_secs(2), "served after {:?}", t.elapsed());
            s
        })
        .collect();
    served(&live, lo(40), "/version", Duration::from_secs(2));
    let mut trickling = trickler.join().unwrap();
    drop(newcomers);
    let closed = trickling
        .iter_mut()
        .map(|s| {
            s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            // Closed: the end or a reset; still open: the read times out.
            match s.read(&mut [0u8; 64]) {
                Ok(0) => true,
                Ok(_) => false,
                Err(e) => !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
            }
        })
        .filter(|closed| *closed)
        .count();
    assert!(closed >= 5, "only {closed} trickling connections made room for 5 newcomers");
}

/// A benchmark of docs/history/benchmarks.md ("Issue 31: the allocation interval with 1,000
/// idle connections open"; BENCHMARKS.md's current figure is the plan flood's, below): the
/// periodic allocation's lateness (`allocator/mesos/allocation_run_latency_ms`) on the default
/// workload at `--speed 10` (ten allocation runs a second), over 30 s, without and with 1,000
/// idle keep-alive connections (125 from each of 127.0.0.1 to 127.0.0.8). Not a pass/fail test:
/// run it with `cargo test -p workspace-tests --test serve_attacks -- --ignored --nocapture`.
#[test]
#[ignore = "a benchmark (about 70 s); run by hand"]
fn bench_allocation_latency_with_1000_idle_connections() {
    let window = Duration::from_secs(30);
    for idle in [0usize, 1000] {
        let live = Serve::start(&["--duration", "120", "--speed", "10"]);
        let held = idle_connections(&live, idle);
        std::thread::sleep(window);
        let m = metrics_snapshot(&live);
        let v = |k: &str| lateness(&m, k);
        println!(
            "idle connections {idle:>5}: allocation_run_latency_ms p50 {:.3} p90 {:.3} p99 {:.3} max {:.3} (runs {}); allocation_run_ms p50 {:.3} p99 {:.3}; idle still open: {}",
            v("p50"),
            v("p90"),
            v("p99"),
            v("max"),
            v("count"),
            m["allocator/mesos/allocation_run_ms/p50"].as_f64().unwrap_or(f64::NAN),
            m["allocator/mesos/allocation_run_ms/p99"].as_f64().unwrap_or(f64::NAN),
            held.len(),
        );
    }
}

/// `n` idle keep-alive connections, 125 from each of 127.0.0.1, 127.0.0.2, … (for the
/// benchmarks).
fn idle_connections(live: &Serve, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|i| idle_connection(live, lo(1 + (i / 125) as u8)).expect("an idle connection"))
        .collect()
}

/// `GET /metrics/snapshot`, from 127.0.0.20.
fn metrics_snapshot(live: &Serve) -> serde_json::Value {
    let (status, body) =
        live.request_from(lo(20), "GET", "/metrics/snapshot", "").expect("metrics");
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// One statistic (`p50`, `p99`, `max`, `count`, …) of how late periodic runs started, in
/// milliseconds.
fn lateness(metrics: &serde_json::Value, stat: &str) -> f64 {
    metrics[format!("allocator/mesos/allocation_run_latency_ms/{stat}")]
        .as_f64()
        .unwrap_or(f64::NAN)
}

/// How late periodic allocation runs start, and how long a `GET /state` takes, over 30 s of
/// the default workload (`--speed 10`), without and with 1,000 idle keep-alive connections
/// plus a flood of `POST /plan` (four clients posting plans back to back). Not a pass/fail
/// test: run it with `cargo test -p workspace-tests --test serve_attacks -- --ignored
/// --nocapture bench_allocation_latency_under_a_plan_flood`.
#[test]
#[ignore = "a benchmark (about 70 s); run by hand"]
fn bench_allocation_latency_under_a_plan_flood() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let window = Duration::from_secs(30);
    for flood in [false, true] {
        let live = Arc::new(Serve::start(&["--duration", "120", "--speed", "10"]));
        let idle = if flood { 1000 } else { 0 };
        let held = idle_connections(&live, idle);
        let stop = Arc::new(AtomicBool::new(false));
        let (planned, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let flooders: Vec<_> = (0..if flood { 4 } else { 0 })
            .map(|i| {
                let (live, stop) = (live.clone(), stop.clone());
                let (planned, refused) = (planned.clone(), refused.clone());
                std::thread::spawn(move || {
                    let change = r#"{"op": "update_weights", "weights": {"batch": 10}}"#;
                    while !stop.load(Ordering::Relaxed) {
                        match live.request_from(lo(30 + i), "POST", "/plan", change) {
                            Ok((200, _)) => planned.fetch_add(1, Ordering::Relaxed),
                            _ => refused.fetch_add(1, Ordering::Relaxed),
                        };
                    }
                })
            })
            .collect();
        let mut state_ms = Vec::new();
        let start = std::time::Instant::now();
        while start.elapsed() < window {
            let t = std::time::Instant::now();
            let (status, _) = live.request_from(lo(20), "GET", "/state", "").expect("state");
            assert_eq!(status, 200);
            state_ms.push(t.elapsed().as_secs_f64() * 1e3);
            std::thread::sleep(Duration::from_millis(200));
        }
        stop.store(true, Ordering::Relaxed);
        for f in flooders {
            f.join().unwrap();
        }
        let m = metrics_snapshot(&live);
        let v = |k: &str| lateness(&m, k);
        state_ms.sort_by(f64::total_cmp);
        let pct = |p: f64| state_ms[((state_ms.len() - 1) as f64 * p).round() as usize];
        println!(
            "idle {idle:>4}, plan flood {flood:>5}: allocation_run_latency_ms p50 {:.3} p99 {:.3} max {:.3} (runs {}); GET /state ms p50 {:.1} p99 {:.1} max {:.1}; plans answered {} refused {}; idle still open {}",
            v("p50"),
            v("p99"),
            v("max"),
            v("count"),
            pct(0.5),
            pct(0.99),
            pct(1.0),
            planned.load(Ordering::Relaxed),
            refused.load(Ordering::Relaxed),
            held.len(),
        );
    }
}
