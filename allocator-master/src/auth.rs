//! Authentication and authorization for `serve`, Mesos's way.
//!
//! * **Credentials** (`--credentials FILE`): Mesos's JSON, `{"credentials": [{"principal": "p",
//!   "secret": "s"}, …]}`, or its older text form, one `principal secret` pair a line.
//! * **Authentication** is HTTP Basic, as Mesos's `basic` HTTP authenticator does it, in three
//!   realms switched on by flags, each off by default (Mesos's defaults):
//!   `--authenticate_http_frameworks` (the scheduler API), `--authenticate_http_readwrite`
//!   (the operator API `POST /api/v1`, `POST /quota`, `/weights`, `/sorters`, `/plan`) and
//!   `--authenticate_http_readonly` (`GET /state`, `/metrics/snapshot`, `/explain`).
//!   `GET /version` and `/health` are never authenticated. A request to a realm that is on,
//!   without valid credentials, gets `401 Unauthorized` with `WWW-Authenticate: Basic
//!   realm="…"` and an empty body, as Mesos answers.
//! * **Authorization** (`--acls FILE`): Mesos's ACL JSON, applied as Mesos's local authorizer
//!   applies it: for an action, the first ACL whose subject (`principals`) and object match the
//!   request decides; when none matches, `permissive` (default `true`) decides. An entity is
//!   `{"values": [...]}`, `{"type": "ANY"}` or `{"type": "NONE"}`; a request without a
//!   principal is the subject `ANY`. See [`Acls::allows`] for the matching rules. A refused
//!   request gets `403 Forbidden`.
//!
//! The actions and their objects: `register_frameworks` (`roles`), `teardown_frameworks`
//! (`framework_principals`), `update_weights` and `update_quotas` (`roles`),
//! `start_maintenances`, `stop_maintenances`, `update_maintenance_schedules`,
//! `get_maintenance_schedules` and `get_maintenance_statuses` (`machines`),
//! `mark_agents_gone` (`agents`), `reserve_resources` (`roles`), `unreserve_resources`
//! (`reserver_principals`), `set_log_level` (`level`: `ANY`), `view_frameworks` and
//! `view_tasks` (`users`), `view_roles`
//! and `get_quotas` (`roles`), `view_flags` (`flags`: `ANY`), `get_endpoints` (`paths`:
//! `/metrics/snapshot`), and ours: `update_sorters`
//! (`sorters`: the sorter names) and `plan` (`roles`: `ANY`).
//!
//! **Reads are filtered by object, as Mesos filters them**: whatever shows a framework asks
//! [`Caller::sees_framework`] with the framework's user (its `FrameworkInfo.user`; a framework
//! the scenario plays has none, the empty user), a task [`Caller::sees_task`], a role or a
//! weight [`Caller::sees_role`], a quota [`Caller::sees_quota`]; what the caller may not see is
//! left out of the answer, never refused as a whole, so Mesos's deny idiom (`{"principals":
//! {"type": "ANY"}, "users": {"type": "NONE"}}`) hides every framework on every path.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use allocator_http::Response;
use allocator_mesos::base64_decode;

/// `principal → secret`, from `--credentials`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Credentials {
    secrets: BTreeMap<String, String>,
}

impl Credentials {
    /// Reads a credentials file (see the [module documentation](self)).
    pub fn load(path: &Path) -> Result<Credentials, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read --credentials '{}': {e}", path.display()))?;
        Credentials::parse(&text).map_err(|e| format!("--credentials '{}': {e}", path.display()))
    }

    /// Parses Mesos's JSON credentials or its text form.
    pub fn parse(text: &str) -> Result<Credentials, String> {
        let mut secrets = BTreeMap::new();
        if text.trim_start().starts_with('{') {
            let v: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
            let list = v
                .get("credentials")
                .and_then(Value::as_array)
                .ok_or("expected {\"credentials\": [{\"principal\": …, \"secret\": …}, …]}")?;
            for (i, c) in list.iter().enumerate() {
                let field = |name: &str| {
                    c.get(name)
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or_else(|| format!("credential {i}: missing string field \"{name}\""))
                };
                secrets.insert(field("principal")?, field("secret")?);
            }
        } else {
            for (i, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let mut words = line.split_whitespace();
                match (words.next(), words.next(), words.next()) {
                    (Some(p), Some(s), None) => {
                        secrets.insert(p.to_owned(), s.to_owned());
                    }
                    _ => return Err(format!("line {}: expected 'principal secret'", i + 1)),
                }
            }
        }
        if secrets.is_empty() {
            return Err("no credentials".into());
        }
        Ok(Credentials { secrets })
    }

    /// Whether `principal` has `secret`.
    fn check(&self, principal: &str, secret: &str) -> bool {
        // Compared in full whatever the first difference (no early exit on a prefix).
        self.secrets.get(principal).is_some_and(|s| {
            s.len() == secret.len()
                && s.bytes().zip(secret.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
        })
    }
}

/// An ACL entity: some values, anything, or nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entity {
    /// These values (Mesos's `SOME`).
    Some(Vec<String>),
    /// Anything (`{"type": "ANY"}`).
    Any,
    /// Nothing (`{"type": "NONE"}`).
    None,
}

impl Entity {
    fn parse(v: &Value, what: &str) -> Result<Entity, String> {
        let kind = v.get("type").and_then(Value::as_str);
        match kind {
            Some("ANY") => return Ok(Entity::Any),
            Some("NONE") => return Ok(Entity::None),
            Some("SOME") | None => {}
            Some(other) => return Err(format!("{what}: unknown entity type '{other}'")),
        }
        let values = match v.get("values") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|x| x.as_str().map(str::to_owned).ok_or(format!("{what}: values are strings")))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(format!("{what}: \"values\" must be a list of strings")),
        };
        Ok(Entity::Some(values))
    }

    /// Whether an ACL entity `self` matches a request entity (Mesos's local authorizer): a
    /// request `ANY` (no principal, or no object) matches an ACL `ANY` or `NONE` — which then
    /// refuses it, so that a `NONE` rule denies the requests that name nothing too.
    fn matches(&self, request: &Entity) -> bool {
        match request {
            Entity::None => *self == Entity::None,
            Entity::Any => matches!(self, Entity::Any | Entity::None),
            Entity::Some(values) => match self {
                Entity::Any | Entity::None => true,
                Entity::Some(acl) => values.iter().all(|v| acl.contains(v)),
            },
        }
    }

    /// Whether an ACL entity `self` allows a request entity it matches.
    fn allows(&self, request: &Entity) -> bool {
        match request {
            Entity::None => *self == Entity::None,
            Entity::Any => *self == Entity::Any,
            Entity::Some(values) => match self {
                Entity::Any => true,
                Entity::None => false,
                Entity::Some(acl) => values.iter().all(|v| acl.contains(v)),
            },
        }
    }
}

/// An action an ACL list governs, with the name of its object field in Mesos's JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// A framework subscribes in a role.
    RegisterFrameworks,
    /// A framework is torn down by an operator (object: the framework's principal).
    TeardownFrameworks,
    /// A role's weight changes.
    UpdateWeights,
    /// A role's quota changes.
    UpdateQuotas,
    /// A machine goes into maintenance.
    StartMaintenances,
    /// A machine comes out of maintenance.
    StopMaintenances,
    /// The maintenance schedule changes (object: its machines).
    UpdateMaintenanceSchedules,
    /// The maintenance schedule is viewed (object: each machine in it).
    GetMaintenanceSchedules,
    /// The maintenance status is viewed (object: each machine in it).
    GetMaintenanceStatuses,
    /// An agent is marked gone.
    MarkAgentsGone,
    /// A framework is viewed (object: its user).
    ViewFrameworks,
    /// A task is viewed (object: its framework's user).
    ViewTasks,
    /// A role, or its weight, is viewed.
    ViewRoles,
    /// A role's quota is viewed.
    GetQuotas,
    /// The master's flags are viewed (object: `ANY`).
    ViewFlags,
    /// An endpoint is read (object: its path).
    GetEndpoints,
    /// Resources are reserved (object: each reservation's role).
    ReserveResources,
    /// Resources are unreserved (object: each reservation's principal, `ANY` without one).
    UnreserveResources,
    /// The logging level changes (object: `ANY`).
    SetLogLevel,
    /// The sorters are swapped (ours).
    UpdateSorters,
    /// A what-if plan is made (ours).
    Plan,
}

impl Action {
    const ALL: [Action; 21] = [
        Action::RegisterFrameworks,
        Action::TeardownFrameworks,
        Action::UpdateWeights,
        Action::UpdateQuotas,
        Action::StartMaintenances,
        Action::StopMaintenances,
        Action::UpdateMaintenanceSchedules,
        Action::GetMaintenanceSchedules,
        Action::GetMaintenanceStatuses,
        Action::MarkAgentsGone,
        Action::ViewFrameworks,
        Action::ViewTasks,
        Action::ViewRoles,
        Action::GetQuotas,
        Action::ViewFlags,
        Action::GetEndpoints,
        Action::ReserveResources,
        Action::UnreserveResources,
        Action::SetLogLevel,
        Action::UpdateSorters,
        Action::Plan,
    ];

    /// The ACL list's key and its object field, as in Mesos's JSON.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            Action::RegisterFrameworks => ("register_frameworks", "roles"),
            Action::TeardownFrameworks => ("teardown_frameworks", "framework_principals"),
            Action::UpdateWeights => ("update_weights", "roles"),
            Action::UpdateQuotas => ("update_quotas", "roles"),
            Action::StartMaintenances => ("start_maintenances", "machines"),
            Action::StopMaintenances => ("stop_maintenances", "machines"),
            Action::UpdateMaintenanceSchedules => ("update_maintenance_schedules", "machines"),
            Action::GetMaintenanceSchedules => ("get_maintenance_schedules", "machines"),
            Action::GetMaintenanceStatuses => ("get_maintenance_statuses", "machines"),
            Action::MarkAgentsGone => ("mark_agents_gone", "agents"),
            Action::ViewFrameworks => ("view_frameworks", "users"),
            Action::ViewTasks => ("view_tasks", "users"),
            Action::ViewRoles => ("view_roles", "roles"),
            Action::GetQuotas => ("get_quotas", "roles"),
            Action::ViewFlags => ("view_flags", "flags"),
            Action::GetEndpoints => ("get_endpoints", "paths"),
            Action::ReserveResources => ("reserve_resources", "roles"),
            Action::UnreserveResources => ("unreserve_resources", "reserver_principals"),
            Action::SetLogLevel => ("set_log_level", "level"),
            Action::UpdateSorters => ("update_sorters", "sorters"),
            Action::Plan => ("plan", "roles"),
        }
    }
}

/// One ACL: a subject and an object.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Acl {
    principals: Entity,
    object: Entity,
}

/// The ACLs of `--acls` (see the [module documentation](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acls {
    permissive: bool,
    lists: BTreeMap<Action, Vec<Acl>>,
}

impl Default for Acls {
    /// No ACL: everything is allowed.
    fn default() -> Acls {
        Acls { permissive: true, lists: BTreeMap::new() }
    }
}

impl Acls {
    /// Reads an ACL file.
    pub fn load(path: &Path) -> Result<Acls, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read --acls '{}': {e}", path.display()))?;
        Acls::parse(&text).map_err(|e| format!("--acls '{}': {e}", path.display()))
    }

    /// Parses Mesos's ACL JSON. Keys naming actions this master does not have are refused, so
    /// that a typo does not silently allow what it meant to forbid.
    pub fn parse(text: &str) -> Result<Acls, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
        let object = v.as_object().ok_or("expected a JSON object")?;
        let mut acls = Acls::default();
        for (key, value) in object {
            if key == "permissive" {
                acls.permissive = value.as_bool().ok_or("\"permissive\" must be true or false")?;
                continue;
            }
            let action = Action::ALL
                .into_iter()
                .find(|a| a.names().0 == key)
                .ok_or_else(|| format!("unknown ACL action \"{key}\""))?;
            let (_, field) = action.names();
            let list = value.as_array().ok_or_else(|| format!("\"{key}\" must be a list"))?;
            let mut parsed = Vec::new();
            for (i, acl) in list.iter().enumerate() {
                let what = format!("{key}[{i}]");
                // A misspelt field would read as "no values" and match nothing: refused, as an
                // unknown action is.
                if let Some(fields) = acl.as_object()
                    && let Some(other) = fields.keys().find(|k| *k != "principals" && *k != field)
                {
                    return Err(format!(
                        "{what}: unknown field \"{other}\" (an ACL of {key} has \"principals\" and \"{field}\")"
                    ));
                }
                let entity = |name: &str| match acl.get(name) {
                    Some(e) => Entity::parse(e, &format!("{what}.{name}")),
                    // A missing entity is Mesos's default: SOME with no values (matches no
                    // request with a value); for our object-less actions, anything.
                    None if matches!(action, Action::UpdateSorters | Action::Plan)
                        && name != "principals" =>
                    {
                        Ok(Entity::Any)
                    }
                    None => Ok(Entity::Some(Vec::new())),
                };
                parsed.push(Acl { principals: entity("principals")?, object: entity(field)? });
            }
            acls.lists.insert(action, parsed);
        }
        Ok(acls)
    }

    /// Whether `principal` (`None`: unauthenticated, the subject `ANY`) may perform `action`
    /// on `object` (`None`: the object `ANY`). The first ACL of the action whose subject and
    /// object both match decides, by whether both allow; none matching: `permissive`.
    ///
    /// Matching, as Mesos's local authorizer: a request `ANY` matches an ACL `ANY` or `NONE`, a
    /// request `NONE` only `NONE`; a request with values matches an ACL `ANY` or `NONE`, or an
    /// ACL listing every value. A matched ACL `ANY` allows, `NONE` refuses, a list allows.
    pub fn allows(&self, action: Action, principal: Option<&str>, object: Option<&str>) -> bool {
        let subject = principal.map_or(Entity::Any, |p| Entity::Some(vec![p.to_owned()]));
        let target = object.map_or(Entity::Any, |o| Entity::Some(vec![o.to_owned()]));
        for acl in self.lists.get(&action).map(Vec::as_slice).unwrap_or_default() {
            if acl.principals.matches(&subject) && acl.object.matches(&target) {
                return acl.principals.allows(&subject) && acl.object.allows(&target);
            }
        }
        self.permissive
    }
}

/// Which flag's authentication a request needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Realm {
    /// The scheduler API (`--authenticate_http_frameworks`).
    Frameworks,
    /// Changes by operators (`--authenticate_http_readwrite`).
    ReadWrite,
    /// Reads by operators (`--authenticate_http_readonly`).
    ReadOnly,
}

impl Realm {
    /// The realm's name in `WWW-Authenticate`, as Mesos names them.
    fn name(self) -> &'static str {
        match self {
            Realm::Frameworks => "mesos-master-scheduler",
            Realm::ReadWrite => "mesos-master-readwrite",
            Realm::ReadOnly => "mesos-master-readonly",
        }
    }
}

/// What `serve` was told about authentication and authorization.
#[derive(Clone, Debug, Default)]
pub struct Auth {
    /// `--credentials`.
    pub credentials: Option<Credentials>,
    /// `--authenticate_http_frameworks`.
    pub frameworks: bool,
    /// `--authenticate_http_readwrite`.
    pub readwrite: bool,
    /// `--authenticate_http_readonly`.
    pub readonly: bool,
    /// `--acls` (default: everything allowed).
    pub acls: Acls,
}

/// A request that may not go on: the answer to send.
pub type Denied = Box<Response>;

impl Auth {
    /// Checks the flags together: a realm that requires authentication needs credentials.
    pub fn check(&self) -> Result<(), String> {
        let on = [
            (self.frameworks, "--authenticate_http_frameworks"),
            (self.readwrite, "--authenticate_http_readwrite"),
            (self.readonly, "--authenticate_http_readonly"),
        ];
        if let Some((_, flag)) = on.iter().find(|(on, _)| *on)
            && self.credentials.is_none()
        {
            return Err(format!("{flag} needs --credentials (the principals and secrets)"));
        }
        Ok(())
    }

    /// Whether requests of `realm` must be authenticated.
    pub fn required(&self, realm: Realm) -> bool {
        match realm {
            Realm::Frameworks => self.frameworks,
            Realm::ReadWrite => self.readwrite,
            Realm::ReadOnly => self.readonly,
        }
    }

    /// Authenticates a request of `realm` from its `Authorization` header: `Ok(Some(p))` for
    /// principal `p`, `Ok(None)` when the realm does not require authentication (the request
    /// is anonymous, whatever it sends), `Err` with the `401` to answer.
    pub fn authenticate(
        &self,
        realm: Realm,
        authorization: Option<&str>,
    ) -> Result<Option<String>, Denied> {
        if !self.required(realm) {
            return Ok(None);
        }
        let unauthorized = || {
            Box::new(
                Response::empty(401)
                    .with_header("WWW-Authenticate", &format!("Basic realm=\"{}\"", realm.name())),
            )
        };
        let Some(credentials) = &self.credentials else { return Err(unauthorized()) };
        let Some(encoded) = authorization.and_then(|h| {
            let (scheme, rest) = h.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("basic").then(|| rest.trim())
        }) else {
            return Err(unauthorized());
        };
        let decoded = base64_decode(encoded).ok().and_then(|b| String::from_utf8(b).ok());
        match decoded.as_deref().and_then(|d| d.split_once(':')) {
            Some((principal, secret)) if credentials.check(principal, secret) => {
                Ok(Some(principal.to_owned()))
            }
            _ => Err(unauthorized()),
        }
    }

    /// `Ok` when `principal` may perform `action` on every one of `objects` (an empty list:
    /// on the object `ANY`); `Err` with the `403` to answer otherwise.
    pub fn authorize(
        &self,
        action: Action,
        principal: Option<&str>,
        objects: &[&str],
    ) -> Result<(), Denied> {
        let allowed = if objects.is_empty() {
            self.acls.allows(action, principal, None)
        } else {
            objects.iter().all(|o| self.acls.allows(action, principal, Some(o)))
        };
        if allowed {
            return Ok(());
        }
        let (name, _) = action.names();
        let who = principal
            .map_or("an unauthenticated request".to_owned(), |p| format!("principal '{p}'"));
        let what = if objects.is_empty() {
            String::new()
        } else {
            format!(" on '{}'", objects.join("', '"))
        };
        log::warn!("{who} is not authorized to {name}{what}");
        // The objects stay in the log: the answer does not confirm what exists, or its owner.
        Err(Box::new(Response::text(403, &format!("Not authorized to {name}"))))
    }
}

/// Who sent a request that passed authentication, and the rules it is held to.
#[derive(Clone, Copy, Debug)]
pub struct Caller<'a> {
    /// The rules.
    pub auth: &'a Auth,
    /// The authenticated principal; `None`: the realm does not authenticate.
    pub principal: Option<&'a str>,
}

/// The rules of the master itself: no credentials, no ACL, everything allowed.
static TRUSTED: Auth = Auth {
    credentials: None,
    frameworks: false,
    readwrite: false,
    readonly: false,
    acls: Acls { permissive: true, lists: BTreeMap::new() },
};

impl Caller<'static> {
    /// The master itself, which sees everything: for what it computes for itself (the state
    /// its event streams are told from), never for an answer to a request.
    pub fn trusted() -> Caller<'static> {
        Caller { auth: &TRUSTED, principal: None }
    }
}

impl Caller<'_> {
    /// [`Auth::authorize`] for this caller.
    pub fn may(&self, action: Action, objects: &[&str]) -> Result<(), Denied> {
        self.auth.authorize(action, self.principal, objects)
    }

    /// Whether this caller may see a framework whose user is `user` (`view_frameworks`).
    pub fn sees_framework(&self, user: &str) -> bool {
        self.auth.acls.allows(Action::ViewFrameworks, self.principal, Some(user))
    }

    /// Whether this caller may see a task of a framework whose user is `user`: it must see
    /// the framework and the task (`view_frameworks`, `view_tasks`).
    pub fn sees_task(&self, user: &str) -> bool {
        self.sees_framework(user)
            && self.auth.acls.allows(Action::ViewTasks, self.principal, Some(user))
    }

    /// Whether this caller may see `role`, its weight, and what it holds (`view_roles`).
    pub fn sees_role(&self, role: &str) -> bool {
        self.auth.acls.allows(Action::ViewRoles, self.principal, Some(role))
    }

    /// Whether this caller may see `machine` (its hostname, else its IP address) in the
    /// maintenance schedule (`get_maintenance_schedules`), or in the maintenance status
    /// (`get_maintenance_statuses`) when `status`.
    pub fn sees_machine(&self, machine: &str, status: bool) -> bool {
        let action =
            if status { Action::GetMaintenanceStatuses } else { Action::GetMaintenanceSchedules };
        self.auth.acls.allows(action, self.principal, Some(machine))
    }

    /// Whether this caller may see the master's flags (`view_flags`).
    pub fn sees_flags(&self) -> bool {
        self.auth.acls.allows(Action::ViewFlags, self.principal, None)
    }

    /// Whether this caller may see `role`'s quota (`get_quotas`).
    pub fn sees_quota(&self, role: &str) -> bool {
        self.auth.acls.allows(Action::GetQuotas, self.principal, Some(role))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acls(text: &str) -> Acls {
        Acls::parse(text).unwrap()
    }

    #[test]
    fn without_acls_everything_is_allowed() {
        let a = Acls::default();
        assert!(a.allows(Action::UpdateWeights, None, Some("r")));
        assert!(a.allows(Action::RegisterFrameworks, Some("p"), Some("r")));
    }

    #[test]
    fn the_first_matching_acl_decides() {
        let a = acls(
            r#"{"register_frameworks": [
                {"principals": {"values": ["ops"]}, "roles": {"type": "ANY"}},
                {"principals": {"type": "ANY"}, "roles": {"type": "NONE"}}]}"#,
        );
        assert!(a.allows(Action::RegisterFrameworks, Some("ops"), Some("prod")));
        assert!(!a.allows(Action::RegisterFrameworks, Some("dev"), Some("prod")));
        assert!(!a.allows(Action::RegisterFrameworks, None, Some("prod")));
    }

    #[test]
    fn a_principal_is_allowed_only_the_roles_listed_for_it() {
        let a = acls(
            r#"{"permissive": false, "register_frameworks": [
                {"principals": {"values": ["dev"]}, "roles": {"values": ["dev", "test"]}}]}"#,
        );
        assert!(a.allows(Action::RegisterFrameworks, Some("dev"), Some("test")));
        assert!(!a.allows(Action::RegisterFrameworks, Some("dev"), Some("prod")));
        assert!(!a.allows(Action::RegisterFrameworks, Some("other"), Some("dev")));
    }

    #[test]
    fn when_no_acl_matches_permissive_decides() {
        let strict = acls(r#"{"permissive": false}"#);
        assert!(!strict.allows(Action::UpdateQuotas, Some("ops"), Some("r")));
        let open = acls(
            r#"{"update_quotas": [{"principals": {"values": ["ops"]}, "roles": {"type": "ANY"}}]}"#,
        );
        assert!(open.allows(Action::UpdateQuotas, Some("someone"), Some("r")));
    }

    #[test]
    fn an_unauthenticated_request_is_the_subject_any() {
        let a = acls(
            r#"{"permissive": false, "update_weights": [
                {"principals": {"values": ["ops"]}, "roles": {"type": "ANY"}}]}"#,
        );
        assert!(!a.allows(Action::UpdateWeights, None, Some("r")));
        let any = acls(
            r#"{"permissive": false, "update_weights": [
                {"principals": {"type": "ANY"}, "roles": {"type": "ANY"}}]}"#,
        );
        assert!(any.allows(Action::UpdateWeights, None, Some("r")));
    }

    fn caller_of<'a>(auth: &'a Auth, principal: Option<&'a str>) -> Caller<'a> {
        Caller { auth, principal }
    }

    #[test]
    fn the_deny_idiom_hides_every_framework_even_under_a_permissive_default() {
        let auth = Auth {
            acls: acls(
                r#"{"view_frameworks": [{"principals": {"type": "ANY"}, "users": {"type": "NONE"}}]}"#,
            ),
            ..Auth::default()
        };
        for principal in [None, Some("ops")] {
            let caller = caller_of(&auth, principal);
            assert!(!caller.sees_framework("alice") && !caller.sees_framework(""));
            assert!(!caller.sees_task("alice"), "a task of a hidden framework is hidden");
        }
    }

    #[test]
    fn a_principal_sees_only_the_roles_and_quotas_listed_for_it() {
        let auth = Auth {
            acls: acls(
                r#"{"permissive": false,
                    "view_roles": [{"principals": {"values": ["dev"]}, "roles": {"values": ["dev"]}}],
                    "get_quotas": [{"principals": {"values": ["dev"]}, "roles": {"values": ["dev"]}}]}"#,
            ),
            ..Auth::default()
        };
        let dev = caller_of(&auth, Some("dev"));
        assert!(dev.sees_role("dev") && dev.sees_quota("dev"));
        assert!(!dev.sees_role("prod") && !dev.sees_quota("prod"));
        assert!(!caller_of(&auth, Some("other")).sees_role("dev"));
    }

    #[test]
    fn a_task_needs_view_tasks_as_well_as_its_framework() {
        let auth = Auth {
            acls: acls(
                r#"{"view_tasks": [{"principals": {"values": ["ops"]}, "users": {"type": "NONE"}}]}"#,
            ),
            ..Auth::default()
        };
        let ops = caller_of(&auth, Some("ops"));
        assert!(ops.sees_framework("alice") && !ops.sees_task("alice"));
    }

    #[test]
    fn a_none_rule_denies_the_requests_that_name_nothing() {
        let a = acls(
            r#"{"view_flags": [{"principals": {"type": "ANY"}, "flags": {"type": "NONE"}}],
                "update_weights": [{"principals": {"type": "NONE"}, "roles": {"values": ["prod"]}}]}"#,
        );
        assert!(!a.allows(Action::ViewFlags, None, None), "no object: refused by NONE");
        assert!(!a.allows(Action::ViewFlags, Some("ops"), None));
        assert!(!a.allows(Action::UpdateWeights, None, Some("prod")), "no principal: refused");
        assert!(a.allows(Action::UpdateWeights, None, Some("dev")), "another role: permissive");
    }

    #[test]
    fn a_misspelt_object_field_is_refused() {
        let e = Acls::parse(
            r#"{"view_frameworks": [{"principals": {"type": "ANY"}, "user": {"type": "NONE"}}]}"#,
        )
        .unwrap_err();
        assert!(e.contains("unknown field \"user\"") && e.contains("\"users\""), "{e}");
    }

    #[test]
    fn an_unknown_action_or_entity_type_is_refused() {
        assert!(
            Acls::parse(r#"{"register_framework": []}"#)
                .unwrap_err()
                .contains("register_framework")
        );
        assert!(Acls::parse(r#"{"update_weights": [{"principals": {"type": "ALL"}}]}"#).is_err());
    }

    #[test]
    fn credentials_parse_from_json_and_text() {
        let json = Credentials::parse(r#"{"credentials": [{"principal": "a", "secret": "s1"}]}"#);
        assert!(json.unwrap().check("a", "s1"));
        let text = Credentials::parse("# comment\na s1\nb s2\n").unwrap();
        assert!(text.check("b", "s2") && !text.check("b", "s1") && !text.check("c", "s2"));
        assert!(Credentials::parse("a").is_err());
    }

    fn auth() -> Auth {
        Auth {
            credentials: Some(Credentials::parse("ops secret\n").unwrap()),
            readwrite: true,
            ..Auth::default()
        }
    }

    #[test]
    fn basic_authentication_gives_the_principal() {
        let header = format!("Basic {}", allocator_mesos::base64_encode(b"ops:secret"));
        assert_eq!(
            auth().authenticate(Realm::ReadWrite, Some(&header)).unwrap().as_deref(),
            Some("ops")
        );
    }

    #[test]
    fn missing_or_wrong_credentials_get_401_with_the_realm() {
        let wrong = format!("Basic {}", allocator_mesos::base64_encode(b"ops:guess"));
        for header in [None, Some("Bearer x"), Some(wrong.as_str()), Some("Basic !!!")] {
            let denied = auth().authenticate(Realm::ReadWrite, header).unwrap_err();
            assert_eq!(denied.status, 401);
            assert!(
                denied.headers.iter().any(|(n, v)| n == "WWW-Authenticate"
                    && v == "Basic realm=\"mesos-master-readwrite\"")
            );
        }
    }

    #[test]
    fn a_realm_that_is_off_is_anonymous() {
        assert_eq!(auth().authenticate(Realm::ReadOnly, None).unwrap(), None);
    }

    #[test]
    fn authentication_without_credentials_is_a_usage_error() {
        let a = Auth { frameworks: true, ..Auth::default() };
        assert!(a.check().unwrap_err().contains("--credentials"));
    }
}
