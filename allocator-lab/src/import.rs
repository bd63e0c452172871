//! `allocator-master import alibaba-gpu-v2023`: converts the Alibaba GPU cluster trace v2023
//! ("openb") into a SPEC scenario.
//!
//! * each node becomes an agent: `cpus` = cpu_milli / 1000, `mem` = memory_mib, `gpus` = gpu
//!   (pooled, or with [`ImportOptions::devices`] one `gpus[ID]:1` device per GPU, ids from 0),
//!   attribute `gpu_model` = model;
//! * each QoS class becomes a role (`ls`, `be`, `burstable`, `guaranteed`) with one trace-driven,
//!   GPU-capable framework (`<role>-pods`);
//! * each pod becomes a `submit_task` at its creation time (divided by the time scale) holding
//!   `cpus`, `mem` and `gpus` (num_gpu, or gpu_milli / 1000 for a GPU-sharing pod) for deletion −
//!   scheduled time (deletion − creation when never scheduled), with its `gpu_spec` as a
//!   `gpu_model` constraint; with [`ImportOptions::request`] each framework states its next
//!   pod to the allocator (`"request": true`), for a placement module to place;
//! * with [`ImportOptions::gangs`], pods that look like one job's tasks — the same QoS class,
//!   created in the same second, with the same shape and GPU models — are submitted as one
//!   gang (`"gang": {"id", "size"}`), which their framework states and launches all or
//!   nothing. The trace has no job ids: this grouping is the importer's guess, and in the
//!   default pod list it finds 145 such jobs of 2 to 4 pods among 8,152 pods.
//!
//! Bad rows are reported on stderr with their line number and skipped.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

/// Import options.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// Trace seconds per simulated second (≥ 1 compresses the trace).
    pub time_scale: f64,
    /// Import at most this many pods (the first rows of the pod list).
    pub limit: Option<usize>,
    /// End the scenario this many seconds (after scaling) past the last pod's arrival, with
    /// whatever still runs or waits then (`None`: once every task that started has ended).
    pub horizon: Option<f64>,
    /// Multiplies the offered load: pods arrive this many times as often (creation times are
    /// divided by it as well as by the time scale) while each runs as long as before.
    pub load: f64,
    /// Write each node's GPUs as individual devices (`gpus[0]:1;gpus[1]:1;…`) instead of one
    /// pooled `gpus:N`.
    pub devices: bool,
    /// Mark every framework `"request": N` (0: not at all): it states its next N pods with
    /// `requestResources`.
    pub request: u32,
    /// Submit pods that look like one job's tasks (same QoS, creation second, shape and GPU
    /// models) as one gang.
    pub gangs: bool,
}

impl Default for ImportOptions {
    /// Trace time as is, every pod, pooled GPUs, no requests.
    fn default() -> Self {
        ImportOptions {
            time_scale: 1.0,
            limit: None,
            horizon: None,
            load: 1.0,
            devices: false,
            request: 0,
            gangs: false,
        }
    }
}

/// One skipped row.
#[derive(Clone, Debug, PartialEq)]
pub struct BadRow {
    /// The file.
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// Why it was skipped.
    pub reason: String,
}

impl std::fmt::Display for BadRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: skipped: {}", self.file, self.line, self.reason)
    }
}

/// The imported scenario and the rows that were skipped.
#[derive(Debug)]
pub struct Imported {
    /// The scenario JSON.
    pub scenario: Value,
    /// Skipped rows.
    pub bad_rows: Vec<BadRow>,
    /// Pods imported.
    pub pods: usize,
    /// Nodes imported.
    pub nodes: usize,
}

/// A CSV file read whole (no quoting: the trace's files have none).
pub(crate) struct Csv {
    /// The file, for messages.
    pub(crate) file: String,
    header: Vec<String>,
    /// Rows with their line numbers (1-based).
    pub(crate) rows: Vec<(usize, Vec<String>)>,
}

/// Reads a CSV file whose first line is the header.
pub(crate) fn read_csv(path: &Path) -> Result<Csv, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
    let mut lines = text.lines().enumerate();
    let header = lines
        .next()
        .map(|(_, h)| h.split(',').map(|s| s.trim().to_owned()).collect())
        .ok_or_else(|| format!("'{}' is empty", path.display()))?;
    let rows = lines
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l.split(',').map(|s| s.trim().to_owned()).collect()))
        .collect();
    Ok(Csv { file: path.display().to_string(), header, rows })
}

impl Csv {
    /// The index of a column by its header name.
    pub(crate) fn column(&self, name: &str) -> Result<usize, String> {
        self.header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| format!("'{}' has no column '{name}'", self.file))
    }
}

fn number(row: &[String], col: usize, name: &str) -> Result<f64, String> {
    let text = row.get(col).map(String::as_str).unwrap_or("");
    let v: f64 = text.parse().map_err(|_| format!("{name} '{text}' is not a number"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{name} '{text}' must be a non-negative number"));
    }
    Ok(v)
}

fn optional_number(row: &[String], col: usize, name: &str) -> Result<Option<f64>, String> {
    match row.get(col).map(String::as_str) {
        None | Some("") => Ok(None),
        Some(_) => number(row, col, name).map(Some),
    }
}

fn scalar(v: f64) -> String {
    // Three decimals, Mesos's precision, without trailing zeros.
    let s = format!("{:.3}", v);
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Imports the trace. Errors are about whole files (missing, missing columns); bad rows are
/// skipped and listed.
pub fn alibaba_gpu_v2023(
    nodes: &Path,
    pods: &Path,
    options: &ImportOptions,
) -> Result<Imported, String> {
    if !(options.time_scale.is_finite() && options.time_scale > 0.0) {
        return Err(format!("--time-scale must be a positive number, got {}", options.time_scale));
    }
    if !(options.load.is_finite() && options.load > 0.0) {
        return Err(format!("--load must be a positive number, got {}", options.load));
    }
    let mut bad_rows = Vec::new();
    let mut events = node_events(&read_csv(nodes)?, options, &mut bad_rows)?;
    let node_count = events.len();
    let p = read_csv(pods)?;
    let pods = pod_submissions(&p, options, &mut bad_rows)?;
    for role in pods.roles.keys() {
        events.push(
            json!({"op": "add_framework", "framework": format!("{role}-pods"), "roles": [role],
            "capabilities": ["MULTI_ROLE", "GPU_RESOURCES"],
            "tasks": match options.request {
                0 => json!({}),
                n => json!({"request": n}),
            }}),
        );
    }
    let pods_count = pods.submissions.len();
    play_in_time(&mut events, pods, options.horizon);
    let k = options.time_scale;
    let description = format!(
        "Alibaba GPU cluster trace v2023: {node_count} nodes, {pods_count} pods from {}, time scale {k}{}",
        Path::new(&p.file).file_name().map_or(p.file.clone(), |f| f.to_string_lossy().into_owned()),
        if options.load == 1.0 { String::new() } else { format!(", load ×{}", options.load) }
    );
    Ok(Imported {
        scenario: json!({"description": description, "config": {"allocation_interval": 1}, "events": events}),
        bad_rows,
        pods: pods_count,
        nodes: node_count,
    })
}

/// Each good row of the node list as an `add_agent` event; bad rows go to `bad_rows`.
fn node_events(
    n: &Csv,
    options: &ImportOptions,
    bad_rows: &mut Vec<BadRow>,
) -> Result<Vec<Value>, String> {
    let (sn, cpu, mem, gpu, model) = (
        n.column("sn")?,
        n.column("cpu_milli")?,
        n.column("memory_mib")?,
        n.column("gpu")?,
        n.column("model")?,
    );
    let mut events = Vec::new();
    for (line, row) in &n.rows {
        let parsed = (|| -> Result<Value, String> {
            let name = row.get(sn).filter(|s| !s.is_empty()).ok_or("empty sn")?;
            let (c, m, g) = (
                number(row, cpu, "cpu_milli")?,
                number(row, mem, "memory_mib")?,
                number(row, gpu, "gpu")?,
            );
            if c == 0.0 && m == 0.0 {
                return Err("a node with no cpu and no memory".into());
            }
            let mut resources = format!("cpus:{};mem:{}", scalar(c / 1000.0), scalar(m));
            if g > 0.0 && options.devices {
                if g.fract() != 0.0 {
                    return Err(format!("{g} GPUs cannot be written as devices"));
                }
                for id in 0..g as u64 {
                    resources.push_str(&format!(";gpus[{id}]:1"));
                }
            } else if g > 0.0 {
                resources.push_str(&format!(";gpus:{}", scalar(g)));
            }
            let mut agent = json!({"op": "add_agent", "agent": name, "resources": resources});
            if let Some(m) = row.get(model).filter(|m| !m.is_empty()) {
                agent["attributes"] = json!({"gpu_model": m});
            }
            Ok(agent)
        })();
        match parsed {
            Ok(v) => events.push(v),
            Err(reason) => bad_rows.push(BadRow { file: n.file.clone(), line: *line, reason }),
        }
    }
    Ok(events)
}

/// The pods of the pod list, each a `submit_task` at its (scaled) arrival time.
struct Submissions {
    /// (arrival, row order, the `submit_task` event).
    submissions: Vec<(f64, usize, Value)>,
    /// The QoS classes seen, each a role with one framework.
    roles: BTreeMap<String, ()>,
    /// When the last task that starts would end.
    last_end: f64,
}

/// Each good row of the pod list as a `submit_task` at its arrival; bad rows go to
/// `bad_rows`.
fn pod_submissions(
    p: &Csv,
    options: &ImportOptions,
    bad_rows: &mut Vec<BadRow>,
) -> Result<Submissions, String> {
    let k = options.time_scale;
    let arrive = k * options.load;
    let cols = [
        "name",
        "cpu_milli",
        "memory_mib",
        "num_gpu",
        "gpu_milli",
        "gpu_spec",
        "qos",
        "creation_time",
        "deletion_time",
        "scheduled_time",
    ]
    .iter()
    .map(|c| p.column(c))
    .collect::<Result<Vec<_>, _>>()?;
    let [name, cpu, mem, num_gpu, gpu_milli, gpu_spec, qos, created, deleted, scheduled] = cols[..]
    else {
        unreachable!("ten columns")
    };
    let mut out = Submissions { submissions: Vec::new(), roles: BTreeMap::new(), last_end: 0.0 };
    for (line, row) in p.rows.iter().take(options.limit.unwrap_or(usize::MAX)) {
        let parsed = (|| -> Result<(f64, Value, String), String> {
            let _ = row.get(name).filter(|s| !s.is_empty()).ok_or("empty name")?;
            let c = number(row, cpu, "cpu_milli")?;
            let m = number(row, mem, "memory_mib")?;
            let g = number(row, num_gpu, "num_gpu")?;
            let share = optional_number(row, gpu_milli, "gpu_milli")?.unwrap_or(0.0);
            let role = match row.get(qos).map(String::as_str) {
                Some(q) if !q.is_empty() => q.to_ascii_lowercase(),
                _ => return Err("empty qos".into()),
            };
            let t_create = number(row, created, "creation_time")?;
            let t_delete =
                optional_number(row, deleted, "deletion_time")?.ok_or("no deletion_time")?;
            let t_start = optional_number(row, scheduled, "scheduled_time")?.unwrap_or(t_create);
            if t_delete < t_start {
                return Err(format!("deleted ({t_delete}) before it started ({t_start})"));
            }
            let gpus = if g == 1.0 && share > 0.0 && share < 1000.0 { share / 1000.0 } else { g };
            let mut resources = format!("cpus:{};mem:{}", scalar(c / 1000.0), scalar(m));
            if gpus > 0.0 {
                resources.push_str(&format!(";gpus:{}", scalar(gpus)));
            }
            if c == 0.0 && m == 0.0 && gpus == 0.0 {
                return Err("a pod that asks for nothing".into());
            }
            let mut task = json!({"op": "submit_task", "framework": format!("{role}-pods"), "resources": resources,
                                  "duration": (t_delete - t_start) / k});
            if let Some(spec) = row.get(gpu_spec).filter(|s| !s.is_empty()) {
                let models: Vec<&str> = spec.split('|').filter(|s| !s.is_empty()).collect();
                task["constraints"] = json!({"gpu_model": models});
            }
            Ok((t_create / arrive, task, role))
        })();
        match parsed {
            Ok((at, task, role)) => {
                out.last_end = out.last_end.max(at + task["duration"].as_f64().unwrap_or(0.0));
                out.roles.insert(role, ());
                let order = out.submissions.len();
                out.submissions.push((at, order, task));
            }
            Err(reason) => bad_rows.push(BadRow { file: p.file.clone(), line: *line, reason }),
        }
    }
    if options.gangs {
        mark_gangs(&mut out.submissions);
    }
    Ok(out)
}

/// Marks the submissions that look like one job's tasks (the same arrival time, framework,
/// resources and constraints; two or more of them) as one gang each, named after the first
/// task's place in the pod list.
fn mark_gangs(submissions: &mut [(f64, usize, Value)]) {
    let key = |s: &(f64, usize, Value)| {
        (
            s.0.to_bits(),
            s.2["framework"].to_string(),
            s.2["resources"].to_string(),
            s.2["constraints"].to_string(),
        )
    };
    let mut jobs: BTreeMap<(u64, String, String, String), Vec<usize>> = BTreeMap::new();
    for (i, s) in submissions.iter().enumerate() {
        jobs.entry(key(s)).or_default().push(i);
    }
    for members in jobs.values().filter(|m| m.len() > 1) {
        let id = format!("job-{}", submissions[members[0]].1);
        for &i in members {
            submissions[i].2["gang"] = json!({"id": id, "size": members.len()});
        }
    }
}

/// Appends the submissions in arrival order, with `advance` events between them, then lets
/// every task that started finish (or stops at `horizon` after the last arrival).
fn play_in_time(events: &mut Vec<Value>, pods: Submissions, horizon: Option<f64>) {
    let Submissions { mut submissions, last_end, .. } = pods;
    submissions.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut now = 0.0;
    for (at, _, task) in submissions {
        if at > now {
            events.push(json!({"op": "advance", "seconds": at - now}));
            now = at;
        }
        events.push(task);
    }
    let end = match horizon {
        Some(h) => now + h,
        None if last_end > now => now + (last_end - now).ceil() + 1.0,
        None => now,
    };
    if end > now {
        events.push(json!({"op": "advance", "seconds": end - now}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// A node list and a pod list with one bad row each, in a directory of their own.
    fn fixture(test: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("import-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let nodes = write(
            &dir,
            "n.csv",
            "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,2,V100M16\nn1,x,1,0,\nn2,16000,65536,0,\n",
        );
        let pods = write(
            &dir,
            "p.csv",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
             p0,4000,8192,1,460,,LS,Running,100,500,200\n\
             p1,8000,16384,2,1000,V100M16|T4,BE,Running,50,1050,\n\
             p2,1000,1024,0,0,,LS,Failed,10,5,8\n",
        );
        (nodes, pods)
    }

    #[test]
    fn converts_nodes_and_pods_and_reports_bad_rows() {
        let (nodes, pods) = fixture("pooled");
        let options = ImportOptions { time_scale: 10.0, ..Default::default() };
        let out = alibaba_gpu_v2023(&nodes, &pods, &options).unwrap();
        assert_eq!((out.nodes, out.pods), (2, 2));
        assert_eq!(out.bad_rows.len(), 2);
        assert_eq!(out.bad_rows[0].line, 3);
        assert!(
            out.bad_rows[0].to_string().contains("n.csv:3: skipped: cpu_milli 'x' is not a number")
        );
        assert_eq!(out.bad_rows[1].line, 4);
        let events = out.scenario["events"].as_array().unwrap();
        assert_eq!(events[0]["resources"], "cpus:32;mem:262144;gpus:2");
        assert_eq!(events[0]["attributes"]["gpu_model"], "V100M16");
        let submits: Vec<&Value> = events.iter().filter(|e| e["op"] == "submit_task").collect();
        // Sorted by creation time: p1 (50 → 5 s) before p0 (100 → 10 s).
        assert_eq!(submits[0]["framework"], "be-pods");
        assert_eq!(submits[0]["resources"], "cpus:8;mem:16384;gpus:2");
        assert_eq!(submits[0]["duration"], 100.0, "never scheduled: deletion - creation, scaled");
        assert_eq!(submits[0]["constraints"]["gpu_model"], json!(["V100M16", "T4"]));
        assert_eq!(submits[1]["resources"], "cpus:4;mem:8192;gpus:0.46", "a GPU-sharing pod");
        assert_eq!(submits[1]["duration"], 30.0);
        let frameworks: Vec<&Value> =
            events.iter().filter(|e| e["op"] == "add_framework").collect();
        assert_eq!(frameworks.len(), 2);
    }

    #[test]
    fn devices_writes_one_gpu_entry_per_device_and_request_marks_the_frameworks() {
        let (nodes, pods) = fixture("devices");
        let options = ImportOptions { devices: true, request: 16, ..Default::default() };
        let out = alibaba_gpu_v2023(&nodes, &pods, &options).unwrap();
        let events = out.scenario["events"].as_array().unwrap();
        assert_eq!(events[0]["resources"], "cpus:32;mem:262144;gpus[0]:1;gpus[1]:1");
        assert_eq!(events[1]["resources"], "cpus:16;mem:65536", "no GPUs, no devices");
        let submit = events.iter().find(|e| e["op"] == "submit_task").unwrap();
        assert_eq!(submit["resources"], "cpus:8;mem:16384;gpus:2", "tasks still ask by count");
        for framework in events.iter().filter(|e| e["op"] == "add_framework") {
            assert_eq!(framework["tasks"], json!({"request": 16}));
        }
        let scenario = serde_json::to_string(&out.scenario).unwrap();
        let doc = allocator_sim::scenario::Document::parse(&scenario, "imported").unwrap();
        allocator_sim::allocator_scenario::AllocatorScenario::parse(&doc)
            .expect("the scenario loads");
    }

    #[test]
    fn load_brings_arrivals_closer_and_horizon_ends_the_scenario_after_the_last() {
        let (nodes, pods) = fixture("load");
        let options = ImportOptions { load: 10.0, horizon: Some(5.0), ..Default::default() };
        let out = alibaba_gpu_v2023(&nodes, &pods, &options).unwrap();
        let events = out.scenario["events"].as_array().unwrap();
        let advances: Vec<f64> = events
            .iter()
            .filter(|e| e["op"] == "advance")
            .map(|e| e["seconds"].as_f64().unwrap())
            .collect();
        // Pods created at 50 and 100 arrive at 5 and 10; durations stay 1000 and 300.
        assert_eq!(advances, [5.0, 5.0, 5.0], "to 5, to 10, then the horizon");
        let submits: Vec<&Value> = events.iter().filter(|e| e["op"] == "submit_task").collect();
        assert_eq!(submits[0]["duration"], 1000.0);
    }

    #[test]
    fn gangs_group_the_pods_of_one_qos_created_together_with_one_shape() {
        let dir = std::env::temp_dir().join(format!("import-gangs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let nodes =
            write(&dir, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,8,V100M16\n");
        let pods = write(
            &dir,
            "p.csv",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
             w0,4000,8192,1,1000,,LS,Running,100,500,100\n\
             w1,4000,8192,1,1000,,LS,Running,100,500,100\n\
             w2,4000,8192,1,1000,,LS,Running,100,500,100\n\
             other-shape,2000,8192,1,1000,,LS,Running,100,500,100\n\
             other-qos,4000,8192,1,1000,,BE,Running,100,500,100\n\
             later,4000,8192,1,1000,,LS,Running,101,500,101\n",
        );
        let options = ImportOptions { gangs: true, ..Default::default() };
        let out = alibaba_gpu_v2023(&nodes, &pods, &options).unwrap();
        let gangs: Vec<Value> = out.scenario["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["op"] == "submit_task")
            .map(|e| e["gang"].clone())
            .collect();
        let job = json!({"id": "job-0", "size": 3});
        assert_eq!(gangs, [job.clone(), job.clone(), job, Value::Null, Value::Null, Value::Null]);
        let scenario = serde_json::to_string(&out.scenario).unwrap();
        let doc = allocator_sim::scenario::Document::parse(&scenario, "imported").unwrap();
        allocator_sim::allocator_scenario::AllocatorScenario::parse(&doc)
            .expect("the scenario loads");
    }
}
