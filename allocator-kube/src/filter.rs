//! Where a pod may go: `nodeSelector`, required node affinity, taints and tolerations
//! (`NoSchedule` and `NoExecute`; `PreferNoSchedule` is a preference and ignored), and what
//! this scheduler does not do (pod affinity and anti-affinity, topology spread constraints,
//! resource claims): such a pod stays Pending with an event saying so.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration,
};

/// What a pod requires of a node, read once from its spec.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Placement {
    selector: BTreeMap<String, String>,
    /// Required node affinity: any term (each: all its expressions); `None`: no affinity.
    terms: Option<Vec<NodeSelectorTerm>>,
    tolerations: Vec<Toleration>,
}

/// What a node offers to [`Placement`]: its name, labels and scheduling taints.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeView {
    /// The node's name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its `NoSchedule` and `NoExecute` taints.
    pub taints: Vec<Taint>,
}

impl NodeView {
    /// The view of `node`.
    pub fn of(node: &Node) -> NodeView {
        NodeView {
            name: node.metadata.name.clone().unwrap_or_default(),
            labels: node.metadata.labels.clone().unwrap_or_default(),
            taints: node
                .spec
                .as_ref()
                .and_then(|s| s.taints.clone())
                .unwrap_or_default()
                .into_iter()
                .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
                .collect(),
        }
    }
}

/// Why a node does not take a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Filtered {
    /// `nodeSelector` or required node affinity.
    Selector,
    /// A taint the pod does not tolerate.
    Taint,
}

impl Placement {
    /// The pod's requirements.
    pub fn of(pod: &Pod) -> Placement {
        let spec = pod.spec.as_ref();
        Placement {
            selector: spec.and_then(|s| s.node_selector.clone()).unwrap_or_default(),
            terms: spec
                .and_then(|s| s.affinity.as_ref())
                .and_then(|a| a.node_affinity.as_ref())
                .and_then(|n| n.required_during_scheduling_ignored_during_execution.as_ref())
                .map(|r| r.node_selector_terms.clone()),
            tolerations: spec.and_then(|s| s.tolerations.clone()).unwrap_or_default(),
        }
    }

    /// `Ok` when `node` may take the pod, else the first reason it may not.
    pub fn check(&self, node: &NodeView) -> Result<(), Filtered> {
        if !self.selector.iter().all(|(k, v)| node.labels.get(k) == Some(v)) {
            return Err(Filtered::Selector);
        }
        if let Some(terms) = &self.terms
            && !terms.iter().any(|t| term_matches(t, node))
        {
            return Err(Filtered::Selector);
        }
        if !node.taints.iter().all(|t| self.tolerations.iter().any(|tol| tolerates(tol, t))) {
            return Err(Filtered::Taint);
        }
        Ok(())
    }
}

fn term_matches(term: &NodeSelectorTerm, node: &NodeView) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return false; // an empty term matches nothing (Kubernetes' rule)
    }
    exprs.iter().all(|e| requirement_matches(e, node.labels.get(&e.key).map(String::as_str)))
        && fields.iter().all(|e| {
            let value = (e.key == "metadata.name").then_some(node.name.as_str());
            requirement_matches(e, value)
        })
}

fn requirement_matches(e: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = e.values.as_deref().unwrap_or_default();
    let number = |s: &str| s.parse::<i64>().ok();
    match e.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => {
            matches!((value.and_then(number), values.first().and_then(|x| number(x))), (Some(v), Some(x)) if v > x)
        }
        "Lt" => {
            matches!((value.and_then(number), values.first().and_then(|x| number(x))), (Some(v), Some(x)) if v < x)
        }
        _ => false,
    }
}

/// Kubernetes' `Toleration.ToleratesTaint`.
fn tolerates(tol: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = tol.effect.as_deref().filter(|e| !e.is_empty())
        && effect != taint.effect
    {
        return false;
    }
    let key = tol.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match tol.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" | "" => {
            !key.is_empty()
                && tol.value.as_deref().unwrap_or_default()
                    == taint.value.as_deref().unwrap_or_default()
        }
        _ => false,
    }
}

/// What a pod asks that this scheduler does not do, said as its event says it; `None` when
/// it asks nothing of the kind.
pub fn unsupported(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    let mut what = Vec::new();
    if let Some(a) = &spec.affinity {
        if a.pod_affinity.is_some() {
            what.push("pod affinity");
        }
        if a.pod_anti_affinity.is_some() {
            what.push("pod anti-affinity");
        }
    }
    if spec.topology_spread_constraints.as_ref().is_some_and(|t| !t.is_empty()) {
        what.push("topology spread constraints");
    }
    if spec.resource_claims.as_ref().is_some_and(|c| !c.is_empty()) {
        what.push("resource claims (DRA)");
    }
    (!what.is_empty()).then(|| {
        format!(
            "this scheduler does not support {}: the pod stays Pending (use another schedulerName for it)",
            what.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Affinity, NodeAffinity, NodeSelector, PodSpec};

    fn view(labels: &[(&str, &str)], taints: &[(&str, &str)]) -> NodeView {
        NodeView {
            name: "n".into(),
            labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            taints: taints
                .iter()
                .map(|(k, e)| Taint {
                    key: k.to_string(),
                    effect: e.to_string(),
                    ..Default::default()
                })
                .collect(),
        }
    }

    fn pod(spec: PodSpec) -> Pod {
        Pod { spec: Some(spec), ..Default::default() }
    }

    #[test]
    fn selectors_affinity_and_taints_filter() {
        let p = Placement::of(&pod(PodSpec {
            node_selector: Some([("disk".to_string(), "ssd".to_string())].into()),
            ..Default::default()
        }));
        assert_eq!(p.check(&view(&[("disk", "ssd")], &[])), Ok(()));
        assert_eq!(p.check(&view(&[("disk", "hdd")], &[])), Err(Filtered::Selector));
        assert_eq!(
            p.check(&view(&[("disk", "ssd")], &[("gpu", "NoSchedule")])),
            Err(Filtered::Taint)
        );
        let tolerant = Placement::of(&pod(PodSpec {
            tolerations: Some(vec![Toleration {
                key: Some("gpu".into()),
                operator: Some("Exists".into()),
                ..Default::default()
            }]),
            affinity: Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: vec![NodeSelectorTerm {
                            match_expressions: Some(vec![NodeSelectorRequirement {
                                key: "zone".into(),
                                operator: "In".into(),
                                values: Some(vec!["a".into(), "b".into()]),
                            }]),
                            match_fields: None,
                        }],
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }));
        assert_eq!(tolerant.check(&view(&[("zone", "b")], &[("gpu", "NoSchedule")])), Ok(()));
        assert_eq!(tolerant.check(&view(&[("zone", "c")], &[])), Err(Filtered::Selector));
        assert_eq!(
            tolerant.check(&view(&[("zone", "a")], &[("other", "NoExecute")])),
            Err(Filtered::Taint)
        );
    }

    #[test]
    fn pod_affinity_is_unsupported() {
        let p = pod(PodSpec {
            affinity: Some(Affinity {
                pod_anti_affinity: Some(Default::default()),
                ..Default::default()
            }),
            ..Default::default()
        });
        assert!(unsupported(&p).unwrap().contains("pod anti-affinity"));
        assert!(unsupported(&pod(PodSpec::default())).is_none());
    }
}
