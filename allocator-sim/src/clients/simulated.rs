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

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use allocator_api::resources::{Demand, GPUS, MODEL_ATTRIBUTE, take_gpus};
use allocator_api::{Allocation, FrameworkId, Request, Resources};

use crate::observers::stats::{Queues, TraceStats};
use crate::tasks::{Submission, TaskSpec};
use allocator_host::master::{Command, Event, Master, Origin};

#[derive(Debug, Clone)]
struct QueuedTask {
    resources: Resources,
    duration: Option<f64>,
    constraints: Vec<(String, Vec<String>)>,
    submitted: f64,
    /// Its place in the framework's submissions (which task a request stated).
    seq: u64,
}

/// Request keys of fixed-shape tasks start here (queued tasks count from 1).
const FIXED_SHAPE: u64 = 1 << 62;

/// One simulated framework's own state (its tasks run in the master).
#[derive(Debug)]
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
}

impl SimFramework {
    /// Whether the framework still has tasks to launch.
    fn has_pending(&self) -> bool {
        !self.queue.is_empty()
            || (self.spec.resources.is_some() && self.spec.count.is_none_or(|c| self.launched < c))
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
        sim.queue.push_back(QueuedTask {
            seq,
            resources: task.resources.clone(),
            duration: task.duration,
            constraints: task.constraints.clone(),
            submitted: master.now(),
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
        let mut ran = false;
        for event in events {
            match event {
                Event::Offer(offer) => self.answer(offer, master)?,
                Event::AllocationRun { .. } => ran = true,
                _ => {}
            }
        }
        self.request_next(master)?;
        Ok(ran)
    }

    /// Frameworks that state their demand (`request` N) tell the allocator their next N tasks
    /// whenever they changed: the head of their queue (each with its `gpu_model` constraint as
    /// the accepted models), else tasks of their fixed shape (as many as are left to launch);
    /// an empty request when nothing is left.
    fn request_next(&mut self, master: &mut Master<'_>) -> Result<(), String> {
        for (fw, sim) in &mut self.frameworks {
            let n = sim.spec.request as usize;
            if n == 0 || master.framework_info(*fw).is_none() {
                continue;
            }
            // The fixed-shape tasks stated when the queue is empty: as many as are left.
            let fixed = match &sim.spec.resources {
                Some(_) if sim.queue.is_empty() && sim.has_pending() => {
                    sim.spec.count.map_or(n as u64, |c| (c - sim.launched).min(n as u64))
                }
                _ => 0,
            };
            // Compared by key first: the demands are only built when the tasks changed.
            let keys: Vec<u64> = match fixed {
                0 => sim.queue.iter().take(n).map(|t| t.seq).collect(),
                _ => (0..fixed).map(|i| FIXED_SHAPE + sim.launched + i).collect(),
            };
            if keys == sim.requested {
                continue;
            }
            sim.requested = keys;
            let requests: Vec<Request> = match (&sim.spec.resources, fixed) {
                (Some(r), 1..) => vec![Request::tasks("", fixed as u32, r.clone())],
                _ => sim.queue.iter().take(n).map(|t| Request::task("", demand_of(t))).collect(),
            };
            let request = Command::RequestResources {
                framework: master.framework_name(*fw).to_owned(),
                requests,
            };
            master.apply_from(Origin::Derived, &request)?;
        }
        Ok(())
    }

    /// A simulated framework answers an offer: launch what fits, decline the rest.
    fn answer(&mut self, offer: &Arc<Allocation>, master: &mut Master<'_>) -> Result<(), String> {
        let Some(sim) = self.frameworks.get_mut(&offer.framework) else { return Ok(()) };
        let attrs =
            master.agent_info(offer.agent).map(|a| a.attributes.to_vec()).unwrap_or_default();
        let now = master.now();
        let mut remaining = offer.resources.clone();
        let mut launched: Vec<(Resources, Option<f64>)> = Vec::new();
        let limit = sim.spec.per_offer.unwrap_or(u64::MAX);
        // Trace-driven tasks first, first come first served (a task that does not fit is passed over).
        let mut i = 0;
        while i < sim.queue.len() && (launched.len() as u64) < limit {
            let t = &sim.queue[i];
            let ok = t.constraints.iter().all(|(k, values)| {
                attrs
                    .iter()
                    .any(|a| a.name.as_str() == k && values.iter().any(|v| v == a.value.as_str()))
            });
            if ok && let Some(piece) = take(&remaining, &t.resources) {
                remaining.subtract(&piece);
                let t = sim.queue.remove(i).expect("index checked");
                sim.waits.push(now - t.submitted);
                launched.push((piece, t.duration));
                continue;
            }
            i += 1;
        }
        if let Some(task) = sim.spec.resources.clone() {
            while (launched.len() as u64) < limit && sim.spec.count.is_none_or(|c| sim.launched < c)
            {
                let Some(piece) = take(&remaining, &task) else { break };
                remaining.subtract(&piece);
                sim.launched += 1;
                launched.push((piece, sim.spec.duration));
                // One offer can hold millions of small tasks: show it, and let SIGINT stop it.
                if launched.len().is_multiple_of(4096) {
                    if let Some(p) = &self.progress {
                        p.set_tasks(launched.len() as u64);
                    }
                    if self.interrupt.as_ref().is_some_and(|f| f.load(Ordering::Relaxed) != 0) {
                        break;
                    }
                }
            }
        }
        let answer = Command::AnswerOffer {
            offer: offer.clone(),
            tasks: launched,
            refuse_seconds: sim.spec.refuse_seconds,
        };
        master.apply_from(Origin::Derived, &answer).map(drop).map_err(String::from)
    }

    /// A simulated framework with nothing left to launch suppresses its offers, as a real
    /// framework does; `submit_task` revives it.
    pub fn suppress_idle(&mut self, master: &mut Master<'_>) -> Result<(), String> {
        for (fw, sim) in &mut self.frameworks {
            if sim.suppressed || sim.has_pending() || master.framework_info(*fw).is_none() {
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
