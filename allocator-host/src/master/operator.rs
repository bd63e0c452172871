//! Operator changes: quota, weights, the whitelist, recovery after a failover, pausing, and
//! switching the built-in allocator's sorters. The host keeps its own record of each, so that
//! fallback rebuilds the built-in with them and the metrics see them.

use allocator_api::{Quota, RString, RoleQuota, RoleWeight};

use super::{Engine, Master};

impl Master<'_> {
    /// Sets a role's quota.
    pub(super) fn update_quota(&mut self, role: &str, quota: &Quota) -> Result<(), String> {
        self.call("update_quota", |a| a.update_quota(role, quota))?;
        // No guarantee and no limit is the default: the role has no quota any more (Mesos).
        if quota.guarantees.is_empty() && quota.limits.is_empty() {
            self.quotas.remove(role);
        } else {
            self.quotas.insert(role.to_owned(), quota.clone());
        }
        Ok(())
    }

    /// Sets role weights (roles not named keep theirs).
    pub(super) fn update_weights(&mut self, weights: &[(String, f64)]) -> Result<(), String> {
        let w: Vec<RoleWeight> = weights
            .iter()
            .map(|(r, w)| RoleWeight { role: r.as_str().into(), weight: *w })
            .collect();
        self.call("update_weights", |a| a.update_weights(&w))?;
        self.weights.extend(weights.iter().cloned());
        Ok(())
    }

    /// Role weights set so far.
    pub fn weights(&self) -> &std::collections::BTreeMap<String, f64> {
        &self.weights
    }

    /// Sets (or with `None` clears) the whitelist of hostnames that may be offered.
    pub(super) fn update_whitelist(&mut self, hosts: Option<&[String]>) -> Result<(), String> {
        let list: Option<Vec<RString>> =
            hosts.map(|h| h.iter().map(|x| x.as_str().into()).collect());
        self.call("update_whitelist", |a| a.update_whitelist(list.as_deref()))?;
        self.whitelist = list;
        Ok(())
    }

    /// Recovery after a master failover: the agents expected back and the quotas to restore.
    pub(super) fn recover(
        &mut self,
        expected_agents: u32,
        quotas: &[RoleQuota],
    ) -> Result<(), String> {
        self.call("recover", |a| a.recover(expected_agents, quotas))?;
        // The host's own record, as for update_quota: fallback rebuilds and the quota metrics
        // see recovered quotas too.
        for q in quotas {
            self.quotas.insert(q.role.to_string(), q.quota.clone());
        }
        Ok(())
    }

    /// Pauses allocation (runs make no offers until resumed).
    pub(super) fn pause(&mut self) -> Result<(), String> {
        self.call("pause", |a| a.pause())?;
        self.paused = true;
        Ok(())
    }

    /// Resumes allocation.
    pub(super) fn resume(&mut self) -> Result<(), String> {
        self.call("resume", |a| a.resume())?;
        self.paused = false;
        Ok(())
    }

    /// Whether allocation is paused.
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// Switches the built-in allocator's sorters (each `None`: unchanged), keeping its state.
    pub(super) fn set_sorters(
        &mut self,
        role_sorter: Option<&str>,
        framework_sorter: Option<&str>,
    ) -> Result<(), String> {
        if let Engine::Hosted(_) = self.engine {
            return Err("set_sorters needs the built-in allocator in the master's process, not in the worker of its isolated sorter modules".into());
        }
        let Engine::Builtin(alloc) = &mut self.engine else {
            return Err(format!(
                "set_sorters needs the built-in allocator, not module '{}'",
                self.setup.allocator
            ));
        };
        let role = role_sorter.unwrap_or(&self.setup.role_sorter).to_owned();
        let fw = framework_sorter.unwrap_or(&self.setup.framework_sorter).to_owned();
        let rf = self.registry.sorter_factory(&role, "role_sorter").map_err(|e| e.to_string())?;
        let ff =
            self.registry.sorter_factory(&fw, "framework_sorter").map_err(|e| e.to_string())?;
        alloc.replace_sorters(rf, ff)?;
        log::info!("sorters switched to role: {role}, framework: {fw}");
        self.setup.role_sorter = role;
        self.setup.framework_sorter = fw;
        Ok(())
    }
}
