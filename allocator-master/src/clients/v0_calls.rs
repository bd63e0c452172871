//! Mesos's v0 operator endpoints that have a v1 twin: each request becomes its v1 call
//! ([`as_call`]), which the operator API answers — one write path, the same ACL by object — and
//! the v1 answer is given back in the v0 endpoint's shape ([`v0_answer`]).
//!
//! | v0 request | v1 call | v0 answer |
//! |---|---|---|
//! | `POST /master/quota` (a `QuotaRequest`: `role`, `guarantee` as resources, `force`) | `UPDATE_QUOTA`, the guarantee as guarantees and limits (what Mesos 1.9+ does with the legacy request) | `200`, empty |
//! | `DELETE /master/quota/ROLE` | `UPDATE_QUOTA` with no guarantees or limits (`400` when the role has no quota, as Mesos) | `200`, empty |
//! | `GET /master/maintenance/schedule` | `GET_MAINTENANCE_SCHEDULE` | the `Schedule` |
//! | `POST /master/maintenance/schedule` (a `Schedule`) | `UPDATE_MAINTENANCE_SCHEDULE` | `200`, empty |
//! | `GET /master/maintenance/status` | `GET_MAINTENANCE_STATUS` | the `ClusterStatus` |
//! | `POST /master/machine/down`, `/machine/up` (a list of `MachineID`s) | `START_MAINTENANCE`, `STOP_MAINTENANCE` | `200`, empty |
//! | `POST /master/teardown` (`frameworkId=ID`, form-encoded) | `TEARDOWN` | `200`, empty |
//! | `POST /master/reserve`, `/master/unreserve` (`slaveId=ID&resources=JSON`, form-encoded) | `RESERVE_RESOURCES`, `UNRESERVE_RESOURCES` | `202`, empty |

use serde_json::{Value, json};

/// The v0 endpoints this module turns into v1 calls: (method, name without `/master`); a name
/// ending in `/` takes one more path segment (`DELETE /master/quota/ROLE`).
pub const ROUTES: &[(&str, &str)] = &[
    ("POST", "/quota"),
    ("DELETE", "/quota/"),
    ("GET", "/maintenance/schedule"),
    ("POST", "/maintenance/schedule"),
    ("GET", "/maintenance/status"),
    ("POST", "/machine/down"),
    ("POST", "/machine/up"),
    ("POST", "/teardown"),
    ("POST", "/reserve"),
    ("POST", "/unreserve"),
];

/// Whether `name` (a path without `/master`) is one of [`ROUTES`], with any method.
pub fn is_route(name: &str) -> bool {
    ROUTES.iter().any(|(_, r)| matches(r, name))
}

fn matches(route: &str, name: &str) -> bool {
    match route.strip_suffix('/') {
        Some(prefix) => name
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|param| !param.is_empty() && !param.contains('/')),
        None => route == name,
    }
}

/// The v1 call (a `POST /api/v1` body) that `method` on v0 endpoint `name` (without
/// `/master`) with `body` amounts to; `None` when it is not one of [`ROUTES`] (another
/// method, or another endpoint); `Some(Err)` with the `400` message for a body that does not
/// read.
pub fn as_call(method: &str, name: &str, body: &str) -> Option<Result<Value, String>> {
    let json = || -> Result<Value, String> {
        serde_json::from_str(body).map_err(|e| format!("Failed to parse the body as JSON: {e}"))
    };
    let call = match (method, name) {
        ("POST", "/quota") => json().and_then(|request| quota_request(&request)),
        ("DELETE", n) if matches("/quota/", n) => {
            let role = allocator_http::percent_decode(&n["/quota/".len()..]);
            Ok(json!({"type": "UPDATE_QUOTA", "update_quota": {"quota_configs": [{"role": role}]}}))
        }
        ("GET", "/maintenance/schedule") => Ok(json!({"type": "GET_MAINTENANCE_SCHEDULE"})),
        ("POST", "/maintenance/schedule") => json().map(|schedule| {
            json!({"type": "UPDATE_MAINTENANCE_SCHEDULE",
                   "update_maintenance_schedule": {"schedule": schedule}})
        }),
        ("GET", "/maintenance/status") => Ok(json!({"type": "GET_MAINTENANCE_STATUS"})),
        ("POST", "/machine/down") => json().map(|machines| {
            json!({"type": "START_MAINTENANCE", "start_maintenance": {"machines": machines}})
        }),
        ("POST", "/machine/up") => json().map(|machines| {
            json!({"type": "STOP_MAINTENANCE", "stop_maintenance": {"machines": machines}})
        }),
        ("POST", "/teardown") => form(body, "frameworkId").map(|id| {
            json!({"type": "TEARDOWN", "teardown": {"framework_id": {"value": id}}})
        }),
        ("POST", op @ ("/reserve" | "/unreserve")) => reservation(op, body),
        _ => return None,
    };
    Some(call)
}

/// `POST /quota`'s `QuotaRequest` as `UPDATE_QUOTA`: the guarantee (a list of scalar
/// resources) as both guarantees and limits.
fn quota_request(request: &Value) -> Result<Value, String> {
    let role =
        request["role"].as_str().ok_or("Failed to parse 'QuotaRequest': 'role' is missing")?;
    let mut quantities = serde_json::Map::new();
    for r in request["guarantee"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let name = r["name"].as_str().ok_or("every resource of 'guarantee' needs a 'name'")?;
        let value = r["scalar"]["value"]
            .as_f64()
            .ok_or_else(|| format!("'{name}' in 'guarantee' must be a scalar"))?;
        let sum = quantities.get(name).and_then(|v| v["value"].as_f64()).unwrap_or(0.0) + value;
        quantities.insert(name.to_owned(), json!({"value": sum}));
    }
    let config = json!({"role": role, "guarantees": quantities, "limits": quantities});
    Ok(json!({"type": "UPDATE_QUOTA",
              "update_quota": {"force": request["force"].as_bool().unwrap_or(false),
                               "quota_configs": [config]}}))
}

/// `POST /reserve` or `/unreserve`: `slaveId=ID&resources=JSON` as `RESERVE_RESOURCES` or
/// `UNRESERVE_RESOURCES`.
fn reservation(op: &str, body: &str) -> Result<Value, String> {
    let agent = form(body, "slaveId")?;
    let resources = form(body, "resources")?;
    let resources: Value = serde_json::from_str(&resources)
        .map_err(|e| format!("Error in parsing 'resources' query parameter: {e}"))?;
    Ok(match op {
        "/reserve" => json!({"type": "RESERVE_RESOURCES", "reserve_resources":
                             {"agent_id": {"value": agent}, "resources": resources}}),
        _ => json!({"type": "UNRESERVE_RESOURCES", "unreserve_resources":
                    {"agent_id": {"value": agent}, "resources": resources}}),
    })
}

/// The value of `key` in a form-encoded body, as Mesos's endpoints read them.
fn form(body: &str, key: &str) -> Result<String, String> {
    body.split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| allocator_http::percent_decode(v))
        .ok_or_else(|| format!("Missing '{key}' query parameter in the request body"))
}

/// The v1 `answer` (status, body) to a v0 request on `name`, in the v0 endpoint's shape: a
/// read gives the v1 answer's inner object; a change succeeded gives `202` for a reservation
/// and `200` otherwise, with an empty body; a refusal passes through.
pub fn v0_answer(method: &str, name: &str, status: u16, body: &[u8]) -> (u16, Option<Value>) {
    if status >= 300 {
        let text = String::from_utf8_lossy(body).into_owned();
        return (status, Some(Value::String(text)));
    }
    let v1: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    match (method, name) {
        ("GET", "/maintenance/schedule") => {
            (200, Some(v1["get_maintenance_schedule"]["schedule"].clone()))
        }
        ("GET", "/maintenance/status") => {
            (200, Some(v1["get_maintenance_status"]["status"].clone()))
        }
        (_, "/reserve" | "/unreserve") => (202, None),
        _ => (200, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_quota_request_sets_the_guarantee_as_guarantees_and_limits() {
        let body = r#"{"role": "ml", "guarantee": [
            {"name": "cpus", "type": "SCALAR", "scalar": {"value": 4}},
            {"name": "mem", "type": "SCALAR", "scalar": {"value": 512}}]}"#;
        let call = as_call("POST", "/quota", body).unwrap().unwrap();
        let config = &call["update_quota"]["quota_configs"][0];
        assert_eq!(config["role"], "ml");
        assert_eq!(config["guarantees"]["cpus"]["value"], 4.0);
        assert_eq!(config["limits"], config["guarantees"]);
    }

    #[test]
    fn delete_quota_names_its_role_in_the_path() {
        let call = as_call("DELETE", "/quota/team%2Fml", "").unwrap().unwrap();
        assert_eq!(call["update_quota"]["quota_configs"][0]["role"], "team/ml");
        assert!(as_call("DELETE", "/quota/", "").is_none(), "no role: not this endpoint");
    }

    #[test]
    fn form_encoded_bodies_become_their_calls() {
        let call = as_call("POST", "/teardown", "frameworkId=fw-1").unwrap().unwrap();
        assert_eq!(call["teardown"]["framework_id"]["value"], "fw-1");
        let body = "slaveId=a1&resources=%5B%7B%22name%22%3A%22cpus%22%7D%5D";
        let call = as_call("POST", "/reserve", body).unwrap().unwrap();
        assert_eq!(call["type"], "RESERVE_RESOURCES");
        assert_eq!(call["reserve_resources"]["resources"][0]["name"], "cpus");
        let missing = as_call("POST", "/teardown", "id=fw-1").unwrap().unwrap_err();
        assert!(missing.contains("frameworkId"), "{missing}");
    }

    #[test]
    fn reads_answer_the_inner_object_and_changes_answer_empty() {
        let v1 = br#"{"type": "GET_MAINTENANCE_STATUS", "get_maintenance_status": {"status": {"down_machines": []}}}"#;
        let (status, body) = v0_answer("GET", "/maintenance/status", 200, v1);
        assert_eq!((status, body), (200, Some(json!({"down_machines": []}))));
        assert_eq!(v0_answer("POST", "/reserve", 200, b""), (202, None));
        assert_eq!(v0_answer("POST", "/teardown", 403, b"Not authorized").0, 403);
    }
}
