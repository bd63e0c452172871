//! The operator API's event stream (`SUBSCRIBE` on `POST /api/v1`, Mesos's `master::Event`):
//! `SUBSCRIBED` with the whole state, then `AGENT_ADDED`, `AGENT_REMOVED`, `FRAMEWORK_ADDED`,
//! `FRAMEWORK_UPDATED`, `FRAMEWORK_REMOVED`, `TASK_ADDED`, `TASK_UPDATED` as they happen, and a
//! `HEARTBEAT` every heartbeat interval, RecordIO-framed as the scheduler API's.
//!
//! The events are told from the master's state: at each pass of `serve`'s loop (at least every
//! 100 ms) the agents, frameworks and tasks are compared with the last pass, so a change that
//! comes and goes within one pass is not seen. A task that ends is `TASK_UPDATED` with
//! `TASK_FINISHED` (the master keeps no end reason for it).
//!
//! Memory: each event is encoded once and the same bytes ([`Chunk`], reference-counted) wait in
//! every subscriber's queue, and so does `SUBSCRIBED`, encoded once for every subscriber (of one
//! principal) while the state is unchanged, across passes; a subscriber that does not read is
//! cut off by the HTTP server once its queue holds more than its byte bound
//! (`--http_stream_queue_bytes`), and the streams holding the most once all of them together
//! hold more than theirs (`--http_operator_streams_bytes`). Subscribers take
//! observer stream places ([`Request::observer_stream`]), a share of the stream places, so
//! that they can never crowd frameworks out of theirs.
//!
//! What each subscriber is told is what it may see ([`crate::auth`]), as Mesos filters its
//! operator event stream per subscriber: `SUBSCRIBED` holds the frameworks and tasks its
//! principal may view, and a framework or task event goes only to the subscribers that may
//! view that framework (`view_frameworks`) or task (`view_tasks`), by the framework's user.
//! The events are told from the whole state, and each is still encoded once.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::operator::{Cluster, v1_state};
use crate::auth::{Auth, Caller};
use allocator_http::{Chunk, Request, Stream};
use allocator_mesos::recordio;

/// What the events are told from: agents, frameworks and tasks by id, as v1 JSON.
#[derive(Default, PartialEq)]
struct Seen {
    agents: BTreeMap<String, Value>,
    frameworks: BTreeMap<String, Value>,
    tasks: BTreeMap<String, Value>,
}

impl Seen {
    fn of(state: &Value) -> Seen {
        let by =
            |list: &Value, key: &dyn Fn(&Value) -> Option<String>| -> BTreeMap<String, Value> {
                list.as_array()
                    .map(|l| l.iter().filter_map(|v| Some((key(v)?, v.clone()))).collect())
                    .unwrap_or_default()
            };
        Seen {
            agents: by(&state["get_agents"]["agents"], &|a| {
                a["agent_info"]["id"]["value"].as_str().map(str::to_owned)
            }),
            frameworks: by(&state["get_frameworks"]["frameworks"], &|f| {
                f["framework_info"]["id"]["value"].as_str().map(str::to_owned)
            }),
            tasks: by(&state["get_tasks"]["tasks"], &|t| {
                let fw = t["framework_id"]["value"].as_str()?;
                Some(format!("{fw}/{}", t["task_id"]["value"].as_str()?))
            }),
        }
    }

    /// The events that turn `self` into `now`.
    fn diff(&self, now: &Seen) -> Vec<Value> {
        let mut events = Vec::new();
        for (id, agent) in &now.agents {
            if !self.agents.contains_key(id) {
                events.push(json!({"type": "AGENT_ADDED", "agent_added": {"agent": agent}}));
            }
        }
        for id in self.agents.keys().filter(|id| !now.agents.contains_key(*id)) {
            events.push(
                json!({"type": "AGENT_REMOVED", "agent_removed": {"agent_id": {"value": id}}}),
            );
        }
        for (id, fw) in &now.frameworks {
            match self.frameworks.get(id) {
                None => events.push(json!({"type": "FRAMEWORK_ADDED", "framework_added": {"framework": fw}})),
                Some(old) if old["active"] != fw["active"] || old["framework_info"] != fw["framework_info"] => {
                    events.push(json!({"type": "FRAMEWORK_UPDATED", "framework_updated": {"framework": fw}}))
                }
                Some(_) => {}
            }
        }
        for (id, fw) in &self.frameworks {
            if !now.frameworks.contains_key(id) {
                events.push(json!({"type": "FRAMEWORK_REMOVED",
                    "framework_removed": {"framework_info": fw["framework_info"]}}));
            }
        }
        for (id, task) in &now.tasks {
            if !self.tasks.contains_key(id) {
                events.push(json!({"type": "TASK_ADDED", "task_added": {"task": task}}));
            }
        }
        for (id, task) in &self.tasks {
            if !now.tasks.contains_key(id) {
                let status = json!({"task_id": task["task_id"], "agent_id": task["agent_id"],
                    "state": "TASK_FINISHED", "source": "SOURCE_MASTER"});
                events.push(json!({"type": "TASK_UPDATED", "task_updated": {
                    "framework_id": task["framework_id"], "state": "TASK_FINISHED", "status": status}}));
            }
        }
        events
    }
}

/// What an event is about, for who may be told it.
enum Subject {
    /// Agents, heartbeats: every subscriber.
    Everyone,
    /// A framework of this user.
    Framework(String),
    /// A task of a framework of this user.
    Task(String),
}

impl Seen {
    /// The user of framework `id` (its `FrameworkInfo.user`), if it is among these.
    fn user_of(&self, id: &str) -> Option<String> {
        let f = self.frameworks.get(id)?;
        Some(f["framework_info"]["user"].as_str().unwrap_or_default().to_owned())
    }
}

/// What `event` (told between `old` and `now`) is about.
fn subject(event: &Value, old: &Seen, now: &Seen) -> Subject {
    let user = |info: &Value| info["user"].as_str().unwrap_or_default().to_owned();
    let of_framework = |id: &Value| {
        let id = id["value"].as_str().unwrap_or_default();
        now.user_of(id).or_else(|| old.user_of(id)).unwrap_or_default()
    };
    match event["type"].as_str().unwrap_or_default() {
        "FRAMEWORK_ADDED" => {
            Subject::Framework(user(&event["framework_added"]["framework"]["framework_info"]))
        }
        "FRAMEWORK_UPDATED" => {
            Subject::Framework(user(&event["framework_updated"]["framework"]["framework_info"]))
        }
        "FRAMEWORK_REMOVED" => {
            Subject::Framework(user(&event["framework_removed"]["framework_info"]))
        }
        "TASK_ADDED" => Subject::Task(of_framework(&event["task_added"]["task"]["framework_id"])),
        "TASK_UPDATED" => Subject::Task(of_framework(&event["task_updated"]["framework_id"])),
        _ => Subject::Everyone,
    }
}

/// One subscriber: its stream and the principal it subscribed as.
struct Subscriber {
    stream: Stream,
    principal: Option<String>,
}

impl Subscriber {
    /// Whether it may be told about `subject` under `auth`'s rules.
    fn may_see(&self, subject: &Subject, auth: &Auth) -> bool {
        let caller = Caller { auth, principal: self.principal.as_deref() };
        match subject {
            Subject::Everyone => true,
            Subject::Framework(user) => caller.sees_framework(user),
            Subject::Task(user) => caller.sees_task(user),
        }
    }
}

/// The operator API's subscribers. See the [module documentation](self).
pub struct OperatorStreams {
    streams: Vec<Subscriber>,
    seen: Seen,
    /// `SUBSCRIBED` as encoded for the first subscriber of each principal since the state last
    /// changed, for the others.
    subscribed: BTreeMap<Option<String>, Chunk>,
    heartbeat: Duration,
    last_heartbeat: Instant,
}

impl OperatorStreams {
    /// No subscriber yet; each gets a `HEARTBEAT` every `heartbeat`.
    pub fn new(heartbeat: Duration) -> OperatorStreams {
        OperatorStreams {
            streams: Vec::new(),
            seen: Seen::default(),
            subscribed: BTreeMap::new(),
            heartbeat,
            last_heartbeat: Instant::now(),
        }
    }

    /// Answers `SUBSCRIBE` from `caller`: a stream that starts with `SUBSCRIBED` (the state
    /// now as `caller` may see it, or as told to another subscriber of the same principal while
    /// the state has not changed since: the next pass's events cover what changed since). Over the observer
    /// streams' share of places, `503`.
    pub fn subscribe(&mut self, request: Request, cluster: &dyn Cluster<'_>, caller: Caller<'_>) {
        let stream = request.observer_stream(
            200,
            vec![("Content-Type".into(), "application/json".into())],
            || {},
        );
        if stream.is_closed() {
            return;
        }
        self.streams.retain(|s| !s.stream.is_closed());
        if self.streams.is_empty() {
            self.subscribed.clear();
            // The events are told from the whole state, whoever subscribes.
            let all = v1_state(cluster, Caller::trusted());
            self.seen = Seen::of(&serde_json::to_value(all).unwrap_or_default());
        }
        let heartbeat = self.heartbeat.as_secs_f64();
        let principal = caller.principal.map(str::to_owned);
        let subscribed = self.subscribed.entry(principal.clone()).or_insert_with(|| {
            let state = serde_json::to_value(v1_state(cluster, caller)).unwrap_or_default();
            let subscribed = json!({"type": "SUBSCRIBED", "subscribed": {"get_state": state,
                "heartbeat_interval_seconds": heartbeat}});
            Chunk::from(recordio::encode(subscribed.to_string().as_bytes()))
        });
        let _ = stream.send_chunk(subscribed);
        self.streams.push(Subscriber { stream, principal });
    }

    /// Sends what changed since the last pass, each event to the subscribers that may see it
    /// under `auth`'s rules, and heartbeats; forgets ended streams.
    pub fn tick(&mut self, cluster: &dyn Cluster<'_>, auth: &Auth) {
        self.streams.retain(|s| !s.stream.is_closed());
        if self.streams.is_empty() {
            self.subscribed.clear();
            return;
        }
        let all = v1_state(cluster, Caller::trusted());
        let now = Seen::of(&serde_json::to_value(all).unwrap_or_default());
        // `SUBSCRIBED` is the state (`GetState`: agents, frameworks, tasks, as `Seen` holds
        // them): while it is unchanged, the one encoded is shared by later subscribers too.
        if now != self.seen {
            self.subscribed.clear();
        }
        let mut events = self.seen.diff(&now);
        let subjects: Vec<Subject> = events.iter().map(|e| subject(e, &self.seen, &now)).collect();
        self.seen = now;
        let mut subjects = subjects.into_iter();
        if self.last_heartbeat.elapsed() >= self.heartbeat {
            self.last_heartbeat = Instant::now();
            events.push(json!({"type": "HEARTBEAT"}));
        }
        for event in events {
            let subject = subjects.next().unwrap_or(Subject::Everyone);
            // Encoded once; every queue holds the same bytes.
            let record = Chunk::from(recordio::encode(event.to_string().as_bytes()));
            for s in self.streams.iter().filter(|s| s.may_see(&subject, auth)) {
                let _ = s.stream.send_chunk(&record);
            }
        }
    }

    /// Ends every stream (the master stops).
    pub fn close(&mut self) {
        for s in self.streams.drain(..) {
            s.stream.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_become_mesoss_operator_events() {
        let before = Seen::of(&json!({
            "get_agents": {"agents": [{"agent_info": {"id": {"value": "a1"}}}]},
            "get_frameworks": {"frameworks": [{"framework_info": {"id": {"value": "f1"}}, "active": true}]},
            "get_tasks": {"tasks": [{"framework_id": {"value": "f1"}, "task_id": {"value": "t1"}}]},
        }));
        let after = Seen::of(&json!({
            "get_agents": {"agents": [{"agent_info": {"id": {"value": "a2"}}}]},
            "get_frameworks": {"frameworks": [{"framework_info": {"id": {"value": "f1"}}, "active": false}]},
            "get_tasks": {"tasks": [{"framework_id": {"value": "f1"}, "task_id": {"value": "t2"}}]},
        }));
        let types: Vec<String> =
            before.diff(&after).iter().map(|e| e["type"].as_str().unwrap().to_owned()).collect();
        assert_eq!(
            types,
            ["AGENT_ADDED", "AGENT_REMOVED", "FRAMEWORK_UPDATED", "TASK_ADDED", "TASK_UPDATED"]
        );
        assert!(before.diff(&before).is_empty());
    }
}
