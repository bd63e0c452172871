//! The `Allocator` entry points: each call checks its arguments, updates the bookkeeping and,
//! where Mesos does, triggers an allocation run.

use super::*;
use allocator_api::Request;

impl Allocator for HierarchicalAllocator {
    fn set_time(&mut self, now: f64) -> Result<()> {
        if now + EPSILON < self.now {
            return Err(ModuleError::rejected(format!(
                "set_time: time went back from {} to {now}",
                self.now
            )));
        }
        self.now = now;
        self.check_recovery();
        Ok(())
    }

    fn recover(&mut self, expected_agents: u32, quotas: &[RoleQuota]) -> Result<()> {
        if quotas.is_empty() {
            return Ok(());
        }
        for q in quotas {
            check_quota(&q.role, &q.quota)
                .map_err(|e| ModuleError::rejected(format!("recover: {e}")))?;
        }
        for q in quotas {
            self.quotas.insert(q.role.to_string(), q.quota.clone());
        }
        let expected = (f64::from(expected_agents) * self.options.agent_recovery_factor) as usize;
        if expected > 0 {
            self.paused = true;
            self.recovery = Some((expected, self.now + self.options.recovery_timeout));
            log::info!(
                "allocator paused until {expected} agents are back or {}s pass",
                self.options.recovery_timeout
            );
        }
        Ok(())
    }

    fn add_framework(
        &mut self,
        info: &FrameworkInfo,
        used: &[Allocation],
        active: bool,
        options: &FrameworkOptions,
    ) -> Result<()> {
        self.unblock();
        if self.frameworks.contains_key(&info.id) {
            return Err(ModuleError::rejected(format!(
                "add_framework: {} ({}) already added",
                info.id, info.name
            )));
        }
        // Validate `used` before changing anything.
        let mut extra: HashMap<AgentId, Resources> = HashMap::new();
        for u in used.iter().filter(|u| self.agents.contains_key(&u.agent)) {
            let agent = &self.agents[&u.agent];
            let recorded = agent.allocated.get(info.id, &u.role).cloned().unwrap_or_default();
            let missing = u.resources.clone() - &recorded;
            let need = extra.entry(u.agent).or_default();
            need.add(&missing.filter(|r| !r.is_shared()));
            if !agent.free.contains(need) {
                return Err(ModuleError::rejected(format!(
                    "add_framework: {} uses {} on {}, more than is free there ({})",
                    info.id, u.resources, u.agent, agent.free
                )));
            }
        }
        let framework = Framework {
            info: info.clone(),
            active,
            suppressed: options.suppressed_roles.iter().map(|r| r.to_string()).collect(),
            min_allocatable: options
                .min_allocatable_resources
                .iter()
                .map(|m| (m.role.to_string(), m.sets.to_vec()))
                .collect(),
            refuse_filters: 0,
            inverse_filters: IdMap::default(),
        };
        self.frameworks.insert(info.id, framework);
        for role in info_roles(info) {
            self.track_framework_under_role(info.id, &role)?;
        }
        for u in used {
            let Some(agent) = self.agents.get_mut(&u.agent) else { continue };
            let slot = agent.allocated.entry(info.id, Role::from(&u.role));
            let missing = u.resources.clone() - slot;
            slot.add(&missing);
            agent.take_free(&missing);
        }
        // The sorters count everything the agents record for the framework: what `used` added
        // and what `add_agent` recorded before the framework was known (`Allocator::add_agent`).
        for (agent, role, res) in self.holdings_of(info.id) {
            self.track_allocated(agent, info.id, &role, &res)?;
        }
        Ok(())
    }

    fn remove_framework(&mut self, framework: FrameworkId) -> Result<()> {
        self.unblock();
        self.framework(framework, "remove_framework")?;
        let holdings = self.holdings_of(framework);
        let roles: Vec<String> = self
            .roles
            .iter()
            .filter(|(_, s)| s.frameworks.contains(&framework))
            .map(|(r, _)| r.clone())
            .collect();
        self.drop_refuse_filters_of(framework, |_| false);
        self.frameworks.remove(&framework);
        for (agent, role, res) in holdings {
            self.release(agent, framework, &role, &res)?;
        }
        for role in roles {
            self.try_untrack_framework_under_role(framework, &role)?;
        }
        self.outstanding_inverse.retain(|(_, f)| *f != framework);
        self.inverse_statuses.retain(|(_, f), _| *f != framework);
        Ok(())
    }

    fn activate_framework(&mut self, framework: FrameworkId) -> Result<()> {
        self.unblock();
        let fw = self.framework(framework, "activate_framework")?;
        let roles: Vec<String> =
            fw.roles().filter(|r| !fw.suppressed.contains(*r)).map(str::to_owned).collect();
        self.frameworks.get_mut(&framework).expect("checked").active = true;
        for role in roles {
            self.set_framework_activity(framework, &role, true)?;
        }
        Ok(())
    }

    fn deactivate_framework(&mut self, framework: FrameworkId) -> Result<()> {
        self.unblock();
        let tracked: Vec<String> = self
            .roles
            .iter()
            .filter(|(_, s)| s.frameworks.contains(&framework))
            .map(|(r, _)| r.clone())
            .collect();
        let fw = self.frameworks.get_mut(&framework).ok_or_else(|| {
            ModuleError::rejected(format!("deactivate_framework: unknown {framework}"))
        })?;
        fw.active = false;
        fw.inverse_filters.clear();
        self.drop_refuse_filters_of(framework, |_| false);
        for role in tracked {
            self.set_framework_activity(framework, &role, false)?;
        }
        Ok(())
    }

    fn update_framework(&mut self, info: &FrameworkInfo, options: &FrameworkOptions) -> Result<()> {
        self.unblock();
        let old = self.framework(info.id, "update_framework")?;
        let old_roles: BTreeSet<String> = old.roles().map(str::to_owned).collect();
        let new_roles: BTreeSet<String> = info_roles(info).into_iter().collect();
        let suppressed: BTreeSet<String> =
            options.suppressed_roles.iter().map(|r| r.to_string()).collect();
        {
            let fw = self.frameworks.get_mut(&info.id).expect("checked");
            fw.info = info.clone();
            fw.suppressed = suppressed.clone();
            fw.min_allocatable = options
                .min_allocatable_resources
                .iter()
                .map(|m| (m.role.to_string(), m.sets.to_vec()))
                .collect();
        }
        let names = &self.role_names;
        let kept: Vec<RoleId> = new_roles.iter().filter_map(|r| names.get(r)).collect();
        self.drop_refuse_filters_of(info.id, |f| kept.contains(&f.role));
        for role in new_roles.difference(&old_roles) {
            self.track_framework_under_role(info.id, role)?;
        }
        for role in old_roles.difference(&new_roles) {
            self.set_framework_activity(info.id, role, false)?;
            self.try_untrack_framework_under_role(info.id, role)?;
        }
        let active = self.frameworks[&info.id].active;
        for role in &new_roles {
            self.set_framework_activity(info.id, role, active && !suppressed.contains(role))?;
        }
        Ok(())
    }

    fn add_agent(
        &mut self,
        info: &AgentInfo,
        unavailability: Option<&Unavailability>,
        total: &Resources,
        used: &[Allocation],
    ) -> Result<()> {
        if self.agents.contains_key(&info.id) {
            return Err(ModuleError::rejected(format!(
                "add_agent: {} ({}) already added",
                info.id, info.name
            )));
        }
        let mut used_total = Resources::new();
        for u in used {
            used_total.add(&u.resources.filter(|r| !r.is_shared()));
        }
        if !total.contains(&used_total) {
            return Err(ModuleError::rejected(format!(
                "add_agent: {} uses {used_total}, more than its total {total}",
                info.name
            )));
        }
        let mut agent = Agent {
            info: info.clone(),
            total: total.clone(),
            allocated: Ledger::default(),
            free: Resources::new(),
            free_exact: true,
            total_has_shared: false,
            activated: true,
            has_gpu: total.scalar("gpus").is_positive(),
            maintenance: unavailability.copied(),
            blocked: Vec::new(),
            offer_filters: AgentFilters::default(),
        };
        for u in used {
            agent.allocated.entry(u.framework, Role::from(&u.role)).add(&u.resources);
        }
        agent.recompute_free();
        let q = total.scalar_quantities();
        self.role_sorter
            .add_agent(info.id, &q)
            .map_err(|e| sorter_error("role sorter add_agent", e))?;
        for state in self.roles.values_mut() {
            state
                .sorter
                .add_agent(info.id, &q)
                .map_err(|e| sorter_error("framework sorter add_agent", e))?;
        }
        self.agents.insert(info.id, agent);
        for u in used {
            if self.frameworks.contains_key(&u.framework) {
                self.track_allocated(info.id, u.framework, &u.role, &u.resources)?;
            }
        }
        self.check_recovery();
        Ok(())
    }

    fn remove_agent(&mut self, agent: AgentId) -> Result<()> {
        let a = self.agent(agent, "remove_agent")?;
        let holdings: Vec<(FrameworkId, Role, Resources)> =
            a.allocated.iter().map(|h| (h.framework, h.role, h.resources.clone())).collect();
        for (fw, role, res) in holdings {
            if self.frameworks.contains_key(&fw) {
                self.release(agent, fw, &role, &res)?;
            }
        }
        self.role_sorter
            .remove_agent(agent)
            .map_err(|e| sorter_error("role sorter remove_agent", e))?;
        for state in self.roles.values_mut() {
            state
                .sorter
                .remove_agent(agent)
                .map_err(|e| sorter_error("framework sorter remove_agent", e))?;
        }
        self.drop_refuse_filters_on(agent);
        for fw in self.frameworks.values_mut() {
            fw.inverse_filters.remove(&agent);
        }
        self.outstanding_inverse.retain(|(a, _)| *a != agent);
        self.inverse_statuses.retain(|(a, _), _| *a != agent);
        self.agents.remove(&agent);
        Ok(())
    }

    fn update_agent(&mut self, info: &AgentInfo, total: Option<&Resources>) -> Result<()> {
        self.unblock();
        let old = self.agent(info.id, "update_agent")?;
        let attributes_changed = old.info.attributes != info.attributes;
        let total_changed = total.is_some_and(|t| *t != old.total);
        if attributes_changed {
            self.drop_refuse_filters_on(info.id);
            for fw in self.frameworks.values_mut() {
                fw.inverse_filters.remove(&info.id);
            }
        }
        let agent = self.agents.get_mut(&info.id).expect("checked");
        agent.info = info.clone();
        if let (true, Some(t)) = (total_changed, total) {
            agent.total = t.clone();
            agent.has_gpu = t.scalar("gpus").is_positive();
            agent.recompute_free();
            let q = t.scalar_quantities();
            self.resize_agent_in_sorters(info.id, &q)?;
        }
        Ok(())
    }

    fn add_resource_provider(
        &mut self,
        agent: AgentId,
        total: &Resources,
        used: &[Allocation],
    ) -> Result<()> {
        let a = self.agent(agent, "add_resource_provider")?;
        let mut info = a.info.clone();
        let new_total = a.total.clone() + total;
        info.capabilities = info.capabilities.with(AgentCapabilities::RESOURCE_PROVIDER);
        self.update_agent(&info, Some(&new_total))?;
        for u in used {
            if self.frameworks.contains_key(&u.framework) {
                let a = self.agents.get_mut(&agent).expect("checked");
                a.allocated.entry(u.framework, Role::from(&u.role)).add(&u.resources);
                a.take_free(&u.resources);
                self.track_allocated(agent, u.framework, &u.role, &u.resources)?;
            }
        }
        Ok(())
    }

    fn activate_agent(&mut self, agent: AgentId) -> Result<()> {
        self.set_agent_activated(agent, true, "activate_agent")
    }

    fn deactivate_agent(&mut self, agent: AgentId) -> Result<()> {
        self.set_agent_activated(agent, false, "deactivate_agent")
    }

    fn update_whitelist(&mut self, hostnames: Option<&[RString]>) -> Result<()> {
        self.whitelist = hostnames.map(|h| h.iter().map(|s| s.to_string()).collect());
        Ok(())
    }

    fn request(&mut self, framework: FrameworkId, requests: &[Request]) -> Result<()> {
        if log::log_enabled!(log::Level::Info) {
            let stated: Vec<String> = requests.iter().map(|r| r.to_string()).collect();
            log::info!(
                "received resource requests from {framework}: [{}] (advisory; ignored)",
                stated.join("; ")
            );
        }
        Ok(())
    }

    fn update_allocation(
        &mut self,
        framework: FrameworkId,
        agent: AgentId,
        role: &str,
        operations: &[Operation],
    ) -> Result<()> {
        self.framework(framework, "update_allocation")?;
        let a = self.agent(agent, "update_allocation")?;
        let held = a.allocated.get(framework, role).cloned().unwrap_or_default();
        // Apply to copies first: all operations or none.
        let (mut new_held, mut total) = (held.clone(), a.total.clone());
        for op in operations {
            let (consumed, converted) = op
                .conversion()
                .map_err(|e| ModuleError::rejected(format!("update_allocation: {e}")))?;
            new_held = op.apply(&new_held).map_err(|e| {
                ModuleError::rejected(format!(
                    "update_allocation: {framework} under role '{role}' on {agent}: {e}"
                ))
            })?;
            total = total - &consumed + &converted;
        }
        let a = self.agents.get_mut(&agent).expect("checked");
        a.total = total;
        a.allocated.set(framework, Role::from(role), new_held.clone());
        a.recompute_free();
        if let Some(state) = self.roles.get_mut(role) {
            self.role_sorter
                .update(state.client, agent, &held, &new_held)
                .map_err(|e| sorter_error("role sorter update", e))?;
            if state.frameworks.contains(&framework) {
                state
                    .sorter
                    .update(ClientId(framework.0), agent, &held, &new_held)
                    .map_err(|e| sorter_error("framework sorter update", e))?;
            }
        }
        Ok(())
    }

    fn update_available(&mut self, agent: AgentId, operations: &[Operation]) -> Result<()> {
        let a = self.agent(agent, "update_available")?;
        let (mut free, mut total) = (a.free.clone(), a.total.clone());
        for op in operations {
            let (consumed, converted) = op
                .conversion()
                .map_err(|e| ModuleError::rejected(format!("update_available: {e}")))?;
            free = op
                .apply(&free)
                .map_err(|e| ModuleError::rejected(format!("update_available on {agent}: {e}")))?;
            total = total - &consumed + &converted;
        }
        let q_changed = total.scalar_quantities() != self.agents[&agent].total.scalar_quantities();
        let a = self.agents.get_mut(&agent).expect("checked");
        a.total = total;
        a.recompute_free();
        if q_changed {
            let q = a.total.scalar_quantities();
            self.resize_agent_in_sorters(agent, &q)?;
        }
        Ok(())
    }

    fn update_unavailability(
        &mut self,
        agent: AgentId,
        unavailability: Option<&Unavailability>,
    ) -> Result<()> {
        let a = self.agents.get_mut(&agent).ok_or_else(|| {
            ModuleError::rejected(format!("update_unavailability: unknown {agent}"))
        })?;
        a.maintenance = unavailability.copied();
        for fw in self.frameworks.values_mut() {
            fw.inverse_filters.remove(&agent);
        }
        self.outstanding_inverse.retain(|(a, _)| *a != agent);
        self.inverse_statuses.retain(|(a, _), _| *a != agent);
        Ok(())
    }

    fn update_inverse_offer(
        &mut self,
        agent: AgentId,
        framework: FrameworkId,
        status: Option<InverseOfferStatus>,
        refuse_seconds: Option<f64>,
    ) -> Result<()> {
        self.agent(agent, "update_inverse_offer")?;
        self.framework(framework, "update_inverse_offer")?;
        self.outstanding_inverse.remove(&(agent, framework));
        if let Some(s) = status {
            self.inverse_statuses.insert((agent, framework), (s, self.now));
        }
        if let Some(t) = clamp_refuse_seconds(refuse_seconds) {
            let until = self.now + t;
            self.earliest_expiry = self.earliest_expiry.min(until);
            self.frameworks
                .get_mut(&framework)
                .expect("checked")
                .inverse_filters
                .insert(agent, until);
        }
        Ok(())
    }

    fn inverse_offer_statuses(&self, out: &mut RVec<InverseOfferStatusEntry>) -> Result<()> {
        out.clear();
        for ((agent, framework), (status, timestamp)) in &self.inverse_statuses {
            out.push(InverseOfferStatusEntry {
                agent: *agent,
                framework: *framework,
                status: *status,
                timestamp: *timestamp,
            });
        }
        Ok(())
    }

    fn recover_resources(
        &mut self,
        framework: FrameworkId,
        agent: AgentId,
        role: &str,
        resources: &Resources,
        refuse_seconds: Option<f64>,
    ) -> Result<()> {
        if resources.is_empty() {
            return Ok(());
        }
        // Mesos: resources of removed frameworks or agents were recovered when they went.
        if !self.frameworks.contains_key(&framework) || !self.agents.contains_key(&agent) {
            log::debug!("recover_resources for unknown {framework} or {agent}: already recovered");
            return Ok(());
        }
        let none = Resources::new();
        let held = self.agents[&agent].allocated.get(framework, role).unwrap_or(&none);
        if !held.contains(resources) {
            return Err(ModuleError::rejected(format!(
                "recover_resources: {framework} holds {held} under role '{role}' on {agent}, cannot recover {resources}"
            )));
        }
        self.release(agent, framework, role, resources)?;
        if let Some(t) = clamp_refuse_seconds(refuse_seconds) {
            let lifetime = t.max(self.options.allocation_interval);
            let filter = OfferFilter {
                framework,
                // A tracked role's id without hashing its name (it is tracked while the
                // framework is subscribed to it).
                role: match self.roles.get(role) {
                    Some(state) => self.role_name_ids[state.client.index()],
                    None => self.role_names.intern(role),
                },
                expires: self.now + lifetime,
                first_periodic: self.first_periodic_after(self.now),
                resources: self.refused.share(resources),
            };
            self.add_refuse_filter(agent, filter);
        }
        Ok(())
    }

    fn suppress_offers(&mut self, framework: FrameworkId, roles: &[RString]) -> Result<()> {
        self.unblock();
        let fw = self.framework(framework, "suppress_offers")?;
        let roles: Vec<String> = if roles.is_empty() {
            fw.roles().map(str::to_owned).collect()
        } else {
            roles.iter().map(|r| r.to_string()).collect()
        };
        for role in roles {
            self.frameworks.get_mut(&framework).expect("checked").suppressed.insert(role.clone());
            self.set_framework_activity(framework, &role, false)?;
        }
        Ok(())
    }

    fn revive_offers(&mut self, framework: FrameworkId, roles: &[RString]) -> Result<()> {
        self.unblock();
        let fw = self.framework(framework, "revive_offers")?;
        let roles: Vec<String> = if roles.is_empty() {
            fw.roles().map(str::to_owned).collect()
        } else {
            roles.iter().map(|r| r.to_string()).collect()
        };
        let fw = self.frameworks.get_mut(&framework).expect("checked");
        fw.inverse_filters.clear();
        let active = fw.active;
        for role in &roles {
            fw.suppressed.remove(role);
        }
        let names = &self.role_names;
        let revived: Vec<RoleId> = roles.iter().filter_map(|r| names.get(r)).collect();
        self.drop_refuse_filters_of(framework, |f| !revived.contains(&f.role));
        for role in roles {
            self.set_framework_activity(framework, &role, active)?;
        }
        Ok(())
    }

    fn update_quota(&mut self, role: &str, quota: &Quota) -> Result<()> {
        check_quota(role, quota)
            .map_err(|e| ModuleError::rejected(format!("update_quota: {e}")))?;
        if quota.guarantees.is_empty() && quota.limits.is_empty() {
            self.quotas.remove(role);
        } else {
            self.quotas.insert(role.to_owned(), quota.clone());
        }
        Ok(())
    }

    fn update_weights(&mut self, weights: &[RoleWeight]) -> Result<()> {
        for w in weights {
            if !(w.weight.is_finite() && w.weight > 0.0) {
                return Err(ModuleError::rejected(format!(
                    "update_weights: weight of '{}' must be positive, got {}",
                    w.role, w.weight
                )));
            }
        }
        for w in weights {
            self.weights.insert(w.role.to_string(), w.weight);
            self.role_sorter
                .update_weight(&w.role, w.weight)
                .map_err(|e| sorter_error("role sorter update_weight", e))?;
        }
        Ok(())
    }

    fn pause(&mut self) -> Result<()> {
        self.paused = true;
        Ok(())
    }

    fn resume(&mut self) -> Result<()> {
        self.paused = false;
        self.recovery = None;
        Ok(())
    }

    fn allocate(&mut self, agents: &[AgentId], periodic: bool, out: &mut OfferBatch) -> Result<()> {
        self.check_recovery();
        if self.paused {
            return Ok(());
        }
        self.expire_filters();
        self.run(agents, periodic, out)
    }
}
