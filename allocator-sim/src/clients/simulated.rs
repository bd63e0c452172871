//! Simulated and trace-driven frameworks: a client of the [master core](allocator_host::master).
//!
//! A framework added with `tasks` takes tasks from each offer it gets (queued trace tasks
//! first, first come first served, honouring their attribute constraints; then tasks of its
//! fixed shape up to its count), declines the rest with its refuse filter, and suppresses its
//! offers once it has nothing left to launch; `submit_task` queues a task and revives it.
//!
//! The master core knows nothing of this: the [driver](crate::driver::Driver) adds a played
//! framework here right after the master added it (before its first offer is delivered) and
//! queues submitted tasks here, noting both in the master's journal; the frameworks' answers
//! are [derived](Origin::Derived) commands, which a replay makes again by itself.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use allocator_api::resources::{Demand, GPUS, MODEL_ATTRIBUTE, take_gpus};
use allocator_api::{Allocation, Attribute, FrameworkId, GroupId, ROption, Request, Resources};

use crate::observers::stats::{Queues, TraceStats};
use crate::tasks::{Gang, Submission, TaskSpec};
use allocator_host::master::{Command, Event, Master, Origin};

#[derive(Debug, Clone)]
struct QueuedTask {
    resources: Resources,
    duration: Option<f64>,
    constraints: Vec<(String, Vec<String>)>,
    submitted: f64,
    /// Its place in the framework's submissions (which task a request stated).
    seq: u64,
    /// Its gang, if any.
    gang: Option<Gang>,
}

/// Request keys of fixed-shape tasks start here (queued tasks count from 1).
const FIXED_SHAPE: u64 = 1 << 62;

/// One simulated framework's own state (its tasks run in the master).
#[derive(Debug, Clone)]
struct SimFramework {
    spec: TaskSpec,
    launched: u64,
    queue: VecDeque<QueuedTask>,
    submitted: u64,
    waits: Vec<f64>,
    /// The framework suppressed its offers because it had nothing to launch.
    suppressed: bool,
    /// Which tasks it last stated to the allocator as its next (`request` frameworks): queued
    /// tasks' `seq`, or [`FIXED_SHAPE`] plus the fixed-shape tasks launched so far (plus 0, 1,
    /// … for several).
    requested: Vec<u64>,
    /// The group number of each gang it was submitted, in order of first submission.
    gang_ids: BTreeMap<String, u64>,
}

/// Which gangs a framework may launch from the offers of one step (those whose every task
/// fits in them): trace gangs by id, and its own fixed-shape gang.
#[derive(Debug, Clone, Default)]
struct Gate {
    ids: BTreeSet<String>,
    fixed: bool,
}

/// What one offer's answer launched of a framework's gangs: members per trace gang, and
/// fixed-shape tasks.
#[derive(Debug, Default)]
struct Launched {
    members: BTreeMap<String, u32>,
    fixed: u64,
}

impl SimFramework {
    /// Whether the framework still has tasks to launch.
    fn has_pending(&self) -> bool {
        !self.queue.is_empty()
            || (self.spec.resources.is_some() && self.spec.count.is_none_or(|c| self.launched < c))
    }

    /// Whether it has tasks it could launch now: a trace task that is in no gang or in a
    /// complete one, or fixed-shape tasks left (a gang whose tasks are not all submitted
    /// waits for them, offered nothing).
    fn has_launchable(&self) -> bool {
        let complete = self.complete_gangs();
        self.queue.iter().any(|t| t.gang.as_ref().is_none_or(|g| complete.contains(&g.id)))
            || (self.spec.resources.is_some() && self.spec.count.is_none_or(|c| self.launched < c))
    }

    /// Whether it has tasks to launch all or nothing (a gang of its own, or trace gangs).
    fn has_gangs(&self) -> bool {
        self.spec.gang || self.queue.iter().any(|t| t.gang.is_some())
    }

    /// Fixed-shape tasks left to launch.
    fn fixed_left(&self) -> u64 {
        self.spec.count.map_or(u64::MAX, |c| c.saturating_sub(self.launched))
    }

    /// The trace gangs whose every task is queued (submitted, none launched).
    fn complete_gangs(&self) -> BTreeSet<String> {
        let mut queued: BTreeMap<&str, u32> = BTreeMap::new();
        for g in self.queue.iter().filter_map(|t| t.gang.as_ref()) {
            *queued.entry(g.id.as_str()).or_default() += 1;
        }
        self.queue
            .iter()
            .filter_map(|t| t.gang.as_ref())
            .filter(|g| queued.get(g.id.as_str()).is_some_and(|n| *n >= g.size))
            .map(|g| g.id.clone())
            .collect()
    }

    /// What the framework states of its queue: up to `n` tasks in queue order, each run of
    /// one demand one request; a complete gang whole (its tasks one group, all or nothing,
    /// whatever `n`), an incomplete one not yet. Returns the requests and the tasks' `seq`s.
    fn queue_requests(&self, n: usize) -> (Vec<Request>, Vec<u64>) {
        let complete = self.complete_gangs();
        let (mut requests, mut keys): (Vec<Request>, Vec<u64>) = (Vec::new(), Vec::new());
        let mut stated: BTreeSet<&str> = BTreeSet::new();
        let push =
            |requests: &mut Vec<Request>, demand: Resources, group: Option<GroupId>| match requests
                .last_mut()
            {
                Some(r) if r.group == ROption::from(group) && r.resources == demand => {
                    r.count += 1;
                    if group.is_some() {
                        r.min_count += 1;
                    }
                }
                _ => requests.push(match group {
                    None => Request::task("", demand),
                    Some(g) => Request::gang("", 1, demand).in_group(g),
                }),
            };
        for t in &self.queue {
            if keys.len() >= n {
                break;
            }
            match &t.gang {
                None => {
                    push(&mut requests, demand_of(t), None);
                    keys.push(t.seq);
                }
                Some(g) if complete.contains(&g.id) && stated.insert(g.id.as_str()) => {
                    let group = GroupId(self.gang_ids.get(&g.id).copied().unwrap_or_default());
                    for m in self.queue.iter().filter(|m| m.gang.as_ref() == Some(g)) {
                        push(&mut requests, demand_of(m), Some(group));
                        keys.push(m.seq);
                    }
                }
                Some(_) => {}
            }
        }
        (requests, keys)
    }
}

/// The simulated frameworks of one master, by framework id.
#[derive(Debug, Default)]
pub struct SimulatedFrameworks {
    frameworks: BTreeMap<FrameworkId, SimFramework>,
    interrupt: Option<Arc<AtomicUsize>>,
    progress: Option<Arc<crate::progress::Counters>>,
}

impl SimulatedFrameworks {
    /// Stops launching from a huge offer part-way once `flag` is non-zero.
    pub fn set_interrupt(&mut self, flag: Arc<AtomicUsize>) {
        self.interrupt = Some(flag);
    }

    /// Shows how many tasks a huge offer has yielded so far.
    pub fn set_progress(&mut self, counters: Arc<crate::progress::Counters>) {
        self.progress = Some(counters);
    }

    /// Plays framework `fw` (just added to the master, its events not delivered yet) with
    /// `spec`.
    pub fn add(&mut self, fw: FrameworkId, spec: TaskSpec) {
        let sim = SimFramework {
            spec,
            launched: 0,
            queue: VecDeque::new(),
            submitted: 0,
            waits: Vec::new(),
            suppressed: false,
            requested: Vec::new(),
            gang_ids: BTreeMap::new(),
        };
        self.frameworks.insert(fw, sim);
    }

    /// Whether framework `fw` was added with `tasks` (this client plays it).
    pub fn plays(&self, fw: FrameworkId) -> bool {
        self.frameworks.contains_key(&fw)
    }

    /// Queues a trace task for `fw`, which this client plays; a framework that suppressed its
    /// offers revives them (the task waits for the next periodic run), and one that states
    /// its demand states it anew.
    pub fn submit(
        &mut self,
        master: &mut Master<'_>,
        fw: FrameworkId,
        task: &Submission,
    ) -> Result<(), String> {
        self.queue(master, fw, task)?;
        self.request_next(master)
    }

    fn queue(
        &mut self,
        master: &mut Master<'_>,
        fw: FrameworkId,
        task: &Submission,
    ) -> Result<(), String> {
        let Some(sim) = self.frameworks.get_mut(&fw) else { return Ok(()) };
        sim.submitted += 1;
        let seq = sim.submitted;
        if let Some(g) = &task.gang {
            let next = sim.gang_ids.len() as u64;
            sim.gang_ids.entry(g.id.clone()).or_insert(next);
        }
        sim.queue.push_back(QueuedTask {
            seq,
            resources: task.resources.clone(),
            duration: task.duration,
            constraints: task.constraints.clone(),
            submitted: master.now(),
            gang: task.gang.clone(),
        });
        if std::mem::take(&mut sim.suppressed) {
            let revive = Command::ReviveOffers(master.framework_name(fw).to_owned(), Vec::new());
            master.apply_from(Origin::Derived, &revive)?;
        }
        Ok(())
    }

    /// Answers the offers among `events` to the frameworks it plays; returns whether an
    /// allocation run ended among them.
    pub fn react(&mut self, events: &[Event], master: &mut Master<'_>) -> Result<bool, String> {
        let gates = self.gates(events, master);
        let mut ran = false;
        for event in events {
            match event {
                Event::Offer(offer) => {
                    self.answer(offer, master, gates.get(&offer.framework))?;
                }
                Event::AllocationRun { .. } => ran = true,
                _ => {}
            }
        }
        self.request_next(master)?;
        Ok(ran)
    }

    /// For each framework with gangs among the offers in `events`: the gangs whose every task
    /// fits in its offers there, found by answering them in a dry run (as [`Self::answer`]
    /// will) and leaving out, until none is left, each gang that launched only in part.
    fn gates(&self, events: &[Event], master: &Master<'_>) -> BTreeMap<FrameworkId, Gate> {
        let mut offers: BTreeMap<FrameworkId, Vec<&Arc<Allocation>>> = BTreeMap::new();
        for event in events {
            if let Event::Offer(o) = event
                && self.frameworks.get(&o.framework).is_some_and(SimFramework::has_gangs)
            {
                offers.entry(o.framework).or_default().push(o);
            }
        }
        let mut gates = BTreeMap::new();
        for (fw, offers) in offers {
            let sim = &self.frameworks[&fw];
            let mut gate = Gate { ids: sim.complete_gangs(), fixed: sim.spec.gang };
            loop {
                let mut dry = sim.clone();
                let mut launched = Launched::default();
                for o in &offers {
                    let attrs = attributes(master, o);
                    let (_, got) = launch(&mut dry, &o.resources, &attrs, 0.0, Some(&gate), None);
                    for (id, n) in got.members {
                        *launched.members.entry(id).or_default() += n;
                    }
                    launched.fixed += got.fixed;
                }
                let short: Vec<String> = gate
                    .ids
                    .iter()
                    .filter(|id| {
                        let size = sim
                            .queue
                            .iter()
                            .find_map(|t| t.gang.as_ref().filter(|g| &&g.id == id))
                            .map_or(0, |g| g.size);
                        launched.members.get(*id).copied().unwrap_or(0) < size
                    })
                    .cloned()
                    .collect();
                let fixed_short = gate.fixed && launched.fixed < sim.fixed_left();
                if short.is_empty() && !fixed_short {
                    break;
                }
                for id in short {
                    gate.ids.remove(&id);
                }
                gate.fixed &= !fixed_short;
            }
            gates.insert(fw, gate);
        }
        gates
    }

    /// Frameworks that state their demand (`request` N) tell the allocator their next N tasks
    /// whenever they changed: the head of their queue (each with its `gpu_model` constraint as
    /// the accepted models; a complete gang whole, as one all-or-nothing group), else tasks of
    /// their fixed shape (as many as are left to launch, one request of that many; all of them
    /// at once for a gang); an empty request when nothing is left.
    fn request_next(&mut self, master: &mut Master<'_>) -> Result<(), String> {
        for (fw, sim) in &mut self.frameworks {
            let n = if sim.spec.gang { u32::MAX } else { sim.spec.request } as usize;
            if n == 0 || master.framework_info(*fw).is_none() {
                continue;
            }
            // The fixed-shape tasks stated when the queue is empty: as many as are left.
            let fixed = match &sim.spec.resources {
                Some(_) if sim.queue.is_empty() && sim.has_pending() => {
                    sim.fixed_left().min(n as u64)
                }
                _ => 0,
            };
            // Compared by key first: the demands are only built when the tasks changed.
            let (requests, keys) = match (&sim.spec.resources, fixed) {
                (Some(r), 1..) => {
                    let keys = (0..fixed).map(|i| FIXED_SHAPE + sim.launched + i).collect();
                    let count = u32::try_from(fixed).unwrap_or(u32::MAX);
                    let request = match sim.spec.gang {
                        true => Request::gang("", count, r.clone()),
                        false => Request::tasks("", count, r.clone()),
                    };
                    (vec![request], keys)
                }
                _ => sim.queue_requests(n),
            };
            if keys == sim.requested {
                continue;
            }
            sim.requested = keys;
            let request = Command::RequestResources {
                framework: master.framework_name(*fw).to_owned(),
                requests,
            };
            master.apply_from(Origin::Derived, &request)?;
        }
        Ok(())
    }

    /// A simulated framework answers an offer: launch what fits (of its gangs, only those
    /// `gate` lets through), decline the rest.
    fn answer(
        &mut self,
        offer: &Arc<Allocation>,
        master: &mut Master<'_>,
        gate: Option<&Gate>,
    ) -> Result<(), String> {
        let Some(sim) = self.frameworks.get_mut(&offer.framework) else { return Ok(()) };
        let attrs = attributes(master, offer);
        let watch =
            Watch { progress: self.progress.as_deref(), interrupt: self.interrupt.as_deref() };
        let (launched, _) = launch(sim, &offer.resources, &attrs, master.now(), gate, Some(&watch));
        let answer = Command::AnswerOffer {
            offer: offer.clone(),
            tasks: launched,
            refuse_seconds: sim.spec.refuse_seconds,
        };
        master.apply_from(Origin::Derived, &answer).map(drop).map_err(String::from)
    }

    /// A simulated framework with nothing it could launch (nothing left, or only gangs whose
    /// tasks are not all submitted) suppresses its offers, as a real framework does;
    /// `submit_task` revives it.
    pub fn suppress_idle(&mut self, master: &mut Master<'_>) -> Result<(), String> {
        for (fw, sim) in &mut self.frameworks {
            if sim.suppressed || sim.has_launchable() || master.framework_info(*fw).is_none() {
                continue;
            }
            let suppress =
                Command::SuppressOffers(master.framework_name(*fw).to_owned(), Vec::new());
            master.apply_from(Origin::Derived, &suppress)?;
            sim.suppressed = true;
        }
        Ok(())
    }

    /// Queued tasks and whether it suppressed its offers, for a simulated framework.
    pub fn queue_state(&self, fw: FrameworkId) -> Option<(usize, bool)> {
        self.frameworks.get(&fw).map(|s| (s.queue.len(), s.suppressed))
    }
}

impl Queues for SimulatedFrameworks {
    /// Whether a task asking for GPUs waits in the queue of a present framework.
    fn gpu_task_waiting(&self, master: &Master<'_>) -> bool {
        self.frameworks.iter().any(|(fw, s)| {
            master.framework_info(*fw).is_some()
                && s.queue.iter().any(|t| t.resources.scalar("gpus").is_positive())
        })
    }

    /// Queued tasks per first role of present frameworks that ever had a task submitted.
    fn waiting_by_role(&self, master: &Master<'_>) -> BTreeMap<String, f64> {
        let mut waiting = BTreeMap::new();
        for (fw, sim) in &self.frameworks {
            if let Some(role) = master.framework_info(*fw).and_then(|f| f.roles.first())
                && sim.submitted > 0
            {
                *waiting.entry(role.to_string()).or_default() += sim.queue.len() as f64;
            }
        }
        waiting
    }

    /// Whether any framework (present or removed) had a trace task submitted.
    fn any_trace(&self) -> bool {
        self.frameworks.values().any(|s| s.submitted > 0)
    }

    /// Trace statistics of the frameworks (present or removed) whose first role is `role`.
    fn trace_stats(&self, role: &str, master: &Master<'_>) -> TraceStats {
        let mut stats = TraceStats::default();
        for (fw, sim) in &self.frameworks {
            if master.first_role(*fw) != Some(role) {
                continue;
            }
            stats.submitted += sim.submitted;
            stats.pending += sim.queue.len() as u64;
            stats.waits.extend(sim.waits.iter().copied());
        }
        stats.started = stats.waits.len() as u64;
        stats
    }
}

/// The attributes of the offer's agent.
fn attributes(master: &Master<'_>, offer: &Allocation) -> Vec<Attribute> {
    master.agent_info(offer.agent).map(|a| a.attributes.to_vec()).unwrap_or_default()
}

/// Shows how many tasks a huge offer has yielded, and stops it on SIGINT.
struct Watch<'a> {
    progress: Option<&'a crate::progress::Counters>,
    interrupt: Option<&'a AtomicUsize>,
}

/// What `sim` launches from an offer of `offer` on an agent with `attrs` at `now`: trace tasks
/// first, first come first served (a task that does not fit, or whose gang `gate` does not let
/// through, is passed over), then tasks of its fixed shape (a fixed-shape gang only when
/// `gate` lets it through). `sim` is updated as launching updates it. Without a gate (a
/// framework with no gangs) nothing is held back.
fn launch(
    sim: &mut SimFramework,
    offer: &Resources,
    attrs: &[Attribute],
    now: f64,
    gate: Option<&Gate>,
    watch: Option<&Watch<'_>>,
) -> (Vec<(Resources, Option<f64>)>, Launched) {
    let mut remaining = offer.clone();
    let mut launched: Vec<(Resources, Option<f64>)> = Vec::new();
    let mut got = Launched::default();
    let limit = sim.spec.per_offer.unwrap_or(u64::MAX);
    let mut i = 0;
    while i < sim.queue.len() && (launched.len() as u64) < limit {
        let t = &sim.queue[i];
        let ok = t.constraints.iter().all(|(k, values)| {
            attrs
                .iter()
                .any(|a| a.name.as_str() == k && values.iter().any(|v| v == a.value.as_str()))
        });
        let let_through = match (&t.gang, gate) {
            (None, _) | (Some(_), None) => true,
            (Some(g), Some(gate)) => gate.ids.contains(&g.id),
        };
        if ok
            && let_through
            && let Some(piece) = take(&remaining, &t.resources)
        {
            remaining.subtract(&piece);
            let t = sim.queue.remove(i).expect("index checked");
            if let Some(g) = &t.gang {
                *got.members.entry(g.id.clone()).or_default() += 1;
            }
            sim.waits.push(now - t.submitted);
            launched.push((piece, t.duration));
            continue;
        }
        i += 1;
    }
    let fixed_ok = !sim.spec.gang || gate.is_none_or(|g| g.fixed);
    if let (Some(task), true) = (sim.spec.resources.clone(), fixed_ok) {
        while (launched.len() as u64) < limit && sim.spec.count.is_none_or(|c| sim.launched < c) {
            let Some(piece) = take(&remaining, &task) else { break };
            remaining.subtract(&piece);
            sim.launched += 1;
            got.fixed += 1;
            launched.push((piece, sim.spec.duration));
            // One offer can hold millions of small tasks: show it, and let SIGINT stop it.
            if launched.len().is_multiple_of(4096)
                && let Some(w) = watch
            {
                if let Some(p) = w.progress {
                    p.set_tasks(launched.len() as u64);
                }
                if w.interrupt.is_some_and(|f| f.load(Ordering::Relaxed) != 0) {
                    break;
                }
            }
        }
    }
    (launched, got)
}

/// A queued task's demand as a request states it: its resources, and the models of its
/// `gpu_model` constraint as the accepted GPU models.
fn demand_of(t: &QueuedTask) -> Resources {
    let models: Vec<String> = t
        .constraints
        .iter()
        .filter(|(k, _)| k == MODEL_ATTRIBUTE)
        .flat_map(|(_, v)| v.iter().cloned())
        .collect();
    let demand = Demand::from_request(&t.resources).map(|mut d| {
        d.models = models;
        d.to_request()
    });
    // A task that cannot be placed on devices (gpus:1.5) is stated as it is.
    demand.unwrap_or_else(|_| t.resources.clone())
}

/// Takes a task's resources from an offer. On an offer with GPU devices, the task's `gpus` come
/// from the devices by the sharing rule ([`take_gpus`]) and the rest as below; otherwise
/// scalars by quantity (unreserved first, then reservations, in canonical order), other
/// resources exactly. `None` when they do not fit.
pub fn take(offer: &Resources, task: &Resources) -> Option<Resources> {
    if !offer.has_gpu_devices() {
        return take_pooled(offer, task);
    }
    let rest = task.filter(|r| r.name.as_str() != GPUS);
    let mut piece = take_pooled(&offer.filter(|r| !r.is_gpu_device()), &rest)?;
    piece.add(&take_gpus(offer, task.scalar(GPUS))?);
    Some(piece)
}

/// [`take`] from an offer without devices.
fn take_pooled(offer: &Resources, task: &Resources) -> Option<Resources> {
    let want = task.scalar_quantities();
    if !offer.scalar_quantities().contains(&want) {
        return None;
    }
    let others = task.filter(|r| !r.is_scalar());
    if !offer.contains(&others) {
        return None;
    }
    let mut piece = offer.filter(|r| !r.is_shared()).shrink(&want, false);
    if piece.scalar_quantities() != want {
        return None;
    }
    piece.add(&others);
    Some(piece)
}
