//! [`WatchedPod`]: a pod as the scheduler's watches read it — `k8s_openapi`'s `Pod` with only
//! the fields the scheduler reads.
//!
//! A pod as the API server sends it is mostly what a scheduler never reads: server-side
//! apply's field ownership (`metadata.managedFields`, an entry per writer, each a JSON tree,
//! which the API server cannot leave out of a watch), its containers' images, commands,
//! environment, ports, probes and mounts, its volumes, security contexts and DNS settings, and
//! its whole status. Decoded into `k8s_openapi`'s types, each of those is a heap allocation
//! or a tree of them, made and freed at every watch event (issue 47's benchmark: decoding was
//! the largest cost of the API thread after HTTP itself). Here serde passes over them without
//! building anything, and the `Pod` handed on has:
//!
//! * all of `metadata` but `managedFields` (the watcher needs `resourceVersion`);
//! * of `spec`: each container's and init container's `name` and `resources`, `overhead`,
//!   `nodeName`, `nodeSelector`, `affinity`, `tolerations`, `topologySpreadConstraints`,
//!   `resourceClaims`, `schedulerName` and `priority`;
//! * no `status` (the watches' field selectors leave ended pods out on the server).
//!
//! Everything the crate reads from a pod is in that list; a new reader of another field adds
//! it here (the test `a_watched_pod_keeps_every_field_the_scheduler_reads` lists them).

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, Pod, PodResourceClaim, PodSpec, ResourceRequirements, Toleration,
    TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::Deserialize;

/// A pod decoded with the fields the scheduler reads only (see the [module](self));
/// [`WatchedPod::into_pod`] gives the `Pod`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WatchedPod(Box<Pod>);

impl WatchedPod {
    /// The pod (`metadata.managed_fields` and `status` are `None`; `spec` has the fields the
    /// [module](self) lists), boxed as it was decoded.
    pub fn into_pod(self) -> Box<Pod> {
        self.0
    }
}

/// The `ObjectMeta` fields the scheduler may read: all but `managedFields`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    name: Option<String>,
    namespace: Option<String>,
    owner_references: Option<Vec<OwnerReference>>,
    resource_version: Option<String>,
    self_link: Option<String>,
    uid: Option<String>,
}

/// A container's name and resources.
#[derive(Deserialize)]
struct ContainerResources {
    #[serde(default)]
    name: String,
    resources: Option<ResourceRequirements>,
}

impl ContainerResources {
    fn container(self) -> Container {
        Container { name: self.name, resources: self.resources, ..Container::default() }
    }
}

/// The `PodSpec` fields the scheduler reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    affinity: Option<Affinity>,
    #[serde(default)]
    containers: Vec<ContainerResources>,
    init_containers: Option<Vec<ContainerResources>>,
    node_name: Option<String>,
    node_selector: Option<BTreeMap<String, String>>,
    overhead: Option<BTreeMap<String, Quantity>>,
    priority: Option<i32>,
    resource_claims: Option<Vec<PodResourceClaim>>,
    scheduler_name: Option<String>,
    tolerations: Option<Vec<Toleration>>,
    topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
}

impl Spec {
    fn pod_spec(self) -> PodSpec {
        PodSpec {
            affinity: self.affinity,
            containers: self.containers.into_iter().map(ContainerResources::container).collect(),
            init_containers: self
                .init_containers
                .map(|c| c.into_iter().map(ContainerResources::container).collect()),
            node_name: self.node_name,
            node_selector: self.node_selector,
            overhead: self.overhead,
            priority: self.priority,
            resource_claims: self.resource_claims,
            scheduler_name: self.scheduler_name,
            tolerations: self.tolerations,
            topology_spread_constraints: self.topology_spread_constraints,
            ..PodSpec::default()
        }
    }
}

#[derive(Deserialize)]
struct Shape {
    metadata: Option<Meta>,
    spec: Option<Spec>,
}

impl<'de> Deserialize<'de> for WatchedPod {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<WatchedPod, D::Error> {
        let Shape { metadata, spec } = Shape::deserialize(d)?;
        let metadata = metadata.map_or_else(ObjectMeta::default, |m| ObjectMeta {
            annotations: m.annotations,
            creation_timestamp: m.creation_timestamp,
            deletion_grace_period_seconds: m.deletion_grace_period_seconds,
            deletion_timestamp: m.deletion_timestamp,
            finalizers: m.finalizers,
            generate_name: m.generate_name,
            generation: m.generation,
            labels: m.labels,
            managed_fields: None,
            name: m.name,
            namespace: m.namespace,
            owner_references: m.owner_references,
            resource_version: m.resource_version,
            self_link: m.self_link,
            uid: m.uid,
        });
        Ok(WatchedPod(Box::new(Pod { metadata, spec: spec.map(Spec::pod_spec), status: None })))
    }
}

impl kube::Resource for WatchedPod {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("Pod")
    }

    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("v1")
    }

    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("pods")
    }

    fn meta(&self) -> &ObjectMeta {
        &self.0.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A pod with every field the scheduler reads set, and many it never reads.
    fn pod_json() -> serde_json::Value {
        let resources = json!({"requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"},
                               "limits": {"cpu": "1", "example.com/fpga": "2"}});
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "p", "namespace": "ns", "uid": "u-1", "resourceVersion": "42",
                "labels": {"app": "a", "scheduling.x-k8s.io/pod-group": "g"},
                "annotations": {"note": "n", "alibabacloud.com/gpu-milli": "500",
                                "alibabacloud.com/gpu-index": "0",
                                "scheduling.x-k8s.io/min-member": "2"},
                "creationTimestamp": "2026-11-27T20:00:00Z",
                "deletionTimestamp": "2026-11-27T21:00:00Z",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                     "uid": "u-0", "controller": true}],
                "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                                   "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:containers": {}}}}]
            },
            "spec": {
                "schedulerName": "s", "nodeName": "n1", "priority": 7,
                "nodeSelector": {"alibabacloud.com/gpu-card-model": "V100", "zone": "a"},
                "affinity": {
                    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}},
                    "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "b"}}}]}
                },
                "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                 "effect": "NoExecute", "tolerationSeconds": 300}],
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                               "whenUnsatisfiable": "DoNotSchedule"}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}],
                "overhead": {"cpu": "100m"},
                "initContainers": [{"name": "init", "image": "busybox", "command": ["true"],
                                    "resources": {"requests": {"cpu": "2"}}}],
                "containers": [{"name": "c", "image": "i", "imagePullPolicy": "Always",
                                "env": [{"name": "A", "value": "1"}],
                                "ports": [{"containerPort": 80}],
                                "volumeMounts": [{"name": "v", "mountPath": "/v"}],
                                "resources": resources}],
                "volumes": [{"name": "v", "emptyDir": {}}],
                "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "securityContext": {}
            },
            "status": {"phase": "Pending", "qosClass": "Burstable",
                       "conditions": [{"type": "PodScheduled", "status": "False"}]}
        })
    }

    #[test]
    fn a_watched_pod_keeps_every_field_the_scheduler_reads() {
        use crate::{convert, filter, gang};
        let full: Pod = serde_json::from_value(pod_json()).unwrap();
        let watched = serde_json::from_value::<WatchedPod>(pod_json()).unwrap().into_pod();
        let ask = convert::ask_of(&full);
        assert!(ask.is_ok(), "{ask:?}");
        assert_eq!(convert::ask_of(&watched), ask);
        assert_eq!(convert::models_of(&watched), ["V100"]);
        assert_eq!(convert::models_of(&watched), convert::models_of(&full));
        let ask = ask.unwrap();
        assert_eq!(
            convert::devices_of_annotation(&watched, &ask),
            convert::devices_of_annotation(&full, &ask)
        );
        assert_eq!(filter::Placement::of(&watched), filter::Placement::of(&full));
        assert!(filter::unsupported(&full).is_some());
        assert_eq!(filter::unsupported(&watched), filter::unsupported(&full));
        assert!(gang::group_of(&full).is_some());
        assert_eq!(gang::group_of(&watched), gang::group_of(&full));
        // The scheduler's own readers (a pod's framework, order and node) read the metadata
        // and `nodeName`, compared whole here (this module may not use `scheduler`, which
        // uses `api`, which uses this module).
        let mut meta = full.metadata.clone();
        meta.managed_fields = None;
        assert_eq!(watched.metadata, meta, "all metadata but the managed fields");
        let (w, f) = (watched.spec.unwrap(), full.spec.unwrap());
        assert_eq!(
            (w.node_name, w.scheduler_name, w.priority, w.overhead),
            (f.node_name, f.scheduler_name, f.priority, f.overhead)
        );
        let sized = |c: &[Container]| -> Vec<_> {
            c.iter().map(|c| (c.name.clone(), c.resources.clone())).collect()
        };
        assert_eq!(sized(&w.containers), sized(&f.containers));
        assert_eq!(
            sized(w.init_containers.as_deref().unwrap()),
            sized(f.init_containers.as_deref().unwrap())
        );
    }

    #[test]
    fn a_watched_pod_leaves_out_what_the_scheduler_never_reads() {
        let pod = serde_json::from_value::<WatchedPod>(pod_json()).unwrap().into_pod();
        assert_eq!(pod.metadata.managed_fields, None);
        assert_eq!(pod.status, None);
        let spec = pod.spec.unwrap();
        assert_eq!((spec.volumes, spec.restart_policy, spec.dns_policy), (None, None, None));
        let c = &spec.containers[0];
        assert_eq!((&c.image, &c.env, &c.ports, &c.volume_mounts), (&None, &None, &None, &None));
    }

    #[test]
    fn a_pod_without_a_spec_or_metadata_is_decoded_empty() {
        let pod = serde_json::from_value::<WatchedPod>(json!({})).unwrap().into_pod();
        assert_eq!(*pod, Pod::default());
    }

    #[test]
    fn a_watched_pod_names_the_pods_resource() {
        use kube::Resource;
        assert_eq!(WatchedPod::url_path(&(), Some("ns")), Pod::url_path(&(), Some("ns")));
        assert_eq!(WatchedPod::api_version(&()), "v1");
        assert_eq!(WatchedPod::kind(&()), "Pod");
    }
}
