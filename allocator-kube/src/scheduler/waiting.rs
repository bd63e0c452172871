//! Why pods wait: the `FailedScheduling` reports (an `Unschedulable` condition and an event)
//! that pods still pending after an allocation run get, and `/explain`'s `why`.
//!
//! A pod is told why it waits only after a run had its chance to place it: a pod of a
//! workload's stated demand once a periodic run (every node) has come and gone since it was
//! first stated, a pod that cannot be demand (an unsupported field, a bad ask) or a member of
//! a pod group after a run since it began to wait. A pod of a backlog that is not stated yet
//! waits its turn as a pod in kube-scheduler's active queue does, untold; so does a pod
//! stated just now, before any run tried it.
//!
//! The reasons cost one pass over the nodes per distinct question (role, ask, placement rules)
//! in a batch of reports, whatever the number of pods asking it: the nodes' free resources are
//! read once per batch, and pods with the same question share the answer.

use std::collections::HashMap;
use std::time::Instant;

use allocator_api::Resources;
use allocator_host::master::Master;

use super::{KubeScheduler, Phase, PodState, REPORTS_PER_RUN};
use crate::api::Action;
use crate::filter::Filtered;
use allocator_sim::clients::simulated::take;

/// Each node the master holds, as the reasons read it once per batch: whether it is active,
/// and what is free there for an active one.
struct NodeFree<'a> {
    node: &'a super::NodeState,
    /// `None`: cordoned or not ready.
    free: Option<Resources>,
}

/// One batch's view of the nodes and the answers given so far, by question.
#[derive(Default)]
struct Reasons<'a> {
    nodes: Option<Vec<NodeFree<'a>>>,
    answers: HashMap<String, String>,
}

impl KubeScheduler {
    /// Tells pods that still wait after a run why (each at most every report interval).
    pub(super) fn report_waiting(&mut self, master: &Master<'_>) {
        let now = Instant::now();
        let interval = self.options.report_interval;
        let due = self.due_reports(master.runs(), now, interval);
        let mut messages = Vec::with_capacity(due.len());
        {
            let mut reasons = Reasons::default();
            for uid in &due {
                let Some(p) = self.pods.get(uid) else { continue };
                messages.push((uid.clone(), self.why_waiting_in(p, master, &mut reasons)));
            }
        }
        for (uid, message) in messages {
            let Some(p) = self.pods.get_mut(&uid) else { continue };
            let action = Action::Unschedulable {
                namespace: p.namespace.clone(),
                name: p.name.clone(),
                uid: uid.clone(),
                message: message.clone(),
            };
            let _ = self.conn.actions.send(action);
            self.counts.reports += 1;
            p.report = Some((now, message));
        }
    }

    /// The pods to tell why they wait after this run (at most [`REPORTS_PER_RUN`]).
    fn due_reports(&self, runs: u64, now: Instant, interval: std::time::Duration) -> Vec<String> {
        let mut due = Vec::new();
        for fw in self.frameworks.values() {
            let gang = fw.gang.is_some();
            let pending = fw.pending.iter().map(|(_, u)| (u, true));
            for (uid, demand) in pending.chain(fw.held.iter().map(|u| (u, false))) {
                let Some(p) = self.pods.get(uid) else { continue };
                if p.phase != Phase::Pending {
                    continue;
                }
                let tried = if demand && !gang {
                    // Stated, then a periodic run over every node came and went.
                    p.stated_at.is_some_and(|at| at < self.periodic_runs)
                } else {
                    p.since_run.max(self.start_run) + 1 < runs
                };
                if !tried {
                    continue;
                }
                if p.report.as_ref().is_some_and(|(t, _)| now.duration_since(*t) < interval) {
                    continue;
                }
                due.push(uid.clone());
                if due.len() >= REPORTS_PER_RUN {
                    return due;
                }
            }
        }
        due
    }

    /// Why a pending pod has no node: what it asks that is unsupported, its role's quota
    /// limit, the nodes that cannot take it and why, or its role's turn under the sorters.
    pub(super) fn why_waiting(&self, p: &PodState, master: &Master<'_>) -> String {
        self.why_waiting_in(p, master, &mut Reasons::default())
    }

    fn why_waiting_in<'a>(
        &'a self,
        p: &PodState,
        master: &Master<'_>,
        reasons: &mut Reasons<'a>,
    ) -> String {
        if let Some(u) = &p.unsupported {
            return u.clone();
        }
        let ask = match &p.ask {
            Ok(a) => a,
            Err(e) => return format!("the pod's ask cannot be scheduled: {e}"),
        };
        let role = p.namespace.as_str();
        if let Some(quota) = master.quotas().get(role) {
            let held = master.role_alloc().get(role).cloned().unwrap_or_default();
            let asked = ask.scalar_quantities();
            for limit in quota.limits.iter() {
                let name = limit.name.as_str();
                let want = held.get(name).saturating_add(asked.get(name));
                if asked.get(name).is_positive() && want.millis() > limit.value.millis() {
                    return format!(
                        "quota limit of role '{role}': {name} {} (the role holds {}, this pod asks {})",
                        limit.value,
                        held.get(name),
                        asked.get(name)
                    );
                }
            }
        }
        if let Some(why) = self.gang_waiting(p, master) {
            return why;
        }
        let question = format!("{role}\n{}\n{:?}\n{}", ask, p.placement, p.framework);
        if let Some(answer) = reasons.answers.get(&question) {
            return answer.clone();
        }
        let nodes = reasons.nodes.get_or_insert_with(|| self.node_free(master));
        let answer = self.nodes_answer(p, ask, master, nodes);
        reasons.answers.insert(question, answer.clone());
        answer
    }

    /// Every node the master holds, with what is free there when it is active.
    fn node_free<'a>(&'a self, master: &Master<'_>) -> Vec<NodeFree<'a>> {
        let mut out = Vec::with_capacity(self.nodes.len());
        for (name, st) in &self.nodes {
            let Some(m) = &st.in_master else { continue };
            let free = if m.active {
                let Ok(id) = master.agent_id(name) else { continue };
                let mut free = master.agent_total(id).cloned().unwrap_or_default();
                free.subtract(&master.agent_used(id));
                Some(free)
            } else {
                None
            };
            out.push(NodeFree { node: st, free });
        }
        out
    }

    /// The nodes' answer to a pod's ask: how many cannot take it and why, or its role's turn.
    fn nodes_answer(
        &self,
        p: &PodState,
        ask: &Resources,
        master: &Master<'_>,
        nodes: &[NodeFree<'_>],
    ) -> String {
        let role = p.namespace.as_str();
        let (mut inactive, mut selector, mut taint, mut resources, mut fit) = (0, 0, 0, 0, 0);
        for n in nodes {
            let Some(free) = &n.free else {
                inactive += 1;
                continue;
            };
            match p.placement.check(&n.node.view) {
                Err(Filtered::Selector) => selector += 1,
                Err(Filtered::Taint) => taint += 1,
                Ok(()) if take(free, ask).is_some() => fit += 1,
                Ok(()) => resources += 1,
            }
        }
        let total = nodes.len();
        if fit == 0 {
            let mut parts = Vec::new();
            for (n, what) in [
                (inactive, "cordoned or not ready"),
                (selector, "didn't match the pod's node selector or affinity"),
                (taint, "had taints the pod doesn't tolerate"),
                (resources, "had too little free for the pod (cpus, mem, GPUs, pods)"),
            ] {
                if n > 0 {
                    parts.push(format!("{n} {what}"));
                }
            }
            return format!("0/{total} nodes are available: {}", parts.join(", "));
        }
        let weight = master.weights().get(role).copied().unwrap_or(1.0);
        format!(
            "{fit}/{total} nodes could take the pod; it waits for its turn: role '{role}' holds a dominant share of {:.3} (weight {weight}), framework '{}'",
            master.role_share(role),
            p.framework
        )
    }
}
