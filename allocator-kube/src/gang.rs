//! Gangs: the pods of one pod group, scheduled all or nothing.
//!
//! The convention is scheduler-plugins' coscheduling: a pod belongs to a group by its label
//! [`POD_GROUP_LABEL`] (`scheduling.x-k8s.io/pod-group: NAME`), and the group's `minMember` is
//! how many of its pods must be placed at once. The test cluster (and many clusters) has no
//! `PodGroup` CRD, so `minMember` is read from the pods themselves: the annotation
//! [`MIN_MEMBER_ANNOTATION`] (`scheduling.x-k8s.io/min-member`, the largest value among the
//! group's pods). A labelled pod without it waits with a message saying so, as coscheduling
//! holds a pod whose `PodGroup` is missing. (Reading a `PodGroup` object when the CRD exists
//! is not done yet; see docs/kubernetes.md.)
//!
//! A group is one framework of the master (`NS/podgroup/NAME`): its pending pods are stated
//! as one all-or-nothing request ([`crate::convert::requests_of`] with a [`GangAsk`]), and its
//! offers of one allocation run are answered only when at least the pods still missing from
//! `minMember` fit in them together ([`assign`]), else all declined. So a group is bound whole
//! (at least `minMember`) or not at all, with placement modules (which place gangs whole) and
//! with the built-in allocator (which ignores requests) alike.

use allocator_api::Resources;
use allocator_api::requests::GroupId;
use allocator_sim::clients::simulated::take;
use k8s_openapi::api::core::v1::Pod;

use crate::filter::{NodeView, Placement};

/// The pod label naming a pod's group (scheduler-plugins' coscheduling).
pub const POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";
/// The pod annotation giving its group's `minMember` (there being no `PodGroup` CRD to read).
pub const MIN_MEMBER_ANNOTATION: &str = "scheduling.x-k8s.io/min-member";

/// A pod's group: its name and `minMember` (or why it has none).
#[derive(Clone, Debug, PartialEq)]
pub struct PodGroup {
    /// The group's name (the label's value).
    pub name: String,
    /// `minMember` from the pod's annotation, or why it cannot be read.
    pub min_member: Result<u32, String>,
}

/// The group a pod belongs to, if it has the [`POD_GROUP_LABEL`].
pub fn group_of(pod: &Pod) -> Option<PodGroup> {
    let name = pod.metadata.labels.as_ref()?.get(POD_GROUP_LABEL)?.trim().to_owned();
    if name.is_empty() {
        return None;
    }
    let min_member = match pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(MIN_MEMBER_ANNOTATION))
    {
        None => Err(format!(
            "pod group '{name}' has no minMember: set the annotation {MIN_MEMBER_ANNOTATION} on its pods (no PodGroup object is read)"
        )),
        Some(v) => v.trim().parse::<u32>().ok().filter(|m| *m >= 1).ok_or_else(|| {
            format!(
                "{MIN_MEMBER_ANNOTATION} of pod group '{name}' must be a positive number, not '{v}'"
            )
        }),
    };
    Some(PodGroup { name, min_member })
}

/// The framework of a pod group's pods.
pub fn framework_of_group(namespace: &str, group: &str) -> String {
    format!("{namespace}/podgroup/{group}")
}

/// A stable group number for a gang framework (FNV-1a of its name).
pub fn group_id(framework: &str) -> GroupId {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in framework.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    GroupId(h)
}

/// How a gang's pending pods are stated: its group, and how many of them must be placed at
/// once (`minMember` less the members already placed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GangAsk {
    /// The group of its requests.
    pub group: GroupId,
    /// The fewest pods placed at once.
    pub need: u32,
}

/// Places `pods` (asks and placement rules, in order) on `nodes` (views and what is free
/// there, in order) as an offer's answer does: node by node, each pod that passes the node
/// and fits what is left. Returns, per pod, the index of its node.
pub fn assign(
    pods: &[(&Resources, &Placement)],
    nodes: &mut [(&NodeView, Resources)],
) -> Vec<Option<usize>> {
    let mut out = vec![None; pods.len()];
    for (n, (view, free)) in nodes.iter_mut().enumerate() {
        for (i, (ask, placement)) in pods.iter().enumerate() {
            if out[i].is_some() || placement.check(view).is_err() {
                continue;
            }
            if let Some(piece) = take(free, ask) {
                free.subtract(&piece);
                out[i] = Some(n);
            }
        }
    }
    out
}

/// How many of an assignment's pods are placed, and on how many nodes.
pub fn placed(assignment: &[Option<usize>]) -> (usize, usize) {
    let nodes: std::collections::BTreeSet<usize> = assignment.iter().flatten().copied().collect();
    (assignment.iter().flatten().count(), nodes.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod(labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> Pod {
        let map = |kv: &[(&str, &str)]| {
            Some(kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
        };
        Pod {
            metadata: ObjectMeta {
                labels: map(labels),
                annotations: map(annotations),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_group_is_read_from_the_label_and_its_min_member_from_the_annotation() {
        assert_eq!(group_of(&pod(&[], &[])), None);
        let g = group_of(&pod(&[(POD_GROUP_LABEL, "train")], &[(MIN_MEMBER_ANNOTATION, "4")]));
        assert_eq!(g, Some(PodGroup { name: "train".into(), min_member: Ok(4) }));
        let missing = group_of(&pod(&[(POD_GROUP_LABEL, "train")], &[])).unwrap();
        assert!(missing.min_member.unwrap_err().contains("no minMember"));
        let bad = group_of(&pod(&[(POD_GROUP_LABEL, "t")], &[(MIN_MEMBER_ANNOTATION, "0")]));
        assert!(bad.unwrap().min_member.is_err());
        assert_eq!(framework_of_group("ml", "train"), "ml/podgroup/train");
        assert_eq!(group_id("a"), group_id("a"));
        assert_ne!(group_id("a"), group_id("b"));
    }

    #[test]
    fn assign_places_node_by_node_what_fits() {
        let ask: Resources = "cpus:1;gpus:1;pods:1".parse().unwrap();
        let any = Placement::default();
        let view = NodeView::default();
        let pods = vec![(&ask, &any); 4];
        let mut nodes = vec![
            (&view, "cpus:8;gpus[0]:1;gpus[1]:1;pods:10".parse().unwrap()),
            (&view, "cpus:8;pods:10".parse().unwrap()),
        ];
        let a = assign(&pods, &mut nodes);
        assert_eq!(placed(&a), (2, 1));
        nodes.push((&view, "cpus:8;gpus[0]:1;gpus[1]:1;pods:10".parse().unwrap()));
        nodes[0].1 = "cpus:8;gpus[0]:1;gpus[1]:1;pods:10".parse().unwrap();
        assert_eq!(placed(&assign(&pods, &mut nodes)), (4, 2));
    }
}
