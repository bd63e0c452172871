//! `serve`'s routing table: each endpoint of this master as its path, the realm whose
//! credentials a request to it needs, and the handler of each method it answers. Mesos's master
//! endpoints (`/master/state` and friends, [`crate::clients::endpoints`]) are found by their own
//! matching (a `/master` prefix, `.json` and a trailing slash name the same endpoint, as in
//! Mesos) after this table.
//!
//! A request is authenticated in its path's realm before anything else, whatever its method (a
//! wrong method is told only to whoever may use the path), then authorized, then answered by
//! its handler.

use serde_json::{Value, json};

use allocator_host::master::{ApplyError, Command};
use allocator_sim::output::EventStream;

use super::{
    Incoming, Live, WEB_PAGE, explain, is_subscribe, parse_request, plan_reader, respond,
    visible_state,
};
use crate::auth::{Caller, Realm};
use crate::clients::endpoints::mesos_endpoint;
use crate::clients::mesos::MesosFrameworks;

/// What answers a request: the master loop, the request, who asks, and the event stream. `Err`
/// stops the master.
type Handler = fn(&mut Live<'_, '_>, Incoming, Caller<'_>, &mut EventStream) -> Result<(), String>;

/// One of this master's own endpoints.
struct Route {
    /// The path, exactly.
    path: &'static str,
    /// The realm whose credentials a request to the path needs, whatever its method (`None`:
    /// never authenticated).
    realm: Option<Realm>,
    /// The methods it answers, each with its handler.
    methods: &'static [(&'static str, Handler)],
    /// What a request with another method gets, when no Mesos endpoint answers it.
    otherwise: Otherwise,
}

/// The answer to a method a route does not have.
#[derive(Clone, Copy)]
pub(super) enum Otherwise {
    /// `405` with a JSON error.
    Json405,
    /// `405` with Mesos's plain-text message (the scheduler API).
    PlainText405(&'static str),
    /// `404`, as for an unknown path.
    NotFound404,
}

/// This master's own endpoints (SPEC section 6).
const ROUTES: &[Route] = &[
    Route {
        path: "/api/v1/scheduler",
        realm: Some(Realm::Frameworks),
        methods: &[("POST", scheduler_api)],
        otherwise: Otherwise::PlainText405("Expecting 'POST', received another method"),
    },
    Route {
        path: "/api/v1",
        realm: Some(Realm::ReadWrite),
        methods: &[("POST", operator_api)],
        otherwise: Otherwise::PlainText405("Expecting 'POST', received another method"),
    },
    Route {
        path: "/quota",
        realm: Some(Realm::ReadWrite),
        methods: &[("POST", |live, request, _, out| change(live, request, out, "update_quota"))],
        otherwise: Otherwise::Json405,
    },
    Route {
        path: "/weights",
        realm: Some(Realm::ReadWrite),
        methods: &[("POST", |live, request, _, out| change(live, request, out, "update_weights"))],
        otherwise: Otherwise::Json405,
    },
    Route {
        path: "/sorters",
        realm: Some(Realm::ReadWrite),
        methods: &[("POST", |live, request, _, out| change(live, request, out, "set_sorters"))],
        otherwise: Otherwise::Json405,
    },
    Route {
        path: "/plan",
        realm: Some(Realm::ReadWrite),
        methods: &[("POST", plan)],
        otherwise: Otherwise::Json405,
    },
    Route {
        path: "/state",
        realm: Some(Realm::ReadOnly),
        methods: &[("GET", |live, request, caller, _| {
            let state = visible_state(live.driver, caller);
            reply(request, 200, &state);
            Ok(())
        })],
        otherwise: Otherwise::Json405,
    },
    Route {
        path: "/metrics/snapshot",
        realm: Some(Realm::ReadOnly),
        methods: &[("GET", |live, request, _, _| {
            reply(request, 200, &Value::Object(live.metrics()));
            Ok(())
        })],
        otherwise: Otherwise::Json405,
    },
    Route {
        path: "/explain",
        realm: Some(Realm::ReadOnly),
        methods: &[("GET", |live, request, _, _| {
            let (status, answer) = explain(live.driver, &request.query);
            reply(request, status, &answer);
            Ok(())
        })],
        otherwise: Otherwise::Json405,
    },
    Route {
        path: "/version",
        realm: None,
        methods: &[("GET", |_, request, _, _| {
            respond(request, 200, &json!({"version": allocator_mesos::MESOS_VERSION}));
            Ok(())
        })],
        otherwise: Otherwise::NotFound404,
    },
    Route {
        path: "/",
        realm: None,
        methods: &[("GET", |_, request, _, _| {
            // A browser gets the web page; any other client the list of endpoints.
            if request.header("Accept").is_some_and(|a| a.contains("text/html")) {
                // Never inside another site's frame (one click there would act here).
                let page = allocator_http::Response::html(200, WEB_PAGE)
                    .with_header("X-Frame-Options", "DENY")
                    .with_header("Content-Security-Policy", "frame-ancestors 'none'");
                request.respond_with(page);
            } else {
                respond(request, 200, &crate::clients::endpoints::index());
            }
            Ok(())
        })],
        otherwise: Otherwise::NotFound404,
    },
];

/// Where a request goes.
pub(super) enum Target<'p> {
    /// One of this master's own endpoints.
    Own(Handler),
    /// A Mesos master endpoint, by its name (`/state`, `/frameworks`, …).
    Mesos(&'p str),
    /// A path this master has, with a method it does not answer there.
    Refused(Otherwise),
    /// No endpoint.
    NotFound,
}

/// The realm a request to `path` needs (`None`: never authenticated) and where it goes.
pub(super) fn route<'p>(method: &str, path: &'p str) -> (Option<Realm>, Target<'p>) {
    let own = ROUTES.iter().find(|r| r.path == path);
    let mesos = mesos_endpoint(method, path);
    // Mesos's endpoints: a GET reads, any other method changes; health is open.
    let mesos_realm = match mesos {
        Some("/health") | None => None,
        Some(_) if method != "GET" => Some(Realm::ReadWrite),
        Some(_) => Some(Realm::ReadOnly),
    };
    let realm = own.map_or(mesos_realm, |r| r.realm);
    let handler = own.and_then(|r| r.methods.iter().find(|(m, _)| *m == method));
    let target = match (handler, mesos, own) {
        (Some((_, handler)), _, _) => Target::Own(*handler),
        (None, Some(name), _) => Target::Mesos(name),
        (None, None, Some(r)) => Target::Refused(r.otherwise),
        (None, None, None) => Target::NotFound,
    };
    (realm, target)
}

impl Live<'_, '_> {
    /// Sends `request` where [`route`] says (after authentication and authorization).
    pub(super) fn dispatch(
        &mut self,
        target: Target<'_>,
        request: Incoming,
        caller: Caller<'_>,
        out: &mut EventStream,
    ) -> Result<(), String> {
        match target {
            Target::Own(handler) => handler(self, request, caller, out),
            Target::Mesos(name) => {
                let name = name.to_owned();
                mesos(self, request, &name, caller, out)
            }
            Target::Refused(Otherwise::PlainText405(text)) => {
                request.respond_with(allocator_http::Response::text(405, text));
                Ok(())
            }
            Target::Refused(Otherwise::Json405) => {
                let error = format!("{} is not allowed on {}", request.method, request.path);
                reply(request, 405, &json!({ "error": error }));
                Ok(())
            }
            Target::Refused(Otherwise::NotFound404) | Target::NotFound => {
                let error = format!("no endpoint {}", request.path);
                reply(request, 404, &json!({ "error": error }));
                Ok(())
            }
        }
    }
}

/// A change is in the registry before it is acknowledged: `Some(request)` to acknowledge it,
/// or `None` when the write failed and `request` was answered `503` (the change stays applied
/// and is written on a later pass; sending it again is safe).
fn written_first(live: &mut Live<'_, '_>, request: Incoming) -> Option<Incoming> {
    match live.persist() {
        Ok(()) => Some(request),
        Err(e) => {
            respond(request, 503, &json!({"error": e}));
            None
        }
    }
}

/// Answers with JSON, logging an answer of 400 or more.
fn reply(request: Incoming, status: u16, answer: &Value) {
    if status >= 400 {
        log::warn!("{} {}: {status} {answer}", request.method, request.path);
    }
    respond(request, status, answer);
}

/// `POST /api/v1/scheduler`: the scheduler API, answered by the frameworks' client.
fn scheduler_api(
    live: &mut Live<'_, '_>,
    request: Incoming,
    caller: Caller<'_>,
    out: &mut EventStream,
) -> Result<(), String> {
    let answered = live
        .driver
        .with_client(out, |m: &mut MesosFrameworks, master| m.call(request, caller, master));
    if let Err(e) = answered {
        live.fatal()?;
        log::error!("scheduler API: {e}");
    }
    Ok(())
}

/// `POST /api/v1`: the operator API; `SUBSCRIBE` becomes an event stream. A change is in the
/// registry before it is acknowledged.
fn operator_api(
    live: &mut Live<'_, '_>,
    request: Incoming,
    caller: Caller<'_>,
    out: &mut EventStream,
) -> Result<(), String> {
    if is_subscribe(&request.body) {
        live.streams.subscribe(request, &live.driver.applying(out), caller);
        return Ok(());
    }
    let metrics = live.metrics();
    let answer =
        live.operator.answer(&mut live.driver.applying(out), metrics, &request.body, caller);
    if answer.status >= 400 {
        log::warn!("POST /api/v1: {}", String::from_utf8_lossy(&answer.body));
    }
    if let Some(request) = written_first(live, request) {
        request.respond_with(answer);
    }
    live.fatal()
}

/// A Mesos master endpoint (`name`, as [`mesos_endpoint`] gives it); a `PUT` that changes
/// something is in the registry before it is acknowledged.
fn mesos(
    live: &mut Live<'_, '_>,
    request: Incoming,
    name: &str,
    caller: Caller<'_>,
    out: &mut EventStream,
) -> Result<(), String> {
    let method = request.method.clone();
    if let Some(call) = crate::clients::v0_calls::as_call(&method, name, &request.body) {
        return v0_call(live, request, name, call, caller, out);
    }
    let completed: Vec<Value> = live
        .driver
        .client::<MesosFrameworks>()
        .map(|m| m.completed_frameworks().to_vec())
        .unwrap_or_default();
    let (status, answer) = crate::clients::endpoints::answer(
        &mut live.driver.applying(out),
        caller,
        live.operator.flags(),
        &completed,
        &method,
        name,
        &request.body,
    );
    let changed = method == "PUT" && status == 200;
    let Some(request) = (if changed { written_first(live, request) } else { Some(request) }) else {
        return live.fatal();
    };
    if answer.is_null() {
        request.respond_with(allocator_http::Response::empty(status));
    } else {
        respond(request, status, &answer);
    }
    live.fatal()
}

/// A Mesos v0 endpoint with a v1 twin ([`crate::clients::v0_calls`]): answered by the operator
/// API as `call`, in the endpoint's shape; a change is in the registry before it is
/// acknowledged.
fn v0_call(
    live: &mut Live<'_, '_>,
    request: Incoming,
    name: &str,
    call: Result<Value, String>,
    caller: Caller<'_>,
    out: &mut EventStream,
) -> Result<(), String> {
    let call = match call {
        Ok(call) => call,
        Err(message) => {
            request.respond_with(allocator_http::Response::text(400, &message));
            return Ok(());
        }
    };
    // `DELETE /quota/ROLE` removes a quota that is there, as Mesos's (v1 just sets none).
    if request.method == "DELETE" {
        let role = call["update_quota"]["quota_configs"][0]["role"].as_str().unwrap_or("");
        // Authorized first: the answer tells whether the quota exists only to who may change it.
        if let Err(denied) = caller.may(crate::auth::Action::UpdateQuotas, &[role]) {
            request.respond_with(*denied);
            return Ok(());
        }
        if !live.driver.master().quotas().contains_key(role) {
            let message = format!("Failed to remove quota: Role '{role}' has no quota set");
            request.respond_with(allocator_http::Response::text(400, &message));
            return Ok(());
        }
    }
    let metrics = live.metrics();
    let body = call.to_string();
    let answer = live.operator.answer(&mut live.driver.applying(out), metrics, &body, caller);
    let (status, v0) =
        crate::clients::v0_calls::v0_answer(&request.method, name, answer.status, &answer.body);
    if status >= 400 {
        log::warn!(
            "{} {}: {status} {}",
            request.method,
            request.path,
            v0.clone().unwrap_or_default()
        );
    }
    let request =
        if request.method == "GET" { Some(request) } else { written_first(live, request) };
    if let Some(request) = request {
        match v0 {
            Some(Value::String(text)) => {
                request.respond_with(allocator_http::Response::text(status, &text))
            }
            Some(json) => respond(request, status, &json),
            None => request.respond_with(allocator_http::Response::empty(status)),
        }
    }
    live.fatal()
}

/// `POST /plan`: parsed here; made and answered by a planner thread.
fn plan(
    live: &mut Live<'_, '_>,
    request: Incoming,
    caller: Caller<'_>,
    _: &mut EventStream,
) -> Result<(), String> {
    let job = allocator_sim::plan::parse_change(&request.body)
        .and_then(|change| {
            // A framework the caller may not see is, to it, one the master does not have.
            if let Command::SuppressOffers(name, _) | Command::ReviveOffers(name, _) = &change
                && !caller.sees_framework(super::framework_user_named(live.driver, name))
            {
                return Err(format!("the change: unknown framework '{name}'"));
            }
            Ok(change)
        })
        .and_then(|change| Ok((allocator_sim::plan::history(live.driver.master())?, change)));
    match job {
        Ok((history, change)) => {
            let reader = plan_reader(live.driver, caller);
            if let Err(request) = live.planner.submit(request, history, change, reader) {
                let busy = json!({"error": format!(
                    "{} plans are already waiting; try again later",
                    crate::planner::QUEUED
                )});
                respond(*request, 503, &busy);
            }
        }
        Err(message) => reply(request, 400, &json!({ "error": message })),
    }
    Ok(())
}

/// `POST /quota`, `/weights`, `/sorters`: the body is scenario event `event`'s fields, applied
/// as its command; in the registry before it is acknowledged.
fn change(
    live: &mut Live<'_, '_>,
    request: Incoming,
    out: &mut EventStream,
    event: &str,
) -> Result<(), String> {
    let command = match parse_request(event, &request.body) {
        Ok(command) => command,
        Err(message) => {
            reply(request, 400, &json!({ "error": message }));
            return Ok(());
        }
    };
    match live.driver.command(&command, out) {
        Ok(_) => {
            log::info!("{} {}: applied", request.method, request.path);
            if let Some(request) = written_first(live, request) {
                reply(request, 200, &json!({"ok": true}));
            }
            Ok(())
        }
        Err(ApplyError::Stopped(message)) => {
            respond(request, 500, &json!({ "error": message }));
            live.fatal()
        }
        Err(e) => {
            reply(request, 400, &json!({ "error": e.message() }));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::endpoints::MESOS_ROUTES;

    fn realm(method: &str, path: &str) -> Option<Realm> {
        route(method, path).0
    }

    #[test]
    fn a_path_of_this_master_needs_its_realm_whatever_the_method() {
        for method in ["GET", "POST", "PUT", "DELETE"] {
            assert_eq!(realm(method, "/api/v1/scheduler"), Some(Realm::Frameworks));
            assert_eq!(realm(method, "/plan"), Some(Realm::ReadWrite));
            assert_eq!(realm(method, "/state"), Some(Realm::ReadOnly));
        }
    }

    #[test]
    fn a_wrong_method_on_the_scheduler_api_gets_mesos_s_405_text() {
        assert!(matches!(
            route("GET", "/api/v1/scheduler").1,
            Target::Refused(Otherwise::PlainText405(_))
        ));
    }

    #[test]
    fn a_mesos_endpoint_answers_the_methods_this_master_does_not_have_on_its_path() {
        assert!(matches!(route("GET", "/quota").1, Target::Mesos("/quota")));
        assert!(matches!(route("PUT", "/weights").1, Target::Mesos("/weights")));
        assert!(matches!(route("POST", "/quota").1, Target::Own(_)));
        // The path's realm still applies: changing quota needs read-write credentials.
        assert_eq!(realm("GET", "/quota"), Some(Realm::ReadWrite));
    }

    #[test]
    fn mesos_s_spellings_name_its_endpoints_in_the_realm_of_what_they_do() {
        assert!(matches!(route("GET", "/master/state.json").1, Target::Mesos("/state")));
        assert_eq!(realm("GET", "/master/frameworks/"), Some(Realm::ReadOnly));
        assert_eq!(realm("PUT", "/master/weights"), Some(Realm::ReadWrite));
        assert_eq!(realm("GET", "/health"), None);
    }

    #[test]
    fn an_unknown_path_is_not_found_and_never_authenticated() {
        assert!(matches!(route("GET", "/nothing").1, Target::NotFound));
        assert_eq!(realm("GET", "/nothing"), None);
        assert!(matches!(route("POST", "/version").1, Target::Refused(Otherwise::NotFound404)));
    }

    /// The code spans of the first column of the route × ACL table in the operator guide
    /// (`docs/operators/security.md`).
    fn documented_routes() -> Vec<String> {
        let readme = include_str!("../../../docs/operators/security.md");
        let table = readme
            .split("| route | realm | ACL: action (object) |")
            .nth(1)
            .expect("docs/operators/security.md has the route × ACL table");
        let rows = table.lines().skip(2).take_while(|l| l.starts_with('|'));
        let first_columns = rows.filter_map(|row| row.split('|').nth(1));
        first_columns
            .flat_map(|cell| cell.split('`').skip(1).step_by(2).map(str::to_owned))
            .collect()
    }

    #[test]
    fn every_route_of_the_router_is_in_the_guides_acl_table() {
        let documented = documented_routes();
        let own =
            ROUTES.iter().flat_map(|r| r.methods.iter().map(|(m, _)| format!("{m} {}", r.path)));
        let v0 = crate::clients::v0_calls::ROUTES.iter();
        let mesos = MESOS_ROUTES.iter().chain(v0).map(|(m, name)| {
            let name = name.strip_suffix('/').map_or(name.to_string(), |n| format!("{n}/ROLE"));
            format!("{m} /master{name}")
        });
        let missing: Vec<String> = own.chain(mesos).filter(|r| !documented.contains(r)).collect();
        assert!(
            missing.is_empty(),
            "routes missing from docs/operators/security.md's ACL table: {missing:?}"
        );
    }

    #[test]
    fn every_operator_call_answered_is_in_the_guides_acl_table() {
        let documented = documented_routes();
        let calls = crate::clients::operator::ANSWERED
            .iter()
            .map(|kind| serde_json::to_value(kind).unwrap().as_str().unwrap().to_owned());
        let missing: Vec<String> =
            calls.chain(["SUBSCRIBE".to_owned()]).filter(|c| !documented.contains(c)).collect();
        assert!(
            missing.is_empty(),
            "operator calls missing from docs/operators/security.md's ACL table: {missing:?}"
        );
    }
}
