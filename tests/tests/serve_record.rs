//! `serve --record FILE` (SPEC 6.3): a live session, with an operator change in the middle, is
//! written as a scenario that replays to the same offers. (With real frameworks:
//! `serve_scheduler_api.rs`.)

use workspace_tests::run_master;
use workspace_tests::serve::{Serve, offers_in};

#[test]
fn a_recorded_live_session_replays_to_the_same_offers() {
    let dir = std::env::temp_dir().join(format!("serve-record-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (record, live, replay) =
        (dir.join("rec.json"), dir.join("live.jsonl"), dir.join("replay.jsonl"));
    let serve = Serve::start(&[
        "--speed",
        "200",
        "--duration",
        "3",
        "--record",
        record.to_str().unwrap(),
        "--output",
        live.to_str().unwrap(),
    ]);
    std::thread::sleep(std::time::Duration::from_millis(400));
    let (status, answer) = serve.request("POST", "/weights", r#"{"weights": {"analytics": 3}}"#);
    assert_eq!(status, 200, "{answer}");
    let status = serve.wait();
    assert!(status.success(), "serve ended with {status}");

    let replayed =
        run_master(&["--scenario", record.to_str().unwrap(), "--output", replay.to_str().unwrap()]);
    assert!(replayed.status.success(), "{}", String::from_utf8_lossy(&replayed.stderr));
    let recording = std::fs::read_to_string(&record).unwrap();
    assert!(recording.contains(r#""op":"update_weights""#), "the operator change is recorded");
    assert!(
        recording.contains(r#""tasks":{"#),
        "the simulated frameworks are recorded with what their tasks look like"
    );
    let (live, replay) = (offers_in(&live), offers_in(&replay));
    assert!(live.len() > 100, "the live session made {} offers", live.len());
    assert_eq!(live, replay, "the replay makes the live session's offers");
    std::fs::remove_dir_all(&dir).unwrap();
}
