//! Real frameworks over the Mesos v1 scheduler API (SPEC 6.1): the third client of the
//! [master core](allocator_host::master), beside scenario events and simulated frameworks.
//!
//! [`MesosFrameworks`] keeps, per subscribed framework, its event stream and `Mesos-Stream-Id`,
//! its outstanding offers by offer id, its Mesos task ids and the master's, and the status
//! updates its simulated agents still wait to have acknowledged. `serve` hands it every
//! `POST /api/v1/scheduler` ([`MesosFrameworks::call`]), the master's events
//! ([`MesosFrameworks::observe`], after the observers and the simulated frameworks), and a
//! wall-clock tick ([`MesosFrameworks::tick`]) for heartbeats, update resends and failover.
//!
//! * An [`Event::Offer`] to one of its frameworks becomes an `OFFERS` event with a fresh offer
//!   id; `ACCEPT` and `DECLINE` name offer ids and become [`Command::AnswerOffer`]. An offer
//!   of a framework that is not connected goes straight back to the allocator.
//! * A launched task goes `TASK_STARTING` → `TASK_RUNNING` at once; the master finishes it
//!   after its duration ([`allocator_mesos::scheduler::TaskInfo::duration`]), and its [`Event::TaskEnded`] becomes
//!   `TASK_FINISHED` (`TASK_KILLED` after `KILL`, `TASK_LOST` when its agent goes). A task that
//!   does not fit what is left of the offers, names another agent or reuses a live task id
//!   gets `TASK_ERROR`; tasks of an `ACCEPT` naming an unknown offer get `TASK_LOST`
//!   (`TASK_DROPPED` for `PARTITION_AWARE` frameworks) with `REASON_INVALID_OFFERS`.
//! * Each task's updates carry a uuid and go out one at a time: the next only once the one
//!   before is acknowledged; an unacknowledged update is resent after 10 s, then 20 s, … (at
//!   most 10 min), as Mesos's agents do.
//! * A framework whose stream ends is deactivated and its offers go back; re-subscribing with
//!   its `framework_id` within `failover_timeout` (wall-clock seconds) keeps its tasks; after
//!   it, the framework is removed. `TEARDOWN` removes it at once. A removed framework that
//!   subscribes again with its id gets an `ERROR` event and the stream ends, as in Mesos (the
//!   last [`MAX_REMOVED`] removed are remembered).
//! * `ACCEPT`'s operations are carried out in order (`mesos/accept.rs`): `RESERVE`,
//!   `UNRESERVE`, `CREATE` and `DESTROY` convert what is left of an offer; `LAUNCH` and
//!   `LAUNCH_GROUP` place tasks. `offer_constraints` are accepted and ignored (SPEC 6.1).
//! * Every change is a [`Command`] through [`Master::apply`], which journals it (`serve
//!   --record`, plans): an answer to an offer as the `recover_resources` of what was declined.
//! * What frameworks may hold in the master is bounded ([`FrameworkLimits`]): a `FrameworkInfo`
//!   (in `SUBSCRIBE` or `UPDATE_FRAMEWORK`) larger than `--max_framework_info_bytes` as JSON
//!   is refused `400`, and a new framework beyond `--max_frameworks` known ones (connected or
//!   waiting within their failover timeout) `503`; a known framework may always fail over.

mod accept;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use allocator_api::{
    AgentId as ApiAgentId, Allocation, FrameworkCapabilities, FrameworkId as ApiFrameworkId,
    InverseOfferStatus, Resources, RoleMinAllocatable,
};

use crate::auth::{Action, Caller, Realm};
use allocator_host::master::{Applied, Command, Event, Master, TaskEnd};
use allocator_http::{Request, Response, Stream};
use allocator_mesos::scheduler::{
    self as s, Call, CallType, FrameworkCapabilityType, TaskState, TaskStatus, TaskStatusReason,
    TaskStatusSource,
};
use allocator_mesos::{
    AgentId, Attribute, Bytes, Filters, FrameworkId, OfferId, ResourceFormat, TaskId, from_mesos,
    to_mesos,
};

/// Mesos's refusal of a subscription or update that would change a framework's principal.
const PRINCIPAL_CHANGED: &str = "Changing framework's principal is not allowed";

/// The first resend of an unacknowledged update waits this long; each next one twice as long.
const RESEND_FIRST: Duration = Duration::from_secs(10);
/// The longest wait between resends.
const RESEND_MAX: Duration = Duration::from_secs(600);

/// An update waiting to be acknowledged.
struct Pending {
    status: TaskStatus,
    sent: Option<Instant>,
    backoff: Duration,
}

/// One task of a framework, by its Mesos task id.
struct TaskRecord {
    /// The master's id, while it runs.
    master: Option<u64>,
    agent: String,
    state: TaskState,
    /// Updates not yet acknowledged, oldest first (the head is the one sent).
    pending: VecDeque<Pending>,
}

/// How many removed frameworks' ids the master remembers, to refuse their re-subscription: the
/// oldest is forgotten past this (it could then subscribe again, as a new framework), so that
/// frameworks created and torn down in a loop cannot grow the master or its registry without
/// bound.
pub const MAX_REMOVED: usize = 10_000;

/// How many removed frameworks `completed_frameworks` keeps (Mesos's
/// `--max_completed_frameworks` default).
pub const MAX_COMPLETED: usize = 50;

/// What frameworks may hold in the master (`serve`'s `--max_frameworks`,
/// `--max_framework_info_bytes`, `--roles` and `--offer_timeout`): every framework's
/// `FrameworkInfo` is kept, sent in operator events and written to the registry, so the first
/// two bound the master's memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameworkLimits {
    /// Frameworks known at once (connected, or disconnected within their failover timeout);
    /// a new one beyond is refused `503`.
    pub max_frameworks: usize,
    /// Largest `FrameworkInfo`, in bytes of compact JSON; a larger one is refused `400`.
    pub max_info_bytes: usize,
    /// The only roles frameworks may subscribe in (Mesos's `--roles`); `None`: any.
    pub roles: Option<std::collections::BTreeSet<String>>,
    /// How long an offer waits for its answer before the master rescinds it and gives its
    /// resources back to the allocator (Mesos's `--offer_timeout`); `None`: for ever.
    pub offer_timeout: Option<Duration>,
}

impl Default for FrameworkLimits {
    fn default() -> FrameworkLimits {
        FrameworkLimits {
            max_frameworks: 2000,
            max_info_bytes: 32 << 10,
            roles: None,
            offer_timeout: None,
        }
    }
}

impl FrameworkLimits {
    /// `Err`: why `info` is too large, or names a role outside `--roles` (Mesos's style: a
    /// one-line reason for a `400`).
    fn check_info(&self, info: &s::FrameworkInfo) -> Result<(), String> {
        if let Some(allowed) = &self.roles
            && let Some(role) = info.effective_roles().into_iter().find(|r| !allowed.contains(r))
        {
            return Err(format!("Role '{role}' is not present in the master's --roles"));
        }
        let bytes = serde_json::to_string(info).map_or(usize::MAX, |json| json.len());
        if bytes > self.max_info_bytes {
            return Err(format!(
                "FrameworkInfo is {bytes} bytes, more than the master's limit of {} (--max_framework_info_bytes)",
                self.max_info_bytes
            ));
        }
        Ok(())
    }
}

/// A framework that subscribed over HTTP.
struct Connected {
    id: ApiFrameworkId,
    info: s::FrameworkInfo,
    /// Who it is: the principal it authenticated as, else the one its `FrameworkInfo` names.
    principal: Option<String>,
    stream: Option<Stream>,
    /// Its current `Mesos-Stream-Id`: random, fresh with each subscription.
    stream_id: String,
    /// When its stream ended (wall clock), while it is disconnected.
    disconnected: Option<Instant>,
    tasks: BTreeMap<String, TaskRecord>,
    last_heartbeat: Instant,
}

impl Connected {
    fn send(&self, event: &s::Event) {
        if let Some(stream) = &self.stream {
            let _ = stream.send(&event.to_record());
        }
    }

    fn partition_aware(&self) -> bool {
        self.info.has_capability(FrameworkCapabilityType::PartitionAware)
    }

    fn resource_format(&self) -> ResourceFormat {
        if self.info.has_capability(FrameworkCapabilityType::ReservationRefinement) {
            ResourceFormat::Refined
        } else {
            ResourceFormat::Legacy
        }
    }
}

/// An answer to a call that refuses it: status and a one-line reason.
type Refusal = (u16, String);

/// The frameworks connected over the v1 scheduler API. See the [module documentation](self).
pub struct MesosFrameworks {
    heartbeat: Duration,
    master_id: String,
    frameworks: BTreeMap<String, Connected>,
    by_master: BTreeMap<ApiFrameworkId, String>,
    /// Outstanding offers: offer id → (framework id, the master's offer).
    offers: BTreeMap<String, (String, Arc<Allocation>)>,
    /// When each outstanding offer was made (with `--offer_timeout` only).
    offered_at: BTreeMap<String, Instant>,
    /// Outstanding inverse offers: id → (framework id, agent).
    inverse: BTreeMap<String, (String, ApiAgentId)>,
    /// Frameworks removed (torn down, or past their failover timeout): they cannot come back.
    /// The last [`MAX_REMOVED`], oldest first in `removed_order`.
    removed: std::collections::BTreeSet<String>,
    removed_order: std::collections::VecDeque<String>,
    /// Counts the changes to what [`records`](Self::records) gives: the registry writes its
    /// frameworks again only when it moved.
    generation: u64,
    /// The last [`MAX_COMPLETED`] frameworks removed, as Mesos's `completed_frameworks` show
    /// them (v0 JSON, as they were when removed).
    completed: Vec<serde_json::Value>,
    next: u64,
    limits: FrameworkLimits,
}

impl MesosFrameworks {
    /// No framework yet; connected ones get a `HEARTBEAT` every `heartbeat` of wall-clock time.
    pub fn new(heartbeat: Duration) -> MesosFrameworks {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        MesosFrameworks {
            heartbeat,
            master_id: format!("{:08x}-{:04x}", (seed >> 16) as u32, std::process::id() & 0xffff),
            frameworks: BTreeMap::new(),
            by_master: BTreeMap::new(),
            offers: BTreeMap::new(),
            offered_at: BTreeMap::new(),
            inverse: BTreeMap::new(),
            removed: Default::default(),
            removed_order: Default::default(),
            generation: 0,
            completed: Vec::new(),
            next: 0,
            limits: FrameworkLimits::default(),
        }
    }

    /// `self` with `limits` on what frameworks may hold (default [`FrameworkLimits::default`]).
    pub fn with_limits(mut self, limits: FrameworkLimits) -> MesosFrameworks {
        self.limits = limits;
        self
    }

    fn fresh(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// A fresh id: the master's id, `kind` and a number (`…-O12` for offers).
    fn fresh_id(&mut self, kind: &str) -> String {
        let n = self.fresh();
        format!("{}-{kind}{n:04}", self.master_id)
    }

    /// A new framework's id: the master's id and a random UUID, so that nobody can take the
    /// ids the master will give next (a `SUBSCRIBE` may name an id of its own, as after a
    /// Mesos master failover).
    fn new_framework_id(&self) -> Result<String, String> {
        let uuid = random_uuid().map_err(|e| format!("no random framework id: {e}"))?;
        Ok(format!("{}-{uuid}", self.master_id))
    }

    /// A uuid (16 bytes, version 4 layout) for a status update.
    fn uuid(&mut self) -> Bytes {
        let n = self.fresh();
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&n.to_be_bytes());
        b[8..16].copy_from_slice(&(self.master_id.len() as u64 ^ 0x5eed_5eed).to_be_bytes());
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        Bytes(b.to_vec())
    }

    /// The `FrameworkInfo` a framework subscribed with (its id filled in), when it is one of
    /// these.
    pub fn framework_info(&self, id: ApiFrameworkId) -> Option<&s::FrameworkInfo> {
        self.frameworks.get(self.by_master.get(&id)?).map(|f| &f.info)
    }

    /// The Mesos task id of the master's task `task` of framework `id`, when it is one of
    /// these frameworks' tasks.
    pub fn task_name(&self, id: ApiFrameworkId, task: u64) -> Option<&str> {
        let f = self.frameworks.get(self.by_master.get(&id)?)?;
        f.tasks.iter().find(|(_, t)| t.master == Some(task)).map(|(n, _)| n.as_str())
    }

    /// Connected (subscribed, stream open) frameworks.
    pub fn connected(&self) -> usize {
        self.frameworks.values().filter(|f| f.disconnected.is_none()).count()
    }

    /// Answers one `POST /api/v1/scheduler` request: `SUBSCRIBE` with a stream, other calls
    /// with `202`, bad calls with `400`/`403` and a one-line reason, changing nothing.
    pub fn call(
        &mut self,
        request: Request,
        caller: Caller<'_>,
        master: &mut Master<'_>,
    ) -> Result<(), String> {
        let call = match Call::parse(&request.body).and_then(|c| c.validate().map(|()| c)) {
            Ok(call) => call,
            Err(reason) => {
                request.respond_with(Response::text(400, &reason));
                return Ok(());
            }
        };
        if call.kind == CallType::Subscribe {
            return self.subscribe(request, call, caller, master);
        }
        let fw = call.framework_id.as_ref().map(|f| f.value.clone()).unwrap_or_default();
        if let Err((status, reason)) = self.check_caller(&fw, request.header("Mesos-Stream-Id")) {
            request.respond_with(Response::text(status, &reason));
            return Ok(());
        }
        if let Err((status, reason)) = self.check_principal(&fw, &call, caller) {
            request.respond_with(Response::text(status, &reason));
            return Ok(());
        }
        if let Err(reason) = self.check(&fw, &call) {
            request.respond_with(Response::text(400, &reason));
            return Ok(());
        }
        request.respond_with(Response::empty(202));
        self.apply(&fw, call, master)
    }

    /// The caller must be subscribed, on its current stream.
    fn check_caller(&self, fw: &str, stream_id: Option<&str>) -> Result<(), Refusal> {
        let Some(f) = self.frameworks.get(fw) else {
            return Err((403, format!("Framework '{fw}' is not subscribed")));
        };
        if f.disconnected.is_some() {
            return Err((403, format!("Framework '{fw}' is not subscribed")));
        }
        match stream_id {
            None => Err((
                400,
                "All non-subscribe calls should include the 'Mesos-Stream-Id' header".into(),
            )),
            Some(id) if id != f.stream_id => Err((
                400,
                format!(
                    "The stream ID '{id}' included in this request didn't match the stream ID currently associated with framework ID {fw}"
                ),
            )),
            Some(_) => Ok(()),
        }
    }

    /// With `--authenticate_http_frameworks`, a call must come from the framework's own
    /// principal; an `UPDATE_FRAMEWORK` keeps its principal, uses valid roles only, and needs
    /// `register_frameworks` for them.
    fn check_principal(&self, fw: &str, call: &Call, caller: Caller<'_>) -> Result<(), Refusal> {
        let f = &self.frameworks[fw];
        if caller.auth.required(Realm::Frameworks) && caller.principal != f.principal.as_deref() {
            return Err((
                403,
                format!(
                    "Authenticated principal '{}' does not match the principal of framework {fw}",
                    caller.principal.unwrap_or_default()
                ),
            ));
        }
        if let Some(u) = &call.update_framework {
            let info = &u.framework_info;
            if info.principal.is_some() && info.principal != f.principal {
                return Err((403, PRINCIPAL_CHANGED.into()));
            }
            let roles = info.effective_roles();
            validate_roles(&roles).map_err(|reason| (400, reason))?;
            let roles: Vec<&str> = roles.iter().map(String::as_str).collect();
            caller
                .auth
                .authorize(Action::RegisterFrameworks, f.principal.as_deref(), &roles)
                .map_err(|denied| (403, String::from_utf8_lossy(&denied.body).into_owned()))?;
        }
        Ok(())
    }

    /// Checks that need the framework: roles it is subscribed in, acknowledgement uuids.
    fn check(&self, fw: &str, call: &Call) -> Result<(), String> {
        let f = &self.frameworks[fw];
        let roles = f.info.effective_roles();
        let named = match call.kind {
            CallType::Revive => call.revive.as_ref().map(|r| r.roles.clone()),
            CallType::Suppress => call.suppress.as_ref().map(|r| r.roles.clone()),
            _ => None,
        };
        for role in named.unwrap_or_default() {
            if !roles.contains(&role) {
                return Err(format!("Role '{role}' is not one of the framework's roles"));
            }
        }
        if let Some(ack) = &call.acknowledge
            && ack.uuid.0.len() != 16
        {
            return Err("Failed to validate scheduler::Call: Not a valid UUID".into());
        }
        if let Some(u) = &call.update_framework {
            let new_roles = u.framework_info.effective_roles();
            if new_roles.is_empty() {
                return Err("A framework needs at least one role".into());
            }
            self.limits.check_info(&u.framework_info)?;
        }
        if let Some(r) = &call.request {
            for req in &r.requests {
                from_mesos(&req.resources).map_err(|e| format!("Invalid request: {e}"))?;
            }
        }
        Ok(())
    }

    /// Applies a call that passed every check (its `202` already sent).
    fn apply(&mut self, fw: &str, call: Call, master: &mut Master<'_>) -> Result<(), String> {
        match call.kind {
            CallType::Accept => {
                let accept = call.accept.expect("validated");
                self.accept(fw, accept, master)
            }
            CallType::Decline => {
                let decline = call.decline.expect("validated");
                let refuse = Filters::refuse_seconds(decline.filters.as_ref());
                for offer in &decline.offer_ids {
                    if let Some(a) = self.take_offer(fw, &offer.value) {
                        answer(master, &a, &[], refuse)?;
                    }
                }
                Ok(())
            }
            CallType::Revive => {
                let roles = call.revive.map(|r| r.roles).unwrap_or_default();
                master
                    .apply(&Command::ReviveOffers(fw.to_owned(), roles))
                    .map(drop)
                    .map_err(String::from)
            }
            CallType::Suppress => {
                let roles = call.suppress.map(|r| r.roles).unwrap_or_default();
                master
                    .apply(&Command::SuppressOffers(fw.to_owned(), roles))
                    .map(drop)
                    .map_err(String::from)
            }
            CallType::Kill => self.kill(fw, &call.kill.expect("validated").task_id, master),
            CallType::Acknowledge => {
                let ack = call.acknowledge.expect("validated");
                self.acknowledge(fw, &ack.task_id.value, &ack.uuid);
                Ok(())
            }
            CallType::Reconcile => {
                self.reconcile(fw, &call.reconcile.expect("validated").tasks);
                Ok(())
            }
            CallType::Teardown => self.teardown(fw, master),
            CallType::UpdateFramework => {
                self.update_framework(fw, call.update_framework.expect("validated"), master)
            }
            CallType::Request => {
                let stated = &call.request.expect("validated").requests;
                let requests = stated.iter().map(request_of).collect::<Result<Vec<_>, _>>()?;
                let request = Command::RequestResources { framework: fw.to_owned(), requests };
                master.apply(&request).map(drop).map_err(String::from)
            }
            CallType::AcceptInverseOffers | CallType::DeclineInverseOffers => {
                let (reply, status) = match call.kind {
                    CallType::AcceptInverseOffers => {
                        (call.accept_inverse_offers, InverseOfferStatus::ACCEPT)
                    }
                    _ => (call.decline_inverse_offers, InverseOfferStatus::DECLINE),
                };
                let reply = reply.expect("validated");
                let refuse = Filters::refuse_seconds(reply.filters.as_ref());
                for io in &reply.inverse_offer_ids {
                    if let Some((owner, agent)) = self.inverse.get(&io.value).cloned()
                        && owner == fw
                    {
                        self.inverse.remove(&io.value);
                        master.apply(&Command::UpdateInverseOffer {
                            agent: master.agent_name(agent).to_owned(),
                            framework: fw.to_owned(),
                            status: Some(status),
                            refuse_seconds: Some(refuse),
                        })?;
                    }
                }
                Ok(())
            }
            // MESSAGE, SHUTDOWN and the operation calls: accepted, nothing to do here.
            _ => Ok(()),
        }
    }

    /// `SUBSCRIBE`: a new framework, or one re-subscribing with its id (failover). The
    /// subscription is admitted (roles, principal, ACLs), the framework added or failed over,
    /// and its stream opened.
    fn subscribe(
        &mut self,
        request: Request,
        call: Call,
        caller: Caller<'_>,
        master: &mut Master<'_>,
    ) -> Result<(), String> {
        let sub = call.subscribe.expect("validated");
        if let Err(reason) = self.limits.check_info(&sub.framework_info) {
            request.respond_with(Response::text(400, &reason));
            return Ok(());
        }
        let principal = match self.admit(&sub.framework_info, caller) {
            Ok(principal) => principal,
            Err(refusal) => {
                request.respond_with(*refusal);
                return Ok(());
            }
        };
        let info = sub.framework_info;
        if let Some(id) = info.id.as_ref().filter(|i| self.removed.contains(&i.value)) {
            // As Mesos: an ERROR event on the stream, which then ends.
            let stream = request.stream(
                200,
                vec![("Content-Type".into(), "application/json".into())],
                || {},
            );
            let message = format!("Framework {} has been removed", id.value);
            let _ = stream.send(&s::Event::error(message).to_record());
            stream.close();
            return Ok(());
        }
        let stream_id = match random_uuid() {
            Ok(id) => id,
            Err(e) => {
                request.respond_with(Response::text(503, &format!("no random stream id: {e}")));
                return Ok(());
            }
        };
        let known =
            info.id.as_ref().map(|i| i.value.clone()).filter(|i| self.frameworks.contains_key(i));
        if known.is_none() && self.frameworks.len() >= self.limits.max_frameworks {
            log::info!(
                "a new framework is refused: {} frameworks are known, the --max_frameworks limit",
                self.frameworks.len()
            );
            let reason = format!(
                "Too many frameworks: the master keeps at most {} (--max_frameworks); try again once one is removed",
                self.limits.max_frameworks
            );
            request.respond_with(Response::text(503, &reason));
            return Ok(());
        }
        let suppressed = sub.suppressed_roles;
        let added = match known {
            Some(name) => self.fail_over(name, info, principal, suppressed, master)?,
            None => {
                let name = match info.id.as_ref() {
                    Some(id) => id.value.clone(),
                    None => self.new_framework_id()?,
                };
                self.add_disconnected(&name, info, principal, suppressed, master)?.map(|()| name)
            }
        };
        match added {
            Ok(name) => self.connect(&name, request, stream_id, master),
            Err(reason) => {
                request.respond_with(Response::text(400, &reason));
                Ok(())
            }
        }
    }

    /// Whether a subscription may go ahead: the framework names a valid role, its principal
    /// is the authenticated one (if any), the ACLs let that principal register in its roles,
    /// and a failover comes from the framework's own principal. `Ok`: the framework's
    /// principal; `Err`: the answer that refuses it.
    fn admit(
        &self,
        info: &s::FrameworkInfo,
        caller: Caller<'_>,
    ) -> Result<Option<String>, Box<Response>> {
        let roles = info.effective_roles();
        if roles.is_empty() {
            return Err(Box::new(Response::text(400, "A framework needs at least one role")));
        }
        validate_roles(&roles).map_err(|reason| Box::new(Response::text(400, &reason)))?;
        let principal = match (caller.principal, info.principal.as_deref()) {
            (Some(authenticated), Some(named)) if authenticated != named => {
                let reason = format!(
                    "Authenticated principal '{authenticated}' does not match principal '{named}' set in `FrameworkInfo`"
                );
                return Err(Box::new(Response::text(400, &reason)));
            }
            (authenticated, named) => authenticated.or(named).map(str::to_owned),
        };
        let role_names: Vec<&str> = roles.iter().map(String::as_str).collect();
        caller.auth.authorize(Action::RegisterFrameworks, principal.as_deref(), &role_names)?;
        if let Some(id) = info.id.as_ref()
            && let Some(f) = self.frameworks.get(&id.value)
            && f.principal != principal
        {
            // A failover keeps the framework's principal: nobody takes over another's framework.
            log::warn!("framework {} refused a failover by another principal", id.value);
            return Err(Box::new(Response::text(403, PRINCIPAL_CHANGED)));
        }
        Ok(principal)
    }

    /// A known framework subscribing again: its new `FrameworkInfo` applies, its outstanding
    /// offers are rescinded and its old stream ends; tasks are kept. `Ok(Err(reason))`: the
    /// master refused the update (nothing changed); `Err`: a fault.
    fn fail_over(
        &mut self,
        name: String,
        info: s::FrameworkInfo,
        principal: Option<String>,
        suppressed_roles: Vec<String>,
        master: &mut Master<'_>,
    ) -> Result<Result<String, String>, String> {
        let update = master.apply(&Command::UpdateFramework {
            framework: name.clone(),
            roles: Some(info.effective_roles()),
            capabilities: Some(capabilities(&info)),
            suppressed_roles: Some(suppressed_roles),
            min_allocatable: Some(min_allocatable(&info)),
        });
        if let Err(e) = update {
            return Ok(Err(e.into()));
        }
        // Offers made to the scheduler that failed over are withdrawn.
        self.rescind_all(&name, master)?;
        let f = self.frameworks.get_mut(&name).expect("known");
        if let Some(old) = f.stream.take() {
            let _ = old.send(&s::Event::error("Framework failed over").to_record());
            old.close();
        }
        f.info = s::FrameworkInfo { id: Some(FrameworkId::new(&name)), ..info };
        f.principal = principal;
        self.generation += 1;
        Ok(Ok(name))
    }

    /// Opens framework `name`'s event stream on `request`: `SUBSCRIBED` first, then every
    /// status update not yet acknowledged; a framework that was disconnected is active again.
    fn connect(
        &mut self,
        name: &str,
        request: Request,
        stream_id: String,
        master: &mut Master<'_>,
    ) -> Result<(), String> {
        let stream = request.stream(
            200,
            vec![
                ("Content-Type".into(), "application/json".into()),
                ("Mesos-Stream-Id".into(), stream_id.clone()),
            ],
            || {},
        );
        let subscribed = s::Event::subscribed(s::Subscribed {
            framework_id: FrameworkId::new(name),
            heartbeat_interval_seconds: Some(self.heartbeat.as_secs_f64()),
            master_info: Some(s::MasterInfo {
                id: self.master_id.clone(),
                version: Some(allocator_mesos::MESOS_VERSION.into()),
                ..s::MasterInfo::default()
            }),
        });
        let _ = stream.send(&subscribed.to_record());
        let f = self.frameworks.get_mut(name).expect("added");
        f.stream = Some(stream);
        f.stream_id = stream_id;
        f.last_heartbeat = Instant::now();
        let was_disconnected = f.disconnected.take().is_some();
        log::info!("framework {name} subscribed");
        // Updates not yet acknowledged go out again on the new stream.
        self.resend_all(name);
        if was_disconnected {
            master.apply(&Command::ActivateFramework(name.to_owned()))?;
        }
        Ok(())
    }

    /// Sends the head update of every task of `fw` again, now.
    fn resend_all(&mut self, fw: &str) {
        let Some(f) = self.frameworks.get_mut(fw) else { return };
        let now = Instant::now();
        let mut events = Vec::new();
        for task in f.tasks.values_mut() {
            if let Some(p) = task.pending.front_mut() {
                p.sent = Some(now);
                events.push(s::Event::update(p.status.clone()));
            }
        }
        for e in &events {
            f.send(e);
        }
    }

    /// Queues an update of a task (sending it when nothing waits before it) and records its
    /// state. A task unknown so far (an error at launch) is recorded with it.
    fn push_update(
        &mut self,
        fw: &str,
        task: &str,
        agent: &str,
        mut status: TaskStatus,
        master_id: Option<u64>,
    ) {
        let uuid = self.uuid();
        let Some(f) = self.frameworks.get_mut(fw) else { return };
        status.uuid = Some(uuid);
        status.timestamp = Some(wall_seconds());
        let record = f.tasks.entry(task.to_owned()).or_insert_with(|| TaskRecord {
            master: master_id,
            agent: agent.to_owned(),
            state: status.state,
            pending: VecDeque::new(),
        });
        record.state = status.state;
        if status.state.is_terminal() {
            record.master = None;
        }
        let send_now = record.pending.is_empty();
        record.pending.push_back(Pending {
            status: status.clone(),
            sent: send_now.then(Instant::now),
            backoff: RESEND_FIRST,
        });
        if send_now {
            f.send(&s::Event::update(status));
        }
    }

    /// `ACKNOWLEDGE`: drops the update with that uuid (the one sent) and sends the next.
    fn acknowledge(&mut self, fw: &str, task: &str, uuid: &Bytes) {
        let Some(f) = self.frameworks.get_mut(fw) else { return };
        let Some(record) = f.tasks.get_mut(task) else { return };
        let matches = record.pending.front().is_some_and(|p| p.status.uuid.as_ref() == Some(uuid));
        if !matches {
            return;
        }
        record.pending.pop_front();
        let next = record.pending.front_mut().map(|p| {
            p.sent = Some(Instant::now());
            s::Event::update(p.status.clone())
        });
        let done = record.pending.is_empty() && record.state.is_terminal();
        if done {
            f.tasks.remove(task);
        }
        if let Some(e) = next {
            f.send(&e);
        }
    }

    /// `KILL`: a running task is killed (its `TASK_KILLED` comes with the master's event); an
    /// unknown one is answered as reconciliation answers it.
    fn kill(&mut self, fw: &str, task: &TaskId, master: &mut Master<'_>) -> Result<(), String> {
        let f = &self.frameworks[fw];
        match f.tasks.get(&task.value).and_then(|t| t.master) {
            Some(task) => {
                master.apply(&Command::KillTask { framework: f.id, task })?;
                Ok(())
            }
            None => {
                self.reconcile(fw, &[s::ReconcileTask { task_id: task.clone(), agent_id: None }]);
                Ok(())
            }
        }
    }

    /// `RECONCILE`: the latest state of each task named (of every live task when none is),
    /// without uuid, with `REASON_RECONCILIATION`; an unknown task is `TASK_LOST`
    /// (`TASK_UNKNOWN` for a `PARTITION_AWARE` framework).
    fn reconcile(&mut self, fw: &str, tasks: &[s::ReconcileTask]) {
        let Some(f) = self.frameworks.get(fw) else { return };
        let mut events = Vec::new();
        let status = |id: &str, state: TaskState, agent: Option<&str>| {
            let mut st = TaskStatus::new(TaskId::new(id), state);
            st.reason = Some(TaskStatusReason::ReasonReconciliation);
            st.source = Some(TaskStatusSource::SourceMaster);
            st.agent_id = agent.map(AgentId::new);
            st.timestamp = Some(wall_seconds());
            s::Event::update(st)
        };
        if tasks.is_empty() {
            for (id, t) in &f.tasks {
                if !t.state.is_terminal() {
                    events.push(status(id, t.state, Some(&t.agent)));
                }
            }
        } else {
            let unknown =
                if f.partition_aware() { TaskState::TaskUnknown } else { TaskState::TaskLost };
            for rt in tasks {
                events.push(match f.tasks.get(&rt.task_id.value) {
                    Some(t) => status(&rt.task_id.value, t.state, Some(&t.agent)),
                    None => status(
                        &rt.task_id.value,
                        unknown,
                        rt.agent_id.as_ref().map(|a| a.value.as_str()),
                    ),
                });
            }
        }
        for e in &events {
            f.send(e);
        }
    }

    /// `UPDATE_FRAMEWORK`: new roles, capabilities and suppressed roles; offers in roles it
    /// left are rescinded.
    fn update_framework(
        &mut self,
        fw: &str,
        sub: s::Subscribe,
        master: &mut Master<'_>,
    ) -> Result<(), String> {
        let info = sub.framework_info;
        let roles = info.effective_roles();
        let (capabilities, min_allocatable) = (capabilities(&info), min_allocatable(&info));
        master.apply(&Command::UpdateFramework {
            framework: fw.to_owned(),
            roles: Some(roles.clone()),
            capabilities: Some(capabilities),
            suppressed_roles: Some(sub.suppressed_roles.clone()),
            min_allocatable: Some(min_allocatable),
        })?;
        let gone: Vec<String> = self
            .offers
            .iter()
            .filter(|(_, (owner, a))| owner == fw && !roles.iter().any(|r| r == a.role.as_str()))
            .map(|(k, _)| k.clone())
            .collect();
        for offer in gone {
            self.rescind(&offer, master)?;
        }
        let f = self.frameworks.get_mut(fw).expect("known");
        f.info = s::FrameworkInfo { id: Some(FrameworkId::new(fw)), ..info };
        self.generation += 1;
        Ok(())
    }

    /// Rescinds every outstanding offer of framework `fw`.
    fn rescind_all(&mut self, fw: &str, master: &mut Master<'_>) -> Result<(), String> {
        let offers: Vec<String> = self
            .offers
            .iter()
            .filter(|(_, (owner, _))| *owner == fw)
            .map(|(k, _)| k.clone())
            .collect();
        for offer in offers {
            self.rescind(&offer, master)?;
        }
        Ok(())
    }

    /// Withdraws an outstanding offer: `RESCIND` to its framework, its resources back.
    fn rescind(&mut self, offer: &str, master: &mut Master<'_>) -> Result<(), String> {
        let Some((fw, a)) = self.offers.remove(offer) else { return Ok(()) };
        if let Some(f) = self.frameworks.get(&fw) {
            f.send(&s::Event::rescind(OfferId::new(offer)));
        }
        if master.agent_info(a.agent).is_some() && master.framework_info(a.framework).is_some() {
            recover(&fw, master, &a)?;
        }
        Ok(())
    }

    /// Removes a framework (`TEARDOWN`, or its failover timeout passed).
    /// Ends every framework's stream (the master is stopping); the frameworks stay known, as
    /// a master that stops does not tear them down.
    pub fn close_streams(&mut self) {
        for f in self.frameworks.values_mut() {
            if let Some(stream) = f.stream.take() {
                stream.close();
            }
        }
    }

    /// Remembers that framework `id` was removed, forgetting the oldest past [`MAX_REMOVED`].
    fn remember_removed(&mut self, id: String) {
        if self.removed.insert(id.clone()) {
            self.removed_order.push_back(id);
        }
        while self.removed_order.len() > MAX_REMOVED {
            if let Some(oldest) = self.removed_order.pop_front() {
                self.removed.remove(&oldest);
            }
        }
    }

    /// A number that changes whenever [`records`](Self::records) would give something else.
    pub fn records_generation(&self) -> u64 {
        self.generation
    }

    /// What the master's registry keeps ([`crate::master_registry`]): each framework's id,
    /// `FrameworkInfo` and principal, and the ids of those removed for good.
    pub fn records(&self) -> (Vec<crate::master_registry::FrameworkEntry>, Vec<String>) {
        let frameworks = self
            .frameworks
            .iter()
            .map(|(id, f)| crate::master_registry::FrameworkEntry {
                id: id.clone(),
                info: serde_json::to_value(&f.info).unwrap_or_default(),
                principal: f.principal.clone(),
            })
            .collect();
        (frameworks, self.removed.iter().cloned().collect())
    }

    /// Restores the registry's frameworks after a restart, as a Mesos master does after a
    /// failover: each is added inactive and disconnected, and has its `failover_timeout` from
    /// now to subscribe again with its id (it then fails over, keeping its id); past it, it is
    /// removed. Removed frameworks stay refused. An entry that cannot be read or added is
    /// skipped with a warning.
    pub fn restore(
        &mut self,
        entries: Vec<crate::master_registry::FrameworkEntry>,
        removed: Vec<String>,
        master: &mut Master<'_>,
    ) -> Result<(), String> {
        for id in removed {
            self.remember_removed(id);
        }
        self.generation += 1;
        for entry in entries {
            let info: s::FrameworkInfo = match serde_json::from_value(entry.info) {
                Ok(info) => info,
                Err(e) => {
                    log::warn!("registry: framework {}: unreadable FrameworkInfo: {e}", entry.id);
                    continue;
                }
            };
            match self.add_disconnected(&entry.id, info, entry.principal, Vec::new(), master)? {
                Ok(()) => log::info!(
                    "framework {} restored from the registry; waiting for it to subscribe",
                    entry.id
                ),
                Err(e) => log::warn!("registry: framework {} not restored: {e}", entry.id),
            }
        }
        Ok(())
    }

    /// Adds framework `name` to the master inactive, as a client of this API that has no
    /// stream yet (a subscription activates it; past its failover timeout it is removed).
    /// `Ok(Err(reason))` when the master refuses it: nothing changed.
    fn add_disconnected(
        &mut self,
        name: &str,
        info: s::FrameworkInfo,
        principal: Option<String>,
        suppressed_roles: Vec<String>,
        master: &mut Master<'_>,
    ) -> Result<Result<(), String>, String> {
        let add = Command::AddFramework {
            framework: name.to_owned(),
            roles: info.effective_roles(),
            capabilities: capabilities(&info),
            active: false,
            used: Vec::new(),
            suppressed_roles,
            min_allocatable: min_allocatable(&info),
        };
        let id = match master.apply(&add) {
            Ok(Applied::Framework(id)) => id,
            Ok(other) => return Err(format!("adding a framework gave {other:?}")),
            Err(e) => return Ok(Err(e.into())),
        };
        self.by_master.insert(id, name.to_owned());
        let connected = Connected {
            id,
            info: s::FrameworkInfo { id: Some(FrameworkId::new(name)), ..info },
            principal,
            stream: None,
            stream_id: String::new(),
            disconnected: Some(Instant::now()),
            tasks: BTreeMap::new(),
            last_heartbeat: Instant::now(),
        };
        self.frameworks.insert(name.to_owned(), connected);
        self.generation += 1;
        Ok(Ok(()))
    }

    /// The frameworks removed lately, newest last (Mesos's `completed_frameworks`).
    pub fn completed_frameworks(&self) -> &[serde_json::Value] {
        &self.completed
    }

    /// Offers outstanding to frameworks over the scheduler API.
    pub fn outstanding_offers(&self) -> usize {
        self.offers.len()
    }

    /// This master's id (the prefix of every id it gives out).
    pub fn master_id(&self) -> &str {
        &self.master_id
    }

    /// Whether `fw` is a framework of this client (subscribed, or disconnected within its
    /// failover timeout).
    pub fn knows(&self, fw: &str) -> bool {
        self.frameworks.contains_key(fw)
    }

    /// The principal of framework `fw`, if it has one.
    pub fn principal(&self, fw: &str) -> Option<&str> {
        self.frameworks.get(fw)?.principal.as_deref()
    }

    /// Removes framework `fw` (`TEARDOWN`, by itself or by an operator): its stream ends, its
    /// offers go back, and it cannot subscribe again.
    pub fn teardown(&mut self, fw: &str, master: &mut Master<'_>) -> Result<(), String> {
        let Some(id) = self.frameworks.get(fw).map(|f| f.id) else { return Ok(()) };
        if let Some(mut json) = super::endpoints::framework_json(master, Some(&*self), id, true) {
            json["active"] = false.into();
            json["connected"] = false.into();
            json["unregistered_time"] = master.now().into();
            if self.completed.len() == MAX_COMPLETED {
                self.completed.remove(0);
            }
            self.completed.push(json);
        }
        let f = self.frameworks.remove(fw).expect("present: its id was read above");
        self.offers.retain(|_, (owner, _)| owner != fw);
        self.inverse.retain(|_, (owner, _)| owner != fw);
        self.by_master.remove(&f.id);
        self.remember_removed(fw.to_owned());
        self.generation += 1;
        if let Some(stream) = &f.stream {
            stream.close();
        }
        log::info!("framework {fw} removed");
        master.apply(&Command::RemoveFramework(fw.to_owned()))?;
        Ok(())
    }

    /// Hands the master's events to the connected frameworks: offers and inverse offers (with
    /// fresh ids), task ends as status updates, rescinds of offers on removed agents.
    pub fn observe(&mut self, events: &[Event], master: &mut Master<'_>) -> Result<(), String> {
        let mut offers: BTreeMap<String, Vec<s::Offer>> = BTreeMap::new();
        let mut inverse: BTreeMap<String, Vec<s::InverseOffer>> = BTreeMap::new();
        for event in events {
            match event {
                Event::Offer(a) => {
                    let Some(fw) = self.by_master.get(&a.framework).cloned() else { continue };
                    if self.frameworks[&fw].disconnected.is_some() {
                        answer(master, a, &[], 0.0)?;
                        continue;
                    }
                    let id = self.fresh_id("O");
                    offers
                        .entry(fw.clone())
                        .or_default()
                        .push(self.mesos_offer(&fw, &id, a, master));
                    if self.limits.offer_timeout.is_some() {
                        self.offered_at.insert(id.clone(), Instant::now());
                    }
                    self.offers.insert(id, (fw, a.clone()));
                }
                Event::InverseOffer { framework, agent, unavailability } => {
                    let Some(fw) = self.by_master.get(framework).cloned() else { continue };
                    let id = self.fresh_id("I");
                    inverse.entry(fw.clone()).or_default().push(s::InverseOffer {
                        id: OfferId::new(&id),
                        framework_id: FrameworkId::new(&fw),
                        agent_id: Some(AgentId::new(master.agent_name(*agent))),
                        unavailability: mesos_unavailability(unavailability),
                        resources: Vec::new(),
                    });
                    self.inverse.insert(id, (fw, *agent));
                }
                Event::TaskEnded { task, framework, end } => {
                    self.task_ended(*task, *framework, *end);
                }
                Event::AgentRemoved(agent) => {
                    let gone: Vec<String> = self
                        .offers
                        .iter()
                        .filter(|(_, (_, a))| a.agent == *agent)
                        .map(|(k, _)| k.clone())
                        .collect();
                    for offer in gone {
                        if let Some((fw, _)) = self.offers.remove(&offer)
                            && let Some(f) = self.frameworks.get(&fw)
                        {
                            f.send(&s::Event::rescind(OfferId::new(&offer)));
                        }
                    }
                    self.inverse.retain(|_, (_, a)| a != agent);
                }
                _ => {}
            }
        }
        for (fw, list) in offers {
            self.frameworks[&fw].send(&s::Event::offers(list));
        }
        for (fw, list) in inverse {
            self.frameworks[&fw].send(&s::Event::inverse_offers(list));
        }
        Ok(())
    }

    fn mesos_offer(&self, fw: &str, id: &str, a: &Allocation, master: &Master<'_>) -> s::Offer {
        let f = &self.frameworks[fw];
        let info = master.agent_info(a.agent);
        let agent = master.agent_name(a.agent);
        s::Offer {
            id: OfferId::new(id),
            framework_id: FrameworkId::new(fw),
            agent_id: AgentId::new(agent),
            hostname: info.map_or(agent.to_owned(), |i| i.hostname.to_string()),
            resources: to_mesos(&a.resources, Some(a.role.as_str()), f.resource_format()),
            attributes: info.map_or_else(Vec::new, |i| {
                i.attributes.iter().map(|at| Attribute::text(&at.name, &at.value)).collect()
            }),
            executor_ids: Vec::new(),
            unavailability: None,
            allocation_info: Some(allocator_mesos::resource::AllocationInfo {
                role: Some(a.role.to_string()),
            }),
        }
    }

    /// A task of an HTTP framework ended in the master: its terminal update.
    fn task_ended(&mut self, task: u64, framework: ApiFrameworkId, end: TaskEnd) {
        let Some(fw) = self.by_master.get(&framework).cloned() else { return };
        let Some(f) = self.frameworks.get(&fw) else { return };
        let Some((name, agent)) = f
            .tasks
            .iter()
            .find(|(_, t)| t.master == Some(task))
            .map(|(n, t)| (n.clone(), t.agent.clone()))
        else {
            return;
        };
        let (state, reason, source) = match end {
            TaskEnd::Finished => (TaskState::TaskFinished, None, TaskStatusSource::SourceExecutor),
            TaskEnd::Killed => (TaskState::TaskKilled, None, TaskStatusSource::SourceExecutor),
            TaskEnd::AgentRemoved => (
                TaskState::TaskLost,
                Some(TaskStatusReason::ReasonAgentRemoved),
                TaskStatusSource::SourceMaster,
            ),
            TaskEnd::FrameworkRemoved => return,
            TaskEnd::ResourcesRecovered => (
                TaskState::TaskLost,
                Some(TaskStatusReason::ReasonResourcesUnknown),
                TaskStatusSource::SourceMaster,
            ),
        };
        let mut st = TaskStatus::new(TaskId::new(&name), state);
        st.reason = reason;
        st.source = Some(source);
        st.agent_id = Some(AgentId::new(&agent));
        if state == TaskState::TaskFinished {
            st.message = Some("Command exited with status 0".into());
        }
        self.push_update(&fw, &name, &agent, st, None);
    }

    /// The wall clock moved on: heartbeats, resends of unacknowledged updates, frameworks
    /// whose stream ended are deactivated (their offers go back) and, past their
    /// `failover_timeout`, removed.
    pub fn tick(&mut self, master: &mut Master<'_>) -> Result<(), String> {
        let now = Instant::now();
        let names: Vec<String> = self.frameworks.keys().cloned().collect();
        for fw in names {
            let f = self.frameworks.get_mut(&fw).expect("listed");
            if f.disconnected.is_none() && f.stream.as_ref().is_none_or(Stream::is_closed) {
                f.disconnected = Some(now);
                f.stream = None;
                log::info!("framework {fw} disconnected (its event stream ended)");
                master.apply(&Command::DeactivateFramework(fw.clone()))?;
                self.rescind_all(&fw, master)?;
                self.inverse.retain(|_, (owner, _)| *owner != fw);
            }
            let f = self.frameworks.get_mut(&fw).expect("listed");
            if let Some(since) = f.disconnected {
                let timeout = Duration::from_secs_f64(f.info.failover_timeout().clamp(0.0, 1e9));
                if now.duration_since(since) >= timeout {
                    self.teardown(&fw, master)?;
                }
                continue;
            }
            if now.duration_since(f.last_heartbeat) >= self.heartbeat {
                f.last_heartbeat = now;
                f.send(&s::Event::heartbeat());
            }
            let mut resend = Vec::new();
            for t in f.tasks.values_mut() {
                if let Some(p) = t.pending.front_mut()
                    && p.sent.is_none_or(|at| now.duration_since(at) >= p.backoff)
                {
                    if p.sent.is_some() {
                        p.backoff = (p.backoff * 2).min(RESEND_MAX);
                    }
                    p.sent = Some(now);
                    resend.push(s::Event::update(p.status.clone()));
                }
            }
            for e in &resend {
                f.send(e);
            }
        }
        self.expire_offers(now, master)
    }

    /// Rescinds the offers older than `--offer_timeout` (their resources go back to the
    /// allocator, as `recover_resources`), as Mesos's offer timeout does.
    fn expire_offers(&mut self, now: Instant, master: &mut Master<'_>) -> Result<(), String> {
        let Some(timeout) = self.limits.offer_timeout else { return Ok(()) };
        let offers = &self.offers;
        self.offered_at.retain(|id, _| offers.contains_key(id));
        let expired: Vec<String> = self
            .offered_at
            .iter()
            .filter(|(_, at)| now.duration_since(**at) >= timeout)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.offered_at.remove(&id);
            log::info!("offer {id} rescinded: not answered within --offer_timeout");
            self.rescind(&id, master)?;
        }
        Ok(())
    }
}

/// The allocator's view of a framework's Mesos capabilities (those it knows).
fn capabilities(info: &s::FrameworkInfo) -> FrameworkCapabilities {
    info.capabilities.iter().fold(FrameworkCapabilities::default(), |acc, c| {
        let name = serde_json::to_value(c.kind).ok();
        match name.as_ref().and_then(|n| n.as_str()).and_then(FrameworkCapabilities::from_name) {
            Some(cap) => acc.with(cap),
            None => acc,
        }
    })
}

/// `offer_filters.*.min_allocatable_resources` as the allocator's per-role sets.
fn min_allocatable(info: &s::FrameworkInfo) -> Vec<RoleMinAllocatable> {
    info.offer_filters
        .iter()
        .filter_map(|(role, filters)| {
            let m = filters.min_allocatable_resources.as_ref()?;
            let sets = m
                .quantities
                .iter()
                .map(|q| {
                    let text =
                        allocator_mesos::operator::QuotaConfig::quantities_text(&q.quantities);
                    text.parse().unwrap_or_default()
                })
                .collect::<Vec<allocator_api::Quantities>>();
            Some(RoleMinAllocatable { role: role.as_str().into(), sets: sets.into() })
        })
        .collect()
}

fn mesos_unavailability(u: &allocator_api::Unavailability) -> allocator_mesos::Unavailability {
    allocator_mesos::Unavailability {
        start: allocator_mesos::TimeInfo::from_secs(u.start),
        duration: u.duration.into_option().map(allocator_mesos::DurationInfo::from_secs),
    }
}

/// Seconds since the Unix epoch (status update timestamps).
fn wall_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A random version-4 UUID in its text form (`Mesos-Stream-Id`s): 122 random bits from the
/// operating system, so that nobody who can read `GET /state` can guess a framework's stream.
fn random_uuid() -> Result<String, getrandom::Error> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b)?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..]))
}

/// Mesos's role rules ([`allocator_api::roles::validate`]) for every role a framework names;
/// `Err` is the reason, in Mesos's words.
fn validate_roles(roles: &[String]) -> Result<(), String> {
    for role in roles {
        allocator_api::roles::validate(role).map_err(|e| e.mesos_message())?;
    }
    Ok(())
}

/// A framework's answer to `offer`: `tasks` launched on parts of it, the rest declined with a
/// refuse filter of `refuse_seconds`. Returns the launched tasks' master ids, in order.
fn answer(
    master: &mut Master<'_>,
    offer: &Arc<Allocation>,
    tasks: &[(Resources, Option<f64>)],
    refuse_seconds: f64,
) -> Result<Vec<u64>, String> {
    let answer =
        Command::AnswerOffer { offer: offer.clone(), tasks: tasks.to_vec(), refuse_seconds };
    match master.apply(&answer)? {
        Applied::Launched(ids) => Ok(ids),
        other => Err(format!("answering an offer gave {other:?}")),
    }
}

/// An outstanding offer of `fw` goes back to the allocator without a filter.
fn recover(fw: &str, master: &mut Master<'_>, offer: &Allocation) -> Result<(), String> {
    master
        .apply(&Command::RecoverResources {
            framework: fw.to_owned(),
            agent: master.agent_name(offer.agent).to_owned(),
            resources: Some(offer.resources.clone()),
            role: Some(offer.role.to_string()),
            refuse_seconds: None,
        })
        .map(drop)
        .map_err(String::from)
}

/// A Mesos `Request` (with this master's extensions: role, count, min_count, group,
/// constraints; see docs/requests.md) as an allocator [`Request`](allocator_api::Request).
/// `agent_id` becomes a constraint on the `agent_id` pseudo-attribute.
fn request_of(r: &s::ResourceRequest) -> Result<allocator_api::Request, String> {
    use allocator_api::{Constraint, ConstraintOp, GroupId, Request};
    let resources = from_mesos(&r.resources).map_err(|e| format!("request: {e}"))?;
    let count = r.count.unwrap_or(1);
    let mut request = Request {
        min_count: r.min_count.unwrap_or(1.min(count)),
        ..Request::tasks(r.role.as_deref().unwrap_or(""), count, resources)
    };
    if let Some(g) = r.group {
        request = request.in_group(GroupId(g));
    }
    if let Some(agent) = &r.agent_id {
        request = request.with_constraint(Constraint::is_in("agent_id", &[agent.value.as_str()]));
    }
    for c in &r.constraints {
        let op = ConstraintOp::from_name(&c.op.to_ascii_lowercase()).ok_or_else(|| {
            format!("request: constraint op '{}' is not EXISTS, NOT_EXISTS, IN or NOT_IN", c.op)
        })?;
        let values = c.values.iter().map(|v| v.as_str().into()).collect();
        request = request.with_constraint(Constraint {
            attribute: c.attribute.as_str().into(),
            op,
            values,
        });
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::{MAX_REMOVED, MesosFrameworks, request_of};
    use allocator_api::{Constraint, ConstraintOp, GroupId};
    use allocator_mesos::scheduler::ResourceRequest;

    fn mesos_request(json: serde_json::Value) -> ResourceRequest {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_mesos_request_is_one_task_of_its_resources_under_the_first_role() {
        let r = request_of(&mesos_request(serde_json::json!({"resources": [
            {"name": "cpus", "type": "SCALAR", "scalar": {"value": 2}}]})))
        .unwrap();
        assert_eq!((r.count, r.min_count, r.role.as_str()), (1, 1, ""), "the host fills the role");
        assert_eq!(r.resources.to_string(), "cpus:2");
        assert!(r.group.is_none() && r.constraints.is_empty());
    }

    #[test]
    fn the_extensions_give_role_size_group_and_constraints_and_agent_id_is_a_constraint() {
        let r = request_of(&mesos_request(serde_json::json!({
            "agent_id": {"value": "S1"},
            "resources": [{"name": "gpus", "type": "SCALAR", "scalar": {"value": 1}}],
            "role": "ml", "count": 4, "min_count": 4, "group": 7,
            "constraints": [{"attribute": "gpu_model", "op": "IN", "values": ["V100M16"]}]})))
        .unwrap();
        assert_eq!((r.count, r.min_count, r.role.as_str()), (4, 4, "ml"));
        assert!(r.is_gang());
        assert_eq!(r.group.into_option(), Some(GroupId(7)));
        assert_eq!(
            r.constraints.to_vec(),
            [
                Constraint::is_in("agent_id", &["S1"]),
                Constraint { op: ConstraintOp::IN, ..Constraint::is_in("gpu_model", &["V100M16"]) }
            ]
        );
    }

    #[test]
    fn an_unknown_constraint_operator_is_refused_with_its_name() {
        let e = request_of(&mesos_request(serde_json::json!({
            "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1}}],
            "constraints": [{"attribute": "zone", "op": "LIKE"}]})))
        .unwrap_err();
        assert!(e.contains("'LIKE'"), "{e}");
    }

    #[test]
    fn only_the_last_removed_frameworks_are_remembered() {
        let mut frameworks = MesosFrameworks::new(std::time::Duration::from_secs(15));
        for i in 0..MAX_REMOVED + 5 {
            frameworks.remember_removed(format!("fw-{i}"));
        }
        assert_eq!(frameworks.removed.len(), MAX_REMOVED);
        assert!(!frameworks.removed.contains("fw-4"), "the oldest are forgotten");
        assert!(frameworks.removed.contains("fw-5") && frameworks.removed.contains("fw-10004"));
        frameworks.remember_removed("fw-10004".into());
        assert_eq!(frameworks.removed_order.len(), MAX_REMOVED, "a repeat is not counted twice");
    }
}
