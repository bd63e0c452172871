//! The cluster as the host records it: the `GET /state` view.

use std::collections::BTreeSet;

use allocator_api::RString;
use serde_json::{Value, json};

use super::Master;

impl Master<'_> {
    /// The allocator and sorters in use, agents, frameworks (with their running task counts),
    /// roles (weight, quota, allocation, dominant share) and every allocation of the ledger.
    /// Clients add their own fields to the frameworks they drive.
    pub fn state(&self) -> Value {
        let agents: Vec<Value> = self
            .agents
            .iter()
            .filter(|a| a.present)
            .map(|a| {
                json!({"agent": a.info.name.as_str(), "hostname": a.info.hostname.as_str(),
                       "resources": a.total.to_string(), "allocated": self.ledger.used(a.info.id).to_string(),
                       "activated": a.activated,
                       "unavailability": a.unavailability.as_ref().map(|u| json!({"start": u.start, "duration": u.duration}))})
            })
            .collect();
        let frameworks: Vec<Value> = self
            .frameworks
            .iter()
            .flatten()
            .filter(|f| f.present)
            .map(|f| {
                let roles: Vec<&str> = f.info.roles.iter().map(RString::as_str).collect();
                json!({"framework": self.framework_name(f.info.id), "roles": roles,
                       "active": f.active})
            })
            .collect();
        let mut role_names: BTreeSet<&String> = self.role_alloc().keys().collect();
        role_names.extend(self.weights.keys());
        role_names.extend(self.quotas.keys());
        let roles: Vec<Value> = role_names
            .into_iter()
            .map(|role| {
                let alloc = self.role_alloc().get(role).cloned().unwrap_or_default();
                let mut v = json!({"role": role, "weight": self.weights.get(role).copied().unwrap_or(1.0),
                                   "allocated": alloc.to_string(),
                                   "dominant_share": self.role_share(role)});
                if let Some(q) = self.quotas.get(role) {
                    v["quota"] = json!({"guarantees": q.guarantees.to_string(), "limits": q.limits.to_string()});
                }
                v
            })
            .collect();
        let allocations: Vec<Value> = self
            .ledger
            .iter()
            .map(|(f, a, role, r)| {
                json!({"framework": self.framework_name(f), "agent": self.agent_name(a), "role": role,
                       "resources": r.to_string()})
            })
            .collect();
        json!({"time": self.now, "allocator": self.setup.allocator,
               "role_sorter": self.setup.role_sorter, "framework_sorter": self.setup.framework_sorter,
               "paused": self.paused, "allocation_runs": self.runs,
               "agents": agents, "frameworks": frameworks, "roles": roles, "allocations": allocations})
    }
}
