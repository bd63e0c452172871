//! Sorter scenarios (SPEC 4.2): drive one sorter, built-in or module, through its interface
//! and check expectations.

use allocator_api::SorterConfig;
use allocator_conformance::sorter_script::{self, SorterStep};
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

/// A parsed sorter scenario.
#[derive(Debug, Clone)]
pub struct SorterScenario {
    /// The sorter's name.
    pub sorter: String,
    /// The sorter configuration (after overrides).
    pub config: SorterConfig,
    events: Vec<(String, SorterStep)>,
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
        let mut outcome = SorterOutcome { passed: 0, failures: Vec::new() };
        let steps: Vec<SorterStep> = self.events.iter().map(|(_, step)| step.clone()).collect();
        let result = sorter_script::run(sorter.as_mut(), &steps, &mut |index, e| {
            out.emit(&json!({"event": "expectation", "index": index, "ok": e.ok,
                             "expected": e.expected, "actual": e.actual}));
            if e.ok {
                outcome.passed += 1;
            } else {
                let (location, step) = &self.events[index];
                outcome.failures.push(format!(
                    "{location}: expectation failed: {}\n  expected: {}\n  actual:   {}",
                    step.subject(),
                    e.expected,
                    e.actual
                ));
            }
        });
        if let Err(e) = result {
            return Err(Box::new(SorterRunError {
                file: file.to_owned(),
                location: self.events[e.index].0.clone(),
                sorter: self.sorter.clone(),
                message: e.error.to_string(),
            }));
        }
        out.emit(&json!({"event": "summary", "sorter": self.sorter,
                         "expectations": {"passed": outcome.passed, "failed": outcome.failures.len()},
                         "clients": sorter.count()}));
        out.flush();
        Ok(outcome)
    }
}

fn parse_event(f: &Fields<'_>) -> Result<SorterStep, ScenarioError> {
    let s = |k: &str| f.str(k).map(str::to_owned);
    Ok(match f.op() {
        "add_agent" => {
            f.check_keys(&["agent", "resources"])?;
            SorterStep::AddAgent(s("agent")?, f.resources("resources")?.scalar_quantities())
        }
        "remove_agent" => {
            f.check_keys(&["agent"])?;
            SorterStep::RemoveAgent(s("agent")?)
        }
        op @ ("add" | "remove" | "activate" | "deactivate") => {
            f.check_keys(&["client"])?;
            let c = s("client")?;
            if op == "add" {
                allocator_api::roles::validate(&c).map_err(|e| f.error("client", e.to_string()))?;
            }
            match op {
                "add" => SorterStep::Add(c),
                "remove" => SorterStep::Remove(c),
                "activate" => SorterStep::Activate(c),
                _ => SorterStep::Deactivate(c),
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
            SorterStep::UpdateWeight(path, w)
        }
        op @ ("allocated" | "unallocated") => {
            f.check_keys(&["client", "agent", "resources"])?;
            let (c, a, r) = (s("client")?, s("agent")?, f.resources("resources")?);
            if op == "allocated" {
                SorterStep::Allocated(c, a, r)
            } else {
                SorterStep::Unallocated(c, a, r)
            }
        }
        "update" => {
            f.check_keys(&["client", "agent", "old", "new"])?;
            SorterStep::Update(s("client")?, s("agent")?, f.resources("old")?, f.resources("new")?)
        }
        "set_time" => {
            f.check_keys(&["time"])?;
            let t = f.f64("time")?;
            if t < 0.0 {
                return Err(f.error("time", "must be 0 or more"));
            }
            SorterStep::SetTime(t)
        }
        "expect_sort" => {
            f.check_keys(&["order", "set"])?;
            match (f.opt_str_list("order")?, f.opt_str_list("set")?) {
                (Some(o), None) => {
                    SorterStep::ExpectSortOrder(o.into_iter().map(str::to_owned).collect())
                }
                (None, Some(s)) => {
                    SorterStep::ExpectSortSet(s.into_iter().map(str::to_owned).collect())
                }
                _ => return Err(f.error("order", "give exactly one of 'order' or 'set'")),
            }
        }
        "expect_contains" => {
            f.check_keys(&["client", "value"])?;
            let v = f.opt_bool("value")?.ok_or_else(|| f.error("value", "missing"))?;
            SorterStep::ExpectContains(s("client")?, v)
        }
        "expect_count" => {
            f.check_keys(&["value"])?;
            SorterStep::ExpectCount(f.opt_u64("value")?.ok_or_else(|| f.error("value", "missing"))?)
        }
        "expect_allocation" => {
            f.check_keys(&["client", "resources"])?;
            SorterStep::ExpectAllocation(s("client")?, f.quantities("resources")?)
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
            SorterStep::ExpectDistribution { runs, tolerance, probabilities }
        }
        other => return Err(f.error("op", format!("unknown sorter scenario op '{other}'"))),
    })
}
