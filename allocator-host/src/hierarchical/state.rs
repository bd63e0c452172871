//! Agents, frameworks and roles: the allocator's bookkeeping, and the sorters kept in step
//! with every grant and release.

use super::*;

impl HierarchicalAllocator {
    pub(super) fn framework(&self, id: FrameworkId, call: &str) -> Result<&Framework> {
        self.frameworks
            .get(&id)
            .ok_or_else(|| ModuleError::rejected(format!("{call}: unknown {id}")))
    }

    pub(super) fn agent(&self, id: AgentId, call: &str) -> Result<&Agent> {
        self.agents.get(&id).ok_or_else(|| ModuleError::rejected(format!("{call}: unknown {id}")))
    }

    pub(super) fn set_agent_activated(
        &mut self,
        agent: AgentId,
        activated: bool,
        call: &str,
    ) -> Result<()> {
        self.agents
            .get_mut(&agent)
            .ok_or_else(|| ModuleError::rejected(format!("{call}: unknown {agent}")))?
            .activated = activated;
        Ok(())
    }

    /// Voids every [`Blocked`] record: something other than an agent's resources or a filter's
    /// expiry changed what a framework may be offered (a framework, its roles, activity,
    /// capabilities or options, or a removed filter).
    pub(super) fn unblock(&mut self) {
        self.blocked_generation += 1;
    }

    /// Tells every sorter that `agent`'s total is now `q` (sorters take a change as remove + add).
    pub(super) fn resize_agent_in_sorters(&mut self, agent: AgentId, q: &Quantities) -> Result<()> {
        self.role_sorter
            .remove_agent(agent)
            .map_err(|e| sorter_error("role sorter remove_agent", e))?;
        self.role_sorter
            .add_agent(agent, q)
            .map_err(|e| sorter_error("role sorter add_agent", e))?;
        for state in self.roles.values_mut() {
            state
                .sorter
                .remove_agent(agent)
                .map_err(|e| sorter_error("framework sorter remove_agent", e))?;
            state
                .sorter
                .add_agent(agent, q)
                .map_err(|e| sorter_error("framework sorter add_agent", e))?;
        }
        Ok(())
    }

    /// Tracks `fw` under `role`, adding the role to the role sorter and creating its framework
    /// sorter on first use.
    pub(super) fn track_framework_under_role(&mut self, fw: FrameworkId, role: &str) -> Result<()> {
        // Already tracked (every grant of a run): one lookup.
        if self.roles.get(role).is_some_and(|s| s.frameworks.contains(&fw)) {
            return Ok(());
        }
        if !self.roles.contains_key(role) {
            self.unblock();
            let client = ClientId(self.next_role_client);
            self.next_role_client += 1;
            self.role_sorter.add(client, role).map_err(|e| sorter_error("role sorter add", e))?;
            self.role_sorter
                .activate(client)
                .map_err(|e| sorter_error("role sorter activate", e))?;
            let mut sorter =
                (self.make_framework_sorter)(&self.sorter_config).map_err(ModuleError::failed)?;
            sorter.keep_scalars_only();
            for (id, agent) in &self.agents {
                sorter
                    .add_agent(*id, &agent.total.scalar_quantities())
                    .map_err(|e| sorter_error("framework sorter add_agent", e))?;
            }
            self.role_by_client.insert(client, Role::from(role));
            let name_id = self.role_names.intern(role);
            if self.role_name_ids.len() <= client.index() {
                self.role_name_ids.resize(client.index() + 1, RoleId::default());
            }
            self.role_name_ids[client.index()] = name_id;
            self.roles
                .insert(role.to_owned(), RoleState { client, sorter, frameworks: BTreeSet::new() });
        }
        let state = self.roles.get_mut(role).expect("just ensured");
        if state.frameworks.insert(fw) {
            self.blocked_generation += 1; // unblock(), with `state` borrowed
            state
                .sorter
                .add(ClientId(fw.0), &framework_path(fw))
                .map_err(|e| sorter_error("framework sorter add", e))?;
            if let Some(f) = self.frameworks.get(&fw)
                && f.active
                && !f.suppressed.contains(role)
            {
                state
                    .sorter
                    .activate(ClientId(fw.0))
                    .map_err(|e| sorter_error("framework sorter activate", e))?;
            }
        }
        Ok(())
    }

    /// Untracks `fw` under `role` when it neither subscribes to the role nor holds resources
    /// under it; removes the role when no framework is left.
    pub(super) fn try_untrack_framework_under_role(
        &mut self,
        fw: FrameworkId,
        role: &str,
    ) -> Result<()> {
        // Cheap test first: a subscribed framework stays tracked whatever it holds.
        if self.frameworks.get(&fw).is_some_and(|f| f.roles().any(|r| r == role)) {
            return Ok(());
        }
        let holds = self.agents.values().any(|a| a.allocated.holds_role(fw, role));
        if holds {
            return Ok(());
        }
        self.unblock();
        let Some(state) = self.roles.get_mut(role) else { return Ok(()) };
        if state.frameworks.remove(&fw) {
            state
                .sorter
                .remove(ClientId(fw.0))
                .map_err(|e| sorter_error("framework sorter remove", e))?;
        }
        if state.frameworks.is_empty() {
            let state = self.roles.remove(role).expect("present");
            self.role_by_client.remove(&state.client);
            self.role_sorter
                .remove(state.client)
                .map_err(|e| sorter_error("role sorter remove", e))?;
        }
        Ok(())
    }

    pub(super) fn track_allocated(
        &mut self,
        agent: AgentId,
        fw: FrameworkId,
        role: &str,
        res: &Resources,
    ) -> Result<()> {
        if res.is_empty() {
            return Ok(());
        }
        self.track_framework_under_role(fw, role)?;
        let state = self.roles.get_mut(role).expect("tracked");
        self.role_sorter
            .allocated(state.client, agent, res)
            .map_err(|e| sorter_error("role sorter allocated", e))?;
        state
            .sorter
            .allocated(ClientId(fw.0), agent, res)
            .map_err(|e| sorter_error("framework sorter allocated", e))
    }

    pub(super) fn untrack_allocated(
        &mut self,
        agent: AgentId,
        fw: FrameworkId,
        role: &str,
        res: &Resources,
    ) -> Result<()> {
        if res.is_empty() {
            return Ok(());
        }
        if let Some(state) = self.roles.get_mut(role) {
            self.role_sorter
                .unallocated(state.client, agent, res)
                .map_err(|e| sorter_error("role sorter unallocated", e))?;
            if state.frameworks.contains(&fw) {
                state
                    .sorter
                    .unallocated(ClientId(fw.0), agent, res)
                    .map_err(|e| sorter_error("framework sorter unallocated", e))?;
            }
        }
        Ok(())
    }

    pub(super) fn set_framework_activity(
        &mut self,
        fw: FrameworkId,
        role: &str,
        active: bool,
    ) -> Result<()> {
        self.unblock();
        if let Some(state) = self.roles.get_mut(role)
            && state.frameworks.contains(&fw)
        {
            let r = if active {
                state.sorter.activate(ClientId(fw.0))
            } else {
                state.sorter.deactivate(ClientId(fw.0))
            };
            r.map_err(|e| sorter_error("framework sorter (de)activate", e))?;
        }
        Ok(())
    }

    pub(super) fn release(
        &mut self,
        agent_id: AgentId,
        fw: FrameworkId,
        role: &str,
        res: &Resources,
    ) -> Result<()> {
        let agent = self.agents.get_mut(&agent_id).expect("checked");
        let held = agent.allocated.get_mut(fw, role).expect("checked");
        held.subtract(res);
        if held.is_empty() {
            agent.allocated.remove(fw, role);
        }
        agent.release_free(res);
        self.untrack_allocated(agent_id, fw, role, res)?;
        self.try_untrack_framework_under_role(fw, role)
    }
}

/// A framework's client path in its role's framework sorter: its id, zero-padded so that path
/// order (the last DRF tie-break) is the order in which frameworks were first seen, as Mesos's
/// framework ids order by registration. Names are for display only: they need not be unique
/// and may contain `/`.
pub(super) fn framework_path(fw: FrameworkId) -> String {
    format!("{:010}", fw.0)
}

pub(super) fn info_roles(info: &FrameworkInfo) -> Vec<String> {
    info.roles.iter().map(|r| r.to_string()).collect()
}

pub(super) fn sorter_error(what: &str, e: ModuleError) -> ModuleError {
    ModuleError::failed(format!("{what}: {e}"))
}
