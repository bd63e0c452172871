//! Agents: adding, removing, (de)activating and updating them, resource providers, and the
//! operations that change what an agent has (`update_allocation`, `update_available`). Each
//! command calls the allocator first and records the change only when the allocator took it.

use allocator_api::{
    AgentCapabilities, AgentId, AgentInfo, Allocation, Attribute, Operation, Resources,
    Unavailability,
};

use super::{AgentRecord, Master, TaskEnd};

/// An agent to add.
#[derive(Clone, Copy, Debug)]
pub struct NewAgent<'a> {
    /// Its name (the agent id in Mesos terms).
    pub name: &'a str,
    /// Its total resources.
    pub resources: &'a Resources,
    /// Its hostname (`None`: the name).
    pub hostname: Option<&'a str>,
    /// What it supports (`None`: everything).
    pub capabilities: Option<AgentCapabilities>,
    /// Its attributes.
    pub attributes: &'a [Attribute],
    /// What frameworks already use on it.
    pub used: &'a [(String, Option<String>, Resources)],
    /// Its maintenance window, if any.
    pub unavailability: Option<Unavailability>,
}

impl Master<'_> {
    /// Adds an agent (a name seen before and removed gets its old id back), records what
    /// frameworks use on it, and runs the allocator over it.
    pub(super) fn add_agent(&mut self, new: NewAgent<'_>) -> Result<AgentId, String> {
        let name = new.name;
        if self.agent_ids.get(name).is_some_and(|id| self.agents[id.index()].present) {
            return Err(format!("agent '{name}' is already added"));
        }
        let id =
            *self.agent_ids.entry(name.to_owned()).or_insert(AgentId(self.agents.len() as u32));
        let info = AgentInfo {
            id,
            name: name.into(),
            hostname: new.hostname.unwrap_or(name).into(),
            attributes: new.attributes.to_vec().into(),
            capabilities: new.capabilities.unwrap_or_else(AgentCapabilities::all),
        };
        let mut allocations = Vec::new();
        for (fw_name, role, res) in new.used {
            let fw = self.framework_id_or_new(fw_name);
            let role = match role {
                Some(r) => r.clone(),
                None => self
                    .frameworks
                    .get(fw.index())
                    .and_then(Option::as_ref)
                    .and_then(|f| f.info.roles.first().map(|r| r.to_string()))
                    .ok_or_else(|| format!("framework '{fw_name}' is not known yet: give its used resources as {{role: resources}}"))?,
            };
            allocations.push(Allocation {
                framework: fw,
                agent: id,
                role: role.as_str().into(),
                resources: res.clone(),
            });
        }
        let unavailability = new.unavailability;
        self.call("add_agent", |a| {
            a.add_agent(&info, unavailability.as_ref(), new.resources, &allocations)
        })?;
        let record = AgentRecord {
            info,
            total: new.resources.clone(),
            present: true,
            activated: true,
            unavailability,
        };
        if id.index() == self.agents.len() {
            self.agents.push(record);
        } else {
            self.agents[id.index()] = record;
        }
        self.present_agents.take();
        self.cluster.add(&new.resources.scalar_quantities());
        for a in allocations {
            self.ledger.add(a.framework, id, &a.role, &a.resources);
        }
        self.allocate(&[id], false)?;
        Ok(id)
    }

    /// Removes an agent: what frameworks held there is gone, and so are its tasks.
    pub(super) fn remove_agent(&mut self, id: AgentId) -> Result<(), String> {
        self.call("remove_agent", |a| a.remove_agent(id))?;
        self.ledger.clear_agent(id);
        let lost: Vec<_> =
            self.tasks.iter().filter(|(_, t)| t.agent == id).map(|(k, _)| *k).collect();
        for key in lost {
            self.end_task(key, TaskEnd::AgentRemoved);
        }
        let rec = &mut self.agents[id.index()];
        rec.present = false;
        self.present_agents.take();
        self.cluster.subtract(&rec.total.scalar_quantities());
        self.outbox.push(super::Event::AgentRemoved(id));
        Ok(())
    }

    /// Activates an agent (its resources are offered again).
    pub(super) fn activate_agent(&mut self, id: AgentId) -> Result<(), String> {
        self.call("activate_agent", |a| a.activate_agent(id))?;
        self.agents[id.index()].activated = true;
        Ok(())
    }

    /// Deactivates an agent (nothing on it is offered until it is activated).
    pub(super) fn deactivate_agent(&mut self, id: AgentId) -> Result<(), String> {
        self.call("deactivate_agent", |a| a.deactivate_agent(id))?;
        self.agents[id.index()].activated = false;
        Ok(())
    }

    /// Updates an agent's total, capabilities or attributes (each `None`: unchanged); runs the
    /// allocator over it when anything changed.
    pub(super) fn update_agent(
        &mut self,
        id: AgentId,
        resources: Option<&Resources>,
        capabilities: Option<AgentCapabilities>,
        attributes: Option<&[Attribute]>,
    ) -> Result<(), String> {
        let rec = &self.agents[id.index()];
        let mut info = rec.info.clone();
        if let Some(c) = capabilities {
            info.capabilities = c;
        }
        if let Some(a) = attributes {
            info.attributes = a.to_vec().into();
        }
        let changed = info != rec.info || resources.is_some_and(|r| *r != rec.total);
        self.call("update_agent", |a| a.update_agent(&info, resources))?;
        self.agents[id.index()].info = info;
        if let Some(t) = resources {
            self.set_agent_total(id, t.clone());
        }
        if changed { self.allocate(&[id], false) } else { Ok(()) }
    }

    /// Adds a resource provider's resources to an agent, with what frameworks (by name,
    /// present) already use of them.
    pub(super) fn add_resource_provider(
        &mut self,
        id: AgentId,
        resources: &Resources,
        used: &[(String, Option<String>, Resources)],
    ) -> Result<(), String> {
        let mut allocations = Vec::new();
        for (fw_name, role, res) in used {
            let fw = self.framework_id(fw_name)?;
            let role = role.clone().unwrap_or_else(|| {
                self.frameworks[fw.index()]
                    .as_ref()
                    .and_then(|f| f.info.roles.first().map(|r| r.to_string()))
                    .unwrap_or_default()
            });
            allocations.push(Allocation {
                framework: fw,
                agent: id,
                role: role.as_str().into(),
                resources: res.clone(),
            });
        }
        self.call("add_resource_provider", |a| {
            a.add_resource_provider(id, resources, &allocations)
        })?;
        self.agents[id.index()].total.add(resources);
        self.cluster.add(&resources.scalar_quantities());
        for a in allocations {
            self.ledger.add(a.framework, id, &a.role, &a.resources);
        }
        Ok(())
    }

    /// Schedules (or with `None` cancels) an agent's maintenance, and runs the allocator over
    /// it (inverse offers go out).
    pub(super) fn update_unavailability(
        &mut self,
        id: AgentId,
        u: Option<Unavailability>,
    ) -> Result<(), String> {
        self.call("update_unavailability", |a| a.update_unavailability(id, u.as_ref()))?;
        self.agents[id.index()].unavailability = u;
        self.allocate(&[id], false)
    }

    /// Applies operations (reserve, create a volume, …) to what a framework holds on an agent.
    pub(super) fn update_allocation(
        &mut self,
        fw: allocator_api::FrameworkId,
        agent: AgentId,
        role: &str,
        operations: &[Operation],
    ) -> Result<(), String> {
        let held = self.ledger.held(fw, agent, role);
        let (new_held, total) =
            Operation::apply_all(operations, &held, &self.agents[agent.index()].total)?;
        self.call("update_allocation", |al| al.update_allocation(fw, agent, role, operations))?;
        self.ledger.remove(fw, agent, role, &held);
        self.ledger.add(fw, agent, role, &new_held);
        self.set_agent_total(agent, total);
        Ok(())
    }

    /// Applies operations to an agent's unallocated resources.
    pub(super) fn update_available(
        &mut self,
        agent: AgentId,
        operations: &[Operation],
    ) -> Result<(), String> {
        let mut total = self.agents[agent.index()].total.clone();
        for op in operations {
            let (consumed, converted) = op.conversion()?;
            total = total - &consumed + &converted;
        }
        self.call("update_available", |al| al.update_available(agent, operations))?;
        self.set_agent_total(agent, total);
        Ok(())
    }

    /// Records an agent's new total.
    fn set_agent_total(&mut self, agent: AgentId, total: Resources) {
        let rec = &mut self.agents[agent.index()];
        let old = std::mem::replace(&mut rec.total, total);
        self.cluster.subtract(&old.scalar_quantities());
        self.cluster.add(&rec.total.scalar_quantities());
    }
}
