//! The Python harness for the scheduler API tests: the virtualenv made by
//! `tests/python/setup-venv.sh` (pymesos 0.3.15 on a pure-Python http-parser) must import
//! pymesos, and the clients pymesos is made of (Python's `http.client` for calls, http-parser's
//! pure-Python parser for the `SUBSCRIBE` stream) must read what [`allocator_http`]
//! and [`allocator_mesos`] write.
//!
//! The venv's python is `$ALLOCATOR_MASTER_PYTHON`, else `target/pyenv/bin/python` in the
//! workspace. Without either the test skips with a printed reason, except in CI (`CI=true`),
//! where a missing venv is a failure.

use std::path::PathBuf;
use std::process::Command;

/// The venv's python, or why there is none.
fn venv_python() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("ALLOCATOR_MASTER_PYTHON").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.exists() {
            Ok(p)
        } else {
            Err(format!("ALLOCATOR_MASTER_PYTHON names {}, which does not exist", p.display()))
        };
    }
    let default = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/pyenv/bin/python");
    if default.exists() {
        Ok(default)
    } else {
        Err(format!(
            "no pymesos venv: ALLOCATOR_MASTER_PYTHON is unset and {} does not exist \
             (make it with `bash tests/python/setup-venv.sh`)",
            default.display()
        ))
    }
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// The venv's python; `None` (after printing why) when the test is to be skipped.
fn python_or_skip() -> Option<PathBuf> {
    match venv_python() {
        Ok(p) => Some(p),
        Err(reason) if in_ci() => panic!("{reason}"),
        Err(reason) => {
            eprintln!("skipped: {reason}");
            None
        }
    }
}

#[test]
fn the_venv_python_imports_pymesos_on_the_pure_python_http_parser() {
    let Some(python) = python_or_skip() else { return };
    let out = Command::new(&python)
        .args([
            "-c",
            "import pymesos, http_parser.http, http_parser.pyparser\n\
             from pymesos import MesosSchedulerDriver, Scheduler\n\
             print('ok')",
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        out.status.success(),
        "{} cannot import pymesos: {}",
        python.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
}

/// Calls on one kept-alive connection as pymesos's `_send` makes them (`http.client`), then a
/// `SUBSCRIBE` request as pymesos's `Connection` writes it, its answer read with http-parser's
/// pure-Python parser as pymesos reads it. Prints one JSON line: the calls' statuses, the
/// stream's status, whether it was chunked (each call with whether the connection stayed
/// open), its `Mesos-Stream-Id`, and its RecordIO events.
const CLIENT: &str = r#"
import http.client, json, socket, sys
from http_parser.pyparser import HttpParser
host, port = sys.argv[1], int(sys.argv[2])
conn = http.client.HTTPConnection(host, port, timeout=10)
calls = []
for i in range(3):
    body = json.dumps({"type": "REVIVE", "framework_id": {"value": "f-1"}}).encode()
    conn.request("POST", "/api/v1/scheduler", body=body,
                 headers={"Content-Type": "application/json", "Mesos-Stream-Id": "s-1"})
    r = conn.getresponse()
    calls.append([r.status, r.read().decode(), conn.sock is not None])
data = json.dumps({"type": "SUBSCRIBE", "subscribe": {"framework_info": {"user": "", "name": "t"}}})
request = ("POST /api/v1/scheduler HTTP/1.1\r\nHost: %s:%d\r\n"
           "Content-Type: application/json\r\nAccept: application/json\r\n"
           "Connection: close\r\nContent-Length: %s\r\n\r\n%s") % (host, port, len(data), data)
s = socket.create_connection((host, port), timeout=10)
s.sendall(request.encode())
parser, body = HttpParser(), b""
while True:
    buf = s.recv(4096)
    if not buf:
        break
    parser.execute(buf, len(buf))
    if parser.is_partial_body():
        body += parser.recv_body()
    if parser.is_message_complete():
        break
headers = {k.upper(): v for k, v in parser.get_headers().items()}
events = []
while body:
    nl = body.index(b"\n")
    n = int(body[:nl])
    events.append(json.loads(body[nl + 1:nl + 1 + n]))
    body = body[nl + 1 + n:]
print(json.dumps({"calls": calls, "status": parser.get_status_code(),
                  "chunked": parser.is_chunked(), "stream_id": headers.get("MESOS-STREAM-ID"),
                  "events": events}))
"#;

/// Answers `REVIVE` with `202` and `SUBSCRIBE` with a stream of `SUBSCRIBED`, `HEARTBEAT` and
/// `OFFERS`, each its own chunk, then ends the stream.
fn answer_like_a_master(requests: std::sync::mpsc::Receiver<allocator_http::Request>) {
    use allocator_http::Response;
    use allocator_mesos::scheduler::{Call, CallType, Event, Offer, Subscribed};
    use allocator_mesos::{AgentId, FrameworkId, OfferId, ResourceFormat, to_mesos};
    for request in requests {
        let call = Call::parse(&request.body).expect("the client's call parses");
        call.validate().expect("the client's call is well formed");
        if call.kind != CallType::Subscribe {
            assert_eq!(request.header("mesos-stream-id"), Some("s-1"));
            request.respond_with(Response::empty(202));
            continue;
        }
        let stream = request.stream(
            200,
            vec![
                ("Content-Type".into(), "application/json".into()),
                ("Mesos-Stream-Id".into(), "s-1".into()),
            ],
            || {},
        );
        let resources = "cpus:2;mem:1024;ports:[31000-31001]".parse().unwrap();
        let offer = Offer {
            id: OfferId::new("o-1"),
            framework_id: FrameworkId::new("f-1"),
            agent_id: AgentId::new("a-1"),
            hostname: "a-1".into(),
            resources: to_mesos(&resources, Some("*"), ResourceFormat::Refined),
            attributes: Vec::new(),
            executor_ids: Vec::new(),
            unavailability: None,
            allocation_info: None,
        };
        let events = [
            Event::subscribed(Subscribed {
                framework_id: FrameworkId::new("f-1"),
                heartbeat_interval_seconds: Some(15.0),
                master_info: None,
            }),
            Event::heartbeat(),
            Event::offers(vec![offer]),
        ];
        std::thread::spawn(move || {
            for e in events {
                stream.send(&e.to_record()).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            stream.close();
        });
    }
}

#[test]
fn pymesos_clients_read_kept_alive_call_answers_and_a_chunked_recordio_event_stream() {
    let Some(python) = python_or_skip() else { return };
    let (server, requests) =
        allocator_http::Server::bind("127.0.0.1:0", allocator_http::Limits::default()).unwrap();
    std::thread::spawn(move || answer_like_a_master(requests));
    let addr = server.addr();
    let out = Command::new(&python)
        .args(["-c", CLIENT, &addr.ip().to_string(), &addr.port().to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["calls"],
        serde_json::json!([[202, "", true], [202, "", true], [202, "", true]]),
        "three 202s on one connection kept alive"
    );
    assert_eq!(report["status"], 200);
    assert_eq!(report["chunked"], true);
    assert_eq!(report["stream_id"], "s-1");
    let kinds: Vec<&str> =
        report["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["SUBSCRIBED", "HEARTBEAT", "OFFERS"]);
    assert_eq!(report["events"][0]["subscribed"]["framework_id"]["value"], "f-1");
    let offer = &report["events"][2]["offers"]["offers"][0];
    assert_eq!(offer["id"]["value"], "o-1");
    let cpus = offer["resources"].as_array().unwrap().iter().find(|r| r["name"] == "cpus").unwrap();
    assert_eq!(cpus["scalar"]["value"], 2.0);
}

/// A pymesos framework as a user writes one: registers, launches one task on the first offer,
/// stops once the task finished. Prints what its callbacks saw as one JSON line; gives up
/// after 60 s.
const FRAMEWORK: &str = r#"
import json, sys, threading, os
from pymesos import MesosSchedulerDriver, Scheduler
seen = {"registered": None, "offers": [], "updates": [], "cpus": None}
class Framework(Scheduler):
    def registered(self, driver, framework_id, master_info):
        seen["registered"] = framework_id["value"]
    def resourceOffers(self, driver, offers):
        for offer in offers:
            seen["offers"].append(offer["id"]["value"])
            cpus = [r["scalar"]["value"] for r in offer["resources"] if r["name"] == "cpus"]
            seen["cpus"] = cpus[0]
            task = {"name": "t", "task_id": {"value": "t-1"}, "agent_id": offer["agent_id"],
                    "resources": offer["resources"], "command": {"value": "sleep 1"}}
            driver.launchTasks(offer["id"], [task], filters={"refuse_seconds": 1})
    def statusUpdate(self, driver, update):
        seen["updates"].append([update["state"], "uuid" in update])
        if update["state"] == "TASK_FINISHED":
            driver.stop()
def give_up():
    print(json.dumps(seen)); sys.stdout.flush(); os._exit(3)
threading.Timer(60, give_up).start()
driver = MesosSchedulerDriver(Framework(), {"user": "", "name": "e2e", "roles": ["r1"],
                              "capabilities": [{"type": "MULTI_ROLE"}]}, sys.argv[1])
driver.run()
print(json.dumps(seen)); sys.stdout.flush(); os._exit(0)
"#;

/// What the scripted master saw, in order: each call's type (and `ACKNOWLEDGE`d states).
type Seen = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// A scripted stand-in for the master (the real one wires the master core): `/version`,
/// `SUBSCRIBE` → `SUBSCRIBED` + one offer, `ACCEPT` with a `LAUNCH` → `TASK_RUNNING`, its
/// acknowledgement → `TASK_FINISHED`, `TEARDOWN` → end of stream. Every call is parsed and
/// validated with [`allocator_mesos`].
fn scripted_master(requests: std::sync::mpsc::Receiver<allocator_http::Request>, seen: Seen) {
    use allocator_http::{Response, Stream};
    use allocator_mesos::scheduler::*;
    use allocator_mesos::*;
    let mut stream: Option<Stream> = None;
    let status = |state: TaskState, uuid: u8| {
        let mut s = TaskStatus::new(TaskId::new("t-1"), state);
        s.agent_id = Some(AgentId::new("a-1"));
        s.source = Some(TaskStatusSource::SourceExecutor);
        s.uuid = Some(Bytes(vec![uuid; 16]));
        Event::update(s)
    };
    for request in requests {
        if request.method == "GET" && request.path == "/version" {
            request.respond(200, r#"{"version": "1.12.0"}"#.into());
            continue;
        }
        let call = Call::parse(&request.body).unwrap();
        call.validate().unwrap();
        seen.lock().unwrap().push(format!("{:?}", call.kind));
        if call.kind == CallType::Subscribe {
            let info = &call.subscribe.as_ref().unwrap().framework_info;
            assert_eq!(info.effective_roles(), ["r1"]);
            let s = request.stream(
                200,
                vec![
                    ("Content-Type".into(), "application/json".into()),
                    ("Mesos-Stream-Id".into(), "s-1".into()),
                ],
                || {},
            );
            s.send(
                &Event::subscribed(Subscribed {
                    framework_id: FrameworkId::new("f-1"),
                    heartbeat_interval_seconds: Some(15.0),
                    master_info: None,
                })
                .to_record(),
            )
            .unwrap();
            let offered = "cpus:1;mem:128".parse().unwrap();
            let offer = Offer {
                id: OfferId::new("o-1"),
                framework_id: FrameworkId::new("f-1"),
                agent_id: AgentId::new("a-1"),
                hostname: "a-1".into(),
                resources: to_mesos(&offered, Some("r1"), ResourceFormat::Refined),
                attributes: Vec::new(),
                executor_ids: Vec::new(),
                unavailability: None,
                allocation_info: Some(resource::AllocationInfo { role: Some("r1".into()) }),
            };
            s.send(&Event::offers(vec![offer]).to_record()).unwrap();
            stream = Some(s);
            continue;
        }
        assert_eq!(request.header("Mesos-Stream-Id"), Some("s-1"), "{:?}", call.kind);
        assert_eq!(call.framework_id, Some(FrameworkId::new("f-1")));
        request.respond_with(Response::empty(202));
        let s = stream.as_ref().expect("subscribed first");
        match call.kind {
            CallType::Accept => {
                let accept = call.accept.unwrap();
                assert_eq!(accept.offer_ids, [OfferId::new("o-1")]);
                let task = &accept.operations[0].launch.as_ref().unwrap().task_infos[0];
                let used = from_mesos(&task.resources).unwrap();
                assert_eq!(used, "cpus:1;mem:128".parse().unwrap());
                assert_eq!(task.duration(), Some(1.0));
                s.send(&status(TaskState::TaskRunning, 1).to_record()).unwrap();
            }
            CallType::Acknowledge => {
                let uuid = call.acknowledge.unwrap().uuid;
                seen.lock().unwrap().push(format!("ack {}", uuid.0[0]));
                if uuid == Bytes(vec![1; 16]) {
                    s.send(&status(TaskState::TaskFinished, 2).to_record()).unwrap();
                }
            }
            CallType::Teardown => {
                s.close();
                stream = None;
            }
            _ => {}
        }
    }
}

#[test]
fn a_pymesos_framework_subscribes_launches_on_an_offer_and_sees_its_task_finish() {
    let Some(python) = python_or_skip() else { return };
    let (server, requests) =
        allocator_http::Server::bind("127.0.0.1:0", allocator_http::Limits::default()).unwrap();
    let seen = Seen::default();
    let master_seen = seen.clone();
    std::thread::spawn(move || scripted_master(requests, master_seen));
    let out =
        Command::new(&python).args(["-c", FRAMEWORK, &server.addr().to_string()]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}\nmaster saw {:?}",
        String::from_utf8_lossy(&out.stderr),
        seen.lock().unwrap()
    );
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["registered"], "f-1");
    assert_eq!(report["offers"], serde_json::json!(["o-1"]));
    assert_eq!(report["cpus"], 1.0);
    assert_eq!(
        report["updates"],
        serde_json::json!([["TASK_RUNNING", true], ["TASK_FINISHED", true]])
    );
    let calls = seen.lock().unwrap().clone();
    assert_eq!(calls[..4], ["Subscribe", "Accept", "Acknowledge", "ack 1"], "{calls:?}");
    assert!(calls.contains(&"Teardown".to_string()), "{calls:?}");
}
