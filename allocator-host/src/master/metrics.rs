//! The allocation side's metrics as Mesos names them, in one place ([`write_master_metrics`])
//! for `allocator-master` (its summary and `GET /metrics/snapshot`) and the embedding
//! [actor](crate::actor):
//!
//! * `allocator/mesos/roles/<role>/shares/dominant`;
//! * `allocator/mesos/quota/roles/<role>/resources/<name>/guarantee`, `/limit` and
//!   `/offered_or_allocated` (the role and its subroles) for every role with a quota;
//! * `allocator/mesos/resources/<name>/total` and `/offered_or_allocated`;
//! * timings ([`write_timing`]): `allocation_run_ms`, and `allocation_run_latency_ms` (`serve`);
//! * `allocator/mesos/allocation_runs`, `allocator/guard/dropped_offers`,
//!   `allocator/module_fallbacks`, `allocator/module_restarts`,
//!   `allocator/module_calls_over_budget`, `allocator/mesos/offer_filters/roles/<role>/active`.

use std::collections::{BTreeMap, BTreeSet};

use super::{Engine, Master};
#[cfg(test)]
use allocator_api::Resources;
use allocator_api::{Quantities, Quota};

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
/// sample), `name/count`, and `name/min`, `/p50`, `/p90`, `/p95`, `/p99`, `/p999`, `/p9999`,
/// `/max` (over the last [`TIMING_SAMPLES`]).
pub fn write_timing(m: &mut MetricMap, name: &str, samples: &[f64]) {
    put(m, name.to_owned(), samples.last().copied().unwrap_or(0.0));
    m.insert(format!("{name}/count"), serde_json::json!(samples.len()));
    let values = percentiles(samples, [0.0, 0.5, 0.9, 0.95, 0.99, 0.999, 0.9999, 1.0]);
    let labels = ["min", "p50", "p90", "p95", "p99", "p999", "p9999", "max"];
    for (label, v) in labels.into_iter().zip(values) {
        put(m, format!("{name}/{label}"), v);
    }
}

/// Writes Mesos's `master/*` metrics of what the master holds: per resource `master/<r>_total`,
/// `_used` (offered or allocated) and `_percent` for `cpus`, `mem`, `disk`, `gpus`;
/// `master/slaves_active`, `_inactive`, `_connected`, `_disconnected`;
/// `master/frameworks_active`, `_inactive`, `_connected`, `_disconnected`;
/// `master/tasks_running`; `master/elected` (always 1: one master).
pub fn write_mesos_master_metrics(m: &mut MetricMap, master: &Master<'_>) {
    let total = master.cluster();
    let mut used = Quantities::new();
    for alloc in master.role_alloc().values() {
        for q in alloc.iter() {
            used.set(q.name, used.get(&q.name) + q.value);
        }
    }
    for name in ["cpus", "mem", "disk", "gpus"] {
        let (t, u) = (total.get(name).as_f64(), used.get(name).as_f64());
        put(m, format!("master/{name}_total"), t);
        put(m, format!("master/{name}_used"), u);
        put(m, format!("master/{name}_percent"), if t > 0.0 { u / t } else { 0.0 });
    }
    let agents: Vec<_> = master.agent_records().filter(|a| a.present).collect();
    let active = agents.iter().filter(|a| a.activated).count();
    put(m, "master/slaves_active".into(), active as f64);
    put(m, "master/slaves_inactive".into(), (agents.len() - active) as f64);
    put(m, "master/slaves_connected".into(), agents.len() as f64);
    put(m, "master/slaves_disconnected".into(), 0.0);
    // `framework_ids` lists the present frameworks only.
    let frameworks: Vec<_> = master.framework_ids().filter_map(|f| master.framework(f)).collect();
    let active = frameworks.iter().filter(|f| f.active).count();
    let present = frameworks.len();
    put(m, "master/frameworks_active".into(), active as f64);
    put(m, "master/frameworks_inactive".into(), (present - active) as f64);
    put(m, "master/frameworks_connected".into(), active as f64);
    put(m, "master/frameworks_disconnected".into(), (present - active) as f64);
    let running: usize = master.framework_ids().map(|f| master.tasks_of(f).count()).sum();
    put(m, "master/tasks_running".into(), running as f64);
    put(m, "master/elected".into(), 1.0);
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

/// Writes every metric of a master's allocation side, in one place for whoever serves them
/// (`allocator-master`'s event stream summary and `GET /metrics/snapshot`, the embedding
/// [actor](crate::actor)): runs and their times (`run_ms`, the most recent allocation runs'
/// durations in milliseconds), containment, the [role metrics](write_role_metrics) for
/// `roles` and every role holding resources, and the built-in allocator's active offer filters.
pub fn write_master_metrics<'a>(
    m: &mut MetricMap,
    master: &Master<'_>,
    roles: impl IntoIterator<Item = &'a String>,
    run_ms: &[f64],
) {
    m.insert("allocator/mesos/allocation_runs".into(), serde_json::json!(master.runs()));
    write_timing(m, "allocator/mesos/allocation_run_ms", run_ms);
    m.insert("allocator/guard/dropped_offers".into(), serde_json::json!(master.dropped_offers()));
    m.insert("allocator/module_fallbacks".into(), serde_json::json!(master.fallbacks()));
    m.insert("allocator/module_restarts".into(), serde_json::json!(master.restarts()));
    m.insert(
        "allocator/module_calls_over_budget".into(),
        serde_json::json!(master.calls_over_budget()),
    );
    let mut all: BTreeSet<&String> = roles.into_iter().collect();
    all.extend(master.role_alloc().keys());
    write_role_metrics(
        m,
        master.cluster(),
        master.role_alloc(),
        all,
        master.quotas(),
        master.excluded(),
    );
    if let Engine::Builtin(alloc) = master.engine() {
        for (role, n) in alloc.active_offer_filters() {
            m.insert(
                format!("allocator/mesos/offer_filters/roles/{role}/active"),
                serde_json::json!(n),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(t: &str) -> Quantities {
        t.parse::<Resources>().unwrap().scalar_quantities()
    }

    fn role_metrics(alloc: &[(&str, &str)], quotas: &BTreeMap<String, Quota>) -> MetricMap {
        let role_alloc: BTreeMap<String, Quantities> =
            alloc.iter().map(|(r, a)| (r.to_string(), q(a))).collect();
        let mut m = MetricMap::new();
        write_role_metrics(
            &mut m,
            &q("cpus:8;mem:800"),
            &role_alloc,
            role_alloc.keys(),
            quotas,
            &[],
        );
        m
    }

    #[test]
    fn a_role_share_is_its_dominant_share_of_the_cluster() {
        let m = role_metrics(&[("a", "cpus:2;mem:400")], &BTreeMap::new());
        assert_eq!(m["allocator/mesos/roles/a/shares/dominant"], serde_json::json!(0.5));
        assert_eq!(m["allocator/mesos/resources/cpus/total"], serde_json::json!(8.0));
        assert_eq!(
            m["allocator/mesos/resources/cpus/offered_or_allocated"],
            serde_json::json!(2.0)
        );
    }

    #[test]
    fn quota_metrics_count_subroles() {
        let quota =
            Quota { guarantees: "cpus:2".parse().unwrap(), limits: "cpus:6".parse().unwrap() };
        let quotas = BTreeMap::from([("a".to_string(), quota)]);
        let m = role_metrics(&[("a/b", "cpus:3")], &quotas);
        let base = "allocator/mesos/quota/roles/a/resources/cpus";
        assert_eq!(m[&format!("{base}/guarantee")], serde_json::json!(2.0));
        assert_eq!(m[&format!("{base}/limit")], serde_json::json!(6.0));
        assert_eq!(m[&format!("{base}/offered_or_allocated")], serde_json::json!(3.0));
    }
}
