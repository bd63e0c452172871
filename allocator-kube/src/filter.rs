//! Where a pod may go: `nodeSelector`, required node affinity, taints and tolerations
//! (`NoSchedule` and `NoExecute`; `PreferNoSchedule` is a preference and ignored), and what
//! this scheduler does not do (pod affinity and anti-affinity, topology spread constraints,
//! resource claims): such a pod stays Pending with an event saying so.
//!
//! The same rules are stated to the allocator as ABI 3 [`Constraint`]s on the pod's request
//! ([`Placement::constraints`]), so that a placement module places by them; the host still
//! checks every node it is offered against [`Placement::check`] (it never trusts a module).
//! Node labels are agent attributes as they are; each `NoSchedule`/`NoExecute` taint is the
//! attribute [`taint_attribute`] (`taint:EFFECT:KEY`, the taint's value as its value).

use std::collections::{BTreeMap, BTreeSet};

use allocator_api::{Attribute, Constraint, ConstraintOp};
use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration,
};

/// The agent attribute a node's taint is: `taint:EFFECT:KEY` (`taint:NoSchedule:gpu`), whose
/// value is the taint's value (empty when it has none). A label key cannot hold `:`, so it
/// never clashes with a label.
pub fn taint_attribute(effect: &str, key: &str) -> String {
    format!("taint:{effect}:{key}")
}

/// The taints on the cluster's nodes: for each (effect, key), the values seen.
pub type ClusterTaints = BTreeMap<(String, String), BTreeSet<String>>;

/// The pseudo-attribute of an agent's hostname (a node's name, as the scheduler adds agents).
const HOSTNAME: &str = "hostname";

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

    /// Its taints as agent attributes ([`taint_attribute`]).
    pub fn taint_attributes(&self) -> Vec<Attribute> {
        self.taints
            .iter()
            .map(|t| Attribute {
                name: taint_attribute(&t.effect, &t.key).as_str().into(),
                value: t.value.as_deref().unwrap_or_default().into(),
            })
            .collect()
    }

    /// Adds its taints to `taints`.
    pub fn add_taints_to(&self, taints: &mut ClusterTaints) {
        for t in &self.taints {
            taints
                .entry((t.effect.clone(), t.key.clone()))
                .or_default()
                .insert(t.value.clone().unwrap_or_default());
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

impl Placement {
    /// The pod's rules as ABI 3 constraints, all of which must hold (what a module sees in
    /// `Allocator::request`):
    ///
    /// * each `nodeSelector` entry `k: v` is `k in [v]`;
    /// * required node affinity of **one** term: each `matchExpressions` entry as its
    ///   operator (`In` → `in`, `NotIn` → `not_in`, `Exists` → `exists`, `DoesNotExist` →
    ///   `not_exists`), `matchFields` on `metadata.name` as `hostname` (`In`/`NotIn`);
    ///   `Gt`/`Lt` have no constraint operator and are left to the host's check;
    /// * **several** terms are ORed, which one list of ANDed constraints cannot say: only the
    ///   requirements every term has are stated (each is implied by the OR), the rest is left
    ///   to the host's check, so a module may offer a node that the host then declines; no
    ///   term at all (or an empty term alone) matches no node: `hostname in []`;
    /// * taints: for each (effect, key) of `taints` (those on the cluster's nodes), the values
    ///   the pod does not tolerate: `taint:EFFECT:KEY not_exists` when it tolerates none of
    ///   them, else `taint:EFFECT:KEY not_in [those values]`.
    pub fn constraints(&self, taints: &ClusterTaints) -> Vec<Constraint> {
        let mut out: Vec<Constraint> =
            self.selector.iter().map(|(k, v)| Constraint::is_in(k, &[v])).collect();
        if let Some(terms) = &self.terms {
            let mapped: Vec<Option<Vec<Constraint>>> = terms.iter().map(term_constraints).collect();
            let live: Vec<&Vec<Constraint>> = mapped.iter().flatten().collect();
            match live.split_first() {
                None => out.push(never()),
                Some((first, rest)) => {
                    for c in first.iter() {
                        if rest.iter().all(|other| other.contains(c)) && !out.contains(c) {
                            out.push(c.clone());
                        }
                    }
                }
            }
        }
        for ((effect, key), values) in taints {
            let untolerated: Vec<&String> = values
                .iter()
                .filter(|v| {
                    let taint = Taint {
                        effect: effect.clone(),
                        key: key.clone(),
                        value: (!v.is_empty()).then(|| (*v).clone()),
                        time_added: None,
                    };
                    !self.tolerations.iter().any(|tol| tolerates(tol, &taint))
                })
                .collect();
            if untolerated.is_empty() {
                continue;
            }
            let attribute = taint_attribute(effect, key);
            out.push(if untolerated.len() == values.len() {
                Constraint {
                    attribute: attribute.as_str().into(),
                    op: ConstraintOp::NOT_EXISTS,
                    values: Default::default(),
                }
            } else {
                Constraint {
                    op: ConstraintOp::NOT_IN,
                    ..Constraint::is_in(&attribute, &untolerated)
                }
            });
        }
        out
    }
}

/// The constraint no agent meets.
fn never() -> Constraint {
    Constraint::is_in::<&str>(HOSTNAME, &[])
}

/// One node selector term's requirements as constraints (those that have one); `None` for an
/// empty term, which matches no node.
fn term_constraints(term: &NodeSelectorTerm) -> Option<Vec<Constraint>> {
    let exprs = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return None;
    }
    let mut out: Vec<Constraint> =
        exprs.iter().filter_map(|e| requirement_constraint(&e.key, e)).collect();
    out.extend(
        fields
            .iter()
            .filter(|e| e.key == "metadata.name" && matches!(e.operator.as_str(), "In" | "NotIn"))
            .filter_map(|e| requirement_constraint(HOSTNAME, e)),
    );
    Some(out)
}

/// A requirement on `attribute` as a constraint; `None` for `Gt`, `Lt` and unknown operators.
fn requirement_constraint(attribute: &str, e: &NodeSelectorRequirement) -> Option<Constraint> {
    let op = match e.operator.as_str() {
        "In" => ConstraintOp::IN,
        "NotIn" => ConstraintOp::NOT_IN,
        "Exists" => ConstraintOp::EXISTS,
        "DoesNotExist" => ConstraintOp::NOT_EXISTS,
        _ => return None,
    };
    let values = match op {
        ConstraintOp::IN | ConstraintOp::NOT_IN => {
            e.values.iter().flatten().map(|v| v.as_str().into()).collect()
        }
        _ => Default::default(),
    };
    Some(Constraint { attribute: attribute.into(), op, values })
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

    fn requirement(key: &str, operator: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        }
    }

    fn with_terms(terms: Vec<Vec<NodeSelectorRequirement>>) -> Placement {
        Placement::of(&pod(PodSpec {
            affinity: Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: terms
                            .into_iter()
                            .map(|e| NodeSelectorTerm {
                                match_expressions: Some(e),
                                match_fields: None,
                            })
                            .collect(),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    fn texts(constraints: &[Constraint]) -> Vec<String> {
        constraints.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn a_node_selector_entry_is_an_in_constraint() {
        let p = Placement::of(&pod(PodSpec {
            node_selector: Some([("disk".to_string(), "ssd".to_string())].into()),
            ..Default::default()
        }));
        assert_eq!(texts(&p.constraints(&ClusterTaints::new())), ["disk in [ssd]"]);
    }

    #[test]
    fn one_affinity_term_is_its_expressions_anded() {
        let p = with_terms(vec![vec![
            requirement("zone", "In", &["a", "b"]),
            requirement("arch", "NotIn", &["arm"]),
            requirement("ssd", "Exists", &[]),
            requirement("spot", "DoesNotExist", &[]),
        ]]);
        assert_eq!(
            texts(&p.constraints(&ClusterTaints::new())),
            ["zone in [a,b]", "arch not_in [arm]", "ssd exists", "spot not_exists"]
        );
    }

    #[test]
    fn gt_and_lt_are_left_to_the_hosts_check() {
        let p = with_terms(vec![vec![requirement("cores", "Gt", &["8"])]]);
        assert!(p.constraints(&ClusterTaints::new()).is_empty());
        assert_eq!(p.check(&view(&[("cores", "4")], &[])), Err(Filtered::Selector));
    }

    #[test]
    fn ored_terms_state_only_what_every_term_requires() {
        let p = with_terms(vec![
            vec![requirement("gpu", "Exists", &[]), requirement("zone", "In", &["a"])],
            vec![requirement("zone", "In", &["b"]), requirement("gpu", "Exists", &[])],
        ]);
        assert_eq!(texts(&p.constraints(&ClusterTaints::new())), ["gpu exists"]);
    }

    #[test]
    fn an_empty_affinity_term_matches_no_agent() {
        let p = with_terms(vec![vec![]]);
        let c = p.constraints(&ClusterTaints::new());
        assert_eq!(texts(&c), ["hostname in []"]);
        assert!(!c[0].holds_for(Some("n1")));
    }

    #[test]
    fn match_fields_on_the_node_name_are_hostname_constraints() {
        let p = Placement::of(&pod(PodSpec {
            affinity: Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: vec![NodeSelectorTerm {
                            match_expressions: None,
                            match_fields: Some(vec![requirement("metadata.name", "In", &["n7"])]),
                        }],
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }));
        assert_eq!(texts(&p.constraints(&ClusterTaints::new())), ["hostname in [n7]"]);
    }

    fn cluster_taints(list: &[(&str, &str, &str)]) -> ClusterTaints {
        let mut out = ClusterTaints::new();
        for (effect, key, value) in list {
            out.entry((effect.to_string(), key.to_string())).or_default().insert(value.to_string());
        }
        out
    }

    #[test]
    fn an_untolerated_taint_is_a_not_exists_constraint() {
        let p = Placement::of(&pod(PodSpec::default()));
        let taints = cluster_taints(&[("NoSchedule", "gpu", "")]);
        assert_eq!(texts(&p.constraints(&taints)), ["taint:NoSchedule:gpu not_exists"]);
    }

    #[test]
    fn a_tolerated_taint_states_no_constraint() {
        let p = Placement::of(&pod(PodSpec {
            tolerations: Some(vec![Toleration {
                key: Some("gpu".into()),
                operator: Some("Exists".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }));
        let taints = cluster_taints(&[("NoSchedule", "gpu", ""), ("NoExecute", "gpu", "x")]);
        assert!(p.constraints(&taints).is_empty());
    }

    #[test]
    fn a_taint_tolerated_for_some_values_excludes_the_others() {
        let p = Placement::of(&pod(PodSpec {
            tolerations: Some(vec![Toleration {
                key: Some("team".into()),
                value: Some("ml".into()),
                effect: Some("NoSchedule".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }));
        let taints = cluster_taints(&[("NoSchedule", "team", "ml"), ("NoSchedule", "team", "web")]);
        assert_eq!(texts(&p.constraints(&taints)), ["taint:NoSchedule:team not_in [web]"]);
    }

    #[test]
    fn a_nodes_taints_are_attributes_its_constraints_are_checked_against() {
        let node = view(&[], &[("gpu", "NoSchedule")]);
        let attributes = node.taint_attributes();
        assert_eq!(attributes.len(), 1);
        assert_eq!(attributes[0].name.as_str(), "taint:NoSchedule:gpu");
        let mut taints = ClusterTaints::new();
        node.add_taints_to(&mut taints);
        let c = Placement::of(&pod(PodSpec::default())).constraints(&taints);
        assert!(!c[0].holds_for(Some(attributes[0].value.as_str())), "the tainted node fails");
        assert!(c[0].holds_for(None), "an untainted node passes");
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
