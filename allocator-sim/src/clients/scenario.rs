//! Scenario events as a client of the [master core](allocator_host::master): an [`Op`] is a
//! [`Command`](allocator_host::master::Command) for [`Master::apply`], a clock event for
//! [`Master::advance`], or an expectation, checked here against what the master did
//! ([`Expectations`]).

use std::collections::{BTreeMap, BTreeSet};

use allocator_api::Resources;
use serde_json::{Value, json};

use crate::allocator_scenario::print::offers_json;
use crate::allocator_scenario::{ExpectedOffer, Op};
use crate::output::EventStream;
use allocator_host::master::{Event, Master};

/// Offers by (framework, role, agent), as `expect_offers` compares them.
pub type Offers = BTreeMap<(String, String, String), Resources>;

/// The scenario's expectations: what the master offered since the last `expect_offers` (and
/// inverse offers since the last `expect_inverse_offers`), and how many held.
#[derive(Debug, Default)]
pub struct Expectations {
    file: String,
    /// Whether offers are kept for `expect_offers` (off for scenarios without one).
    track_offers: bool,
    pending_offers: BTreeMap<(String, String, String), Resources>,
    pending_inverse: BTreeSet<(String, String)>,
    passed: usize,
    failures: Vec<String>,
}

impl Expectations {
    /// Expectations of the scenario `file` (named in failure messages).
    pub fn new(file: &str) -> Expectations {
        Expectations { file: file.to_owned(), ..Expectations::default() }
    }

    /// Keeps offers for `expect_offers` (off by default: a scenario without one need not pay
    /// for it).
    pub fn set_offer_tracking(&mut self, on: bool) {
        self.track_offers = on;
    }

    /// Takes one of the master's events into account.
    pub fn observe(&mut self, event: &Event, master: &Master<'_>) {
        match event {
            Event::Offer(offer) if self.track_offers => {
                let key = (
                    master.framework_name(offer.framework).to_owned(),
                    offer.role.to_string(),
                    master.agent_name(offer.agent).to_owned(),
                );
                self.pending_offers.entry(key).or_default().add(&offer.resources);
            }
            Event::InverseOffer { framework, agent, .. } => {
                self.pending_inverse.insert((
                    master.framework_name(*framework).to_owned(),
                    master.agent_name(*agent).to_owned(),
                ));
            }
            _ => {}
        }
    }

    /// Checks an expectation event (`index` is its position), writing the `expectation` line;
    /// `Ok(false)` for an event that is not an expectation.
    pub fn check(
        &mut self,
        index: usize,
        op: &Op,
        master: &Master<'_>,
        out: &mut EventStream,
    ) -> Result<bool, String> {
        match op {
            Op::ExpectOffers(alternatives) => {
                let actual = std::mem::take(&mut self.pending_offers);
                let ok = alternatives.iter().any(|alt| offers_match(alt, &actual));
                let expected = if alternatives.len() == 1 {
                    offers_json(&alternatives[0])
                } else {
                    Value::Array(alternatives.iter().map(|a| offers_json(a)).collect())
                };
                let actual_json = offers_by_key_json(&actual);
                let what =
                    "offers made since the previous expect_offers (per framework, role and agent)";
                self.record(index, what, ok, expected, actual_json, master, out);
            }
            Op::ExpectInverseOffers(alternatives) => {
                let actual = std::mem::take(&mut self.pending_inverse);
                let ok = alternatives
                    .iter()
                    .any(|alt| alt.iter().cloned().collect::<BTreeSet<_>>() == actual);
                let to_json = |l: &mut dyn Iterator<Item = &(String, String)>| -> Value {
                    Value::Array(l.map(|(f, a)| json!({"framework": f, "agent": a})).collect())
                };
                let expected = if alternatives.len() == 1 {
                    to_json(&mut alternatives[0].iter())
                } else {
                    Value::Array(alternatives.iter().map(|a| to_json(&mut a.iter())).collect())
                };
                let actual_json = to_json(&mut actual.iter());
                let what = "inverse offers made since the previous expect_inverse_offers";
                self.record(index, what, ok, expected, actual_json, master, out);
            }
            Op::ExpectTasks { framework, running } => {
                let id = master.framework_id(framework)?;
                let count = master.tasks_of(id).count() as u64;
                let what = format!("tasks of framework '{framework}' running now");
                let (expected, actual) = (json!(running), json!(count));
                self.record(index, &what, count == *running, expected, actual, master, out);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        index: usize,
        what: &str,
        ok: bool,
        expected: Value,
        actual: Value,
        master: &Master<'_>,
        out: &mut EventStream,
    ) {
        out.emit(&json!({"event": "expectation", "index": index, "ok": ok, "expected": expected, "actual": actual}));
        if ok {
            self.passed += 1;
        } else {
            self.failures.push(format!(
                "scenario '{}': event {index}: expectation failed at time {}: {what}\n  expected: {}\n  actual:   {}",
                self.file,
                master.now(),
                pretty(&expected),
                pretty(&actual)
            ));
        }
    }

    /// The offers tracked since the last `expect_offers` (or the last call).
    pub fn take_offers(&mut self) -> Offers {
        std::mem::take(&mut self.pending_offers)
    }

    /// Expectations that held.
    pub fn passed(&self) -> usize {
        self.passed
    }

    /// Failed expectations, each as a readable diff.
    pub fn failures(&self) -> &[String] {
        &self.failures
    }
}

fn offers_match(
    expected: &[ExpectedOffer],
    actual: &BTreeMap<(String, String, String), Resources>,
) -> bool {
    let mut want: BTreeMap<(String, String, String), Resources> = BTreeMap::new();
    for e in expected {
        want.entry((e.framework.clone(), e.role.clone(), e.agent.clone()))
            .or_default()
            .add(&e.resources);
    }
    want == *actual
}

/// Offers by (framework, role, agent) as the stream and `expect_offers` write them.
pub(crate) fn offers_by_key_json(offers: &BTreeMap<(String, String, String), Resources>) -> Value {
    Value::Array(
        offers
            .iter()
            .map(|((f, r, a), res)| json!({"framework": f, "role": r, "agent": a, "resources": res.to_string()}))
            .collect(),
    )
}

fn pretty(v: &Value) -> String {
    match v {
        Value::Array(items) if items.iter().all(Value::is_object) && !items.is_empty() => {
            let lines: Vec<String> = items.iter().map(|i| format!("\n    {i}")).collect();
            lines.concat()
        }
        other => other.to_string(),
    }
}
