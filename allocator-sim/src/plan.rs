//! What-if (issue 24): the offers and shares the next allocation run would make after a change
//! (quota, weights, sorters, an agent going into maintenance or away, a framework's
//! suppression), and the difference from what it will make without it — changing nothing.
//!
//! A plan forks the master by replaying: a fresh [`Driver`] applies the same events the
//! live one applied (a recording replays to the same offers, SPEC 6.3), so the fork holds the
//! same allocator state — refuse filters, sorter state, the random sorter's generator — and
//! then the change. Each fork runs until its next periodic allocation run has been made; the
//! offers made from the change until then (an event-triggered run included) are the
//! prediction. Applying the change to the real master at the same instant makes exactly the
//! predicted offers.

use std::collections::{BTreeMap, BTreeSet};

use allocator_host::registry::ModuleRegistry;
use serde_json::{Map, Value, json};

use crate::allocator_scenario::{AllocatorScenario, Op};
use crate::clients::scenario::{Offers, offers_by_key_json};
use crate::driver::Driver;
use crate::output::EventStream;
use crate::scenario::Document;
use allocator_host::master::Setup;
use allocator_host::master::{Command, Master};

/// What one fork did up to and including its next periodic allocation run.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// The offers made.
    pub offers: Offers,
    /// Each role's dominant share after that run (the host's ledger).
    pub shares: BTreeMap<String, f64>,
}

/// A change's predicted effect.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The virtual time the change is applied at.
    pub at: f64,
    /// The time of the next periodic allocation run.
    pub next_run: f64,
    /// Without the change.
    pub without: Prediction,
    /// With the change.
    pub with_change: Prediction,
}

/// The events a plan may change, by scenario op name.
pub const CHANGES: &[&str] = &[
    "update_quota",
    "update_weights",
    "set_sorters",
    "update_unavailability",
    "remove_agent",
    "deactivate_agent",
    "activate_agent",
    "suppress_offers",
    "revive_offers",
    "update_whitelist",
];

/// Parses a change: one scenario event (SPEC section 4.1) among [`CHANGES`].
pub fn parse_change(text: &str) -> Result<Command, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("the change is not valid JSON: {e}"))?;
    let op = value.get("op").and_then(Value::as_str).unwrap_or_default().to_owned();
    if !CHANGES.contains(&op.as_str()) {
        let got = match value.get("op") {
            Some(op) => format!("\"op\": {op}"),
            None => "no \"op\"".to_owned(),
        };
        return Err(format!(
            "a change is one scenario event with \"op\" among {}; got {got}",
            CHANGES.join(", ")
        ));
    }
    let mut root = Map::new();
    root.insert("events".into(), Value::Array(vec![value]));
    let doc = Document { file: "<change>".into(), root };
    let mut scenario = AllocatorScenario::parse(&doc).map_err(|e| e.to_string())?;
    match scenario.events.pop().map(|(_, op)| op) {
        Some(Op::Command(command)) => Ok(command),
        _ => Err(format!("'{op}' is not a change to the cluster")),
    }
}

/// The events of `scenario` up to virtual time `at`, with the clock advanced to `at` (events at
/// `at` itself are included).
pub fn history_until(scenario: &AllocatorScenario, at: f64) -> Vec<Op> {
    let interval = scenario.config.allocation_interval.unwrap_or(1.0);
    let mut now = 0.0;
    let mut ops = Vec::new();
    for (_, op) in &scenario.events {
        let step = match op {
            Op::Advance(s) => *s,
            Op::Tick => interval,
            Op::ExpectOffers(_) | Op::ExpectInverseOffers(_) | Op::ExpectTasks { .. } => continue,
            Op::Command(_) | Op::Play { .. } | Op::SubmitTask { .. } => 0.0,
        };
        if now + step > at + 1e-9 {
            break;
        }
        now += step;
        ops.push(op.clone());
    }
    if at > now {
        ops.push(Op::Advance(at - now));
    }
    ops
}

/// One fork: replays `history`, applies `change` (if any), and runs to the next periodic run.
fn fork(
    registry: &ModuleRegistry,
    setup: &Setup,
    history: &[Op],
    change: Option<&Command>,
) -> Result<(Prediction, f64, f64), String> {
    let mut driver = Driver::new(registry, setup.clone(), "<plan>")?;
    let mut out = EventStream::sink();
    for (index, op) in history.iter().enumerate() {
        driver.apply(index, op, &mut out)?;
    }
    let at = driver.master().now();
    driver.set_offer_tracking(true);
    if let Some(change) = change {
        driver.command(change, &mut out)?;
    }
    let next_run = driver.master().next_periodic();
    driver.advance(next_run - driver.master().now(), &mut out)?;
    let offers = driver.take_offers();
    let master = driver.master();
    let mut roles: BTreeSet<&String> = master.role_alloc().keys().collect();
    roles.extend(master.weights().keys());
    let shares = roles.into_iter().map(|r| (r.clone(), master.role_share(r))).collect();
    Ok((Prediction { offers, shares }, at, next_run))
}

/// What the live master applied so far, from its journal (which it must keep:
/// [`Driver::keep_history`]), as the scenario events a plan replays.
pub fn history(master: &Master<'_>) -> Result<Vec<Op>, String> {
    master.journal_entries()?.into_iter().map(Op::try_from).collect()
}

/// Predicts `change` applied to the live master `driver` now, from its journal, against not
/// applying it; changes nothing in `driver`. (`serve` makes its plans on planner threads from
/// the same [`history`], in `allocator-master`'s planner.)
pub fn plan_live(driver: &Driver<'_>, change: &Command) -> Result<Plan, String> {
    plan(driver.master().registry(), driver.initial_setup(), &history(driver.master())?, change)
}

/// Predicts `change` applied after `history` (the events the master applied so far, in order),
/// against not applying it. Nothing outside the two forks changes.
pub fn plan(
    registry: &ModuleRegistry,
    setup: &Setup,
    history: &[Op],
    change: &Command,
) -> Result<Plan, String> {
    let (without, at, next_run) = fork(registry, setup, history, None)?;
    let (with_change, _, _) =
        fork(registry, setup, history, Some(change)).map_err(|e| format!("the change: {e}"))?;
    Ok(Plan { at, next_run, without, with_change })
}

impl Plan {
    /// Keeps only the offers whose (framework, role) `offer` keeps and the shares of the roles
    /// `role` keeps: what a reader may see of the plan.
    pub fn retain(&mut self, offer: impl Fn(&str, &str) -> bool, role: impl Fn(&str) -> bool) {
        for p in [&mut self.without, &mut self.with_change] {
            p.offers.retain(|(f, r, _), _| offer(f, r));
            p.shares.retain(|r, _| role(r));
        }
    }

    /// Offers made with the change and not without it (or with other resources), and the
    /// reverse.
    pub fn difference(&self) -> (Offers, Offers) {
        let only = |a: &Offers, b: &Offers| -> Offers {
            a.iter()
                .filter(|(k, v)| b.get(*k) != Some(*v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        (
            only(&self.with_change.offers, &self.without.offers),
            only(&self.without.offers, &self.with_change.offers),
        )
    }

    /// The plan as JSON: both predictions, their difference, and each role's share.
    pub fn to_json(&self) -> Value {
        let (added, removed) = self.difference();
        let mut shares = Map::new();
        let roles: BTreeSet<&String> =
            self.without.shares.keys().chain(self.with_change.shares.keys()).collect();
        for role in roles {
            let get = |p: &Prediction| p.shares.get(role).copied().unwrap_or(0.0);
            shares.insert(
                role.clone(),
                json!({"without": get(&self.without), "with_change": get(&self.with_change)}),
            );
        }
        json!({"at": self.at, "next_allocation_run": self.next_run,
               "offers": {"without": offers_by_key_json(&self.without.offers),
                          "with_change": offers_by_key_json(&self.with_change.offers)},
               "difference": {"only_with_change": offers_by_key_json(&added),
                              "only_without": offers_by_key_json(&removed)},
               "shares": shares})
    }

    /// The plan for a person: the difference in offers and the shares that change.
    pub fn to_text(&self) -> String {
        let (added, removed) = self.difference();
        let mut text = format!(
            "plan at {:.3} s, through the next allocation run at {:.3} s: {} offers without the change, {} with it\n",
            self.at,
            self.next_run,
            self.without.offers.len(),
            self.with_change.offers.len()
        );
        if added.is_empty() && removed.is_empty() {
            text.push_str("the change makes no difference to the offers\n");
        }
        const SHOWN: usize = 10;
        for (sign, list, what) in
            [("+", &added, "only with the change"), ("-", &removed, "only without it")]
        {
            if !list.is_empty() {
                text.push_str(&format!("{} offers {what}:\n", list.len()));
            }
            for ((f, r, a), res) in list.iter().take(SHOWN) {
                text.push_str(&format!("  {sign} {f} ({r}) on {a}: {res}\n"));
            }
            if list.len() > SHOWN {
                text.push_str(&format!(
                    "  … and {} more (--json lists them all)\n",
                    list.len() - SHOWN
                ));
            }
        }
        for (role, before) in &self.without.shares {
            let after = self.with_change.shares.get(role).copied().unwrap_or(0.0);
            if (after - before).abs() > 1e-9 {
                text.push_str(&format!("  share of {role}: {before:.4} -> {after:.4}\n"));
            }
        }
        text
    }
}
