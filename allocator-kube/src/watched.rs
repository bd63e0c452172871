//! [`WatchedPod`]: a pod as the scheduler's watches read it — `k8s_openapi`'s `Pod` without
//! `metadata.managedFields`.
//!
//! Server-side apply's field ownership is most of a pod's metadata by size (an entry per
//! writer, each a JSON tree), the scheduler never reads it, and the API server cannot leave it
//! out of a watch. Decoding it into `k8s_openapi`'s types was about two fifths of the time
//! spent decoding pods in the Kubernetes benchmark; skipped, serde passes over it without
//! building anything.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::Deserialize;

/// A pod decoded without its managed fields; [`WatchedPod::into_pod`] gives the `Pod`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WatchedPod(Pod);

impl WatchedPod {
    /// The pod (`metadata.managed_fields` is `None`).
    pub fn into_pod(self) -> Pod {
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

#[derive(Deserialize)]
struct Shape {
    metadata: Option<Meta>,
    spec: Option<PodSpec>,
    status: Option<PodStatus>,
}

impl<'de> Deserialize<'de> for WatchedPod {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<WatchedPod, D::Error> {
        let Shape { metadata, spec, status } = Shape::deserialize(d)?;
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
        Ok(WatchedPod(Pod { metadata, spec, status }))
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

    fn pod_json() -> serde_json::Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "p", "namespace": "ns", "uid": "u-1", "resourceVersion": "42",
                "labels": {"app": "a"}, "annotations": {"note": "n"},
                "creationTimestamp": "2026-11-27T20:00:00Z",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-0"}],
                "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                                   "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:containers": {}}}}]
            },
            "spec": {"schedulerName": "s", "nodeName": "n1",
                     "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "500m"}}}]},
            "status": {"phase": "Pending"}
        })
    }

    #[test]
    fn a_watched_pod_is_the_pod_without_its_managed_fields() {
        let mut full: Pod = serde_json::from_value(pod_json()).unwrap();
        assert!(full.metadata.managed_fields.is_some());
        full.metadata.managed_fields = None;
        let watched: WatchedPod = serde_json::from_value(pod_json()).unwrap();
        assert_eq!(watched.into_pod(), full);
    }

    #[test]
    fn a_watched_pod_names_the_pods_resource() {
        use kube::Resource;
        assert_eq!(WatchedPod::url_path(&(), Some("ns")), Pod::url_path(&(), Some("ns")));
        assert_eq!(WatchedPod::api_version(&()), "v1");
        assert_eq!(WatchedPod::kind(&()), "Pod");
    }
}
