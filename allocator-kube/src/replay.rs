//! Loading a test cluster and measuring a scheduler on it (issue 47): fake nodes and pods for
//! the trace replay (the packing experiment's pod list through a real API server) and for the
//! side-by-side benchmark with kube-scheduler, and what is bound where, read back from the API.
//!
//! Nodes are objects only (KWOK, when it runs, keeps them Ready and moves bound pods to
//! Running; nothing ends a pod that has no `kwok.allocator.dev/run-for`). A pod's GPU ask
//! follows [`crate::convert`]'s sharing convention: `alibabacloud.com/gpu-milli` (a share of
//! one device below 1000; `1000` with `alibabacloud.com/gpu-count: k` for k whole GPUs); its GPU
//! model, when it names one, is a `nodeSelector` on `alibabacloud.com/gpu-card-model`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::watcher::{self, Event as WatchEvent};
use serde_json::json;

use crate::convert::{GPU_COUNT_ANNOTATION, GPU_MILLI_ANNOTATION, GPU_RESOURCE};

/// The node label that carries a fake node's GPU model (one of
/// [`crate::convert::GPU_MODEL_LABELS`]).
pub const MODEL_LABEL: &str = "alibabacloud.com/gpu-card-model";

/// Why loading or measuring failed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// No client: the kubeconfig or the runtime.
    #[error("cannot reach the cluster: {0}")]
    Connect(String),
    /// The API server refused or failed a call.
    #[error("{what}: {source}")]
    Api {
        /// What was being done.
        what: String,
        /// The client's error.
        #[source]
        source: Box<kube::Error>,
    },
    /// A pod that cannot be written in the cluster's conventions.
    #[error("pod '{pod}': {why}")]
    Unsupported {
        /// The pod's name.
        pod: String,
        /// Why.
        why: String,
    },
    /// The watch ended before the expected bindings were seen.
    #[error("watching pods of namespace '{0}' ended")]
    WatchEnded(String),
}

fn api_error(what: impl Into<String>) -> impl FnOnce(kube::Error) -> LoadError {
    let what = what.into();
    move |source| LoadError::Api { what, source: Box::new(source) }
}

/// A fake node.
#[derive(Clone, Debug, PartialEq)]
pub struct FakeNode {
    /// Its name.
    pub name: String,
    /// Allocatable CPU, milli.
    pub cpu_milli: i64,
    /// Allocatable memory, MiB.
    pub mem_mib: i64,
    /// GPU devices (`nvidia.com/gpu`).
    pub gpus: u32,
    /// Its GPU model (the [`MODEL_LABEL`] label), if any.
    pub model: Option<String>,
    /// Allocatable pods.
    pub pods: u32,
}

/// What a fake pod asks of the GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FakeGpu {
    /// Nothing.
    None,
    /// A share of one device, milli (1–999).
    Share(i64),
    /// Whole devices.
    Whole(u32),
}

/// A fake pod (one pause container asking what the pod asks).
#[derive(Clone, Debug, PartialEq)]
pub struct FakePod {
    /// Its name.
    pub name: String,
    /// CPU request, milli.
    pub cpu_milli: i64,
    /// Memory request, MiB.
    pub mem_mib: i64,
    /// Its GPU ask.
    pub gpu: FakeGpu,
    /// The GPU model it selects, if any.
    pub model: Option<String>,
}

impl FakeGpu {
    /// Milli-GPU asked in all.
    pub fn milli(self) -> i64 {
        match self {
            FakeGpu::None => 0,
            FakeGpu::Share(m) => m,
            FakeGpu::Whole(k) => i64::from(k) * 1000,
        }
    }
}

/// The Node object of a fake node: Ready, with its allocatable as capacity.
pub fn node_object(n: &FakeNode) -> Node {
    let mut allocatable = json!({
        "cpu": format!("{}m", n.cpu_milli),
        "memory": format!("{}Mi", n.mem_mib),
        "pods": n.pods.to_string(),
    });
    if n.gpus > 0 {
        allocatable[GPU_RESOURCE] = json!(n.gpus.to_string());
    }
    let mut labels = json!({"type": "kwok", "kubernetes.io/hostname": n.name});
    if let Some(m) = &n.model {
        labels[MODEL_LABEL] = json!(m);
    }
    let value = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": n.name,
            "labels": labels,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "status": {
            "capacity": allocatable.clone(),
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    });
    serde_json::from_value(value).expect("a well-formed Node")
}

/// The Pod object of a fake pod in `namespace`, for scheduler `scheduler`.
pub fn pod_object(p: &FakePod, namespace: &str, scheduler: &str) -> Pod {
    let mut annotations = serde_json::Map::new();
    match p.gpu {
        FakeGpu::None => {}
        FakeGpu::Share(m) => {
            annotations.insert(GPU_MILLI_ANNOTATION.into(), json!(m.to_string()));
        }
        FakeGpu::Whole(k) => {
            annotations.insert(GPU_MILLI_ANNOTATION.into(), json!("1000"));
            annotations.insert(GPU_COUNT_ANNOTATION.into(), json!(k.to_string()));
        }
    }
    let mut spec = json!({
        "schedulerName": scheduler,
        "containers": [{
            "name": "c",
            "image": "registry.invalid/pause",
            "resources": {"requests": {
                "cpu": format!("{}m", p.cpu_milli),
                "memory": format!("{}Mi", p.mem_mib),
            }},
        }],
        "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
    });
    if let Some(m) = &p.model {
        spec["nodeSelector"] = json!({ MODEL_LABEL: m });
    }
    let value = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": p.name, "namespace": namespace, "annotations": annotations},
        "spec": spec,
    });
    serde_json::from_value(value).expect("a well-formed Pod")
}

/// A pod as read back: where it is bound and the milli-GPU it asks.
#[derive(Clone, Debug, PartialEq)]
pub struct BoundPod {
    /// Its name.
    pub name: String,
    /// Its node (`None`: not bound).
    pub node: Option<String>,
    /// Milli-GPU it asks (by the sharing convention).
    pub gpu_milli: i64,
}

/// The milli-GPU a pod asks by the sharing convention (0 when it asks none or states it
/// badly: what it asks is for the scheduler to refuse, not for the measure).
pub fn gpu_milli_of(pod: &Pod) -> i64 {
    let annotations = pod.metadata.annotations.as_ref();
    let get = |k: &str| annotations.and_then(|a| a.get(k)).and_then(|v| v.parse::<i64>().ok());
    match get(GPU_MILLI_ANNOTATION) {
        Some(m) if m >= 1000 => 1000 * get(GPU_COUNT_ANNOTATION).unwrap_or(1).max(1),
        Some(m) if m > 0 => m,
        _ => 0,
    }
}

/// When bindings were seen by a watch.
#[derive(Clone, Debug, Default)]
pub struct BindTimes {
    /// Pods seen bound.
    pub bound: usize,
    /// When the first binding was seen (from the start of the watch).
    pub first: Option<Duration>,
    /// When the last binding was seen.
    pub last: Option<Duration>,
}

impl BindTimes {
    /// Bindings per second from the first to the last (`None` with fewer than two).
    pub fn rate(&self) -> Option<f64> {
        let (first, last) = (self.first?, self.last?);
        let span = last.saturating_sub(first).as_secs_f64();
        (self.bound > 1 && span > 0.0).then(|| (self.bound - 1) as f64 / span)
    }
}

/// A client of the cluster on a runtime of its own, with blocking calls.
pub struct Loader {
    rt: tokio::runtime::Runtime,
    client: kube::Client,
}

impl Loader {
    /// Connects with `kubeconfig` (default: the usual places). kube-rs has no client rate
    /// limit; callers bound how many calls are in flight instead.
    pub fn connect(kubeconfig: Option<&Path>) -> Result<Loader, LoadError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| LoadError::Connect(e.to_string()))?;
        let client = rt.block_on(async {
            let config = match kubeconfig {
                Some(path) => {
                    let kc = kube::config::Kubeconfig::read_from(path)
                        .map_err(|e| LoadError::Connect(format!("{}: {e}", path.display())))?;
                    kube::Config::from_custom_kubeconfig(kc, &Default::default())
                        .await
                        .map_err(|e| LoadError::Connect(format!("{}: {e}", path.display())))?
                }
                None => {
                    kube::Config::infer().await.map_err(|e| LoadError::Connect(e.to_string()))?
                }
            };
            kube::Client::try_from(config).map_err(|e| LoadError::Connect(e.to_string()))
        })?;
        Ok(Loader { rt, client })
    }

    /// Creates namespace `name` (one that exists is left as it is).
    pub fn namespace(&self, name: &str) -> Result<(), LoadError> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": name}})).expect("a namespace");
        match self.rt.block_on(api.create(&PostParams::default(), &ns)) {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(e) => Err(api_error(format!("creating namespace '{name}'"))(e)),
        }
    }

    /// Creates the nodes, `concurrency` at a time (a node that exists is left as it is).
    pub fn create_nodes(&self, nodes: &[FakeNode], concurrency: usize) -> Result<(), LoadError> {
        let api: Api<Node> = Api::all(self.client.clone());
        self.rt.block_on(
            futures::stream::iter(nodes.iter().map(|n| {
                let api = api.clone();
                async move {
                    match api.create(&PostParams::default(), &node_object(n)).await {
                        Ok(_) => Ok(()),
                        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                        Err(e) => Err(api_error(format!("creating node '{}'", n.name))(e)),
                    }
                }
            }))
            .buffer_unordered(concurrency.max(1))
            .try_collect::<Vec<()>>(),
        )?;
        Ok(())
    }

    /// Creates the pods in `namespace` in their order (started in order, `concurrency` in
    /// flight; with 1, each is created after the one before, so their creation times are in
    /// order).
    pub fn create_pods(
        &self,
        namespace: &str,
        scheduler: &str,
        pods: &[FakePod],
        concurrency: usize,
    ) -> Result<(), LoadError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        self.rt.block_on(
            futures::stream::iter(pods.iter().map(|p| {
                let api = api.clone();
                async move {
                    api.create(&PostParams::default(), &pod_object(p, namespace, scheduler))
                        .await
                        .map(drop)
                        .map_err(api_error(format!("creating pod '{namespace}/{}'", p.name)))
                }
            }))
            .buffered(concurrency.max(1))
            .try_collect::<Vec<()>>(),
        )?;
        Ok(())
    }

    /// Every pod of `namespace`, where it is bound.
    pub fn pods(&self, namespace: &str) -> Result<Vec<BoundPod>, LoadError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let list = self
            .rt
            .block_on(api.list(&ListParams::default()))
            .map_err(api_error(format!("listing the pods of '{namespace}'")))?;
        Ok(list
            .items
            .iter()
            .map(|p| BoundPod {
                name: p.metadata.name.clone().unwrap_or_default(),
                node: p.spec.as_ref().and_then(|s| s.node_name.clone()).filter(|n| !n.is_empty()),
                gpu_milli: gpu_milli_of(p),
            })
            .collect())
    }

    /// The GPU devices (`nvidia.com/gpu`) of every node, in all.
    pub fn gpu_capacity(&self) -> Result<i64, LoadError> {
        let api: Api<Node> = Api::all(self.client.clone());
        let list = self
            .rt
            .block_on(api.list(&ListParams::default()))
            .map_err(api_error("listing the nodes"))?;
        Ok(list
            .items
            .iter()
            .filter_map(|n| n.status.as_ref()?.allocatable.as_ref()?.get(GPU_RESOURCE))
            .filter_map(|q| q.0.parse::<i64>().ok())
            .sum())
    }

    /// Deletes every pod of `namespace` at once (grace period 0) and waits until none is left.
    pub fn delete_pods(&self, namespace: &str) -> Result<(), LoadError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let dp = DeleteParams::default().grace_period(0);
        self.rt
            .block_on(api.delete_collection(&dp, &ListParams::default()))
            .map_err(api_error(format!("deleting the pods of '{namespace}'")))?;
        for _ in 0..600 {
            if self.pods(namespace)?.is_empty() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(())
    }

    /// Watches the pods of `namespace` and times their bindings: `started` is called once
    /// the watch has listed them (start the scheduler there); it ends when `expected` pods are
    /// bound, when none was bound for `settle` after the first, or after `timeout`.
    pub fn watch_bindings(
        &self,
        namespace: &str,
        expected: usize,
        settle: Duration,
        timeout: Duration,
        started: impl FnOnce(),
    ) -> Result<BindTimes, LoadError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let ns = namespace.to_owned();
        self.rt.block_on(async move {
            let mut stream = watcher::watcher(api, watcher::Config::default()).boxed();
            let mut bound: HashMap<String, bool> = HashMap::new();
            let mut times = BindTimes::default();
            let mut started = Some(started);
            let mut t0 = Instant::now();
            let end = Instant::now() + timeout;
            loop {
                let wait = match (times.last, started.is_some()) {
                    (Some(last), false) => (t0 + last + settle).min(end),
                    _ => end,
                };
                let next = tokio::time::timeout_at(wait.into(), stream.next()).await;
                let event = match next {
                    Err(_) => return Ok(times),
                    Ok(None) => return Err(LoadError::WatchEnded(ns)),
                    Ok(Some(Err(e))) => {
                        log::warn!("watching pods of '{ns}': {e}");
                        continue;
                    }
                    Ok(Some(Ok(e))) => e,
                };
                let pod = match event {
                    WatchEvent::Apply(p) | WatchEvent::InitApply(p) => p,
                    WatchEvent::InitDone => {
                        if let Some(f) = started.take() {
                            t0 = Instant::now();
                            f();
                        }
                        continue;
                    }
                    WatchEvent::Init | WatchEvent::Delete(_) => continue,
                };
                let name = pod.metadata.name.clone().unwrap_or_default();
                let is_bound = pod.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some();
                let was = bound.insert(name, is_bound).unwrap_or(false);
                if is_bound && !was {
                    times.bound += 1;
                    if started.is_none() {
                        let at = t0.elapsed();
                        times.first.get_or_insert(at);
                        times.last = Some(at);
                    }
                }
                if times.bound >= expected && started.is_none() {
                    return Ok(times);
                }
            }
        })
    }
}

/// The allocated-GPU share of `pods` on `capacity` devices: (milli-GPU bound, percent).
pub fn allocated_share(pods: &[BoundPod], capacity: i64) -> (i64, f64) {
    let milli: i64 = pods.iter().filter(|p| p.node.is_some()).map(|p| p.gpu_milli).sum();
    let pct = if capacity > 0 { 100.0 * milli as f64 / (capacity * 1000) as f64 } else { 0.0 };
    (milli, pct)
}

/// Bound pods per node, by name.
pub fn by_node(pods: &[BoundPod]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in pods {
        if let Some(n) = &p.node {
            out.entry(n.clone()).or_default().push(p.name.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(gpu: FakeGpu) -> FakePod {
        FakePod { name: "p".into(), cpu_milli: 500, mem_mib: 256, gpu, model: None }
    }

    #[test]
    fn a_fake_pods_gpu_ask_reads_back_as_the_scheduler_reads_it() {
        for (gpu, want) in [
            (FakeGpu::None, "cpus:0.5;mem:256;pods:1"),
            (FakeGpu::Share(300), "cpus:0.5;mem:256;gpus:0.3;pods:1"),
            (FakeGpu::Whole(2), "cpus:0.5;mem:256;gpus:2;pods:1"),
        ] {
            let object = pod_object(&pod(gpu), "ns", "s");
            let ask = crate::convert::ask_of(&object).expect("an ask");
            let want: allocator_api::Resources = want.parse().expect("resources");
            assert_eq!(ask, want, "{gpu:?}");
            assert_eq!(gpu_milli_of(&object), gpu.milli());
        }
    }

    #[test]
    fn a_fake_node_reads_back_as_an_agent_with_its_devices_and_model() {
        let n = FakeNode {
            name: "n1".into(),
            cpu_milli: 64000,
            mem_mib: 262144,
            gpus: 2,
            model: Some("V100M16".into()),
            pods: 1000,
        };
        let agent = crate::convert::agent_of(&node_object(&n));
        assert!(agent.active);
        let mut devices = Vec::new();
        agent.resources.gpu_devices_into(&mut devices);
        assert_eq!(devices.len(), 2);
        assert_eq!(agent.resources.scalar("cpus").millis(), 64000);
        assert!(
            agent.attributes.iter().any(|a| a.value.as_str() == "V100M16"),
            "{:?}",
            agent.attributes
        );
    }

    #[test]
    fn the_allocated_share_counts_bound_pods_only() {
        let pods = [
            BoundPod { name: "a".into(), node: Some("n".into()), gpu_milli: 500 },
            BoundPod { name: "b".into(), node: None, gpu_milli: 1000 },
            BoundPod { name: "c".into(), node: Some("n".into()), gpu_milli: 2000 },
        ];
        assert_eq!(allocated_share(&pods, 4), (2500, 62.5));
        let times =
            BindTimes { bound: 3, first: Some(Duration::ZERO), last: Some(Duration::from_secs(2)) };
        assert_eq!(times.rate(), Some(1.0));
    }
}
