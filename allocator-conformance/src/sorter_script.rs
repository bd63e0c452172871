//! Sorter scripts: a sorter, built-in or module, driven through its interface one
//! [`SorterStep`] at a time, with expectations checked on the way. The sorter checks are
//! scripts; so are the sorter scenarios of `allocator-master run` (SPEC 4.2), whose parser
//! turns a scenario file into these steps.

use std::collections::HashMap;

use allocator_api::{AgentId, ClientId, ModuleError, Quantities, RVec, Resources, Sorter};
use serde_json::{Value, json};

/// One step of a sorter script: a call of the [`Sorter`] interface, named by client and agent
/// names, or an expectation about what the sorter answers.
#[derive(Debug, Clone, PartialEq)]
pub enum SorterStep {
    /// `add_agent` with the agent's scalar quantities.
    AddAgent(String, Quantities),
    /// `remove_agent`.
    RemoveAgent(String),
    /// `add` a client (a role path such as `a/b`).
    Add(String),
    /// `remove` a client.
    Remove(String),
    /// `activate` a client.
    Activate(String),
    /// `deactivate` a client.
    Deactivate(String),
    /// `update_weight` of a path.
    UpdateWeight(String, f64),
    /// `allocated`: client, agent, resources.
    Allocated(String, String, Resources),
    /// `unallocated`: client, agent, resources.
    Unallocated(String, String, Resources),
    /// `update`: client, agent, old resources, new resources.
    Update(String, String, Resources, Resources),
    /// `set_time`: the clock, in seconds (ABI 3; a sorter whose order does not depend on time
    /// ignores it).
    SetTime(f64),
    /// `sort` returns exactly these clients in this order.
    ExpectSortOrder(Vec<String>),
    /// `sort` returns exactly these clients, in any order.
    ExpectSortSet(Vec<String>),
    /// `contains` answers this for the client.
    ExpectContains(String, bool),
    /// `count` answers this.
    ExpectCount(u64),
    /// The scalar quantities allocated to the client over all agents.
    ExpectAllocation(String, Quantities),
    /// Over `runs` sorts, each client's frequency at each position is within `tolerance` of
    /// the probability given.
    ExpectDistribution {
        /// How many sorts.
        runs: u64,
        /// The largest difference allowed between a frequency and its probability.
        tolerance: f64,
        /// Per client, the probability of each position (first, second, …).
        probabilities: Vec<(String, Vec<f64>)>,
    },
}

impl SorterStep {
    /// Whether this step is an expectation rather than a call.
    pub fn is_expectation(&self) -> bool {
        matches!(
            self,
            SorterStep::ExpectSortOrder(_)
                | SorterStep::ExpectSortSet(_)
                | SorterStep::ExpectContains(..)
                | SorterStep::ExpectCount(_)
                | SorterStep::ExpectAllocation(..)
                | SorterStep::ExpectDistribution { .. }
        )
    }

    /// What an expectation compares, for its failure message.
    pub fn subject(&self) -> String {
        match self {
            SorterStep::ExpectSortOrder(_) => "the order sort returns".to_owned(),
            SorterStep::ExpectSortSet(_) => "the clients sort returns (order ignored)".to_owned(),
            SorterStep::ExpectContains(c, _) => format!("whether the sorter contains '{c}'"),
            SorterStep::ExpectCount(_) => "the number of clients in the sorter".to_owned(),
            SorterStep::ExpectAllocation(c, _) => {
                format!("the scalar quantities allocated to '{c}' over all agents")
            }
            SorterStep::ExpectDistribution { runs, .. } => {
                format!("each client's frequency at each position over {runs} sorts")
            }
            _ => "an event that is not an expectation".to_owned(),
        }
    }
}

/// An expectation's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// Whether it held.
    pub ok: bool,
    /// What was expected, as JSON (a list of clients, a number, resource text…).
    pub expected: Value,
    /// What the sorter answered, in the same shape.
    pub actual: Value,
}

/// A sorter call failed: the step's index and the module's error.
#[derive(Debug)]
pub struct StepError {
    /// The index of the step in the script.
    pub index: usize,
    /// What the sorter answered.
    pub error: ModuleError,
}

/// Runs `steps` against `sorter`, calling `on_expectation` with the index and outcome of each
/// expectation. Stops at the first call the sorter refuses.
pub fn run(
    sorter: &mut dyn Sorter,
    steps: &[SorterStep],
    on_expectation: &mut dyn FnMut(usize, &Expectation),
) -> Result<(), StepError> {
    let mut ids = Ids::default();
    let mut buf = RVec::new();
    for (index, step) in steps.iter().enumerate() {
        let fail = |error| StepError { index, error };
        match step {
            SorterStep::AddAgent(a, q) => sorter.add_agent(ids.agent(a), q).map_err(fail)?,
            SorterStep::RemoveAgent(a) => sorter.remove_agent(ids.agent(a)).map_err(fail)?,
            SorterStep::Add(c) => sorter.add(ids.client(c), c).map_err(fail)?,
            SorterStep::Remove(c) => sorter.remove(ids.client(c)).map_err(fail)?,
            SorterStep::Activate(c) => sorter.activate(ids.client(c)).map_err(fail)?,
            SorterStep::Deactivate(c) => sorter.deactivate(ids.client(c)).map_err(fail)?,
            SorterStep::UpdateWeight(p, w) => sorter.update_weight(p, *w).map_err(fail)?,
            SorterStep::Allocated(c, a, r) => {
                sorter.allocated(ids.client(c), ids.agent(a), r).map_err(fail)?
            }
            SorterStep::Unallocated(c, a, r) => {
                sorter.unallocated(ids.client(c), ids.agent(a), r).map_err(fail)?
            }
            SorterStep::Update(c, a, o, n) => {
                sorter.update(ids.client(c), ids.agent(a), o, n).map_err(fail)?
            }
            SorterStep::SetTime(t) => sorter.set_time(*t).map_err(fail)?,
            expectation => {
                let outcome = check(expectation, sorter, &mut ids, &mut buf).map_err(fail)?;
                on_expectation(index, &outcome);
            }
        }
    }
    Ok(())
}

/// Names to dense handles, in order of first use.
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

fn check(
    e: &SorterStep,
    sorter: &mut dyn Sorter,
    ids: &mut Ids,
    buf: &mut RVec<ClientId>,
) -> allocator_api::Result<Expectation> {
    let (ok, expected, actual) = match e {
        SorterStep::ExpectSortOrder(order) => {
            sorter.sort(buf)?;
            let actual: Vec<String> = buf.iter().map(|c| ids.name(*c)).collect();
            (actual == *order, json!(order), json!(actual))
        }
        SorterStep::ExpectSortSet(set) => {
            sorter.sort(buf)?;
            let mut actual: Vec<String> = buf.iter().map(|c| ids.name(*c)).collect();
            actual.sort();
            let mut want = set.clone();
            want.sort();
            (actual == want, json!(want), json!(actual))
        }
        SorterStep::ExpectContains(c, v) => {
            let has = ids.clients.get(c).is_some_and(|id| sorter.contains(*id));
            (has == *v, json!(v), json!(has))
        }
        SorterStep::ExpectCount(n) => {
            let count = sorter.count() as u64;
            (count == *n, json!(n), json!(count))
        }
        SorterStep::ExpectAllocation(c, q) => {
            let mut actual = Quantities::new();
            sorter.allocation_scalar_quantities(Some(ids.client(c)), &mut actual)?;
            let mut want = Quantities::new();
            for e in q.iter().filter(|e| !e.value.is_zero()) {
                want.set(e.name, e.value);
            }
            (actual == want, json!(want.to_string()), json!(actual.to_string()))
        }
        SorterStep::ExpectDistribution { runs, tolerance, probabilities } => {
            distribution(sorter, ids, buf, *runs, *tolerance, probabilities)?
        }
        call => {
            return Err(ModuleError::failed(format!("{call:?} is a call, not an expectation")));
        }
    };
    Ok(Expectation { ok, expected, actual })
}

fn distribution(
    sorter: &mut dyn Sorter,
    ids: &mut Ids,
    buf: &mut RVec<ClientId>,
    runs: u64,
    tolerance: f64,
    probabilities: &[(String, Vec<f64>)],
) -> allocator_api::Result<(bool, Value, Value)> {
    let mut counts: HashMap<ClientId, Vec<u64>> = HashMap::new();
    for _ in 0..runs {
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
                counts.get(&id).and_then(|v| v.get(p)).copied().unwrap_or(0) as f64 / runs as f64
            })
            .collect();
        ok &= freq.iter().zip(probs).all(|(f, p)| (f - p).abs() <= tolerance);
        actual.insert(client.clone(), json!(freq));
    }
    let expected: serde_json::Map<String, Value> =
        probabilities.iter().map(|(c, p)| (c.clone(), json!(p))).collect();
    Ok((ok, Value::Object(expected), Value::Object(actual)))
}
