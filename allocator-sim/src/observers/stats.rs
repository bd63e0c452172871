//! Statistics from the master's events: offers and tasks per role, dominant shares and
//! utilisation integrated over virtual time, GPU fragmentation while GPU tasks wait, the
//! allocation run latencies, and the report's time series. From them: the metrics (flat,
//! Mesos-named) and the summary (human table and JSON event).

use std::collections::{BTreeMap, BTreeSet};

use allocator_api::Quantities;
use allocator_host::metrics::dominant_share;
use serde_json::{Value, json};

use allocator_host::master::{Event, Master};

/// Per-role counts and the integral of the dominant share over time.
#[derive(Debug, Default, Clone)]
struct RoleStats {
    offers: u64,
    tasks: u64,
    share_time: f64,
}

/// What the statistics observer has gathered. See the [module documentation](self).
#[derive(Debug, Default)]
pub struct Stats {
    roles: BTreeMap<String, RoleStats>,
    util_time: BTreeMap<String, f64>,
    run_micros: Vec<u64>,
    series: allocator_pictures::Series,
    /// At most this many samples kept ([`Stats::limit_history`]); `None`: all.
    history_limit: Option<usize>,
    /// Seconds during which a GPU task was waiting, and the integral of the idle GPU fraction
    /// over those seconds (fragmentation).
    gpu_wait: (f64, f64),
    /// The sorters at the last sample, to mark a switch in the report.
    sorters: Option<(String, String)>,
}

/// Expectations checked so far, for the summary.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExpectationCount {
    /// Held.
    pub passed: usize,
    /// Failed.
    pub failed: usize,
}

fn used_total(master: &Master<'_>) -> Quantities {
    let mut used = Quantities::new();
    for q in master.role_alloc().values() {
        used.add(q);
    }
    used
}

/// Trace statistics of the frameworks whose first role is one role.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TraceStats {
    /// Tasks submitted.
    pub submitted: u64,
    /// Tasks started (each with its wait).
    pub started: u64,
    /// Tasks still queued.
    pub pending: u64,
    /// Seconds each started task waited.
    pub waits: Vec<f64>,
}

/// What the statistics read of the simulated frameworks' task queues (the simulated-frameworks
/// client answers).
pub trait Queues {
    /// Whether a task asking for GPUs waits in the queue of a present framework.
    fn gpu_task_waiting(&self, master: &Master<'_>) -> bool;
    /// Queued tasks per first role of present frameworks that ever had a task submitted.
    fn waiting_by_role(&self, master: &Master<'_>) -> BTreeMap<String, f64>;
    /// Whether any framework (present or removed) had a trace task submitted.
    fn any_trace(&self) -> bool;
    /// Trace statistics of the frameworks (present or removed) whose first role is `role`.
    fn trace_stats(&self, role: &str, master: &Master<'_>) -> TraceStats;
}

impl Stats {
    /// Takes one event into account.
    pub fn observe(&mut self, event: &Event, master: &Master<'_>, sims: &dyn Queues) {
        match event {
            Event::Clock { from, to } => self.integrate(to - from, master, sims),
            Event::Offer(offer) => {
                self.roles.entry(offer.role.to_string()).or_default().offers += 1;
            }
            Event::TaskLaunched { role, .. } => {
                self.roles.entry(role.clone()).or_default().tasks += 1;
            }
            Event::AllocationRun { micros, .. } => self.run_micros.push(*micros),
            Event::InverseOffer { framework, agent, .. } => {
                let (f, a) = (master.framework_name(*framework), master.agent_name(*agent));
                self.series.marks.push((master.now(), format!("inverse offer: {f} on {a}")));
            }
            Event::TaskEnded { .. } | Event::AgentRemoved(_) => {}
        }
    }

    /// Integrates shares and utilisation over `dt` seconds of the state now.
    fn integrate(&mut self, dt: f64, master: &Master<'_>, sims: &dyn Queues) {
        if dt <= 0.0 {
            return;
        }
        let (cluster, excluded) = (master.cluster(), master.excluded());
        for (role, q) in master.role_alloc() {
            let share = dominant_share(q, cluster, excluded);
            self.roles.entry(role.clone()).or_default().share_time += share * dt;
        }
        let used = used_total(master);
        for total in cluster.iter() {
            if total.value.is_positive() {
                let frac = used.get(&total.name).as_f64() / total.value.as_f64();
                *self.util_time.entry(total.name.to_string()).or_default() += frac * dt;
            }
        }
        let gpus = cluster.get("gpus");
        if gpus.is_positive() && sims.gpu_task_waiting(master) {
            let idle = 1.0 - used.get("gpus").as_f64() / gpus.as_f64();
            self.gpu_wait.0 += dt;
            self.gpu_wait.1 += idle * dt;
        }
    }

    /// Records one point of the report's time series (shares and utilisation now).
    pub fn sample(&mut self, master: &Master<'_>, sims: &dyn Queues) {
        let (cluster, excluded) = (master.cluster(), master.excluded());
        let mut shares: BTreeMap<String, f64> = master
            .role_alloc()
            .iter()
            .map(|(r, q)| (r.clone(), dominant_share(q, cluster, excluded)))
            .collect();
        // Every framework's roles are in the report, holding something or not.
        for fw in master.framework_ids() {
            if let Some(info) = master.framework_info(fw) {
                for role in info.roles.iter() {
                    shares.entry(role.to_string()).or_insert(0.0);
                }
            }
        }
        let setup = master.setup();
        let sorters = (setup.role_sorter.clone(), setup.framework_sorter.clone());
        if self.sorters.as_ref().is_some_and(|old| *old != sorters) {
            let label = format!("sorters: {} / {}", sorters.0, sorters.1);
            self.series.marks.push((master.now(), label));
        }
        self.sorters = Some(sorters);
        for agent in master.agent_records() {
            if let Some(u) = &agent.unavailability {
                let window = (u.start, u.duration.into_option());
                self.series.windows.insert(agent.info.name.to_string(), window);
            }
        }
        let used = used_total(master);
        let util: BTreeMap<String, f64> = cluster
            .iter()
            .filter(|t| t.value.is_positive())
            .map(|t| (t.name.to_string(), used.get(&t.name).as_f64() / t.value.as_f64()))
            .collect();
        let now = master.now();
        if self.series.times.last() == Some(&now) && !self.series.times.is_empty() {
            // Keep one point per instant: the latest state wins.
            self.series.times.pop();
            for v in self
                .series
                .shares
                .values_mut()
                .chain(self.series.utilisation.values_mut())
                .chain(self.series.waiting.values_mut())
            {
                v.pop();
            }
        }
        let waiting = sims.waiting_by_role(master);
        self.series.push_with_waiting(now, &shares, &util, &waiting);
        // Bounded, with a margin so that the oldest are dropped in batches, not one by one.
        if let Some(max) = self.history_limit
            && self.series.times.len() > max + max / 8
        {
            self.series.keep_last(max);
        }
    }

    /// Keeps only the last `max` samples of the series (and the marks among them) from now
    /// on: for a live master, whose run has no end.
    pub fn limit_history(&mut self, max: usize) {
        self.history_limit = Some(max);
    }

    /// The last `max` samples of each role's dominant share (taken after every allocation
    /// run, one per instant), as `{"times": [s, …], "shares": {role: [share, …]}}`: what
    /// `serve`'s `GET /state` answers as `share_history`, so that a chart can start from the
    /// master's past. A role that appeared within the window has 0 before it appeared.
    pub fn share_history(&self, max: usize) -> Value {
        let series = &self.series;
        let from = series.times.len().saturating_sub(max);
        let shares: serde_json::Map<String, Value> = series
            .shares
            .iter()
            .map(|(role, values)| (role.clone(), json!(values[from.min(values.len())..])))
            .collect();
        json!({"times": series.times[from..], "shares": shares})
    }

    /// Renders the report of the run so far as SVG.
    pub fn report_svg(
        &self,
        title: &str,
        master: &Master<'_>,
    ) -> Result<String, allocator_pictures::ReportError> {
        let setup = master.setup();
        let subtitle = format!(
            "allocator {}, role sorter {}, framework sorter {}; {} allocation runs over {:.0} s",
            setup.allocator,
            setup.role_sorter,
            setup.framework_sorter,
            master.runs(),
            master.now()
        );
        allocator_pictures::render_svg(title, &subtitle, &self.series)
    }

    /// Every run's time so far, in milliseconds.
    fn run_ms(&self) -> Vec<f64> {
        self.run_micros.iter().map(|&u| u as f64 / 1000.0).collect()
    }

    /// The metrics, flat and named as Mesos names them (`allocator/mesos/…`), plus the host's
    /// own (`allocator/guard/…`, `allocator/module_…`):
    ///
    /// * `allocator/mesos/allocation_runs`, `allocator/mesos/allocation_run_ms` (the last run)
    ///   with `/count`, `/p50`, `/p90`, `/p99`, `/max`;
    /// * `allocator/mesos/resources/<name>/total` and `/offered_or_allocated`;
    /// * `allocator/mesos/roles/<role>/shares/dominant`;
    /// * `allocator/mesos/offer_filters/roles/<role>/active` (the built-in allocator only: a
    ///   module's filters are its own);
    /// * `allocator/mesos/quota/roles/<role>/resources/<name>/guarantee`, `/limit` and
    ///   `/offered_or_allocated` (the role and its subroles) for every role with a quota.
    pub fn metrics(&self, master: &Master<'_>) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        allocator_host::metrics::write_master_metrics(
            &mut m,
            master,
            self.roles.keys(),
            &self.run_ms(),
        );
        m
    }

    /// The human summary and the JSON summary event (SPEC section 5) of the run so far.
    pub fn summary(
        &self,
        master: &Master<'_>,
        sims: &dyn Queues,
        expectations: ExpectationCount,
    ) -> (String, Value) {
        let metrics = self.metrics(master);
        let setup = master.setup();
        let now = master.now();
        let mut text = format!(
            "allocator '{}' (role sorter {}, framework sorter {}), {:.1}s simulated, {} allocation runs\n",
            setup.allocator,
            setup.role_sorter,
            setup.framework_sorter,
            now,
            master.runs()
        );
        let agents = master.agent_records().filter(|a| a.present).count();
        let frameworks = master.framework_ids().count();
        text.push_str(&format!("cluster: {agents} agents, {frameworks} frameworks\n"));
        let roles_json = self.role_table(master, sims, &mut text);
        let util = self.utilisation(master, &mut text);
        let [p50, p99, max] =
            allocator_host::metrics::percentiles(&self.run_ms(), [0.5, 0.99, 1.0]);
        text.push_str(&format!(
            "allocation run latency: p50 {p50:.3} ms, p99 {p99:.3} ms, max {max:.3} ms\n"
        ));
        let fragmentation =
            if self.gpu_wait.0 > 0.0 { Some(self.gpu_wait.1 / self.gpu_wait.0) } else { None };
        if sims.any_trace() {
            match fragmentation {
                Some(f) => text.push_str(&format!(
                    "GPU fragmentation: GPU tasks waited during {:.1}s; meanwhile {:.1}% of GPUs were unallocated on average\n",
                    self.gpu_wait.0,
                    f * 100.0
                )),
                None => text.push_str("GPU fragmentation: no GPU task ever waited\n"),
            }
        }
        // A run without expectations (the default workload, most live runs) says nothing of them.
        if expectations.passed + expectations.failed > 0 {
            text.push_str(&format!(
                "expectations: {} passed, {} failed\n",
                expectations.passed, expectations.failed
            ));
        }
        let json = json!({"event": "summary", "time": now, "allocator": setup.allocator,
                          "role_sorter": setup.role_sorter, "framework_sorter": setup.framework_sorter,
                          "metrics": metrics, "roles": roles_json, "utilisation": util,
                          "gpu_fragmentation": {"gpu_task_wait_seconds": self.gpu_wait.0,
                                                "unallocated_gpu_share_while_waiting": fragmentation},
                          "expectations": {"passed": expectations.passed, "failed": expectations.failed}});
        (text, json)
    }

    /// The per-role table of the summary (appended to `text`) and its JSON.
    fn role_table(
        &self,
        master: &Master<'_>,
        sims: &dyn Queues,
        text: &mut String,
    ) -> serde_json::Map<String, Value> {
        let now = master.now();
        let mut roles_json = serde_json::Map::new();
        let mut role_names: BTreeSet<&String> = self.roles.keys().collect();
        role_names.extend(master.role_alloc().keys());
        let traces: Vec<_> =
            role_names.into_iter().map(|r| (r, sims.trace_stats(r, master))).collect();
        // The queue columns only when some role has a queue (trace-driven frameworks).
        let queues = traces.iter().any(|(_, t)| t.submitted > 0);
        text.push_str(&format!(
            "{:<24} {:>10} {:>10} {:>8} {:>8}",
            "ROLE", "SHARE", "AVG SHARE", "OFFERS", "TASKS"
        ));
        if queues {
            text.push_str(&format!(
                " {:>9} {:>8} {:>8} {:>9} {:>9}",
                "SUBMITTED", "STARTED", "PENDING", "WAIT MEAN", "WAIT P99"
            ));
        }
        text.push('\n');
        for (role, trace) in traces {
            let stats = self.roles.get(role).cloned().unwrap_or_default();
            let share = master.role_share(role);
            let avg = if now > 0.0 { stats.share_time / now } else { share };
            let submitted = trace.submitted;
            let (mean, p99) = wait_stats(&trace.waits);
            let mut r = json!({"dominant_share": share, "average_dominant_share": avg, "offers": stats.offers,
                               "tasks_launched": stats.tasks, "tasks_running": master.tasks_in_role(role)});
            if submitted > 0 {
                r["tasks_submitted"] = json!(submitted);
                r["tasks_started"] = json!(trace.started);
                r["tasks_pending"] = json!(trace.pending);
                r["wait_mean_seconds"] = json!(mean);
                r["wait_p99_seconds"] = json!(p99);
            }
            roles_json.insert(role.clone(), r);
            let count = |x: u64| if submitted > 0 { x.to_string() } else { "-".into() };
            let secs = |x: f64| if submitted > 0 { format!("{x:.1}s") } else { "-".into() };
            text.push_str(&format!(
                "{:<24} {:>10.4} {:>10.4} {:>8} {:>8}",
                role, share, avg, stats.offers, stats.tasks
            ));
            if queues {
                text.push_str(&format!(
                    " {:>9} {:>8} {:>8} {:>9} {:>9}",
                    count(submitted),
                    count(trace.started),
                    count(trace.pending),
                    secs(mean),
                    secs(p99)
                ));
            }
            text.push('\n');
        }
        roles_json
    }

    /// The utilisation line of the summary (appended to `text`) and its JSON.
    fn utilisation(
        &self,
        master: &Master<'_>,
        text: &mut String,
    ) -> serde_json::Map<String, Value> {
        let now = master.now();
        let used = used_total(master);
        let mut util = serde_json::Map::new();
        text.push_str("utilisation:");
        for total in master.cluster().iter().filter(|t| t.value.is_positive()) {
            let frac = used.get(&total.name).as_f64() / total.value.as_f64();
            let avg = if now > 0.0 {
                self.util_time.get(total.name.as_str()).copied().unwrap_or(0.0) / now
            } else {
                frac
            };
            util.insert(
                total.name.to_string(),
                json!({"allocated": used.get(&total.name).as_f64(), "total": total.value.as_f64(),
                       "final": frac, "average": avg}),
            );
            text.push_str(&format!(
                " {} {:.1}% (avg {:.1}%)",
                total.name,
                frac * 100.0,
                avg * 100.0
            ));
        }
        text.push('\n');
        util
    }
}

fn wait_stats(waits: &[f64]) -> (f64, f64) {
    if waits.is_empty() {
        return (0.0, 0.0);
    }
    let mut w = waits.to_vec();
    w.sort_by(f64::total_cmp);
    let mean = w.iter().sum::<f64>() / w.len() as f64;
    let p99 = w[((w.len() as f64 - 1.0) * 0.99).round() as usize];
    (mean, p99)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_history_is_the_last_samples_of_each_role() {
        let mut stats = Stats::default();
        for t in 0..10 {
            let mut shares = BTreeMap::from([("a".to_owned(), f64::from(t) / 10.0)]);
            if t >= 8 {
                shares.insert("b".into(), 0.5);
            }
            stats.series.push(f64::from(t), &shares, &BTreeMap::new());
        }
        let history = stats.share_history(3);
        assert_eq!(history["times"], json!([7.0, 8.0, 9.0]));
        assert_eq!(history["shares"]["a"], json!([0.7, 0.8, 0.9]));
        assert_eq!(history["shares"]["b"], json!([0.0, 0.5, 0.5]), "0 before it appeared");
        assert_eq!(stats.share_history(100)["times"].as_array().unwrap().len(), 10);
    }
}
