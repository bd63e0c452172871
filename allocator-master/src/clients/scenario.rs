//! Scenario events as a client of the [master core](crate::master): each [`Op`] that changes
//! the cluster becomes master commands ([`apply`]); the expectation events are checked against
//! what the master did ([`Expectations`]).

use std::collections::{BTreeMap, BTreeSet};

use allocator_api::{RString, Resources};
use serde_json::{Value, json};

use crate::allocator_scenario::{ExpectedOffer, Op};
use crate::clients::simulated::SimulatedFrameworks;
use crate::master::agents::NewAgent;
use crate::master::frameworks::NewFramework;
use crate::master::{Event, Master};
use crate::output::EventStream;

/// What scenario events need besides the master: the simulated frameworks (the other client),
/// and a way to deliver the master's events while the clock advances.
pub trait Recipients<'r> {
    /// Delivers every event waiting in the master's outbox to observers and clients.
    fn deliver(&mut self, master: &mut Master<'r>) -> Result<(), String>;
    /// The simulated frameworks.
    fn simulated(&mut self) -> &mut SimulatedFrameworks;
}

fn rstrings(list: &[String]) -> Vec<RString> {
    list.iter().map(|r| r.as_str().into()).collect()
}

/// Applies one scenario event that changes the cluster (every event but the expectations,
/// which [`Expectations::check`] takes). On an error the master's records are unchanged (the
/// allocator refused before anything was recorded).
pub fn apply<'r>(
    op: &Op,
    master: &mut Master<'r>,
    recipients: &mut dyn Recipients<'r>,
) -> Result<(), String> {
    match op {
        Op::AddAgent {
            agent,
            resources,
            hostname,
            capabilities,
            attributes,
            used,
            unavailability,
        } => master
            .add_agent(NewAgent {
                name: agent,
                resources,
                hostname: hostname.as_deref(),
                capabilities: *capabilities,
                attributes,
                used,
                unavailability: *unavailability,
            })
            .map(drop),
        Op::RemoveAgent(name) => master.remove_agent(master.agent_id(name)?),
        Op::ActivateAgent(name) => master.activate_agent(master.agent_id(name)?),
        Op::DeactivateAgent(name) => master.deactivate_agent(master.agent_id(name)?),
        Op::UpdateAgent { agent, resources, capabilities, attributes } => master.update_agent(
            master.agent_id(agent)?,
            resources.as_ref(),
            *capabilities,
            attributes.as_deref(),
        ),
        Op::AddResourceProvider { agent, resources, used } => {
            master.add_resource_provider(master.agent_id(agent)?, resources, used)
        }
        Op::AddFramework {
            framework,
            roles,
            capabilities,
            active,
            used,
            suppressed_roles,
            min_allocatable,
            tasks,
        } => {
            let id = master.add_framework(NewFramework {
                name: framework,
                roles,
                capabilities: *capabilities,
                active: *active,
                used,
                suppressed_roles,
                min_allocatable,
            })?;
            if let Some(spec) = tasks {
                recipients.simulated().add(id, spec.clone());
            }
            Ok(())
        }
        Op::RemoveFramework(name) => master.remove_framework(master.framework_id(name)?),
        Op::ActivateFramework(name) => master.activate_framework(master.framework_id(name)?),
        Op::DeactivateFramework(name) => master.deactivate_framework(master.framework_id(name)?),
        Op::UpdateFramework {
            framework,
            roles,
            capabilities,
            suppressed_roles,
            min_allocatable,
        } => master.update_framework(
            master.framework_id(framework)?,
            roles.as_deref(),
            *capabilities,
            suppressed_roles.as_deref(),
            min_allocatable.as_deref(),
        ),
        Op::RecoverResources { framework, agent, resources, role, refuse_seconds } => {
            recover_resources(
                master,
                framework,
                agent,
                resources.as_ref(),
                role.as_deref(),
                *refuse_seconds,
            )
        }
        Op::SuppressOffers(name, roles) => {
            master.suppress_offers(master.framework_id(name)?, &rstrings(roles))
        }
        Op::ReviveOffers(name, roles) => {
            master.revive_offers(master.framework_id(name)?, &rstrings(roles), true)
        }
        Op::UpdateQuota(role, quota) => master.update_quota(role, quota),
        Op::UpdateWeights(weights) => master.update_weights(weights),
        Op::UpdateWhitelist(hosts) => master.update_whitelist(hosts.as_deref()),
        Op::UpdateUnavailability(agent, u) => {
            master.update_unavailability(master.agent_id(agent)?, *u)
        }
        Op::UpdateInverseOffer { agent, framework, status, refuse_seconds } => master
            .update_inverse_offer(
                master.agent_id(agent)?,
                master.framework_id(framework)?,
                *status,
                *refuse_seconds,
            ),
        Op::UpdateAllocation { framework, agent, role, operations } => master.update_allocation(
            master.framework_id(framework)?,
            master.agent_id(agent)?,
            role,
            operations,
        ),
        Op::UpdateAvailable { agent, operations } => {
            master.update_available(master.agent_id(agent)?, operations)
        }
        Op::Recover { expected_agents, quotas } => master.recover(*expected_agents, quotas),
        Op::Pause => master.pause(),
        Op::Resume => master.resume(),
        Op::SetSorters { role_sorter, framework_sorter } => {
            master.set_sorters(role_sorter.as_deref(), framework_sorter.as_deref())
        }
        Op::Advance(s) => master.advance(*s, &mut |m| recipients.deliver(m)),
        Op::Tick => {
            let interval = master.allocation_interval();
            master.advance(interval, &mut |m| recipients.deliver(m))
        }
        Op::SubmitTask { framework, resources, duration, constraints } => {
            let id = master.framework_id(framework)?;
            recipients.simulated().submit(master, id, resources, *duration, constraints)
        }
        Op::ExpectOffers(_) | Op::ExpectInverseOffers(_) | Op::ExpectTasks { .. } => {
            Err("an expectation is checked by Expectations::check, not applied".into())
        }
    }
}

/// `recover_resources`: what a framework gives back on an agent. Without a role, every role it
/// holds there; without resources, all it holds (per role), otherwise the first role (in name
/// order) holding them.
fn recover_resources(
    master: &mut Master<'_>,
    framework: &str,
    agent: &str,
    resources: Option<&Resources>,
    role: Option<&str>,
    refuse_seconds: Option<f64>,
) -> Result<(), String> {
    let fw = master.framework_id(framework)?;
    let agent_id = master.agent_id(agent)?;
    let held = master.held_on(fw, agent_id);
    let held_in = |r: &str| held.get(r).cloned().unwrap_or_default();
    let roles: Vec<String> = match role {
        Some(r) => vec![r.to_owned()],
        None => held.keys().cloned().collect(),
    };
    let mut targets: Vec<(String, Resources)> = Vec::new();
    match resources {
        None => {
            for r in roles {
                let h = held_in(&r);
                if !h.is_empty() {
                    targets.push((r, h));
                }
            }
        }
        Some(res) => {
            let r = roles.into_iter().find(|r| held_in(r).contains(res)).ok_or_else(|| {
                format!(
                    "framework '{framework}' does not hold {res} on agent '{agent}'{}",
                    role.map(|r| format!(" under role '{r}'")).unwrap_or_default()
                )
            })?;
            targets.push((r, res.clone()));
        }
    }
    master.recover_resources(fw, agent_id, &targets, refuse_seconds)
}

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
    pub fn take_offers(&mut self) -> BTreeMap<(String, String, String), Resources> {
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

/// An `expect_offers` list as the scenario file writes it.
pub(crate) fn offers_json(list: &[ExpectedOffer]) -> Value {
    Value::Array(
        list.iter()
            .map(|o| json!({"framework": o.framework, "role": o.role, "agent": o.agent, "resources": o.resources.to_string()}))
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
