//! The scheduler: the Kubernetes cluster as the master core's client, on the master's thread.
//!
//! Its own books are what the watches said ([`crate::api::Input`]): nodes, this scheduler's
//! pods, other schedulers' bound pods, the roles ConfigMap. After each batch of inputs it
//! brings the master in line with them ([`KubeScheduler::tick`]), one `Command` each:
//!
//! * a node is an agent (added, updated, (de)activated, removed) with its allocatable as its
//!   total;
//! * a pod bound elsewhere (by another scheduler, by its `spec.nodeName`, or before this
//!   scheduler started) is held by a framework of its own in its namespace's role, added
//!   inactive with the pod's usage as its `used` ([`elsewhere_framework`]) and removed when the
//!   pod ends: the role's share and quota count it, and its node never offers what it uses;
//! * a namespace is a role; a framework is a pod's owning workload (its controller
//!   `ownerReference`: Job, ReplicaSet, StatefulSet, …, `NS/KIND/NAME`), or `NS/pods` for pods
//!   without one. A framework is added with its first pod and removed with its last; it is
//!   suppressed while it has nothing pending; its pending pods are its stated demand;
//! * an offer is answered at once (`Client::observe`): the framework's pending pods, in
//!   creation order, that the node passes (selector, affinity, taints) and that fit what is left
//!   of the offer are launched as tasks, the rest declined; each launched pod is bound by the
//!   API side, with its GPU device indices as an annotation;
//! * a pod that ends or is deleted gives its resources back (its task is killed); a binding that
//!   fails gives them back too, and the pod waits again (unless it is gone or bound elsewhere);
//! * after an allocation run, each pod still waiting is told why (rate-limited per pod).
//!
//! Nothing is kept outside the API: on start the watches list everything, the pods already
//! bound count as used where they are (and in their roles), and nothing is bound before every list is complete (the
//! allocation is paused meanwhile, so the first run sees the whole cluster and demand).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Instant;

use allocator_api::resources::GPUS;
use allocator_api::{FrameworkCapabilities, FrameworkId, Quota, Resources};
use allocator_host::master::{Applied, Command, Event, Master};
use allocator_sim::clients::simulated::take;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::runtime::watcher::Event as WatchEvent;
use serde_json::{Value, json};

use crate::api::{Action, BindFailure, Connection, Input, KubeOptions, Source};
use crate::convert::{self, AgentSpec, PendingAsk};
use crate::filter::{ClusterTaints, NodeView, Placement};
use crate::gang::GangAsk;

mod waiting;

/// The data key of the roles ConfigMap: JSON, `{"ROLE": {"weight": W, "quota":
/// {"guarantees": "cpus:2", "limits": "cpus:8;mem:4096"}}, …}`.
pub const ROLES_KEY: &str = "roles.json";

pub use crate::api::REQUEST_WINDOW;

/// Reports of why pods wait, at most, after one allocation run.
const REPORTS_PER_RUN: usize = 200;

/// How many pending pods a framework states at most right after its parked pods are
/// unparked (see `KubeScheduler::retry`).
const RETRY_WINDOW: usize = 4096;

/// How often pods parked as unplaceable are stated again whatever happened (kube-scheduler
/// flushes its unschedulable queue likewise), for what no watch tells of: refusals expiring.
const PARK_FLUSH: std::time::Duration = std::time::Duration::from_secs(10);

/// The watches whose first complete list the scheduler waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Stream {
    Nodes,
    Ours,
    Others,
    Config,
}

/// The agent as the master has it.
#[derive(Clone, Debug, PartialEq)]
struct InMaster {
    total: Resources,
    active: bool,
    attributes: Vec<allocator_api::Attribute>,
}

#[derive(Debug, Default)]
struct NodeState {
    spec: Option<AgentSpec>,
    view: NodeView,
    /// What pods not bound by this scheduler in this life use here, by pod uid.
    foreign: BTreeMap<String, Resources>,
    /// Those of `foreign` the master holds as allocations of a framework of their own in
    /// their namespace's role ([`elsewhere_framework`]): the framework's name and what it was
    /// added with.
    counted: BTreeMap<String, (String, Resources)>,
    in_master: Option<InMaster>,
}

impl NodeState {
    /// The node's total for the master: its allocatable, less what pods bound elsewhere use
    /// that the master does not hold as theirs (yet: the node is not in the master, or the
    /// master refused their framework), so that it is never offered.
    fn total(&self) -> Resources {
        let mut total = self.spec.as_ref().map(|s| s.resources.clone()).unwrap_or_default();
        for (uid, used) in &self.foreign {
            if !self.counted.contains_key(uid) {
                total.subtract(used);
            }
        }
        total
    }

    /// What is free here for placing pods bound elsewhere on GPU devices: the allocatable
    /// less every pod bound elsewhere.
    fn free_of_foreign(&self) -> Resources {
        let mut free = self.spec.as_ref().map(|s| s.resources.clone()).unwrap_or_default();
        for used in self.foreign.values() {
            free.subtract(used);
        }
        free
    }
}

/// The framework that holds, in the master, what a pod bound elsewhere (by another scheduler,
/// by `spec.nodeName`, or before this scheduler started) uses: one per pod, in the pod's
/// namespace's role, added inactive (it is never offered anything) with the pod's usage as
/// its `used` (as Mesos recovers an agent's running tasks), and removed when the pod ends, so
/// that the role's share, its quota and the explanations count the pod while it runs.
pub fn elsewhere_framework(namespace: &str, name: &str) -> String {
    format!("{namespace}/bound/{name}")
}

#[derive(Clone, Debug, PartialEq)]
enum Phase {
    /// Waiting for a node.
    Pending,
    /// Launched on `node` as `task`; its binding is under way.
    Binding { node: String, fw: FrameworkId, task: u64 },
    /// Bound by this scheduler (the task, while it runs in the master).
    Bound { node: String, task: Option<(FrameworkId, u64)> },
    /// Bound by someone else, or before this scheduler started: counted on the node.
    Foreign { node: String },
}

/// Order of pending pods: creation time, then namespace/name.
type OrderKey = (i64, String);

#[derive(Debug)]
struct PodState {
    namespace: String,
    name: String,
    framework: String,
    source: Source,
    ask: Result<Resources, String>,
    models: Vec<String>,
    placement: Placement,
    unsupported: Option<String>,
    order: OrderKey,
    phase: Phase,
    /// The master's run count when it began to wait.
    since_run: u64,
    /// The scheduler's count of periodic runs when it was first part of its framework's
    /// stated demand (`None`: not yet).
    stated_at: Option<u64>,
    /// When it was last told why it waits, and what.
    report: Option<(Instant, String)>,
}

impl PodState {
    /// Whether it is demand: pending, with an ask that can be stated and nothing unsupported.
    fn schedulable(&self) -> bool {
        self.phase == Phase::Pending && self.ask.is_ok() && self.unsupported.is_none()
    }
}

#[derive(Debug, Default)]
struct FwState {
    role: String,
    id: Option<FrameworkId>,
    /// Schedulable pending pods, in order.
    pending: BTreeSet<(OrderKey, String)>,
    /// Its pods that wait but cannot be demand (unsupported, bad ask), reported only.
    held: BTreeSet<String>,
    /// Its pods in any phase of this scheduler's.
    members: usize,
    suppressed: bool,
    requested: Vec<String>,
    /// A pod group's `minMember` (the largest its pods state): its pods go all or nothing.
    gang: Option<u32>,
    /// The gang ask last stated with `requested`.
    requested_gang: Option<GangAsk>,
}

impl FwState {
    /// For a pod group: its `minMember`, and how many of its pods must still be placed at
    /// once (`minMember` less those placed already).
    /// `elsewhere`: its pods bound before this scheduler started or by someone else.
    fn gang_need(&self, elsewhere: usize) -> Option<(u32, u32)> {
        let min = self.gang?;
        let placed = self.members.saturating_sub(self.pending.len() + self.held.len()) + elsewhere;
        Some((min, min.saturating_sub(placed as u32)))
    }
}

/// A role's weight and quota as the ConfigMap says.
#[derive(Clone, Debug, Default, PartialEq)]
struct RoleConf {
    weight: Option<f64>,
    quota: Option<Quota>,
}

/// Counters the scheduler keeps (also for tests and metrics).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Bindings asked of the API side.
    pub bindings_sent: u64,
    /// Bindings the API server accepted.
    pub bound: u64,
    /// Bindings that failed.
    pub bind_failures: u64,
    /// Reports of why a pod waits.
    pub reports: u64,
}

/// The Kubernetes scheduler: a live client of the master. See the [module documentation](self).
pub struct KubeScheduler {
    options: KubeOptions,
    conn: Connection,
    synced: BTreeSet<Stream>,
    started: bool,
    relist: HashMap<Stream, HashSet<String>>,
    nodes: BTreeMap<String, NodeState>,
    pods: HashMap<String, PodState>,
    frameworks: BTreeMap<String, FwState>,
    tasks: HashMap<(FrameworkId, u64), String>,
    roles: BTreeMap<String, RoleConf>,
    wanted_roles: BTreeMap<String, RoleConf>,
    dirty_nodes: BTreeSet<String>,
    dirty_frameworks: BTreeSet<String>,
    roles_dirty: bool,
    /// Tasks to kill at the next reconcile (their pods ended or went elsewhere).
    kills: Vec<(FrameworkId, u64)>,
    /// Pods of each pod group (by its framework) bound before this scheduler started or by
    /// someone else: placed members of the group.
    group_elsewhere: HashMap<String, HashSet<String>>,
    /// Something was freed or a node changed: waiting pod groups are revived at the next
    /// reconcile, so that the refusals of their declined offers (set in one run, some cleared
    /// by an agent's update) do not keep their agents out of step and a group that fits now
    /// sees all its room in one run.
    revive_groups: bool,
    /// The master's run count when the scheduler started: no pod is told why it waits before
    /// a run after it has had its chance.
    start_run: u64,
    /// The taints on the cluster's nodes, which the pods' constraints name.
    taints: ClusterTaints,
    /// Pending pods (uid → framework) that an allocation run was asked to place and did not:
    /// left out of their framework's stated demand, so that a head of pods no node can take
    /// does not keep the pods behind it from being stated (the window is
    /// [`REQUEST_WINDOW`] pods), until something that could make them fit happens (a node
    /// added or changed, a pod gone, the roles changed) or [`PARK_FLUSH`] passes. Pod groups
    /// are never parked.
    parked: HashMap<String, String>,
    /// When the parked pods were last all stated again.
    parked_flush: Instant,
    /// Pods just unparked: their framework's next demand holds them all (up to
    /// [`RETRY_WINDOW`]) besides its usual window, each in its place in the order, so that
    /// they are all tried again in one run rather than one window at a time, while the pods
    /// placed in that run are as many as usual.
    retry: HashSet<String>,
    /// The master's run count when each framework last stated its demand: only a periodic
    /// run after it (every agent, allocation not paused) parks what it did not place.
    stated_run: HashMap<String, u64>,
    /// The periodic allocation runs (every node) seen so far.
    periodic_runs: u64,
    counts: Counts,
}

impl std::fmt::Debug for KubeScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeScheduler")
            .field("scheduler_name", &self.options.scheduler_name)
            .field("nodes", &self.nodes.len())
            .field("pods", &self.pods.len())
            .field("counts", &self.counts)
            .finish()
    }
}

/// The framework a pod belongs to: its pod group's `NS/podgroup/NAME` ([`crate::gang`]), else
/// its controller's `NS/KIND/NAME`, else `NS/pods`.
pub fn framework_of(pod: &Pod) -> String {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    if let Some(group) = crate::gang::group_of(pod) {
        return crate::gang::framework_of_group(ns, &group.name);
    }
    let owner = pod.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true));
    match owner {
        Some(o) => format!("{ns}/{}/{}", o.kind, o.name),
        None => format!("{ns}/pods"),
    }
}

fn order_of(pod: &Pod) -> OrderKey {
    let t = pod.metadata.creation_timestamp.as_ref().map_or(0, |t| t.0.as_second());
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    (t, format!("{ns}/{name}"))
}

fn node_name_of(pod: &Pod) -> Option<String> {
    pod.spec.as_ref().and_then(|s| s.node_name.clone()).filter(|n| !n.is_empty())
}

fn gpu_milli(resources: &Resources) -> i64 {
    resources.scalar(GPUS).millis()
}

impl KubeScheduler {
    /// Connects to the API server ([`crate::api::connect`]) and starts watching.
    pub fn connect(options: KubeOptions) -> Result<KubeScheduler, String> {
        let conn = crate::api::connect(&options)?;
        Ok(KubeScheduler {
            options,
            conn,
            synced: BTreeSet::new(),
            started: false,
            relist: HashMap::new(),
            nodes: BTreeMap::new(),
            pods: HashMap::new(),
            frameworks: BTreeMap::new(),
            tasks: HashMap::new(),
            roles: BTreeMap::new(),
            wanted_roles: BTreeMap::new(),
            dirty_nodes: BTreeSet::new(),
            dirty_frameworks: BTreeSet::new(),
            roles_dirty: false,
            kills: Vec::new(),
            group_elsewhere: HashMap::new(),
            revive_groups: false,
            start_run: 0,
            taints: ClusterTaints::new(),
            parked: HashMap::new(),
            parked_flush: Instant::now(),
            stated_run: HashMap::new(),
            periodic_runs: 0,
            retry: HashSet::new(),
            counts: Counts::default(),
        })
    }

    /// Whether every watch has listed once and the master has the cluster.
    pub fn started(&self) -> bool {
        self.started
    }

    /// The counters so far.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Pods waiting for a node (schedulable or not).
    pub fn pending(&self) -> usize {
        self.pods.values().filter(|p| p.phase == Phase::Pending).count()
    }

    /// Why pod `namespace/name` is where it is, for `GET /explain?pod=NS/NAME`: its role,
    /// framework and phase; while it waits, why (the message of its `FailedScheduling`
    /// event, computed now) and the constraints its request states to the allocator. `None`
    /// when the scheduler knows no such pod.
    pub fn explain_pod(&self, namespace: &str, name: &str, master: &Master<'_>) -> Option<Value> {
        let (uid, p) =
            self.pods.iter().find(|(_, p)| p.namespace == namespace && p.name == name)?;
        let pod = format!("{namespace}/{name}");
        let (phase, node) = match &p.phase {
            Phase::Pending => ("pending", None),
            Phase::Binding { node, .. } => ("binding", Some(node)),
            Phase::Bound { node, .. } => ("bound", Some(node)),
            Phase::Foreign { node } => ("bound_elsewhere", Some(node)),
        };
        let mut out = json!({"pod": pod, "uid": uid, "role": namespace, "phase": phase});
        if let Some(node) = node.filter(|n| !n.is_empty()) {
            out["node"] = json!(node);
        }
        if let Phase::Foreign { node } = &p.phase {
            let held = self.nodes.get(node).and_then(|st| st.counted.get(uid));
            out["framework"] = json!(held.map(|(f, _)| f.as_str()));
            out["counted_in_role"] = json!(held.is_some());
            return Some(out);
        }
        out["framework"] = json!(p.framework);
        if p.phase == Phase::Pending {
            out["why"] = json!(self.why_waiting(p, master));
            let constraints: Vec<String> =
                p.placement.constraints(&self.taints).iter().map(|c| c.to_string()).collect();
            out["constraints"] = json!(constraints);
        }
        Some(out)
    }

    /// The scheduler's metrics, flat, in the master's naming style.
    pub fn metrics(&self) -> Vec<(String, f64)> {
        vec![
            (
                "kubernetes/nodes".into(),
                self.nodes.values().filter(|n| n.spec.is_some()).count() as f64,
            ),
            ("kubernetes/pods_pending".into(), self.pending() as f64),
            ("kubernetes/frameworks".into(), self.frameworks.len() as f64),
            ("kubernetes/bindings_sent".into(), self.counts.bindings_sent as f64),
            ("kubernetes/bindings_done".into(), self.counts.bound as f64),
            ("kubernetes/binding_failures".into(), self.counts.bind_failures as f64),
            ("kubernetes/failed_scheduling_reports".into(), self.counts.reports as f64),
            (
                "kubernetes/pods_bound_elsewhere".into(),
                self.nodes.values().map(|n| n.foreign.len()).sum::<usize>() as f64,
            ),
            (
                "kubernetes/pods_bound_elsewhere_in_shares".into(),
                self.nodes.values().map(|n| n.counted.len()).sum::<usize>() as f64,
            ),
        ]
    }

    /// Takes what the watches said since the last call and brings the master in line.
    /// `Err` only when a command fails because the master stopped.
    pub fn tick(&mut self, master: &mut Master<'_>) -> Result<(), String> {
        let mut n = 0;
        while let Ok(input) = self.conn.inputs.try_recv() {
            self.input(input, master)?;
            n += 1;
            if n >= 20_000 {
                break; // let the loop serve requests between large batches
            }
        }
        if !self.started {
            let all = [Stream::Nodes, Stream::Ours, Stream::Others, Stream::Config];
            if !all.iter().all(|s| self.synced.contains(s)) {
                return Ok(());
            }
            // The first complete view: added with allocation paused, so the first run sees all.
            apply(master, &Command::Pause)?;
            self.started = true;
            self.reconcile(master)?;
            apply(master, &Command::Resume)?;
            self.start_run = master.runs();
            log::info!(
                "kubernetes: started with {} nodes, {} pods waiting, {} pods bound before or by others",
                self.nodes.len(),
                self.pending(),
                self.pods.values().filter(|p| matches!(p.phase, Phase::Foreign { .. })).count()
            );
            return Ok(());
        }
        self.reconcile(master)
    }

    fn input(&mut self, input: Input, master: &mut Master<'_>) -> Result<(), String> {
        match input {
            Input::Node(event) => self.watch_event(
                Stream::Nodes,
                *event,
                Self::node_applied,
                |s, n| s.node_deleted(n.metadata.name.as_deref().unwrap_or_default()),
                |n| n.metadata.name.clone(),
                master,
            ),
            Input::Pod(source, event) => {
                let stream = if source == Source::Ours { Stream::Ours } else { Stream::Others };
                self.watch_event(
                    stream,
                    event,
                    move |s, p, m| s.pod_applied(source, p, m),
                    |s, p| {
                        if let Some(uid) = p.metadata.uid.as_deref() {
                            s.pod_deleted(uid);
                        }
                    },
                    |p| p.metadata.uid.clone(),
                    master,
                )
            }
            Input::Config(event) => self.watch_event(
                Stream::Config,
                *event,
                |s, c, _| s.config_applied(Some(c)),
                |s, _| s.config_applied(None),
                |c| c.metadata.name.clone(),
                master,
            ),
            Input::Bound { uid, result } => {
                self.bound(uid, result);
                Ok(())
            }
        }
    }

    /// One watch event: applies, deletions, and a re-list's end (what it did not list again
    /// is gone).
    fn watch_event<K>(
        &mut self,
        stream: Stream,
        event: WatchEvent<K>,
        applied: impl Fn(&mut Self, &K, &mut Master<'_>),
        deleted: impl Fn(&mut Self, &K),
        key: impl Fn(&K) -> Option<String>,
        master: &mut Master<'_>,
    ) -> Result<(), String> {
        match event {
            WatchEvent::Apply(obj) => applied(self, &obj, master),
            WatchEvent::Delete(obj) => deleted(self, &obj),
            WatchEvent::Init => {
                self.relist.insert(stream, HashSet::new());
            }
            WatchEvent::InitApply(obj) => {
                if let Some(k) = key(&obj) {
                    self.relist.entry(stream).or_default().insert(k);
                }
                applied(self, &obj, master);
            }
            WatchEvent::InitDone => {
                let seen = self.relist.remove(&stream).unwrap_or_default();
                match stream {
                    Stream::Nodes => {
                        let gone: Vec<String> = self
                            .nodes
                            .iter()
                            .filter(|(n, s)| s.spec.is_some() && !seen.contains(*n))
                            .map(|(n, _)| n.clone())
                            .collect();
                        for n in gone {
                            self.node_deleted(&n);
                        }
                    }
                    Stream::Ours | Stream::Others => {
                        let source =
                            if stream == Stream::Ours { Source::Ours } else { Source::Others };
                        let gone: Vec<String> = self
                            .pods
                            .iter()
                            .filter(|(uid, p)| p.source == source && !seen.contains(*uid))
                            .map(|(uid, _)| uid.clone())
                            .collect();
                        for uid in gone {
                            self.pod_deleted(&uid);
                        }
                    }
                    Stream::Config => {
                        if seen.is_empty() {
                            self.config_applied(None);
                        }
                    }
                }
                self.synced.insert(stream);
            }
        }
        Ok(())
    }

    fn node_applied(&mut self, node: &Node, _: &mut Master<'_>) {
        let spec = convert::agent_of(node);
        let name = spec.name.clone();
        let st = self.nodes.entry(name.clone()).or_default();
        let view = NodeView::of(node);
        let taints_changed = st.spec.is_none() || st.view.taints != view.taints;
        st.view = view;
        let first = st.spec.is_none();
        let changed = st.spec.as_ref() != Some(&spec);
        st.spec = Some(spec);
        if taints_changed {
            self.taints_changed();
        }
        if changed || taints_changed {
            self.unpark();
        }
        self.revive_groups = true;
        if first {
            self.place_foreign_gpus(&name);
        }
        self.dirty_nodes.insert(name);
    }

    /// Pods listed on a node before the node itself (without a device index annotation) got
    /// no GPU devices there, there being none known: now that the node is, their GPUs are put
    /// on its devices, so that they count as used.
    fn place_foreign_gpus(&mut self, name: &str) {
        let Some(st) = self.nodes.get(name) else { return };
        let uids: Vec<String> = st.foreign.keys().cloned().collect();
        for uid in uids {
            let Some(ask) = self.pods.get(&uid).and_then(|p| p.ask.as_ref().ok()) else { continue };
            if gpu_milli(ask) <= 0 {
                continue;
            }
            let gpus = ask.filter(|r| r.name.as_str() == GPUS);
            let Some(st) = self.nodes.get_mut(name) else { return };
            if st.foreign.get(&uid).is_some_and(|u| u.iter().any(|r| r.is_gpu_device())) {
                continue;
            }
            if let Some(piece) = take(&st.free_of_foreign(), &gpus)
                && let Some(used) = st.foreign.get_mut(&uid)
            {
                used.add(&piece);
            }
        }
    }

    fn node_deleted(&mut self, name: &str) {
        if let Some(st) = self.nodes.get_mut(name) {
            st.spec = None;
            self.dirty_nodes.insert(name.to_owned());
            self.taints_changed();
        }
    }

    /// A node's taints may have changed: when the cluster's set of taints did, every
    /// framework states its demand again, its constraints naming the new set.
    fn taints_changed(&mut self) {
        let mut taints = ClusterTaints::new();
        for st in self.nodes.values().filter(|st| st.spec.is_some()) {
            st.view.add_taints_to(&mut taints);
        }
        if taints == self.taints {
            return;
        }
        self.taints = taints;
        for (name, fw) in &mut self.frameworks {
            fw.requested.clear();
            fw.requested_gang = None;
            self.dirty_frameworks.insert(name.clone());
        }
    }

    fn pod_applied(&mut self, source: Source, pod: &Pod, master: &mut Master<'_>) {
        let Some(uid) = pod.metadata.uid.clone() else { return };
        let node = node_name_of(pod);
        let terminating = pod.metadata.deletion_timestamp.is_some();
        let Some(state) = self.pods.get_mut(&uid) else {
            if source == Source::Others || node.is_some() {
                let node = node.unwrap_or_default();
                self.add_foreign(uid, pod, source, node);
            } else if !terminating {
                self.add_pending(uid, pod, master.runs());
            }
            return;
        };
        match (&state.phase, node) {
            (Phase::Pending, Some(node)) => {
                // Bound by someone else meanwhile (or by hand).
                self.forget_pending(&uid);
                self.make_foreign(&uid, pod, node);
            }
            (Phase::Pending, None) if terminating => self.pod_deleted(&uid),
            (Phase::Binding { node: ours, .. }, Some(node)) if *ours == node => {
                // The watch confirms the binding (its answer may come later).
            }
            (Phase::Binding { .. }, Some(node)) => {
                let uid2 = uid.clone();
                self.end_task(&uid2);
                self.make_foreign(&uid, pod, node);
            }
            (Phase::Bound { node: ours, task: None }, Some(node)) if *ours != node => {
                self.make_foreign(&uid, pod, node);
            }
            _ => {}
        }
    }

    fn add_pending(&mut self, uid: String, pod: &Pod, run: u64) {
        let framework = framework_of(pod);
        let namespace = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let group = crate::gang::group_of(pod);
        let mut state = PodState {
            name: pod.metadata.name.clone().unwrap_or_default(),
            namespace: namespace.clone(),
            framework: framework.clone(),
            source: Source::Ours,
            ask: convert::ask_of(pod),
            models: convert::models_of(pod),
            placement: Placement::of(pod),
            unsupported: crate::filter::unsupported(pod),
            order: order_of(pod),
            phase: Phase::Pending,
            since_run: run,
            stated_at: None,
            report: None,
        };
        let fw = self
            .frameworks
            .entry(framework.clone())
            .or_insert_with(|| FwState { role: namespace, ..FwState::default() });
        fw.members += 1;
        match group.map(|g| g.min_member) {
            Some(Ok(min)) => fw.gang = Some(fw.gang.unwrap_or(0).max(min)),
            Some(Err(why)) => state.unsupported = state.unsupported.or(Some(why)),
            None => {}
        }
        if state.schedulable() {
            fw.pending.insert((state.order.clone(), uid.clone()));
        } else {
            fw.held.insert(uid.clone());
        }
        self.dirty_frameworks.insert(framework);
        self.pods.insert(uid, state);
    }

    /// What a bound pod uses on its node: its ask, its GPUs on the devices its annotation
    /// names (else where the sharing rule puts them among what is left).
    fn usage_on(&self, pod: &Pod, ask: &Resources, node: &str) -> Resources {
        let mut usage = ask.filter(|r| r.name.as_str() != GPUS);
        if gpu_milli(ask) > 0 {
            if let Some(devices) = convert::devices_of_annotation(pod, ask) {
                usage.add(&devices);
            } else if let Some(st) = self.nodes.get(node)
                && let Some(piece) =
                    take(&st.free_of_foreign(), &ask.filter(|r| r.name.as_str() == GPUS))
            {
                usage.add(&piece);
            }
        }
        usage
    }

    fn add_foreign(&mut self, uid: String, pod: &Pod, source: Source, node: String) {
        let ask = convert::ask_of(pod).unwrap_or_else(|_| {
            let mut r = Resources::new();
            r.add_resource(allocator_api::Resource::scalar(
                convert::PODS,
                allocator_api::Scalar::from_units(1),
            ));
            r
        });
        let usage = self.usage_on(pod, &ask, &node);
        if crate::gang::group_of(pod).is_some() {
            self.group_elsewhere.entry(framework_of(pod)).or_default().insert(uid.clone());
        }
        let st = self.nodes.entry(node.clone()).or_default();
        st.foreign.insert(uid.clone(), usage);
        self.dirty_nodes.insert(node.clone());
        self.pods.insert(
            uid,
            PodState {
                namespace: pod.metadata.namespace.clone().unwrap_or_default(),
                name: pod.metadata.name.clone().unwrap_or_default(),
                framework: String::new(),
                source,
                ask: Ok(ask),
                models: Vec::new(),
                placement: Placement::default(),
                unsupported: None,
                order: order_of(pod),
                phase: Phase::Foreign { node },
                since_run: 0,
                stated_at: None,
                report: None,
            },
        );
    }

    /// A pod of ours (pending or launched) now bound elsewhere: counted on that node.
    fn make_foreign(&mut self, uid: &str, pod: &Pod, node: String) {
        let Some(state) = self.pods.get(uid) else { return };
        let ask = state.ask.clone().unwrap_or_default();
        let framework = state.framework.clone();
        let usage = self.usage_on(pod, &ask, &node);
        if let Some(fw) = self.frameworks.get_mut(&framework) {
            fw.members = fw.members.saturating_sub(1);
            fw.held.remove(uid);
            if fw.gang.is_some() {
                self.group_elsewhere.entry(framework.clone()).or_default().insert(uid.to_owned());
            }
            self.dirty_frameworks.insert(framework);
        }
        self.nodes.entry(node.clone()).or_default().foreign.insert(uid.to_owned(), usage);
        self.dirty_nodes.insert(node.clone());
        if let Some(state) = self.pods.get_mut(uid) {
            state.phase = Phase::Foreign { node };
            state.framework = String::new();
        }
    }

    fn forget_pending(&mut self, uid: &str) {
        let Some(state) = self.pods.get(uid) else { return };
        if let Some(fw) = self.frameworks.get_mut(&state.framework) {
            fw.pending.remove(&(state.order.clone(), uid.to_owned()));
            fw.held.remove(uid);
            self.dirty_frameworks.insert(state.framework.clone());
        }
    }

    /// Kills the task of a launched pod (its resources go back), if it has one running.
    fn end_task(&mut self, uid: &str) {
        let Some(state) = self.pods.get_mut(uid) else { return };
        let task = match &state.phase {
            Phase::Binding { fw, task, .. } => Some((*fw, *task)),
            Phase::Bound { task, .. } => *task,
            _ => None,
        };
        if let Phase::Bound { task, .. } = &mut state.phase {
            *task = None;
        }
        if let Some(key) = task
            && self.tasks.remove(&key).is_some()
        {
            self.kills.push(key);
        }
    }

    fn pod_deleted(&mut self, uid: &str) {
        self.revive_groups = true;
        self.parked.remove(uid);
        self.retry.remove(uid);
        self.unpark();
        let Some(state) = self.pods.get(uid) else { return };
        match state.phase.clone() {
            Phase::Pending => self.forget_pending(uid),
            Phase::Binding { .. } | Phase::Bound { .. } => self.end_task(uid),
            Phase::Foreign { node } => {
                if let Some(st) = self.nodes.get_mut(&node) {
                    st.foreign.remove(uid);
                    self.dirty_nodes.insert(node);
                }
                self.group_elsewhere.retain(|_, uids| {
                    uids.remove(uid);
                    !uids.is_empty()
                });
            }
        }
        let Some(state) = self.pods.remove(uid) else { return };
        if !matches!(state.phase, Phase::Foreign { .. })
            && let Some(fw) = self.frameworks.get_mut(&state.framework)
        {
            fw.members = fw.members.saturating_sub(1);
            self.dirty_frameworks.insert(state.framework);
        }
    }

    fn bound(&mut self, uid: String, result: Result<(), BindFailure>) {
        let Some(state) = self.pods.get_mut(&uid) else { return };
        let Phase::Binding { node, fw, task } = state.phase.clone() else { return };
        match result {
            Ok(()) => {
                self.counts.bound += 1;
                state.phase = Phase::Bound { node, task: Some((fw, task)) };
            }
            Err(failure) => {
                self.counts.bind_failures += 1;
                log::warn!("binding pod {}/{} to {node}: {failure:?}", state.namespace, state.name);
                match failure {
                    BindFailure::Gone => self.pod_deleted(&uid),
                    BindFailure::Conflict(_) => {
                        // Bound by someone else, or replaced: never bound again by us; the
                        // watch says where it went.
                        self.end_task(&uid);
                        if let Some(s) = self.pods.get_mut(&uid) {
                            s.phase = Phase::Bound { node: String::new(), task: None };
                        }
                    }
                    BindFailure::Other(_) => {
                        self.end_task(&uid);
                        if let Some(s) = self.pods.get_mut(&uid) {
                            s.phase = Phase::Pending;
                            let key = (s.order.clone(), uid.clone());
                            let framework = s.framework.clone();
                            if let Some(fw) = self.frameworks.get_mut(&framework) {
                                fw.pending.insert(key);
                                self.dirty_frameworks.insert(framework);
                            }
                        }
                    }
                }
            }
        }
    }

    fn config_applied(&mut self, config: Option<&ConfigMap>) {
        let text = config.and_then(|c| c.data.as_ref()).and_then(|d| d.get(ROLES_KEY));
        let wanted = match text.map(|t| parse_roles(t)) {
            None => BTreeMap::new(),
            Some(Ok(roles)) => roles,
            Some(Err(e)) => {
                log::warn!("the roles ConfigMap's {ROLES_KEY} is not valid, kept as it was: {e}");
                return;
            }
        };
        self.wanted_roles = wanted;
        self.roles_dirty = true;
        self.unpark();
    }
}

impl KubeScheduler {
    /// States every parked pod again (their frameworks' demand is restated at the next
    /// reconcile).
    fn unpark(&mut self) {
        for (uid, framework) in self.parked.drain() {
            self.dirty_frameworks.insert(framework);
            self.retry.insert(uid);
        }
        self.parked_flush = Instant::now();
    }

    /// After an allocation run: the stated pods it did not place are parked (see
    /// `parked`), and their frameworks state the pods behind them instead.
    fn park_unplaced(&mut self, master: &Master<'_>) {
        if self.parked_flush.elapsed() >= PARK_FLUSH {
            self.unpark();
            return;
        }
        if master.paused() {
            return;
        }
        for (name, fw) in &self.frameworks {
            if fw.gang.is_some() || fw.requested.is_empty() {
                continue;
            }
            if self.stated_run.get(name).is_none_or(|&run| run >= master.runs()) {
                continue; // stated after the last run: not tried yet
            }
            let mut any = false;
            for uid in &fw.requested {
                if self.pods.get(uid).is_some_and(|p| p.phase == Phase::Pending) {
                    self.parked.insert(uid.clone(), name.clone());
                    any = true;
                }
            }
            if any {
                self.dirty_frameworks.insert(name.clone());
            }
        }
    }
}

/// `roles.json` of the roles ConfigMap.
fn parse_roles(text: &str) -> Result<BTreeMap<String, RoleConf>, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let obj = value.as_object().ok_or("it must be a JSON object of roles")?;
    let mut out = BTreeMap::new();
    for (role, conf) in obj {
        allocator_api::roles::validate(role).map_err(|e| e.to_string())?;
        let weight = match conf.get("weight") {
            None => None,
            Some(w) => Some(
                w.as_f64()
                    .filter(|w| w.is_finite() && *w > 0.0)
                    .ok_or_else(|| format!("the weight of '{role}' must be a positive number"))?,
            ),
        };
        let quota = match conf.get("quota") {
            None => None,
            Some(q) => {
                let field = |k: &str| -> Result<allocator_api::Quantities, String> {
                    match q.get(k).and_then(|v| v.as_str()) {
                        None => Ok(allocator_api::Quantities::new()),
                        Some(t) => t.parse().map_err(|e| format!("quota {k} of '{role}': {e}")),
                    }
                };
                Some(Quota { guarantees: field("guarantees")?, limits: field("limits")? })
            }
        };
        out.insert(role.clone(), RoleConf { weight, quota });
    }
    Ok(out)
}

/// Applies a command for the cluster; a refusal is logged (the books stay as the API says),
/// a stopped master ends the loop.
fn apply(master: &mut Master<'_>, command: &Command) -> Result<Option<Applied>, String> {
    match master.apply(command) {
        Ok(applied) => Ok(Some(applied)),
        Err(e) => {
            if master.stopped().is_some() {
                return Err(e.to_string());
            }
            log::warn!("kubernetes: {command:?} was refused: {e}");
            Ok(None)
        }
    }
}

impl KubeScheduler {
    /// Brings the master in line with the books: tasks of ended pods killed, agents, roles'
    /// weights and quotas, frameworks (added, removed, suppressed, revived, their demand).
    fn reconcile(&mut self, master: &mut Master<'_>) -> Result<(), String> {
        for (framework, task) in std::mem::take(&mut self.kills) {
            if master.task(framework, task).is_some() {
                apply(master, &Command::KillTask { framework, task })?;
            }
        }
        if !self.started {
            return Ok(());
        }
        for name in std::mem::take(&mut self.dirty_nodes) {
            self.reconcile_node(&name, master)?;
        }
        if std::mem::take(&mut self.roles_dirty) {
            self.reconcile_roles(master)?;
        }
        for name in std::mem::take(&mut self.dirty_frameworks) {
            self.reconcile_framework(&name, master)?;
        }
        if std::mem::take(&mut self.revive_groups) {
            for (name, fw) in &self.frameworks {
                if fw.gang.is_none() || fw.pending.is_empty() || fw.id.is_none() {
                    continue;
                }
                let revive = Command::ReviveOffers(name.clone(), Vec::new());
                if let Err(e) = master.apply_from(allocator_host::master::Origin::Derived, &revive)
                    && master.stopped().is_some()
                {
                    return Err(e.to_string());
                }
            }
        }
        Ok(())
    }

    fn reconcile_node(&mut self, name: &str, master: &mut Master<'_>) -> Result<(), String> {
        let Some(st) = self.nodes.get(name) else { return Ok(()) };
        match (st.spec.clone(), st.in_master.clone()) {
            (Some(spec), None) => {
                // Added with its whole allocatable, then its pods bound elsewhere as their
                // frameworks' allocations, with allocation paused meanwhile so that nothing
                // they use is offered in between.
                let pause = !st.foreign.is_empty() && !master.paused();
                if pause {
                    apply(master, &Command::Pause)?;
                }
                apply(master, &convert::add_agent_command(&spec, spec.resources.clone()))?;
                if !spec.active {
                    apply(master, &Command::DeactivateAgent(name.to_owned()))?;
                }
                self.count_elsewhere(name, master)?;
                let total = self.nodes.get(name).map(NodeState::total).unwrap_or_default();
                if total != spec.resources {
                    let update = Command::UpdateAgent {
                        agent: name.to_owned(),
                        resources: Some(total.clone()),
                        capabilities: None,
                        attributes: None,
                    };
                    apply(master, &update)?;
                }
                if pause {
                    apply(master, &Command::Resume)?;
                }
                let m =
                    InMaster { total, active: spec.active, attributes: spec.attributes.clone() };
                self.nodes.get_mut(name).expect("present").in_master = Some(m);
            }
            (Some(spec), Some(m)) => {
                self.count_elsewhere(name, master)?;
                let total = self.nodes.get(name).map(NodeState::total).unwrap_or_default();
                let resources = (m.total != total).then(|| total.clone());
                let attributes = (m.attributes != spec.attributes).then(|| spec.attributes.clone());
                if resources.is_some() || attributes.is_some() {
                    apply(
                        master,
                        &Command::UpdateAgent {
                            agent: name.to_owned(),
                            resources,
                            capabilities: None,
                            attributes,
                        },
                    )?;
                }
                if m.active != spec.active {
                    let c = if spec.active {
                        Command::ActivateAgent(name.to_owned())
                    } else {
                        Command::DeactivateAgent(name.to_owned())
                    };
                    apply(master, &c)?;
                }
                let m =
                    InMaster { total, active: spec.active, attributes: spec.attributes.clone() };
                self.nodes.get_mut(name).expect("present").in_master = Some(m);
            }
            (None, Some(_)) => {
                // Its pods' frameworks go first (what they held there goes with the agent).
                let counted =
                    std::mem::take(&mut self.nodes.get_mut(name).expect("present").counted);
                for (framework, _) in counted.into_values() {
                    apply(master, &Command::RemoveFramework(framework))?;
                }
                apply(master, &Command::RemoveAgent(name.to_owned()))?;
                let st = self.nodes.get_mut(name).expect("present");
                st.in_master = None;
                if st.foreign.is_empty() {
                    self.nodes.remove(name);
                }
            }
            (None, None) => {
                if st.foreign.is_empty() {
                    self.nodes.remove(name);
                }
            }
        }
        Ok(())
    }

    /// Brings the master's allocations for the pods bound elsewhere on node `name` (in the
    /// master) in line with the books: a framework of their own each
    /// ([`elsewhere_framework`]) is removed when its pod ended or its usage changed, and added
    /// (inactive, its usage as `used`) for each pod not held yet. A refused one stays out of
    /// `counted`, so its usage is taken off the node's total instead.
    fn count_elsewhere(&mut self, name: &str, master: &mut Master<'_>) -> Result<(), String> {
        let Some(st) = self.nodes.get(name) else { return Ok(()) };
        let stale: Vec<String> = st
            .counted
            .iter()
            .filter(|(uid, (_, usage))| st.foreign.get(*uid) != Some(usage))
            .map(|(uid, _)| uid.clone())
            .collect();
        let missing: Vec<(String, Resources)> = st
            .foreign
            .iter()
            .filter(|(uid, _)| !st.counted.contains_key(*uid) || stale.contains(uid))
            .map(|(uid, usage)| (uid.clone(), usage.clone()))
            .collect();
        for uid in stale {
            let st = self.nodes.get_mut(name).expect("present");
            if let Some((framework, _)) = st.counted.remove(&uid) {
                apply(master, &Command::RemoveFramework(framework))?;
            }
        }
        for (uid, usage) in missing {
            let Some(pod) = self.pods.get(&uid) else { continue };
            let mut framework = elsewhere_framework(&pod.namespace, &pod.name);
            if master.framework_id(&framework).is_ok() {
                // A pod of the same name not gone yet (deleted and created again).
                framework = format!("{framework}/{uid}");
            }
            let add = Command::AddFramework {
                framework: framework.clone(),
                roles: vec![pod.namespace.clone()],
                capabilities: FrameworkCapabilities::MULTI_ROLE
                    .with(FrameworkCapabilities::GPU_RESOURCES),
                active: false,
                used: vec![(name.to_owned(), usage.clone())],
                suppressed_roles: vec![],
                min_allocatable: vec![],
            };
            if let Some(Applied::Framework(_)) = apply(master, &add)? {
                let st = self.nodes.get_mut(name).expect("present");
                st.counted.insert(uid, (framework, usage));
            }
        }
        Ok(())
    }

    fn reconcile_roles(&mut self, master: &mut Master<'_>) -> Result<(), String> {
        let mut weights = Vec::new();
        for (role, conf) in &self.wanted_roles {
            let old = self.roles.get(role);
            if old.map(|o| o.weight) != Some(conf.weight) {
                weights.push((role.clone(), conf.weight.unwrap_or(1.0)));
            }
            if old.map(|o| &o.quota) != Some(&conf.quota) {
                apply(
                    master,
                    &Command::UpdateQuota(role.clone(), conf.quota.clone().unwrap_or_default()),
                )?;
            }
        }
        for (role, old) in &self.roles {
            if self.wanted_roles.contains_key(role) {
                continue;
            }
            if old.weight.is_some() {
                weights.push((role.clone(), 1.0));
            }
            if old.quota.is_some() {
                apply(master, &Command::UpdateQuota(role.clone(), Quota::default()))?;
            }
        }
        if !weights.is_empty() {
            apply(master, &Command::UpdateWeights(weights))?;
        }
        self.roles = self.wanted_roles.clone();
        Ok(())
    }

    fn reconcile_framework(&mut self, name: &str, master: &mut Master<'_>) -> Result<(), String> {
        let Some(fw) = self.frameworks.get_mut(name) else { return Ok(()) };
        if fw.members == 0 {
            if fw.id.is_some() {
                apply(master, &Command::RemoveFramework(name.to_owned()))?;
            }
            self.frameworks.remove(name);
            self.stated_run.remove(name);
            return Ok(());
        }
        if fw.id.is_none() {
            let add = Command::AddFramework {
                framework: name.to_owned(),
                roles: vec![fw.role.clone()],
                capabilities: FrameworkCapabilities::MULTI_ROLE
                    .with(FrameworkCapabilities::GPU_RESOURCES),
                active: true,
                used: vec![],
                suppressed_roles: vec![],
                min_allocatable: vec![],
            };
            match apply(master, &add)? {
                Some(Applied::Framework(id)) => fw.id = Some(id),
                _ => return Ok(()),
            }
        }
        let fw = self.frameworks.get_mut(name).expect("present");
        if fw.pending.is_empty() && !fw.suppressed {
            apply(master, &Command::SuppressOffers(name.to_owned(), Vec::new()))?;
            fw.suppressed = true;
        } else if !fw.pending.is_empty() && fw.suppressed {
            let revive = Command::ReviveOffers(name.to_owned(), Vec::new());
            if let Err(e) = master.apply_from(allocator_host::master::Origin::Derived, &revive)
                && master.stopped().is_some()
            {
                return Err(e.to_string());
            }
            fw.suppressed = false;
        }
        let window = self.options.request_window.max(1);
        let (parked, retry) = (&self.parked, &self.retry);
        let mut fresh = 0;
        let mut keys: Vec<String> = fw
            .pending
            .iter()
            .filter(|(_, uid)| {
                if parked.contains_key(uid) {
                    return false;
                }
                if retry.contains(uid) {
                    return true;
                }
                fresh += 1;
                fresh <= window
            })
            .take(window + RETRY_WINDOW)
            .map(|(_, uid)| uid.clone())
            .collect();
        let periodic_runs = self.periodic_runs;
        for uid in &keys {
            self.retry.remove(uid);
            if let Some(p) = self.pods.get_mut(uid) {
                p.stated_at.get_or_insert(periodic_runs);
            }
        }
        if keys.is_empty() {
            // Every pending pod is parked: they stay the stated demand (tried again at each
            // run, found not to fit at once), so that the framework gets no plain offers.
            keys = fw.pending.iter().take(window).map(|(_, uid)| uid.clone()).collect();
        }
        let elsewhere = self.group_elsewhere.get(name).map_or(0, HashSet::len);
        let gang = fw
            .gang_need(elsewhere)
            .filter(|(_, need)| *need > 0)
            .map(|(_, need)| GangAsk { group: crate::gang::group_id(name), need });
        if gang.is_some_and(|g| (keys.len() as u32) < g.need) {
            keys.clear(); // not enough of the group's pods exist yet: nothing can be placed
        }
        if keys != fw.requested || gang != fw.requested_gang {
            fw.requested_gang = gang;
            let asks: Vec<PendingAsk<'_>> = keys
                .iter()
                .filter_map(|uid| self.pods.get(uid))
                .filter_map(|p| {
                    p.ask.as_ref().ok().map(|ask| PendingAsk {
                        ask,
                        models: &p.models,
                        constraints: p.placement.constraints(&self.taints),
                    })
                })
                .collect();
            let request = convert::requests_of(name, &asks, gang);
            match master.apply(&request) {
                Ok(_) => {}
                Err(e) if master.stopped().is_some() => return Err(e.to_string()),
                Err(e) => log::debug!("kubernetes: the demand of {name}: {e}"),
            }
            fw.requested = keys;
            self.stated_run.insert(name.to_owned(), master.runs());
        }
        Ok(())
    }

    /// Answers an offer: launches the framework's pending pods that the node takes and that
    /// fit, declines the rest, and asks for their bindings.
    fn answer(
        &mut self,
        offer: &std::sync::Arc<allocator_api::Allocation>,
        closed: bool,
        master: &mut Master<'_>,
    ) -> Result<(), String> {
        let framework = master.framework_name(offer.framework).to_owned();
        let node = master.agent_name(offer.agent).to_owned();
        let mut remaining = offer.resources.clone();
        let mut chosen: Vec<(String, Resources)> = Vec::new();
        if let (Some(fw), Some(st), false) =
            (self.frameworks.get(&framework), self.nodes.get(&node), closed)
        {
            for (_, uid) in &fw.pending {
                if remaining.scalar(convert::PODS).millis() < 1000 {
                    break;
                }
                let Some(pod) = self.pods.get(uid) else { continue };
                let Ok(ask) = &pod.ask else { continue };
                if pod.placement.check(&st.view).is_err() {
                    continue;
                }
                if let Some(piece) = take(&remaining, ask) {
                    remaining.subtract(&piece);
                    chosen.push((uid.clone(), piece));
                }
            }
        }
        let tasks = chosen.iter().map(|(_, r)| (r.clone(), None)).collect();
        let answer = Command::AnswerOffer {
            offer: offer.clone(),
            tasks,
            refuse_seconds: self.options.refuse_seconds,
        };
        let Some(Applied::Launched(ids)) = apply(master, &answer)? else { return Ok(()) };
        for ((uid, piece), task) in chosen.into_iter().zip(ids) {
            self.tasks.insert((offer.framework, task), uid.clone());
            let Some(pod) = self.pods.get_mut(&uid) else { continue };
            pod.phase = Phase::Binding { node: node.clone(), fw: offer.framework, task };
            let key = (pod.order.clone(), uid.clone());
            let mut annotations = BTreeMap::new();
            let devices = convert::device_indices(&piece);
            if !devices.is_empty() {
                let text: Vec<String> = devices.iter().map(u32::to_string).collect();
                annotations.insert(convert::GPU_INDEX_ANNOTATION.to_owned(), text.join("-"));
            }
            let bind = Action::Bind {
                namespace: pod.namespace.clone(),
                name: pod.name.clone(),
                uid: uid.clone(),
                node: node.clone(),
                annotations,
            };
            if let Some(fw) = self.frameworks.get_mut(&framework) {
                fw.pending.remove(&key);
            }
            self.counts.bindings_sent += 1;
            let _ = self.conn.actions.send(bind);
        }
        self.dirty_frameworks.insert(framework);
        Ok(())
    }
}

impl allocator_sim::driver::Client for KubeScheduler {
    fn observe(&mut self, events: &[Event], master: &mut Master<'_>) -> Result<(), String> {
        let gates = self.gang_gates(events, master);
        let (mut ran, mut periodic_ran) = (false, false);
        for event in events {
            match event {
                Event::Offer(offer) => {
                    let closed = gates.get(&offer.framework).is_some_and(|open| !open);
                    self.answer(offer, closed, master)?
                }
                Event::TaskEnded { task, framework, .. } => {
                    if !self.parked.is_empty() {
                        self.unpark();
                    }
                    if let Some(uid) = self.tasks.remove(&(*framework, *task))
                        && let Some(p) = self.pods.get_mut(&uid)
                        && let Phase::Bound { task: t, .. } = &mut p.phase
                    {
                        *t = None;
                    }
                }
                Event::AllocationRun { periodic, .. } => {
                    ran = true;
                    periodic_ran |= *periodic;
                    self.periodic_runs += u64::from(*periodic);
                }
                _ => {}
            }
        }
        if !self.started {
            return Ok(()); // nothing reaches the master before every list is complete
        }
        if periodic_ran {
            self.park_unplaced(master);
        }
        for name in std::mem::take(&mut self.dirty_frameworks) {
            self.reconcile_framework(&name, master)?;
        }
        if ran {
            self.report_waiting(master);
        }
        Ok(())
    }
}

/// Pod groups: the gate on their offers, and why they wait ([`crate::gang`]).
impl KubeScheduler {
    /// A group's pending pods that can be demand, in order: their asks and placement rules.
    fn gang_pods<'a>(&'a self, fw: &FwState) -> Vec<(&'a Resources, &'a Placement)> {
        fw.pending
            .iter()
            .filter_map(|(_, uid)| self.pods.get(uid))
            .filter_map(|p| p.ask.as_ref().ok().map(|a| (a, &p.placement)))
            .collect()
    }

    /// For each pod group with offers among `events` (one allocation run's): whether they
    /// take together at least the pods it must place at once (`true`, answered as usual), or
    /// not (`false`: every one of its offers is declined, so no pod of it is bound).
    fn gang_gates(&self, events: &[Event], master: &Master<'_>) -> HashMap<FrameworkId, bool> {
        let mut offers: BTreeMap<FrameworkId, Vec<&allocator_api::Allocation>> = BTreeMap::new();
        for event in events {
            if let Event::Offer(o) = event {
                offers.entry(o.framework).or_default().push(o);
            }
        }
        let mut gates = HashMap::new();
        for (id, offers) in offers {
            let Some(fw) = self.frameworks.get(master.framework_name(id)) else { continue };
            let elsewhere =
                self.group_elsewhere.get(master.framework_name(id)).map_or(0, HashSet::len);
            let Some((_, need)) = fw.gang_need(elsewhere).filter(|(_, need)| *need > 0) else {
                continue;
            };
            let pods = self.gang_pods(fw);
            let mut nodes: Vec<(&NodeView, Resources)> = offers
                .iter()
                .filter_map(|o| {
                    let st = self.nodes.get(master.agent_name(o.agent))?;
                    Some((&st.view, o.resources.clone()))
                })
                .collect();
            let (fit, _) = crate::gang::placed(&crate::gang::assign(&pods, &mut nodes));
            gates.insert(id, fit >= need as usize);
        }
        gates
    }

    /// Why a pod group's pods wait, or `None` when the pod is in no group that still needs
    /// pods placed at once: how many of the pods it needs fit now on how many nodes, and how
    /// many are missing.
    fn gang_waiting(&self, p: &PodState, master: &Master<'_>) -> Option<String> {
        let fw = self.frameworks.get(&p.framework)?;
        let elsewhere = self.group_elsewhere.get(&p.framework).map_or(0, HashSet::len);
        let (min, need) = fw.gang_need(elsewhere).filter(|(_, need)| *need > 0)?;
        let group = p.framework.replacen("/podgroup/", "/", 1);
        let placed = min - need;
        let pods = self.gang_pods(fw);
        if (pods.len() as u32) < need {
            return Some(format!(
                "pod group '{group}' waits for its pods (minMember {min}): {placed} placed, {} waiting, {} more must be created",
                pods.len(),
                need - pods.len() as u32
            ));
        }
        let mut nodes: Vec<(&NodeView, Resources)> = Vec::new();
        for (name, st) in &self.nodes {
            if !st.in_master.as_ref().is_some_and(|m| m.active) {
                continue;
            }
            let Ok(id) = master.agent_id(name) else { continue };
            let mut free = master.agent_total(id).cloned().unwrap_or_default();
            free.subtract(&master.agent_used(id));
            nodes.push((&st.view, free));
        }
        let total = nodes.len();
        let (fit, on) = crate::gang::placed(&crate::gang::assign(&pods, &mut nodes));
        let fit = fit.min(need as usize);
        let missing = need as usize - fit;
        let head = format!(
            "pod group '{group}' is scheduled all or nothing (minMember {min}, {placed} placed): {fit} of the {need} pods it needs at once fit now on {on} of {total} node(s)"
        );
        Some(if missing > 0 {
            format!("{head}, {missing} missing; no pod of the group is bound until all {need} fit")
        } else {
            format!("{head}; it waits for its turn (role '{}')", p.namespace)
        })
    }
}
