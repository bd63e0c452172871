//! Mesos's v0 operator endpoints with a v1 twin (issue 44): quota, maintenance, machine down and
//! up, teardown, reserve and unreserve, state-summary, with Mesos's documented request and
//! answer shapes, under the same ACLs as their v1 calls; and an operator's script written for
//! Mesos 1.11/1.12 (`tests/scripts/mesos_operator.sh`, curl and jq) runs unchanged.

use allocator_mesos::base64_encode;
use serde_json::{Value, json};
use workspace_tests::serve::Serve;

const CLUSTER: &str = "tests/python/cluster.json";
const JSON: &str = "Content-Type: application/json";
const FORM: &str = "Content-Type: application/x-www-form-urlencoded";

fn start(flags: &[&str]) -> Serve {
    let mut args = vec!["--duration", "60", "--scenario", CLUSTER];
    args.extend_from_slice(flags);
    Serve::start(&args)
}

fn get(serve: &Serve, path: &str) -> Value {
    let (status, body) = serve.request("GET", path, "");
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
}

/// Subscribes a framework of user `alice` over the scheduler API; its id and its stream.
fn subscribe(serve: &Serve) -> (String, std::io::BufReader<std::net::TcpStream>) {
    use std::io::{BufRead, Read};
    let info = json!({"user": "alice", "name": "alice-fw", "roles": ["r1"],
                      "capabilities": [{"type": "MULTI_ROLE"}]});
    let body = json!({"type": "SUBSCRIBE", "subscribe": {"framework_info": info}}).to_string();
    let (status, _, mut stream) = serve.open_stream("/api/v1/scheduler", &[JSON], &body);
    assert_eq!(status, 200);
    let mut line = String::new();
    stream.read_line(&mut line).unwrap(); // chunk size
    let mut record = String::new();
    stream.read_line(&mut record).unwrap(); // record length
    let mut event = vec![0u8; record.trim().parse().unwrap()];
    stream.read_exact(&mut event).unwrap();
    let event: Value = serde_json::from_slice(&event).unwrap();
    let id = event["subscribed"]["framework_id"]["value"].as_str().unwrap().to_owned();
    (id, stream)
}

fn quota_of(serve: &Serve, role: &str) -> Option<Value> {
    let quota = get(serve, "/master/quota");
    quota["configs"].as_array()?.iter().find(|c| c["role"] == role).cloned()
}

#[test]
fn post_master_quota_sets_the_guarantee_and_delete_removes_it() {
    let serve = start(&[]);
    let request = json!({"role": "ml", "guarantee": [
        {"name": "cpus", "type": "SCALAR", "scalar": {"value": 2}},
        {"name": "mem", "type": "SCALAR", "scalar": {"value": 512}}]});
    let (status, body) = serve.request("POST", "/master/quota", &request.to_string());
    assert_eq!(status, 200, "{body}");
    let ml = quota_of(&serve, "ml").expect("ml has a quota");
    assert_eq!(ml["guarantees"]["cpus"]["value"], 2.0, "{ml}");
    assert_eq!(ml["limits"], ml["guarantees"], "the legacy guarantee is also the limit");
    let (status, body) = serve.request("DELETE", "/master/quota/ml", "");
    assert_eq!(status, 200, "{body}");
    assert!(quota_of(&serve, "ml").is_none(), "the quota is gone");
    let (status, _) = serve.request("DELETE", "/master/quota/ml", "");
    assert_eq!(status, 400, "no quota to remove, as Mesos answers");
}

#[test]
fn maintenance_schedule_status_machine_down_and_up_as_mesos_documents_them() {
    let serve = start(&[]);
    let schedule = json!({"windows": [{"machine_ids": [{"hostname": "a1", "ip": "10.0.0.1"}],
        "unavailability": {"start": {"nanoseconds": 1_443_830_400_000_000_000i64},
                           "duration": {"nanoseconds": 3_600_000_000_000i64}}}]});
    let (status, body) =
        serve.request("POST", "/master/maintenance/schedule", &schedule.to_string());
    assert_eq!(status, 200, "{body}");
    let read = get(&serve, "/master/maintenance/schedule");
    assert_eq!(read["windows"][0]["machine_ids"][0]["hostname"], "a1", "{read}");
    let status_now = get(&serve, "/master/maintenance/status");
    assert_eq!(status_now["draining_machines"][0]["id"]["hostname"], "a1", "{status_now}");
    let machines = json!([{"hostname": "a1", "ip": "10.0.0.1"}]).to_string();
    assert_eq!(serve.request("POST", "/master/machine/down", &machines).0, 200);
    let down = get(&serve, "/master/maintenance/status");
    assert_eq!(down["down_machines"][0]["hostname"], "a1", "{down}");
    let slaves = get(&serve, "/master/slaves");
    assert!(!slaves.to_string().contains("\"a1\""), "a1 is down: {slaves}");
    assert_eq!(serve.request("POST", "/master/machine/up", &machines).0, 200);
    let slaves = get(&serve, "/master/slaves");
    assert!(slaves.to_string().contains("\"a1\""), "a1 is back: {slaves}");
}

#[test]
fn teardown_by_form_removes_the_framework() {
    let serve = start(&[]);
    let (id, _stream) = subscribe(&serve);
    let (status, _, body) =
        serve.request_with("POST", "/master/teardown", &[FORM], &format!("frameworkId={id}"));
    assert_eq!(status, 200, "{body}");
    let frameworks = get(&serve, "/master/frameworks");
    assert!(frameworks["frameworks"].as_array().unwrap().iter().all(|f| f["id"] != id.as_str()));
    assert!(frameworks["completed_frameworks"].to_string().contains(&id), "{frameworks}");
    let (status, _, _) =
        serve.request_with("POST", "/master/teardown", &[FORM], "frameworkId=nobody");
    assert_eq!(status, 400, "an unknown framework");
}

#[test]
fn reserve_and_unreserve_by_form_change_the_agent_as_their_v1_calls_do() {
    let serve = start(&[]);
    let resources = json!([{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1},
                            "reservations": [{"type": "DYNAMIC", "role": "r1", "principal": "ops"}]}]);
    let form = |resources: &Value| {
        let encoded: String = resources
            .to_string()
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        format!("slaveId=a1&resources={encoded}")
    };
    let (status, _, body) =
        serve.request_with("POST", "/master/reserve", &[FORM], &form(&resources));
    assert_eq!(status, 202, "{body}");
    let state = get(&serve, "/state");
    let a1 = state["agents"].as_array().unwrap().iter().find(|a| a["agent"] == "a1").unwrap();
    assert!(a1["resources"].as_str().unwrap().contains("cpus(r1"), "{a1}");
    let (status, _, body) =
        serve.request_with("POST", "/master/unreserve", &[FORM], &form(&resources));
    assert_eq!(status, 202, "{body}");
    let state = get(&serve, "/state");
    let a1 = state["agents"].as_array().unwrap().iter().find(|a| a["agent"] == "a1").unwrap();
    assert!(!a1["resources"].as_str().unwrap().contains("cpus(r1"), "{a1}");
}

#[test]
fn state_summary_names_the_cluster_its_agents_and_frameworks() {
    let serve = start(&["--cluster", "prod-east"]);
    let (id, _stream) = subscribe(&serve);
    let summary = get(&serve, "/master/state-summary");
    assert_eq!(summary["cluster"], "prod-east", "{summary}");
    assert_eq!(summary["slaves"].as_array().unwrap().len(), 4, "{summary}");
    let fw = summary["frameworks"].as_array().unwrap().iter().find(|f| f["id"] == id.as_str());
    let fw = fw.unwrap_or_else(|| panic!("the framework: {summary}"));
    assert_eq!(fw["name"], "alice-fw");
    assert!(fw["TASK_RUNNING"].is_number(), "task counts by state: {fw}");
}

#[test]
fn get_on_the_operator_api_is_405() {
    let serve = start(&[]);
    assert_eq!(serve.request("GET", "/api/v1", "").0, 405);
}

#[test]
fn a_v0_write_is_refused_by_the_acl_of_its_v1_twin() {
    let dir = std::env::temp_dir().join(format!("serve-v0-acl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let creds = dir.join("credentials.json");
    std::fs::write(
        &creds,
        r#"{"credentials": [{"principal": "ops", "secret": "s1"}, {"principal": "dev", "secret": "s2"}]}"#,
    )
    .unwrap();
    let acls = r#"{"permissive": false,
        "update_quotas": [{"principals": {"values": ["ops"]}, "roles": {"values": ["ml"]}}]}"#;
    let serve = start(&[
        "--credentials",
        creds.to_str().unwrap(),
        "--authenticate_http_readwrite",
        "--acls",
        acls,
    ]);
    let basic = |p: &str, s: &str| {
        format!("Authorization: Basic {}", base64_encode(format!("{p}:{s}").as_bytes()))
    };
    let request = json!({"role": "ml", "guarantee": [
        {"name": "cpus", "type": "SCALAR", "scalar": {"value": 1}}]})
    .to_string();
    let post = |auth: &str| serve.request_with("POST", "/master/quota", &[JSON, auth], &request).0;
    assert_eq!(post(&basic("dev", "s2")), 403);
    assert_eq!(post(&basic("ops", "s1")), 200);
    let machines = json!([{"hostname": "a1"}]).to_string();
    let down =
        serve.request_with("POST", "/master/machine/down", &[JSON, &basic("ops", "s1")], &machines);
    assert_eq!(down.0, 403, "start_maintenances is not listed: permissive false refuses it");
}

#[test]
fn an_operator_script_written_for_mesos_runs_unchanged() {
    let serve = start(&[]);
    let (id, _stream) = subscribe(&serve);
    let out = std::process::Command::new("bash")
        .current_dir(workspace_tests::workspace_root())
        .arg("tests/scripts/mesos_operator.sh")
        .args([&id, "a2"])
        .env("MASTER", &serve.addr)
        .output()
        .expect("run bash");
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the script failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("operator script done"), "{stdout}");
}
