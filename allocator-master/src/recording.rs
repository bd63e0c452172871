//! Recording (SPEC section 6.3): what a live master applied, written as it happens as a
//! scenario (SPEC section 4.1) that `allocator-master --scenario FILE` replays.
//!
//! [`op_to_json`] is the inverse of the scenario parser for every event: parsing what it writes
//! gives back the same [`Op`]. The [`Journal`] puts what the master applied in order, each
//! event at its virtual time `t` preceded by an `advance` to `t`, and hands it to the
//! [`Recorder`], which writes the scenario file (the configuration first), and keeps it for
//! plans. Real frameworks' actions arrive as [`Applied`] entries from the scheduler API client.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use allocator_api::{InverseOfferStatus, OperationKind, Quantities, Quota, Resources};
use serde_json::{Map, Value, json};

use crate::allocator_scenario::{Op, TaskSpec};
use crate::clients::scenario::offers_json;

fn text(r: &Resources) -> Value {
    Value::String(r.to_string())
}

fn quota_json(q: &Quota) -> Map<String, Value> {
    let mut m = Map::new();
    let nonempty = |x: &Quantities| x.iter().next().is_some();
    if nonempty(&q.guarantees) {
        m.insert("guarantees".into(), json!(q.guarantees.to_string()));
    }
    if nonempty(&q.limits) {
        m.insert("limits".into(), json!(q.limits.to_string()));
    }
    m
}

fn min_allocatable_json(list: &[allocator_api::RoleMinAllocatable]) -> Value {
    let m: Map<String, Value> = list
        .iter()
        .map(|m| {
            let sets: Vec<Value> = m.sets.iter().map(|q| json!(q.to_string())).collect();
            (m.role.to_string(), Value::Array(sets))
        })
        .collect();
    Value::Object(m)
}

fn task_spec_json(t: &TaskSpec) -> Value {
    let mut m = Map::new();
    if let Some(r) = &t.resources {
        m.insert("resources".into(), text(r));
    }
    if let Some(c) = t.count {
        m.insert("count".into(), json!(c));
    }
    if let Some(d) = t.duration {
        m.insert("duration".into(), json!(d));
    }
    if let Some(p) = t.per_offer {
        m.insert("per_offer".into(), json!(p));
    }
    m.insert("refuse_seconds".into(), json!(t.refuse_seconds));
    Value::Object(m)
}

fn unavailability_json(u: &Option<allocator_api::Unavailability>) -> Value {
    match u {
        None => Value::Null,
        Some(u) => match u.duration.into_option() {
            Some(d) => json!({"start": u.start, "duration": d}),
            None => json!({"start": u.start}),
        },
    }
}

fn operations_json(ops: &[allocator_api::Operation]) -> Value {
    Value::Array(
        ops.iter()
            .map(|o| {
                let kind = match o.kind {
                    OperationKind::RESERVE => "reserve",
                    OperationKind::UNRESERVE => "unreserve",
                    OperationKind::CREATE => "create",
                    _ => "destroy",
                };
                json!({"type": kind, "resources": o.resources.to_string()})
            })
            .collect(),
    )
}

fn used_json(used: &[(String, Option<String>, Resources)]) -> Value {
    let mut m = Map::new();
    for (fw, role, r) in used {
        match role {
            None => {
                m.insert(fw.clone(), text(r));
            }
            Some(role) => {
                let entry = m.entry(fw.clone()).or_insert_with(|| json!({}));
                entry[role.as_str()] = text(r);
            }
        }
    }
    Value::Object(m)
}

/// One scenario event as the scenario file writes it.
pub fn op_to_json(op: &Op) -> Value {
    let groups = [agent_op_json, framework_op_json, operator_op_json, clock_op_json];
    groups.iter().find_map(|write| write(op)).expect("every op belongs to one group")
}

/// Events on agents and what they have; `None` for any other.
fn agent_op_json(op: &Op) -> Option<Value> {
    Some(match op {
        Op::AddAgent {
            agent,
            resources,
            hostname,
            capabilities,
            attributes,
            used,
            unavailability,
        } => {
            let mut v = json!({"op": "add_agent", "agent": agent, "resources": text(resources)});
            if let Some(h) = hostname {
                v["hostname"] = json!(h);
            }
            if let Some(c) = capabilities {
                v["capabilities"] = json!(c.names());
            }
            if !attributes.is_empty() {
                let m: Map<String, Value> = attributes
                    .iter()
                    .map(|a| (a.name.to_string(), json!(a.value.as_str())))
                    .collect();
                v["attributes"] = Value::Object(m);
            }
            if !used.is_empty() {
                v["used"] = used_json(used);
            }
            if unavailability.is_some() {
                v["unavailability"] = unavailability_json(unavailability);
            }
            v
        }
        Op::RemoveAgent(a) => json!({"op": "remove_agent", "agent": a}),
        Op::ActivateAgent(a) => json!({"op": "activate_agent", "agent": a}),
        Op::DeactivateAgent(a) => json!({"op": "deactivate_agent", "agent": a}),
        Op::UpdateAgent { agent, resources, capabilities, attributes } => {
            let mut v = json!({"op": "update_agent", "agent": agent});
            if let Some(r) = resources {
                v["resources"] = text(r);
            }
            if let Some(c) = capabilities {
                v["capabilities"] = json!(c.names());
            }
            if let Some(attrs) = attributes {
                let m: Map<String, Value> =
                    attrs.iter().map(|a| (a.name.to_string(), json!(a.value.as_str()))).collect();
                v["attributes"] = Value::Object(m);
            }
            v
        }
        Op::AddResourceProvider { agent, resources, used } => {
            let mut v = json!({"op": "add_resource_provider", "agent": agent, "resources": text(resources)});
            if !used.is_empty() {
                v["used"] = used_json(used);
            }
            v
        }
        Op::UpdateUnavailability(a, u) => {
            json!({"op": "update_unavailability", "agent": a, "unavailability": unavailability_json(u)})
        }
        Op::UpdateAllocation { framework, agent, role, operations } => {
            json!({"op": "update_allocation", "framework": framework, "agent": agent, "role": role,
                   "operations": operations_json(operations)})
        }
        Op::UpdateAvailable { agent, operations } => {
            json!({"op": "update_available", "agent": agent, "operations": operations_json(operations)})
        }
        _ => return None,
    })
}

/// Events on frameworks and what they hold; `None` for any other.
fn framework_op_json(op: &Op) -> Option<Value> {
    Some(match op {
        Op::AddFramework {
            framework,
            roles,
            capabilities,
            active,
            used,
            suppressed_roles,
            min_allocatable,
            tasks,
        } => {
            let mut v = json!({"op": "add_framework", "framework": framework, "roles": roles,
                               "capabilities": capabilities.names(), "active": active});
            if !used.is_empty() {
                let m: Map<String, Value> =
                    used.iter().map(|(a, r)| (a.clone(), text(r))).collect();
                v["used"] = Value::Object(m);
            }
            if !suppressed_roles.is_empty() {
                v["suppressed_roles"] = json!(suppressed_roles);
            }
            if !min_allocatable.is_empty() {
                v["min_allocatable_resources"] = min_allocatable_json(min_allocatable);
            }
            if let Some(t) = tasks {
                v["tasks"] = task_spec_json(t);
            }
            v
        }
        Op::RemoveFramework(f) => json!({"op": "remove_framework", "framework": f}),
        Op::ActivateFramework(f) => json!({"op": "activate_framework", "framework": f}),
        Op::DeactivateFramework(f) => json!({"op": "deactivate_framework", "framework": f}),
        Op::UpdateFramework {
            framework,
            roles,
            capabilities,
            suppressed_roles,
            min_allocatable,
        } => {
            let mut v = json!({"op": "update_framework", "framework": framework});
            if let Some(r) = roles {
                v["roles"] = json!(r);
            }
            if let Some(c) = capabilities {
                v["capabilities"] = json!(c.names());
            }
            if let Some(s) = suppressed_roles {
                v["suppressed_roles"] = json!(s);
            }
            if let Some(m) = min_allocatable {
                v["min_allocatable_resources"] = min_allocatable_json(m);
            }
            v
        }
        Op::RecoverResources { framework, agent, resources, role, refuse_seconds } => {
            let mut v = json!({"op": "recover_resources", "framework": framework, "agent": agent,
                               "resources": resources.as_ref().map_or(json!("all"), text)});
            if let Some(r) = role {
                v["role"] = json!(r);
            }
            if let Some(s) = refuse_seconds {
                v["refuse_seconds"] = json!(s);
            }
            v
        }
        Op::SuppressOffers(f, roles) => {
            json!({"op": "suppress_offers", "framework": f, "roles": roles})
        }
        Op::ReviveOffers(f, roles) => {
            json!({"op": "revive_offers", "framework": f, "roles": roles})
        }
        Op::UpdateInverseOffer { agent, framework, status, refuse_seconds } => {
            let status = match *status {
                None => Value::Null,
                Some(s) if s == InverseOfferStatus::ACCEPT => json!("accept"),
                Some(_) => json!("decline"),
            };
            let mut v = json!({"op": "update_inverse_offer", "agent": agent, "framework": framework,
                               "status": status});
            if let Some(s) = refuse_seconds {
                v["refuse_seconds"] = json!(s);
            }
            v
        }
        _ => return None,
    })
}

/// Events on operator changes; `None` for any other.
fn operator_op_json(op: &Op) -> Option<Value> {
    Some(match op {
        Op::UpdateQuota(role, q) => {
            let mut v = Value::Object(quota_json(q));
            v["op"] = json!("update_quota");
            v["role"] = json!(role);
            v
        }
        Op::UpdateWeights(w) => {
            let m: Map<String, Value> = w.iter().map(|(r, w)| (r.clone(), json!(w))).collect();
            json!({"op": "update_weights", "weights": m})
        }
        Op::UpdateWhitelist(h) => json!({"op": "update_whitelist", "hostnames": h}),
        Op::Recover { expected_agents, quotas } => {
            let m: Map<String, Value> = quotas
                .iter()
                .map(|q| (q.role.to_string(), Value::Object(quota_json(&q.quota))))
                .collect();
            json!({"op": "recover", "expected_agents": expected_agents, "quotas": m})
        }
        Op::Pause => json!({"op": "pause"}),
        Op::Resume => json!({"op": "resume"}),
        Op::SetSorters { role_sorter, framework_sorter } => {
            let mut v = json!({"op": "set_sorters"});
            if let Some(r) = role_sorter {
                v["role_sorter"] = json!(r);
            }
            if let Some(f) = framework_sorter {
                v["framework_sorter"] = json!(f);
            }
            v
        }
        _ => return None,
    })
}

/// Events on the clock, trace tasks and expectations; `None` for any other.
fn clock_op_json(op: &Op) -> Option<Value> {
    Some(match op {
        Op::Advance(s) => json!({"op": "advance", "seconds": s}),
        Op::Tick => json!({"op": "tick"}),
        Op::SubmitTask { framework, resources, duration, constraints } => {
            let mut v =
                json!({"op": "submit_task", "framework": framework, "resources": text(resources)});
            if let Some(d) = duration {
                v["duration"] = json!(d);
            }
            if !constraints.is_empty() {
                let m: Map<String, Value> =
                    constraints.iter().map(|(k, vals)| (k.clone(), json!(vals))).collect();
                v["constraints"] = Value::Object(m);
            }
            v
        }
        Op::ExpectOffers(alts) => match &alts[..] {
            [one] => json!({"op": "expect_offers", "offers": offers_json(one)}),
            _ => {
                json!({"op": "expect_offers", "one_of": alts.iter().map(|a| offers_json(a)).collect::<Vec<_>>()})
            }
        },
        Op::ExpectInverseOffers(alts) => {
            let list = |l: &Vec<(String, String)>| -> Value {
                l.iter().map(|(f, a)| json!({"framework": f, "agent": a})).collect()
            };
            match &alts[..] {
                [one] => json!({"op": "expect_inverse_offers", "inverse_offers": list(one)}),
                _ => {
                    json!({"op": "expect_inverse_offers", "one_of": alts.iter().map(list).collect::<Vec<_>>()})
                }
            }
        }
        Op::ExpectTasks { framework, running } => {
            json!({"op": "expect_tasks", "framework": framework, "running": running})
        }
        _ => return None,
    })
}

/// Writes a scenario of what a live master applied (SPEC section 6.3), one event per line,
/// flushed as it goes; [`finish`](Self::finish) closes the JSON. The time between events is
/// the [`Journal`]'s to write, as `advance` events.
pub struct Recorder {
    out: BufWriter<File>,
    events: usize,
}

impl Recorder {
    /// Creates `path` and writes the scenario's `config` (as the live master runs with it).
    pub fn create(path: &Path, config: &Map<String, Value>) -> std::io::Result<Recorder> {
        let mut out = BufWriter::new(File::create(path)?);
        let config = serde_json::to_string(config).map_err(std::io::Error::other)?;
        write!(
            out,
            "{{\"description\": \"recorded by allocator-master serve\",\n \"config\": {config},\n \"events\": ["
        )?;
        out.flush()?;
        Ok(Recorder { out, events: 0 })
    }

    /// Writes one event.
    pub fn write(&mut self, op: &Op) -> std::io::Result<()> {
        let sep = if self.events == 0 { "\n  " } else { ",\n  " };
        self.events += 1;
        write!(self.out, "{sep}{}", op_to_json(op))?;
        self.out.flush()
    }

    /// Closes the scenario.
    pub fn finish(mut self) -> std::io::Result<()> {
        write!(self.out, "\n]}}\n")?;
        self.out.flush()
    }
}

/// One event a client applied to the master, as a scenario event, with when.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The virtual time it was applied at.
    pub at: f64,
    /// Whether it was applied before the periodic allocation run of that instant (a task's
    /// end), not after it.
    pub before_run: bool,
    /// What was applied.
    pub op: Op,
}

/// How far before the allocation run of the same instant [`Journal::applied_before_run`]
/// places an event: less than the master's time resolution for task ends (a microsecond), more
/// than its tolerance for "the same instant" (a nanosecond).
pub const BEFORE_RUN: f64 = 1e-7;

/// What a master applied, as scenario events in order with the time between them as `advance`
/// events: kept in memory for plans ([`keep`](Self::keep)) and written to a file for
/// `serve --record` ([`record_to`](Self::record_to)). Replaying the events from the same
/// set-up makes the same offers (SPEC 6.3).
///
/// Events are applied at the master's current time, after the periodic allocation run of
/// that instant, if any, except a task's end, which the master applies before the run of
/// the instant it falls on; [`applied_before_run`](Self::applied_before_run) places such an
/// event [`BEFORE_RUN`] seconds earlier (when nothing was applied since), which changes no
/// offer: nothing happens in between.
#[derive(Default)]
pub struct Journal {
    /// The virtual time the journal has reached.
    time: f64,
    kept: Option<Vec<Op>>,
    /// At most this many events are kept; past it, none are ([`events`](Self::events) says
    /// so), so that a long-lived master's memory stays bounded.
    limit: usize,
    /// When the limit was passed.
    overflowed_at: Option<f64>,
    recorder: Option<Recorder>,
}

/// How many events [`Journal::keep`] keeps by default (a plan replays all of them; about
/// 200 bytes each).
pub const KEEP_LIMIT: usize = 1_000_000;

impl Journal {
    /// Keeps every event from now on in memory (for [`events`](Self::events)), up to
    /// `limit` events.
    pub fn keep(&mut self, limit: usize) {
        self.kept.get_or_insert_with(Vec::new);
        self.limit = limit;
    }

    /// Writes every event from now on to `recorder`.
    pub fn record_to(&mut self, recorder: Recorder) {
        self.recorder = Some(recorder);
    }

    /// Whether events are kept or written at all.
    pub fn is_on(&self) -> bool {
        self.kept.is_some() || self.recorder.is_some()
    }

    /// The events kept so far, with the clock advanced to `now`; `Err` says why there are
    /// none (never kept, or more than the limit).
    pub fn events(&self, now: f64) -> Result<Vec<Op>, String> {
        if let Some(t) = self.overflowed_at {
            return Err(format!(
                "this master applied more than {} events (the limit was passed at {t:.3} s of virtual time), and a plan replays all of them; plans are off",
                self.limit
            ));
        }
        let mut ops = self.kept.clone().ok_or("this master keeps no history to plan from")?;
        if now > self.time {
            ops.push(Op::Advance(now - self.time));
        }
        Ok(ops)
    }

    /// `op` was applied at virtual time `now`.
    pub fn applied(&mut self, now: f64, op: &Op) {
        self.emit_at(now, op);
    }

    /// `op` was applied at virtual time `now`, before the periodic allocation run of that
    /// instant (a task that ended then).
    pub fn applied_before_run(&mut self, now: f64, op: &Op) {
        self.emit_at(now - BEFORE_RUN, op);
    }

    /// Entries a client applied, in order.
    pub fn take(&mut self, entries: Vec<Applied>) {
        for e in entries {
            if e.before_run {
                self.applied_before_run(e.at, &e.op);
            } else {
                self.applied(e.at, &e.op);
            }
        }
    }

    fn emit_at(&mut self, t: f64, op: &Op) {
        if !self.is_on() {
            return;
        }
        if t > self.time {
            self.emit(&Op::Advance(t - self.time));
            self.time = t;
        }
        self.emit(op);
    }

    fn emit(&mut self, op: &Op) {
        if let Some(kept) = &mut self.kept {
            if kept.len() < self.limit {
                kept.push(op.clone());
            } else {
                log::warn!("more than {} events applied: plans are off from now on", self.limit);
                self.kept = None;
                self.overflowed_at = Some(self.time);
            }
        }
        if let Some(r) = &mut self.recorder
            && let Err(e) = r.write(op)
        {
            log::warn!("recording stopped: {e}");
            eprintln!("allocator-master: the recording stopped: {e}");
            self.recorder = None;
        }
    }

    /// Ends the recording (if any) with the clock advanced to `now`, where the master stopped.
    pub fn finish_recording(&mut self, now: f64) -> std::io::Result<()> {
        let Some(mut r) = self.recorder.take() else { return Ok(()) };
        if now > self.time {
            r.write(&Op::Advance(now - self.time))?;
        }
        r.finish()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::{Map, Value, json};

    use super::{BEFORE_RUN, Journal, Recorder, op_to_json};
    use crate::allocator_scenario::{AllocatorScenario, Op};
    use crate::scenario::Document;

    fn scenario_files() -> Vec<std::path::PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        for dir in ["tests/scenarios/allocator", "examples/scenarios"] {
            for entry in std::fs::read_dir(root.join(dir)).expect("scenario directory") {
                let path = entry.expect("entry").path();
                if path.extension().is_some_and(|e| e == "json") {
                    files.push(path);
                }
            }
        }
        files
    }

    fn ops_of(doc: &Document) -> Vec<Op> {
        let s = AllocatorScenario::parse(doc).expect("a valid scenario");
        s.events.into_iter().map(|(_, op)| op).collect()
    }

    #[test]
    fn every_event_of_every_scenario_file_writes_back_to_itself() {
        let files = scenario_files();
        assert!(files.len() > 20, "found {} scenario files", files.len());
        for path in files {
            let doc = Document::read(&path).expect("readable");
            if doc.is_sorter_scenario() {
                continue;
            }
            let ops = ops_of(&doc);
            let mut root = doc.root.clone();
            root.insert("events".into(), Value::Array(ops.iter().map(op_to_json).collect()));
            let again = Document { file: doc.file.clone(), root };
            assert_eq!(ops_of(&again), ops, "{}", path.display());
        }
    }

    #[test]
    fn a_recording_is_a_scenario_with_the_time_as_advances() {
        let dir = std::env::temp_dir().join(format!("recording-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rec.json");
        let config: Map<String, Value> =
            json!({"allocation_interval": 1.0}).as_object().unwrap().clone();
        let mut journal = Journal::default();
        journal.record_to(Recorder::create(&path, &config).unwrap());
        journal.applied(0.0, &Op::Pause);
        journal.applied(2.5, &Op::Resume);
        journal.finish_recording(4.0).unwrap();
        let doc = Document::read(&path).unwrap();
        assert_eq!(ops_of(&doc), vec![Op::Pause, Op::Advance(2.5), Op::Resume, Op::Advance(1.5)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_event_before_the_run_of_its_instant_is_placed_just_before_it() {
        let mut journal = Journal::default();
        journal.keep(10);
        journal.applied_before_run(3.0, &Op::Pause);
        journal.applied(3.0, &Op::Resume);
        assert_eq!(
            journal.events(3.0).unwrap(),
            vec![
                Op::Advance(3.0 - BEFORE_RUN),
                Op::Pause,
                Op::Advance(3.0 - (3.0 - BEFORE_RUN)),
                Op::Resume
            ]
        );
    }

    #[test]
    fn an_event_before_the_run_after_others_of_its_instant_keeps_their_order() {
        let mut journal = Journal::default();
        journal.keep(10);
        journal.applied(2.0, &Op::Pause);
        journal.applied_before_run(2.0, &Op::Resume);
        assert_eq!(journal.events(2.0).unwrap(), vec![Op::Advance(2.0), Op::Pause, Op::Resume]);
    }

    #[test]
    fn nothing_is_kept_unless_asked() {
        let mut journal = Journal::default();
        journal.applied(1.0, &Op::Pause);
        assert!(journal.events(1.0).is_err());
    }

    #[test]
    fn past_its_limit_the_journal_keeps_nothing_and_says_why() {
        let mut journal = Journal::default();
        journal.keep(2);
        journal.applied(0.0, &Op::Pause);
        journal.applied(0.0, &Op::Resume);
        assert_eq!(journal.events(0.0).unwrap(), vec![Op::Pause, Op::Resume]);
        journal.applied(1.0, &Op::Pause);
        let why = journal.events(1.0).unwrap_err();
        assert!(why.contains("more than 2 events"), "{why}");
        assert!(!journal.is_on(), "nothing is kept any more");
    }
}
