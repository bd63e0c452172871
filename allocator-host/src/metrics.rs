//! Per-role metrics as Mesos names them, in one place for the simulated master
//! (`Simulation::metrics` in `allocator-master`) and the embedding actor
//! ([`Metrics::snapshot`](crate::actor::Metrics::snapshot)):
//!
//! * `allocator/mesos/roles/<role>/shares/dominant`;
//! * `allocator/mesos/quota/roles/<role>/resources/<name>/guarantee`, `/limit` and
//!   `/offered_or_allocated` (the role and its subroles) for every role with a quota;
//! * `allocator/mesos/resources/<name>/total` and `/offered_or_allocated`;
//! * timings ([`write_timing`]): `allocation_run_ms`, `allocation_run_latency_ms`.
//!
//! [`RoleLedger`] is the record the actor keeps to compute them: what each framework holds per
//! agent and role (from the offers it delivered, the allocations it was told about and the
//! resources given back), the agents' totals and the quotas.

use std::collections::BTreeMap;

use allocator_api::{AgentId, FrameworkId, IdMap, Quantities, Quota, Resources};

/// The unweighted dominant share of `alloc` in `total`, leaving out `excluded` names.
pub fn dominant_share(alloc: &Quantities, total: &Quantities, excluded: &[String]) -> f64 {
    let mut share = 0.0f64;
    for q in alloc.iter() {
        if excluded.iter().any(|e| e == q.name.as_str()) {
            continue;
        }
        let t = total.get(&q.name);
        if t.is_positive() {
            share = share.max(q.value.as_f64() / t.as_f64());
        }
    }
    share
}

/// A flat metric map (name to number), as Mesos's `/metrics/snapshot` serves it.
pub type MetricMap = serde_json::Map<String, serde_json::Value>;

fn put(m: &mut MetricMap, name: String, value: f64) {
    m.insert(name, serde_json::json!(value));
}

/// Samples kept for a timing metric's percentiles (the most recent ones).
pub const TIMING_SAMPLES: usize = 1000;

/// Appends `x` to `samples`, dropping the oldest beyond [`TIMING_SAMPLES`].
pub fn push_sample(samples: &mut Vec<f64>, x: f64) {
    if samples.len() == TIMING_SAMPLES {
        samples.remove(0);
    }
    samples.push(x);
}

/// The nearest-rank values at fractions `ps` of `samples` (0: min, 1: max); zeros when there
/// are none.
pub fn percentiles<const N: usize>(samples: &[f64], ps: [f64; N]) -> [f64; N] {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    ps.map(|p| {
        if sorted.is_empty() {
            0.0
        } else {
            sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
        }
    })
}

/// Writes timing metric `name` as Mesos's timers appear in a snapshot: `name` (the last
/// sample), `name/count`, and `name/p50`, `/p90`, `/p99`, `/max`.
pub fn write_timing(m: &mut MetricMap, name: &str, samples: &[f64]) {
    put(m, name.to_owned(), samples.last().copied().unwrap_or(0.0));
    m.insert(format!("{name}/count"), serde_json::json!(samples.len()));
    let values = percentiles(samples, [0.5, 0.9, 0.99, 1.0]);
    for (label, v) in ["p50", "p90", "p99", "max"].into_iter().zip(values) {
        put(m, format!("{name}/{label}"), v);
    }
}

/// Writes the cluster, per-role share and quota metrics. `roles` names the roles to report a
/// share for (those without an entry in `role_alloc` report 0).
pub fn write_role_metrics<'a>(
    m: &mut MetricMap,
    cluster: &Quantities,
    role_alloc: &BTreeMap<String, Quantities>,
    roles: impl IntoIterator<Item = &'a String>,
    quotas: &BTreeMap<String, Quota>,
    excluded: &[String],
) {
    let mut used = Quantities::new();
    for q in role_alloc.values() {
        used.add(q);
    }
    for t in cluster.iter() {
        put(m, format!("allocator/mesos/resources/{}/total", t.name), t.value.as_f64());
        put(
            m,
            format!("allocator/mesos/resources/{}/offered_or_allocated", t.name),
            used.get(&t.name).as_f64(),
        );
    }
    for role in roles {
        let share = role_alloc.get(role).map_or(0.0, |q| dominant_share(q, cluster, excluded));
        put(m, format!("allocator/mesos/roles/{role}/shares/dominant"), share);
    }
    for (role, quota) in quotas {
        let prefix = format!("{role}/");
        let mut consumed = Quantities::new();
        for (r, q) in role_alloc {
            if r == role || r.starts_with(&prefix) {
                consumed.add(q);
            }
        }
        let base = format!("allocator/mesos/quota/roles/{role}/resources");
        let mut names: Vec<&str> = quota.guarantees.iter().map(|t| t.name.as_str()).collect();
        names.extend(quota.limits.iter().map(|t| t.name.as_str()));
        names.sort_unstable();
        names.dedup();
        for name in names {
            if quota.guarantees.has(name) {
                put(m, format!("{base}/{name}/guarantee"), quota.guarantees.get(name).as_f64());
            }
            if quota.limits.has(name) {
                put(m, format!("{base}/{name}/limit"), quota.limits.get(name).as_f64());
            }
            put(m, format!("{base}/{name}/offered_or_allocated"), consumed.get(name).as_f64());
        }
    }
}

/// What the embedding actor knows of the cluster, for its per-role metrics: agents' totals,
/// what each framework holds per agent and role, and quotas. Updated from the calls the
/// allocator accepted and the offers it made.
#[derive(Debug, Default)]
pub struct RoleLedger {
    agents: IdMap<AgentId, Quantities>,
    cluster: Quantities,
    held: BTreeMap<(FrameworkId, AgentId, String), Quantities>,
    role_alloc: BTreeMap<String, Quantities>,
    quotas: BTreeMap<String, Quota>,
}

impl RoleLedger {
    /// Records an agent and its total (replacing an earlier total).
    pub fn set_agent(&mut self, agent: AgentId, total: &Resources) {
        if let Some(old) = self.agents.remove(&agent) {
            self.cluster.subtract(&old);
        }
        let q = total.scalar_quantities();
        self.cluster.add(&q);
        self.agents.insert(agent, q);
    }

    /// Forgets an agent and everything held on it.
    pub fn remove_agent(&mut self, agent: AgentId) {
        if let Some(old) = self.agents.remove(&agent) {
            self.cluster.subtract(&old);
        }
        self.release_where(|(_, a, _)| *a == agent);
    }

    /// Forgets everything a framework holds.
    pub fn remove_framework(&mut self, framework: FrameworkId) {
        self.release_where(|(f, _, _)| *f == framework);
    }

    fn release_where(&mut self, gone: impl Fn(&(FrameworkId, AgentId, String)) -> bool) {
        let keys: Vec<_> = self.held.keys().filter(|k| gone(k)).cloned().collect();
        for key in keys {
            if let Some(q) = self.held.remove(&key)
                && let Some(r) = self.role_alloc.get_mut(&key.2)
            {
                r.subtract(&q);
            }
        }
    }

    /// Records resources offered or allocated to `framework` under `role` on `agent`.
    pub fn allocate(&mut self, framework: FrameworkId, agent: AgentId, role: &str, r: &Resources) {
        let q = r.scalar_quantities();
        self.held.entry((framework, agent, role.to_owned())).or_default().add(&q);
        self.role_alloc.entry(role.to_owned()).or_default().add(&q);
    }

    /// Records resources given back.
    pub fn release(&mut self, framework: FrameworkId, agent: AgentId, role: &str, r: &Resources) {
        let q = r.scalar_quantities();
        let key = (framework, agent, role.to_owned());
        if let Some(h) = self.held.get_mut(&key) {
            h.subtract(&q);
            if h.iter().all(|x| !x.value.is_positive()) {
                self.held.remove(&key);
            }
        }
        if let Some(a) = self.role_alloc.get_mut(role) {
            a.subtract(&q);
        }
    }

    /// Records a role's quota.
    pub fn set_quota(&mut self, role: &str, quota: &Quota) {
        self.quotas.insert(role.to_owned(), quota.clone());
    }

    /// Writes the per-role metrics (see the [module documentation](self)).
    pub fn write_metrics(&self, m: &mut MetricMap) {
        write_role_metrics(
            m,
            &self.cluster,
            &self.role_alloc,
            self.role_alloc.keys(),
            &self.quotas,
            &[],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(t: &str) -> Resources {
        t.parse().unwrap()
    }

    #[test]
    fn a_role_share_follows_allocations_and_releases() {
        let mut l = RoleLedger::default();
        l.set_agent(AgentId(0), &res("cpus:8;mem:800"));
        l.allocate(FrameworkId(1), AgentId(0), "a", &res("cpus:2;mem:400"));
        let mut m = MetricMap::new();
        l.write_metrics(&mut m);
        assert_eq!(m["allocator/mesos/roles/a/shares/dominant"], serde_json::json!(0.5));
        l.release(FrameworkId(1), AgentId(0), "a", &res("cpus:2;mem:400"));
        let mut m = MetricMap::new();
        l.write_metrics(&mut m);
        assert_eq!(m["allocator/mesos/roles/a/shares/dominant"], serde_json::json!(0.0));
    }

    #[test]
    fn removing_an_agent_releases_what_was_held_on_it() {
        let mut l = RoleLedger::default();
        l.set_agent(AgentId(0), &res("cpus:4"));
        l.set_agent(AgentId(1), &res("cpus:4"));
        l.allocate(FrameworkId(1), AgentId(0), "a", &res("cpus:4"));
        l.remove_agent(AgentId(0));
        let mut m = MetricMap::new();
        l.write_metrics(&mut m);
        assert_eq!(m["allocator/mesos/resources/cpus/total"], serde_json::json!(4.0));
        assert_eq!(m["allocator/mesos/roles/a/shares/dominant"], serde_json::json!(0.0));
    }

    #[test]
    fn quota_metrics_count_subroles() {
        let mut l = RoleLedger::default();
        l.set_agent(AgentId(0), &res("cpus:8"));
        let quota =
            Quota { guarantees: "cpus:2".parse().unwrap(), limits: "cpus:6".parse().unwrap() };
        l.set_quota("a", &quota);
        l.allocate(FrameworkId(1), AgentId(0), "a/b", &res("cpus:3"));
        let mut m = MetricMap::new();
        l.write_metrics(&mut m);
        let base = "allocator/mesos/quota/roles/a/resources/cpus";
        assert_eq!(m[&format!("{base}/guarantee")], serde_json::json!(2.0));
        assert_eq!(m[&format!("{base}/limit")], serde_json::json!(6.0));
        assert_eq!(m[&format!("{base}/offered_or_allocated")], serde_json::json!(3.0));
    }
}
