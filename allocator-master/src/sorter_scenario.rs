//! Sorter scenarios (SPEC 4.2): drive one sorter, built-in or module, through its interface
//! and check expectations.

use std::collections::HashMap;

use allocator_api::{AgentId, ClientId, Quantities, RVec, Resources, Sorter, SorterConfig};
use serde_json::{Value, json};

use crate::output::EventStream;
use crate::scenario::{Document, Fields, ScenarioError};
use allocator_host::registry::ModuleRegistry;

/// Overrides from the command line (a flag wins over the file).
#[derive(Clone, Debug, Default)]
pub struct SorterOverrides {
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--fair_sharing_excluded_resource_names`.
    pub excluded: Option<Vec<String>>,
}

#[derive(Debug, Clone)]
enum Event {
    AddAgent(String, Quantities),
    RemoveAgent(String),
    Add(String),
    Remove(String),
    Activate(String),
    Deactivate(String),
    UpdateWeight(String, f64),
    Allocated(String, String, Resources),
    Unallocated(String, String, Resources),
    Update(String, String, Resources, Resources),
    ExpectSortOrder(Vec<String>),
    ExpectSortSet(Vec<String>),
    ExpectContains(String, bool),
    ExpectCount(u64),
    ExpectAllocation(String, Quantities),
    ExpectDistribution { runs: u64, tolerance: f64, probabilities: Vec<(String, Vec<f64>)> },
}

/// A parsed sorter scenario.
#[derive(Debug, Clone)]
pub struct SorterScenario {
    /// The sorter's name.
    pub sorter: String,
    /// The sorter configuration (after overrides).
    pub config: SorterConfig,
    events: Vec<(String, Event)>,
}

/// The outcome of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SorterOutcome {
    /// Expectations that held.
    pub passed: usize,
    /// Expectations that failed, each as a readable diff.
    pub failures: Vec<String>,
}

/// A failure while running (a call the sorter refused or a module fault).
#[derive(Debug, thiserror::Error)]
#[error("scenario '{file}': {location}: sorter '{sorter}' failed: {message}")]
pub struct SorterRunError {
    file: String,
    location: String,
    sorter: String,
    message: String,
}

impl SorterScenario {
    /// Parses a sorter scenario document.
    pub fn parse(
        doc: &Document,
        overrides: &SorterOverrides,
    ) -> Result<SorterScenario, ScenarioError> {
        doc.check_keys(&["sorter", "config", "events", "description"])?;
        let sorter = match doc.root.get("sorter") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(doc.error(Some("sorter"), "expected a sorter name")),
        };
        let cfg = doc.config()?;
        cfg.check_keys(&["fair_sharing_excluded_resource_names", "seed"])?;
        let mut config = SorterConfig::default();
        if let Some(list) = cfg.opt_str_list("fair_sharing_excluded_resource_names")? {
            config.fairness_excluded_resource_names = list.into_iter().map(Into::into).collect();
        }
        config.seed = cfg.opt_u64("seed")?.unwrap_or(0);
        if let Some(seed) = overrides.seed {
            config.seed = seed;
        }
        if let Some(ex) = &overrides.excluded {
            config.fairness_excluded_resource_names =
                ex.iter().map(|s| s.as_str().into()).collect();
        }
        let mut events = Vec::new();
        for f in doc.events()? {
            events.push((f.location.clone(), parse_event(&f)?));
        }
        Ok(SorterScenario { sorter, config, events })
    }

    /// Runs the scenario against the sorter named in it.
    pub fn run(
        &self,
        registry: &ModuleRegistry,
        file: &str,
        out: &mut EventStream,
    ) -> Result<SorterOutcome, Box<dyn std::error::Error>> {
        let mut sorter =
            registry.create_sorter(&self.sorter, "the scenario's \"sorter\"", &self.config)?;
        log::info!("sorter scenario '{}': using {}", file, registry.describe_sorter(&self.sorter));
        let mut ids = Ids::default();
        let mut outcome = SorterOutcome { passed: 0, failures: Vec::new() };
        let mut buf = RVec::new();
        for (index, (location, event)) in self.events.iter().enumerate() {
            let fail = |e: allocator_api::ModuleError| SorterRunError {
                file: file.to_owned(),
                location: location.clone(),
                sorter: self.sorter.clone(),
                message: e.to_string(),
            };
            match event {
                Event::AddAgent(a, q) => sorter.add_agent(ids.agent(a), q).map_err(fail)?,
                Event::RemoveAgent(a) => sorter.remove_agent(ids.agent(a)).map_err(fail)?,
                Event::Add(c) => sorter.add(ids.client(c), c).map_err(fail)?,
                Event::Remove(c) => sorter.remove(ids.client(c)).map_err(fail)?,
                Event::Activate(c) => sorter.activate(ids.client(c)).map_err(fail)?,
                Event::Deactivate(c) => sorter.deactivate(ids.client(c)).map_err(fail)?,
                Event::UpdateWeight(p, w) => sorter.update_weight(p, *w).map_err(fail)?,
                Event::Allocated(c, a, r) => {
                    sorter.allocated(ids.client(c), ids.agent(a), r).map_err(fail)?
                }
                Event::Unallocated(c, a, r) => {
                    sorter.unallocated(ids.client(c), ids.agent(a), r).map_err(fail)?
                }
                Event::Update(c, a, o, n) => {
                    sorter.update(ids.client(c), ids.agent(a), o, n).map_err(fail)?
                }
                expectation => {
                    let (ok, expected, actual) =
                        check_expectation(expectation, sorter.as_mut(), &mut ids, &mut buf)
                            .map_err(fail)?;
                    out.emit(&json!({"event": "expectation", "index": index, "ok": ok,
                                     "expected": expected, "actual": actual}));
                    if ok {
                        outcome.passed += 1;
                    } else {
                        let what = expectation_subject(expectation);
                        outcome.failures.push(format!(
                            "{location}: expectation failed: {what}\n  expected: {expected}\n  actual:   {actual}"
                        ));
                    }
                }
            }
        }
        out.emit(&json!({"event": "summary", "sorter": self.sorter,
                         "expectations": {"passed": outcome.passed, "failed": outcome.failures.len()},
                         "clients": sorter.count()}));
        out.flush();
        Ok(outcome)
    }
}

/// Names to dense handles.
#[derive(Default)]
struct Ids {
    clients: HashMap<String, ClientId>,
    agents: HashMap<String, AgentId>,
    names: Vec<String>,
}

impl Ids {
    fn client(&mut self, name: &str) -> ClientId {
        if let Some(id) = self.clients.get(name) {
            return *id;
        }
        let id = ClientId(self.names.len() as u32);
        self.names.push(name.to_owned());
        self.clients.insert(name.to_owned(), id);
        id
    }

    fn agent(&mut self, name: &str) -> AgentId {
        let next = AgentId(self.agents.len() as u32);
        *self.agents.entry(name.to_owned()).or_insert(next)
    }

    fn name(&self, id: ClientId) -> String {
        self.names.get(id.index()).cloned().unwrap_or_else(|| id.to_string())
    }
}

fn check_expectation(
    e: &Event,
    sorter: &mut dyn Sorter,
    ids: &mut Ids,
    buf: &mut RVec<ClientId>,
) -> allocator_api::Result<(bool, Value, Value)> {
    Ok(match e {
        Event::ExpectSortOrder(order) => {
            sorter.sort(buf)?;
            let actual: Vec<String> = buf.iter().map(|c| ids.name(*c)).collect();
            (actual == *order, json!(order), json!(actual))
        }
        Event::ExpectSortSet(set) => {
            sorter.sort(buf)?;
            let mut actual: Vec<String> = buf.iter().map(|c| ids.name(*c)).collect();
            actual.sort();
            let mut want = set.clone();
            want.sort();
            (actual == want, json!(want), json!(actual))
        }
        Event::ExpectContains(c, v) => {
            let has = ids.clients.get(c).is_some_and(|id| sorter.contains(*id));
            (has == *v, json!(v), json!(has))
        }
        Event::ExpectCount(n) => {
            let count = sorter.count() as u64;
            (count == *n, json!(n), json!(count))
        }
        Event::ExpectAllocation(c, q) => {
            let mut actual = Quantities::new();
            sorter.allocation_scalar_quantities(Some(ids.client(c)), &mut actual)?;
            let mut want = Quantities::new();
            for e in q.iter().filter(|e| !e.value.is_zero()) {
                want.set(e.name, e.value);
            }
            (actual == want, json!(want.to_string()), json!(actual.to_string()))
        }
        Event::ExpectDistribution { runs, tolerance, probabilities } => {
            let mut counts: HashMap<ClientId, Vec<u64>> = HashMap::new();
            for _ in 0..*runs {
                sorter.sort(buf)?;
                for (pos, c) in buf.iter().enumerate() {
                    let v = counts.entry(*c).or_default();
                    if v.len() <= pos {
                        v.resize(pos + 1, 0);
                    }
                    v[pos] += 1;
                }
            }
            let mut ok = true;
            let mut actual = serde_json::Map::new();
            for (client, probs) in probabilities {
                let id = ids.client(client);
                let freq: Vec<f64> = (0..probs.len())
                    .map(|p| {
                        counts.get(&id).and_then(|v| v.get(p)).copied().unwrap_or(0) as f64
                            / *runs as f64
                    })
                    .collect();
                ok &= freq.iter().zip(probs).all(|(f, p)| (f - p).abs() <= *tolerance);
                actual.insert(client.clone(), json!(freq));
            }
            let expected: serde_json::Map<String, Value> =
                probabilities.iter().map(|(c, p)| (c.clone(), json!(p))).collect();
            (ok, Value::Object(expected), Value::Object(actual))
        }
        _ => unreachable!("only expectations reach here"),
    })
}

/// What an expectation compares, for its failure message.
fn expectation_subject(e: &Event) -> String {
    match e {
        Event::ExpectSortOrder(_) => "the order sort returns".to_owned(),
        Event::ExpectSortSet(_) => "the clients sort returns (order ignored)".to_owned(),
        Event::ExpectContains(c, _) => format!("whether the sorter contains '{c}'"),
        Event::ExpectCount(_) => "the number of clients in the sorter".to_owned(),
        Event::ExpectAllocation(c, _) => {
            format!("the scalar quantities allocated to '{c}' over all agents")
        }
        Event::ExpectDistribution { runs, .. } => {
            format!("each client's frequency at each position over {runs} sorts")
        }
        _ => "an event that is not an expectation".to_owned(),
    }
}

fn parse_event(f: &Fields<'_>) -> Result<Event, ScenarioError> {
    let s = |k: &str| f.str(k).map(str::to_owned);
    Ok(match f.op() {
        "add_agent" => {
            f.check_keys(&["agent", "resources"])?;
            Event::AddAgent(s("agent")?, f.resources("resources")?.scalar_quantities())
        }
        "remove_agent" => {
            f.check_keys(&["agent"])?;
            Event::RemoveAgent(s("agent")?)
        }
        op @ ("add" | "remove" | "activate" | "deactivate") => {
            f.check_keys(&["client"])?;
            let c = s("client")?;
            if op == "add" {
                allocator_api::roles::validate(&c).map_err(|e| f.error("client", e.to_string()))?;
            }
            match op {
                "add" => Event::Add(c),
                "remove" => Event::Remove(c),
                "activate" => Event::Activate(c),
                _ => Event::Deactivate(c),
            }
        }
        "update_weight" => {
            f.check_keys(&["path", "weight"])?;
            let w = f.f64("weight")?;
            if w <= 0.0 {
                return Err(f.error("weight", "must be positive"));
            }
            let path = s("path")?;
            allocator_api::roles::validate(&path).map_err(|e| f.error("path", e.to_string()))?;
            Event::UpdateWeight(path, w)
        }
        op @ ("allocated" | "unallocated") => {
            f.check_keys(&["client", "agent", "resources"])?;
            let (c, a, r) = (s("client")?, s("agent")?, f.resources("resources")?);
            if op == "allocated" { Event::Allocated(c, a, r) } else { Event::Unallocated(c, a, r) }
        }
        "update" => {
            f.check_keys(&["client", "agent", "old", "new"])?;
            Event::Update(s("client")?, s("agent")?, f.resources("old")?, f.resources("new")?)
        }
        "expect_sort" => {
            f.check_keys(&["order", "set"])?;
            match (f.opt_str_list("order")?, f.opt_str_list("set")?) {
                (Some(o), None) => {
                    Event::ExpectSortOrder(o.into_iter().map(str::to_owned).collect())
                }
                (None, Some(s)) => Event::ExpectSortSet(s.into_iter().map(str::to_owned).collect()),
                _ => return Err(f.error("order", "give exactly one of 'order' or 'set'")),
            }
        }
        "expect_contains" => {
            f.check_keys(&["client", "value"])?;
            let v = f.opt_bool("value")?.ok_or_else(|| f.error("value", "missing"))?;
            Event::ExpectContains(s("client")?, v)
        }
        "expect_count" => {
            f.check_keys(&["value"])?;
            Event::ExpectCount(f.opt_u64("value")?.ok_or_else(|| f.error("value", "missing"))?)
        }
        "expect_allocation" => {
            f.check_keys(&["client", "resources"])?;
            Event::ExpectAllocation(s("client")?, f.quantities("resources")?)
        }
        "expect_sort_distribution" => {
            f.check_keys(&["runs", "tolerance", "probabilities"])?;
            let runs = f.opt_u64("runs")?.ok_or_else(|| f.error("runs", "missing"))?;
            if runs == 0 || runs > 10_000_000 {
                return Err(f.error("runs", "must be between 1 and 10000000"));
            }
            let tolerance = f.f64("tolerance")?;
            let obj = f
                .opt_object("probabilities")?
                .ok_or_else(|| f.error("probabilities", "missing"))?;
            let mut probabilities = Vec::new();
            for (client, list) in obj {
                let Some(items) = list.as_array() else {
                    return Err(f.error(
                        "probabilities",
                        format!("'{client}': expected a list of numbers"),
                    ));
                };
                let probs = items
                    .iter()
                    .map(|v| {
                        v.as_f64().ok_or_else(|| {
                            f.error("probabilities", format!("'{client}': expected numbers"))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                probabilities.push((client.clone(), probs));
            }
            Event::ExpectDistribution { runs, tolerance, probabilities }
        }
        other => return Err(f.error("op", format!("unknown sorter scenario op '{other}'"))),
    })
}
