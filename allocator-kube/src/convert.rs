//! Kubernetes objects as the master core's terms: a node as an agent ([`agent_of`]), a pod's
//! ask as resources ([`ask_of`]), a framework's pending pods as its stated demand
//! ([`requests_of`]). Every conversion the client makes is here, one function each, so that a
//! change of the core's demand or agent types is a change in one place.
//!
//! Names: `cpu` is `cpus` (cores), `memory` is `mem` and `ephemeral-storage` is `disk` (MiB,
//! as Mesos keeps them), `pods` stays `pods` (each pod asks `pods:1`, so pods per node is a
//! resource that fits or not), `nvidia.com/gpu` is one `gpus[i]:1` device entry per GPU
//! (`allocator_api::resources` devices), and any other extended resource keeps its name.

use std::collections::BTreeMap;

use allocator_api::resources::{Demand, GPUS, MODEL_ATTRIBUTE, ResourceFlags, Value};
use allocator_api::{Attribute, Constraint, Name, Resource, Resources, Scalar};
use allocator_host::master::Command;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::gang::GangAsk;
use crate::quantity::{MIB, parse};

/// The extended resource of NVIDIA's device plugin: whole GPUs.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// A pod's annotation asking for a share of one GPU, in milli-GPU (1–1000), as the FGD
/// artifact's pods and Alibaba's GPU-share scheduler state it.
pub const GPU_MILLI_ANNOTATION: &str = "alibabacloud.com/gpu-milli";
/// With [`GPU_MILLI_ANNOTATION`] `1000`: how many whole GPUs (default 1).
pub const GPU_COUNT_ANNOTATION: &str = "alibabacloud.com/gpu-count";
/// Written on a pod with its binding: the GPU device indices it got, joined by `-` (`3`,
/// `0-1`), for a device plugin to read.
pub const GPU_INDEX_ANNOTATION: &str = "alibabacloud.com/gpu-index";
/// Node labels that name the GPU model; the first present becomes the agent's `gpu_model`.
pub const GPU_MODEL_LABELS: [&str; 2] =
    ["nvidia.com/gpu.product", "alibabacloud.com/gpu-card-model"];
/// The resource that counts pods on a node.
pub const PODS: &str = "pods";
/// Pods a node takes when its allocatable does not say (the kubelet's `--max-pods` default).
pub const DEFAULT_MAX_PODS: i64 = 110;

/// A node as an agent.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentSpec {
    /// The agent's name: the node's.
    pub name: String,
    /// Its allocatable resources (GPUs as devices).
    pub resources: Resources,
    /// Its labels (and `gpu_model`).
    pub attributes: Vec<Attribute>,
    /// Whether it may get new pods: not cordoned, and Ready (unless it has no conditions).
    pub active: bool,
}

fn scalar(name: &str, value: f64) -> Option<Resource> {
    let s = Scalar::from_f64(value)?;
    s.is_positive().then(|| Resource::scalar(name, s))
}

/// The resource name and value in this project's units of a Kubernetes resource quantity.
fn resource_of(name: &str, quantity: &Quantity) -> Option<(String, f64)> {
    let value = parse(&quantity.0)?;
    Some(match name {
        "cpu" => ("cpus".into(), value),
        "memory" => ("mem".into(), value / MIB),
        "ephemeral-storage" => ("disk".into(), value / MIB),
        GPU_RESOURCE => (GPUS.into(), value),
        n if n.starts_with("hugepages-") => return None,
        n => (n.to_owned(), value),
    })
}

/// GPU device `index` holding `milli` of one GPU.
pub fn gpu_device(index: u32, milli: i64) -> Resource {
    Resource {
        name: Name::new(GPUS),
        reservation: Name::default(),
        volume: Name::new(&index.to_string()),
        flags: ResourceFlags::NONE,
        value: Value::Scalar(Scalar::from_millis(milli)),
    }
}

/// The agent a node is: its allocatable resources, labels as attributes, cordon and readiness.
pub fn agent_of(node: &Node) -> AgentSpec {
    let name = node.metadata.name.clone().unwrap_or_default();
    let status = node.status.as_ref();
    let mut resources = Resources::new();
    if let Some(allocatable) = status.and_then(|s| s.allocatable.as_ref()) {
        for (k, q) in allocatable {
            let Some((n, v)) = resource_of(k, q) else { continue };
            if n == GPUS {
                for i in 0..(v.max(0.0).floor() as u32) {
                    resources.add_resource(gpu_device(i, 1000));
                }
            } else if let Some(r) = scalar(&n, v) {
                resources.add_resource(r);
            }
        }
    }
    if resources.scalar(PODS).is_zero() {
        // A node that does not say how many pods it takes takes the kubelet's default.
        resources.add_resource(Resource::scalar(PODS, Scalar::from_units(DEFAULT_MAX_PODS)));
    }
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let mut attributes: Vec<Attribute> = labels
        .iter()
        .map(|(k, v)| Attribute { name: k.as_str().into(), value: v.as_str().into() })
        .collect();
    if let Some(model) = GPU_MODEL_LABELS.iter().find_map(|l| labels.get(*l)) {
        attributes.push(Attribute { name: MODEL_ATTRIBUTE.into(), value: model.as_str().into() });
    }
    attributes.extend(crate::filter::NodeView::of(node).taint_attributes());
    let cordoned = node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false);
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .is_none_or(|c| c.status == "True");
    AgentSpec { name, resources, attributes, active: !cordoned && ready }
}

/// Why a pod's ask cannot be stated.
pub type AskError = String;

/// What a pod asks of a node, pooled (`cpus:1;mem:512;gpus:0.5;pods:1`): the larger of its
/// containers' requests added up and each init container's (limits stand in for missing
/// requests, as Kubernetes defaults them), plus its overhead; GPUs from `nvidia.com/gpu` or
/// the GPU-share annotations ([`GPU_MILLI_ANNOTATION`]).
pub fn ask_of(pod: &Pod) -> Result<Resources, AskError> {
    let Some(spec) = pod.spec.as_ref() else { return Err("the pod has no spec".into()) };
    let mut sum: BTreeMap<String, f64> = BTreeMap::new();
    let container_ask = |c: &k8s_openapi::api::core::v1::Container| -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        let res = c.resources.as_ref();
        let requests = res.and_then(|r| r.requests.as_ref());
        let limits = res.and_then(|r| r.limits.as_ref());
        for map in [limits, requests].into_iter().flatten() {
            for (k, q) in map {
                if let Some((n, v)) = resource_of(k, q) {
                    out.insert(n, v);
                }
            }
        }
        out
    };
    for c in &spec.containers {
        for (n, v) in container_ask(c) {
            *sum.entry(n).or_default() += v;
        }
    }
    for c in spec.init_containers.iter().flatten() {
        for (n, v) in container_ask(c) {
            let e = sum.entry(n).or_default();
            *e = e.max(v);
        }
    }
    for (k, q) in spec.overhead.iter().flatten() {
        if let Some((n, v)) = resource_of(k, q) {
            *sum.entry(n).or_default() += v;
        }
    }
    let annotations = pod.metadata.annotations.as_ref();
    if let Some(milli) = annotations.and_then(|a| a.get(GPU_MILLI_ANNOTATION)) {
        let milli: i64 = milli
            .trim()
            .parse()
            .ok()
            .filter(|m| (1..=1000).contains(m))
            .ok_or_else(|| format!("{GPU_MILLI_ANNOTATION} must be 1..1000, not '{milli}'"))?;
        let count: i64 = match annotations.and_then(|a| a.get(GPU_COUNT_ANNOTATION)) {
            None => 1,
            Some(c) => c
                .trim()
                .parse()
                .ok()
                .filter(|c| *c >= 1)
                .ok_or_else(|| format!("{GPU_COUNT_ANNOTATION} must be a positive number"))?,
        };
        if milli < 1000 && count != 1 {
            return Err(format!(
                "a share of a GPU ({GPU_MILLI_ANNOTATION} below 1000) is of one GPU: {GPU_COUNT_ANNOTATION} must be 1"
            ));
        }
        sum.insert(GPUS.into(), (milli * count) as f64 / 1000.0);
    }
    sum.insert(PODS.into(), 1.0);
    let mut ask = Resources::new();
    for (n, v) in sum {
        if let Some(r) = scalar(&n, v) {
            ask.add_resource(r);
        }
    }
    // A GPU ask must be a share of one device or whole devices.
    allocator_api::resources::GpuAsk::from_gpus(ask.scalar(GPUS))?;
    Ok(ask)
}

/// The GPU models a pod accepts: the value its `nodeSelector` gives a GPU-model label.
pub fn models_of(pod: &Pod) -> Vec<String> {
    let selector = pod.spec.as_ref().and_then(|s| s.node_selector.as_ref());
    GPU_MODEL_LABELS.iter().filter_map(|l| selector.and_then(|s| s.get(*l)).cloned()).collect()
}

/// One pending pod as its framework states it to the allocator.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingAsk<'a> {
    /// What it asks ([`ask_of`]).
    pub ask: &'a Resources,
    /// The GPU models it accepts ([`models_of`]; empty: any).
    pub models: &'a [String],
    /// Where it may go: its selector, node affinity and taints as constraints
    /// ([`crate::filter::Placement::constraints`]).
    pub constraints: Vec<Constraint>,
}

/// The demand a framework states for its pending pods, in their order: one request of one
/// task a pod, under the framework's role, with the pod's constraints (ABI 3's `Request`;
/// placement allocators place each where its constraints hold, the built-in ignores it).
///
/// A gang (`gang`: a pod group, [`crate::gang`]) is stated all or nothing instead: its pods,
/// one request per distinct ask (and accepted models), all in the gang's group; when all its
/// pods ask the same, one request of `count` pods of which at least `need` are placed at once
/// (`min_count`), else each request whole (`min_count == count`), so that every pending pod
/// of the group is placed in one run or none is.
///
/// This is the one place requests are built.
pub fn requests_of(framework: &str, pods: &[PendingAsk<'_>], gang: Option<GangAsk>) -> Command {
    let stated = |p: &PendingAsk<'_>| match Demand::from_request(p.ask) {
        Ok(mut d) => {
            d.models = p.models.to_vec();
            d.to_request()
        }
        Err(_) => p.ask.clone(),
    };
    let requests = match gang {
        None => pods
            .iter()
            .map(|p| allocator_api::Request {
                constraints: p.constraints.clone().into(),
                ..allocator_api::Request::task("", stated(p))
            })
            .collect(),
        Some(_) if pods.is_empty() => Vec::new(),
        Some(GangAsk { group, need }) => {
            let mut shapes: Vec<(Resources, &[Constraint], u32)> = Vec::new();
            for p in pods {
                let r = stated(p);
                match shapes.iter_mut().find(|(s, c, _)| *s == r && *c == p.constraints.as_slice())
                {
                    Some((_, _, n)) => *n += 1,
                    None => shapes.push((r, &p.constraints, 1)),
                }
            }
            let one_shape = shapes.len() == 1;
            shapes
                .into_iter()
                .map(|(r, c, n)| {
                    let min = if one_shape { need.clamp(1, n) } else { n };
                    allocator_api::Request {
                        min_count: min,
                        constraints: c.to_vec().into(),
                        ..allocator_api::Request::tasks("", n, r)
                    }
                    .in_group(group)
                })
                .collect()
        }
    };
    Command::RequestResources { framework: framework.to_owned(), requests }
}

/// The command that adds `agent` with `total` (its allocatable less what others' pods use).
pub fn add_agent_command(agent: &AgentSpec, total: Resources) -> Command {
    Command::AddAgent {
        agent: agent.name.clone(),
        resources: total,
        hostname: None,
        capabilities: None,
        attributes: agent.attributes.clone(),
        used: vec![],
        unavailability: None,
    }
}

/// The GPU device indices of a task's resources, in device order (`[3]`, `[0, 1]`).
pub fn device_indices(resources: &Resources) -> Vec<u32> {
    let mut out: Vec<u32> = resources
        .iter()
        .filter(|r| r.is_gpu_device())
        .filter_map(|r| r.volume.as_str().parse().ok())
        .collect();
    out.sort_unstable();
    out
}

/// The device entries a bound pod's [`GPU_INDEX_ANNOTATION`] names for its pooled `gpus`
/// ask (`None` without the annotation, or when it does not match the ask).
pub fn devices_of_annotation(pod: &Pod, ask: &Resources) -> Option<Resources> {
    let text = pod.metadata.annotations.as_ref()?.get(GPU_INDEX_ANNOTATION)?;
    let indices: Vec<u32> =
        text.split('-').map(|i| i.trim().parse().ok()).collect::<Option<_>>()?;
    let total = ask.scalar(GPUS).millis();
    if indices.is_empty() || total <= 0 {
        return None;
    }
    let per = total / indices.len() as i64;
    Some(Resources::from_entries(indices.iter().map(|i| gpu_device(*i, per.min(1000)))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        Container, NodeSpec, NodeStatus, PodSpec, ResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn q(s: &str) -> Quantity {
        Quantity(s.into())
    }

    fn node(gpus: &str, cordoned: bool) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some("n1".into()),
                labels: Some([("zone".to_string(), "a".to_string())].into()),
                ..Default::default()
            },
            spec: Some(NodeSpec { unschedulable: Some(cordoned), ..Default::default() }),
            status: Some(NodeStatus {
                allocatable: Some(
                    [
                        ("cpu".to_string(), q("4")),
                        ("memory".to_string(), q("8Gi")),
                        ("pods".to_string(), q("110")),
                        (GPU_RESOURCE.to_string(), q(gpus)),
                    ]
                    .into(),
                ),
                ..Default::default()
            }),
        }
    }

    fn pod(cpu: &str, annotations: &[(&str, &str)]) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                annotations: Some(
                    annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                ),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    resources: Some(ResourceRequirements {
                        requests: Some(
                            [("cpu".to_string(), q(cpu)), ("memory".to_string(), q("512Mi"))]
                                .into(),
                        ),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            status: None,
        }
    }

    #[test]
    fn a_node_is_an_agent_with_gpu_devices_and_labels() {
        let a = agent_of(&node("2", false));
        assert_eq!(a.resources.to_string(), "cpus:4;gpus[0]:1;gpus[1]:1;mem:8192;pods:110");
        assert!(a.active);
        assert!(a.attributes.iter().any(|x| x.name.as_str() == "zone" && x.value.as_str() == "a"));
        assert!(!agent_of(&node("0", true)).active, "cordoned");
    }

    #[test]
    fn a_pod_asks_its_requests_a_pod_slot_and_its_gpu_share() {
        assert_eq!(ask_of(&pod("500m", &[])).unwrap().to_string(), "cpus:0.5;mem:512;pods:1");
        let share = ask_of(&pod("1", &[(GPU_MILLI_ANNOTATION, "500")])).unwrap();
        assert_eq!(share.scalar(GPUS).millis(), 500);
        let whole =
            ask_of(&pod("1", &[(GPU_MILLI_ANNOTATION, "1000"), (GPU_COUNT_ANNOTATION, "2")]));
        assert_eq!(whole.unwrap().scalar(GPUS).millis(), 2000);
        assert!(
            ask_of(&pod("1", &[(GPU_MILLI_ANNOTATION, "500"), (GPU_COUNT_ANNOTATION, "2")]))
                .is_err()
        );
        assert!(ask_of(&pod("1", &[(GPU_MILLI_ANNOTATION, "0")])).is_err());
    }

    #[test]
    fn requests_carry_each_pod_and_its_gpu_models() {
        let ask: Resources = "cpus:1;gpus:0.5;pods:1".parse().unwrap();
        let models = vec!["V100".to_string()];
        let Command::RequestResources { framework, requests } = requests_of(
            "f",
            &[PendingAsk { ask: &ask, models: &models, constraints: vec![] }],
            None,
        ) else {
            panic!("a request")
        };
        assert_eq!(framework, "f");
        assert_eq!(requests.len(), 1);
        assert!(requests[0].to_string().contains("gpu_models:{V100}"), "{}", requests[0]);
    }

    #[test]
    fn requests_carry_each_pods_constraints() {
        let ask: Resources = "cpus:1;pods:1".parse().unwrap();
        let zone = allocator_api::Constraint::is_in("zone", &["a"]);
        let pods = [PendingAsk { ask: &ask, models: &[], constraints: vec![zone.clone()] }];
        let Command::RequestResources { requests, .. } = requests_of("f", &pods, None) else {
            panic!("a request")
        };
        assert_eq!(requests[0].constraints.to_vec(), vec![zone]);
    }

    #[test]
    fn gang_pods_with_other_constraints_are_requests_of_their_own() {
        let ask: Resources = "cpus:1;pods:1".parse().unwrap();
        let a = allocator_api::Constraint::is_in("zone", &["a"]);
        let b = allocator_api::Constraint::is_in("zone", &["b"]);
        let pods = [
            PendingAsk { ask: &ask, models: &[], constraints: vec![a.clone()] },
            PendingAsk { ask: &ask, models: &[], constraints: vec![b.clone()] },
            PendingAsk { ask: &ask, models: &[], constraints: vec![a.clone()] },
        ];
        let group = allocator_api::GroupId(3);
        let Command::RequestResources { requests, .. } =
            requests_of("g", &pods, Some(GangAsk { group, need: 3 }))
        else {
            panic!("a request")
        };
        let shapes: Vec<(u32, u32, Vec<allocator_api::Constraint>)> =
            requests.iter().map(|r| (r.count, r.min_count, r.constraints.to_vec())).collect();
        assert_eq!(shapes, vec![(2, 2, vec![a]), (1, 1, vec![b])]);
    }

    #[test]
    fn a_nodes_taints_are_among_its_attributes() {
        let mut n = node("0", false);
        n.spec.as_mut().unwrap().taints = Some(vec![k8s_openapi::api::core::v1::Taint {
            key: "gpu".into(),
            value: Some("yes".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        }]);
        let a = agent_of(&n);
        assert!(
            a.attributes
                .iter()
                .any(|x| x.name.as_str() == "taint:NoSchedule:gpu" && x.value.as_str() == "yes"),
            "{:?}",
            a.attributes
        );
    }

    #[test]
    fn a_gang_is_one_all_or_nothing_group() {
        let ask: Resources = "cpus:1;gpus:1;pods:1".parse().unwrap();
        let pods = vec![PendingAsk { ask: &ask, models: &[], constraints: vec![] }; 4];
        let group = allocator_api::GroupId(7);
        let Command::RequestResources { requests, .. } =
            requests_of("g", &pods, Some(GangAsk { group, need: 4 }))
        else {
            panic!("a request")
        };
        assert_eq!(requests.len(), 1);
        assert_eq!((requests[0].count, requests[0].min_count), (4, 4));
        assert!(requests[0].is_gang());
        assert_eq!(requests[0].group.into_option(), Some(group));
        let Command::RequestResources { requests, .. } =
            requests_of("g", &pods, Some(GangAsk { group, need: 3 }))
        else {
            panic!("a request")
        };
        assert_eq!((requests[0].count, requests[0].min_count), (4, 3));
    }

    #[test]
    fn device_indices_are_read_back() {
        let r: Resources = "cpus:1;gpus[3]:0.5".parse().unwrap();
        assert_eq!(device_indices(&r), vec![3]);
        let ask: Resources = "cpus:1;gpus:0.5".parse().unwrap();
        let p = pod("1", &[(GPU_INDEX_ANNOTATION, "3")]);
        assert_eq!(devices_of_annotation(&p, &ask).unwrap().to_string(), "gpus[3]:0.5");
    }
}
