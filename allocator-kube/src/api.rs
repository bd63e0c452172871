//! The Kubernetes API side: watchers on nodes, pods and the roles ConfigMap feed the master's
//! thread ([`Input`]), and what the master decides ([`Action`]: bindings and their `Scheduled`
//! events, `FailedScheduling` events and `PodScheduled=False` conditions) is written back
//! concurrently within a bounded rate. Everything runs on a small tokio runtime of its own, on
//! a thread of its own, so the master thread stays a plain thread (as `serve`'s HTTP server
//! does).
//!
//! Pods come from two watches, both leaving out ended pods (`status.phase!=Succeeded,…`, as
//! kube-scheduler's informer does, so an ended pod is a deletion): the pods whose
//! `spec.schedulerName` is this scheduler's, and the pods of other schedulers that are bound
//! to a node (they count as used there).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Node, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::events::{Event as KubeEvent, EventType, Recorder, Reporter};
use kube::runtime::watcher::{self, Event as WatchEvent};
use kube::{Client, Config};
use tokio::sync::{Semaphore, mpsc};

use crate::watched::WatchedPod;

/// How many of a framework's pending pods it states to the allocator at once, by default
/// ([`KubeOptions::request_window`]).
pub const REQUEST_WINDOW: usize = 256;

/// How the client reaches the API server and writes to it.
#[derive(Clone, Debug)]
pub struct KubeOptions {
    /// The kubeconfig to use; `None`: `KUBECONFIG`, `~/.kube/config`, or the in-cluster
    /// service account (kube-rs's `Config::infer`).
    pub kubeconfig: Option<PathBuf>,
    /// The `spec.schedulerName` this scheduler schedules.
    pub scheduler_name: String,
    /// The ConfigMap with the roles' weights and quotas (`namespace/name`); `None`: none.
    pub config_map: Option<(String, String)>,
    /// Writes per second (bindings, events, conditions) at most.
    pub qps: f64,
    /// Writes that may go at once above the rate.
    pub burst: u32,
    /// Writes in flight at most.
    pub concurrency: usize,
    /// How many of a framework's pending pods it states to the allocator at once (the rest
    /// wait their turn); 1 states one pod a run, as the packing experiment does.
    pub request_window: usize,
    /// Seconds a framework is not offered again what it declined on a node.
    pub refuse_seconds: f64,
    /// The least time between two reports (event, condition) of why one pod waits.
    pub report_interval: Duration,
    /// Leader election on a Lease ([`crate::lease`]): nothing is watched (so nothing is
    /// bound) before this replica leads. `None`: it leads alone.
    pub leader_election: Option<crate::lease::LeaderElection>,
}

impl KubeOptions {
    /// The defaults for scheduler `name`: 100 writes a second (burst 200), 32 in flight,
    /// refusals of 2 s, a pod's reason reported at most every 30 s.
    pub fn new(name: &str) -> KubeOptions {
        KubeOptions {
            kubeconfig: None,
            scheduler_name: name.to_owned(),
            config_map: None,
            qps: 100.0,
            burst: 200,
            concurrency: 32,
            request_window: REQUEST_WINDOW,
            refuse_seconds: 2.0,
            report_interval: Duration::from_secs(30),
            leader_election: None,
        }
    }
}

/// Which pod watch an event came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// Pods whose `schedulerName` is ours.
    Ours,
    /// Bound pods of other schedulers.
    Others,
}

/// Why a binding failed.
#[derive(Clone, Debug, PartialEq)]
pub enum BindFailure {
    /// The pod is gone (404).
    Gone,
    /// The pod is bound already or was replaced (409).
    Conflict(String),
    /// Anything else (retried).
    Other(String),
}

/// What the API side tells the master's thread.
#[derive(Debug)]
pub enum Input {
    /// A node event.
    Node(Box<WatchEvent<Node>>),
    /// A pod event, from one of the two watches (the pod boxed: it moves from the decoder to
    /// the master's thread as a pointer, not as the two kilobytes a `Pod` is).
    Pod(Source, WatchEvent<Box<Pod>>),
    /// An event of the roles ConfigMap.
    Config(Box<WatchEvent<ConfigMap>>),
    /// A binding's outcome, by pod uid.
    Bound {
        /// The pod's uid.
        uid: String,
        /// `Ok`, or why not.
        result: Result<(), BindFailure>,
    },
}

/// What the master's thread asks the API side to write.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Bind a pod to a node (`pods/binding`), with annotations set on the pod by the binding;
    /// once bound, a `Scheduled` event ("Successfully assigned NS/NAME to NODE") as
    /// kube-scheduler writes, rated by a token bucket of its own.
    Bind {
        /// The pod's namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its uid (the binding's precondition).
        uid: String,
        /// The node.
        node: String,
        /// Annotations the binding sets ([`crate::convert::GPU_INDEX_ANNOTATION`]).
        annotations: BTreeMap<String, String>,
    },
    /// Tell why a pod waits: a `FailedScheduling` event and the `PodScheduled=False`
    /// condition with reason `Unschedulable`.
    Unschedulable {
        /// The pod's namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its uid.
        uid: String,
        /// Why it waits.
        message: String,
    },
}

/// The API side running: its inputs, where actions go, and its runtime's thread (stopped
/// when this is dropped).
pub struct Connection {
    /// What the watches and writes report.
    pub inputs: std_mpsc::Receiver<Input>,
    /// Where actions go.
    pub actions: mpsc::UnboundedSender<Action>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A token bucket: `qps` a second, `burst` at once.
struct Limiter {
    next: std::sync::Mutex<Instant>,
    interval: Duration,
    burst: Duration,
}

impl Limiter {
    fn new(qps: f64, burst: u32) -> Limiter {
        let interval = Duration::from_secs_f64(1.0 / qps.max(0.001));
        Limiter { next: std::sync::Mutex::new(Instant::now()), interval, burst: interval * burst }
    }

    async fn wait(&self) {
        let slot = {
            let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            let earliest = now.checked_sub(self.burst).unwrap_or(now);
            let slot = (*next).max(earliest);
            *next = slot + self.interval;
            (slot > now).then_some(slot)
        };
        // Within the burst no timer is made: a thousand writes a second would otherwise each
        // register one with the runtime's timer wheel just to find it expired.
        if let Some(slot) = slot {
            tokio::time::sleep_until(slot.into()).await;
        }
    }
}

async fn client_of(options: &KubeOptions) -> Result<Client, String> {
    let config = match &options.kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| format!("cannot read the kubeconfig '{}': {e}", path.display()))?;
            Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| format!("the kubeconfig '{}': {e}", path.display()))?
        }
        None => Config::infer().await.map_err(|e| format!("no Kubernetes configuration: {e}"))?,
    };
    crate::client::client(config).map_err(|e| format!("cannot make a Kubernetes client: {e}"))
}

/// Connects to the API server and starts the watches and the writer. `Err` when no client
/// can be made (a bad kubeconfig); an API server that does not answer yet is retried.
pub fn connect(options: &KubeOptions) -> Result<Connection, String> {
    let (inputs_tx, inputs) = std_mpsc::channel();
    let (actions, actions_rx) = mpsc::unbounded_channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready) = std_mpsc::channel::<Result<(), String>>();
    let options = options.clone();
    let thread = std::thread::Builder::new()
        .name("kube-client".into())
        .spawn(move || {
            // One thread for everything the API side does (watches, bindings, events, the
            // lease): at a few hundred writes a second it keeps up, and it spends no CPU on
            // waking other threads (with two worker threads, a third of its CPU time went to
            // context switches; issue 47's benchmark).
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .thread_name("kube-io")
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("cannot start the Kubernetes runtime: {e}")));
                    return;
                }
            };
            runtime.block_on(async move {
                let client = match client_of(&options).await {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                let tasks = run(client, options, inputs_tx, actions_rx);
                tokio::select! {
                    _ = tasks => {}
                    _ = stopped => {}
                }
            });
        })
        .map_err(|e| format!("cannot start the Kubernetes client thread: {e}"))?;
    match ready.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let _ = thread.join();
            return Err(e);
        }
        Err(_) => return Err("the Kubernetes client thread ended at start".into()),
    }
    Ok(Connection { inputs, actions, stop: Some(stop), thread: Some(thread) })
}

/// A watched pod's event as the master's thread reads it.
fn pod_event(e: WatchEvent<WatchedPod>) -> WatchEvent<Box<Pod>> {
    match e {
        WatchEvent::Apply(p) => WatchEvent::Apply(p.into_pod()),
        WatchEvent::Delete(p) => WatchEvent::Delete(p.into_pod()),
        WatchEvent::Init => WatchEvent::Init,
        WatchEvent::InitApply(p) => WatchEvent::InitApply(p.into_pod()),
        WatchEvent::InitDone => WatchEvent::InitDone,
    }
}

/// Forwards a watch to the master's thread until it is gone.
async fn forward<K, F>(
    api: Api<K>,
    config: watcher::Config,
    what: &'static str,
    tx: std_mpsc::Sender<Input>,
    wrap: F,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    K::DynamicType: Default,
    F: Fn(WatchEvent<K>) -> Input,
{
    let mut stream = watcher(api, config).default_backoff().boxed();
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => {
                if tx.send(wrap(event)).is_err() {
                    return;
                }
            }
            Err(e) => log::warn!("watching {what}: {e}"),
        }
    }
}

fn watcher<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl futures::Stream<Item = watcher::Result<WatchEvent<K>>>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    K::DynamicType: Default,
{
    watcher::watcher(api, config)
}

async fn run(
    client: Client,
    options: KubeOptions,
    tx: std_mpsc::Sender<Input>,
    mut actions: mpsc::UnboundedReceiver<Action>,
) {
    if let Some(le) = options.leader_election.clone() {
        crate::lease::lead(client.clone(), le).await;
    }
    let live = "status.phase!=Succeeded,status.phase!=Failed";
    let name = &options.scheduler_name;
    let ours = watcher::Config::default().fields(&format!("spec.schedulerName={name},{live}"));
    let others = watcher::Config::default()
        .fields(&format!("spec.schedulerName!={name},spec.nodeName!=,{live}"));
    let nodes = forward(
        Api::<Node>::all(client.clone()),
        watcher::Config::default(),
        "nodes",
        tx.clone(),
        |e| Input::Node(Box::new(e)),
    );
    let pods = forward(Api::<WatchedPod>::all(client.clone()), ours, "pods", tx.clone(), |e| {
        Input::Pod(Source::Ours, pod_event(e))
    });
    let others_api = Api::<WatchedPod>::all(client.clone());
    let bound = forward(others_api, others, "bound pods", tx.clone(), |e| {
        Input::Pod(Source::Others, pod_event(e))
    });
    let config = async {
        match &options.config_map {
            Some((ns, cm)) => {
                let api = Api::<ConfigMap>::namespaced(client.clone(), ns);
                let config = watcher::Config::default().fields(&format!("metadata.name={cm}"));
                let wrap = |e| Input::Config(Box::new(e));
                forward(api, config, "the roles ConfigMap", tx.clone(), wrap).await
            }
            None => {
                // No ConfigMap: say so once, as an empty list would.
                let _ = tx.send(Input::Config(Box::new(WatchEvent::Init)));
                let _ = tx.send(Input::Config(Box::new(WatchEvent::InitDone)));
                futures::future::pending::<()>().await
            }
        }
    };
    let limiter = Arc::new(Limiter::new(options.qps, options.burst));
    // The `Scheduled` events have a bucket of their own, as kube-scheduler's events client
    // has: telling that a pod was bound never holds back the next binding.
    let event_limiter = Arc::new(Limiter::new(options.qps, options.burst));
    let slots = Arc::new(Semaphore::new(options.concurrency.max(1)));
    let reporter = Reporter {
        controller: options.scheduler_name.clone(),
        instance: std::env::var("HOSTNAME").ok(),
    };
    let recorder = Recorder::new(client.clone(), reporter.clone());
    let writer = async {
        while let Some(action) = actions.recv().await {
            let Ok(permit) = slots.clone().acquire_owned().await else { return };
            let (client, limiter, tx, recorder) =
                (client.clone(), limiter.clone(), tx.clone(), recorder.clone());
            let (event_limiter, reporter) = (event_limiter.clone(), reporter.clone());
            tokio::spawn(async move {
                limiter.wait().await;
                let scheduled = write(&client, &recorder, action, &tx).await;
                drop(permit);
                if let Some((reference, note)) = scheduled {
                    event_limiter.wait().await;
                    if let Err(e) = scheduled_event(&client, &reporter, reference, note).await {
                        log::debug!("the Scheduled event: {e}");
                    }
                }
            });
        }
    };
    tokio::join!(nodes, pods, bound, config, writer);
}

/// Writes the `Scheduled` event of a pod just bound, as kube-runtime's `Recorder` would write a
/// new event (the same name, times and reporter), but without its series cache, which every
/// event walks whole (a pod is scheduled once: there is no series), and without decoding the
/// API server's copy of the event.
async fn scheduled_event(
    client: &Client,
    reporter: &Reporter,
    regarding: ObjectReference,
    note: String,
) -> Result<(), String> {
    let now = k8s_openapi::jiff::Timestamp::now();
    let namespace = regarding.namespace.clone().unwrap_or_else(|| "default".into());
    let name = regarding.name.clone().unwrap_or_else(|| reporter.controller.clone());
    let event = k8s_openapi::api::events::v1::Event {
        action: Some("Binding".into()),
        reason: Some("Scheduled".into()),
        event_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(now)),
        regarding: Some(regarding),
        note: Some(note),
        metadata: ObjectMeta {
            namespace: Some(namespace.clone()),
            name: Some(format!("{name}.{:x}", now.as_nanosecond())),
            ..Default::default()
        },
        reporting_controller: Some(reporter.controller.clone()),
        reporting_instance: Some(
            reporter.instance.clone().unwrap_or_else(|| reporter.controller.clone()),
        ),
        type_: Some("Normal".into()),
        ..Default::default()
    };
    let body = serde_json::to_vec(&event).map_err(|e| e.to_string())?;
    let request =
        http::Request::post(format!("/apis/events.k8s.io/v1/namespaces/{namespace}/events"))
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body)
            .map_err(|e| e.to_string())?;
    send_unread(client, request).await.map_err(|e| e.to_string())
}

/// The body of a `pods/binding` request, borrowed from the action (kube-rs's `Binding` would
/// copy every string into an object made for this one request).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct BindingBody<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: BindingMeta<'a>,
    target: BindingTarget<'a>,
}

#[derive(serde::Serialize)]
struct BindingMeta<'a> {
    name: &'a str,
    namespace: &'a str,
    uid: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: &'a BTreeMap<String, String>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct BindingTarget<'a> {
    api_version: &'static str,
    kind: &'static str,
    name: &'a str,
}

/// Binds pod `namespace/name` (its `uid` the precondition) to `node`, setting `annotations` on
/// the pod, as `kubectl`'s or kube-scheduler's binding does.
async fn bind(
    client: &Client,
    namespace: &str,
    name: &str,
    uid: &str,
    node: &str,
    annotations: &BTreeMap<String, String>,
) -> Result<(), kube::Error> {
    let body = BindingBody {
        api_version: "v1",
        kind: "Binding",
        metadata: BindingMeta { name, namespace, uid, annotations },
        target: BindingTarget { api_version: "v1", kind: "Node", name: node },
    };
    let body = serde_json::to_vec(&body).map_err(kube::Error::SerdeError)?;
    let request =
        http::Request::post(format!("/api/v1/namespaces/{namespace}/pods/{name}/binding"))
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body)
            .map_err(kube::Error::HttpError)?;
    send_unread(client, request).await
}

/// Sends `request` and reads the answer's body without decoding it: `Ok` for a 2xx answer,
/// else the API's `Status` as kube-rs's client reports it (a body that is not one becomes a
/// `Status` with the answer's code and text). The bindings and `Scheduled` events, a thousand a
/// second, need nothing of a successful answer.
async fn send_unread(client: &Client, request: http::Request<Vec<u8>>) -> Result<(), kube::Error> {
    let response = client.send(request.map(kube::client::Body::from)).await?;
    let code = response.status();
    let body = response.into_body().collect_bytes().await?;
    match refusal(code, &body) {
        None => Ok(()),
        Some(status) => Err(kube::Error::Api(status.boxed())),
    }
}

/// The refusal an answer with `code` and `body` is: `None` for a 2xx answer, else the API's
/// `Status`, or one made of the code and the body's text when the body is not one (a proxy's
/// page), as kube-rs's client makes it.
fn refusal(code: http::StatusCode, body: &[u8]) -> Option<kube::core::Status> {
    if code.is_success() {
        return None;
    }
    let text = String::from_utf8_lossy(body);
    Some(serde_json::from_str::<kube::core::Status>(&text).unwrap_or_else(|_| {
        kube::core::Status::failure(text.trim(), "Failed to parse error data")
            .with_code(code.as_u16())
    }))
}

/// A pod as events name it.
fn pod_reference(namespace: String, name: String, uid: String) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(name),
        namespace: Some(namespace),
        uid: Some(uid),
        ..Default::default()
    }
}

fn failure_of(e: kube::Error) -> BindFailure {
    match e {
        kube::Error::Api(s) if s.code == 404 => BindFailure::Gone,
        kube::Error::Api(s) if s.code == 409 => BindFailure::Conflict(s.message),
        e => BindFailure::Other(e.to_string()),
    }
}

/// Writes one action. A binding done gives the pod's reference and the note of the `Scheduled`
/// event kube-scheduler writes for it ("Successfully assigned NS/NAME to NODE"), which the
/// caller publishes.
async fn write(
    client: &Client,
    recorder: &Recorder,
    action: Action,
    tx: &std_mpsc::Sender<Input>,
) -> Option<(ObjectReference, String)> {
    match action {
        Action::Bind { namespace, name, uid, node, annotations } => {
            let result = bind(client, &namespace, &name, &uid, &node, &annotations)
                .await
                .map_err(failure_of);
            let done = result.is_ok();
            let _ = tx.send(Input::Bound { uid: uid.clone(), result });
            done.then(|| {
                let note = format!("Successfully assigned {namespace}/{name} to {node}");
                (pod_reference(namespace, name, uid), note)
            })
        }
        Action::Unschedulable { namespace, name, uid, message } => {
            let reference = pod_reference(namespace.clone(), name.clone(), uid);
            let event = KubeEvent {
                type_: EventType::Warning,
                reason: "FailedScheduling".into(),
                note: Some(truncate(&message, 1000)),
                action: "Scheduling".into(),
                secondary: None,
            };
            if let Err(e) = recorder.publish(&event, &reference).await {
                log::warn!("event for pod {namespace}/{name}: {e}");
            }
            let now = k8s_openapi::jiff::Timestamp::now();
            let patch = serde_json::json!({"status": {"conditions": [{
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": truncate(&message, 4000),
                "lastTransitionTime": now.to_string(),
            }]}});
            let api = Api::<Pod>::namespaced(client.clone(), &namespace);
            if let Err(e) =
                api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(patch)).await
            {
                log::debug!("condition of pod {namespace}/{name}: {e}");
            }
            None
        }
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(code: u16, body: &str) -> Option<BindFailure> {
        let code = http::StatusCode::from_u16(code).unwrap();
        refusal(code, body.as_bytes()).map(|s| failure_of(kube::Error::Api(s.boxed())))
    }

    #[test]
    fn a_binding_answered_2xx_is_done_whatever_its_body() {
        assert_eq!(failure(201, r#"{"kind":"Status","status":"Success","code":201}"#), None);
        assert_eq!(failure(200, ""), None);
    }

    #[test]
    fn a_binding_refused_tells_gone_conflict_or_other_from_the_apis_status() {
        let status = |code: u16, message: &str| {
            format!(
                r#"{{"kind":"Status","apiVersion":"v1","status":"Failure","message":"{message}","reason":"x","code":{code}}}"#
            )
        };
        assert_eq!(failure(404, &status(404, "pods p not found")), Some(BindFailure::Gone));
        assert_eq!(
            failure(409, &status(409, "pod p is already assigned to node n")),
            Some(BindFailure::Conflict("pod p is already assigned to node n".into()))
        );
        let other = failure(500, &status(500, "etcd timed out"));
        assert!(
            matches!(&other, Some(BindFailure::Other(m)) if m.contains("etcd timed out")),
            "{other:?}"
        );
    }

    #[test]
    fn a_refusal_without_a_status_body_keeps_its_code_and_text() {
        assert_eq!(failure(404, "<html>not here</html>"), Some(BindFailure::Gone));
        let other = failure(502, "bad gateway");
        assert!(
            matches!(&other, Some(BindFailure::Other(m)) if m.contains("bad gateway")),
            "{other:?}"
        );
    }
}
