//! Frameworks: adding, removing, (de)activating and updating them, and what a framework does
//! with what it holds (`recover_resources`, suppress and revive, answering inverse offers).

use allocator_api::{
    AgentId, Allocation, FrameworkCapabilities, FrameworkId, FrameworkInfo, FrameworkOptions,
    InverseOfferStatus, RString, Request, Resources, RoleMinAllocatable,
};

use super::{FrameworkRecord, Master, TaskEnd};

/// A framework to add.
#[derive(Clone, Copy, Debug)]
pub struct NewFramework<'a> {
    /// Its name (the framework id in Mesos terms).
    pub name: &'a str,
    /// Its roles (at least one).
    pub roles: &'a [String],
    /// What it supports.
    pub capabilities: FrameworkCapabilities,
    /// Whether it starts active (connected).
    pub active: bool,
    /// What it already uses, per agent (under its first role).
    pub used: &'a [(String, Resources)],
    /// Roles it starts suppressed in.
    pub suppressed_roles: &'a [String],
    /// Its `min_allocatable_resources` per role.
    pub min_allocatable: &'a [RoleMinAllocatable],
}

fn rstrings(list: &[String]) -> Vec<RString> {
    list.iter().map(|r| RString::from(r.as_str())).collect()
}

impl Master<'_> {
    /// The id of a framework name, assigned on first mention (a framework may be named in an
    /// agent's `used` before it is added).
    pub(super) fn framework_id_or_new(&mut self, name: &str) -> FrameworkId {
        if let Some(id) = self.framework_ids.get(name) {
            return *id;
        }
        let id = FrameworkId(self.frameworks.len() as u32);
        self.frameworks.push(None);
        self.framework_names.push(name.to_owned());
        self.framework_ids.insert(name.to_owned(), id);
        id
    }

    /// Adds a framework; when it is active, runs the allocator over every agent.
    pub(super) fn add_framework(&mut self, new: NewFramework<'_>) -> Result<FrameworkId, String> {
        if self.framework_id(new.name).is_ok() {
            return Err(format!("framework '{}' is already added", new.name));
        }
        if new.roles.is_empty() {
            return Err("a framework needs at least one role".into());
        }
        let id = self.framework_id_or_new(new.name);
        let info = FrameworkInfo {
            id,
            name: new.name.into(),
            roles: rstrings(new.roles).into(),
            capabilities: new.capabilities,
        };
        let options = FrameworkOptions {
            suppressed_roles: rstrings(new.suppressed_roles).into(),
            min_allocatable_resources: new.min_allocatable.to_vec().into(),
        };
        let mut allocations = Vec::new();
        for (agent, res) in new.used {
            allocations.push(Allocation {
                framework: id,
                agent: self.agent_id(agent)?,
                role: new.roles[0].as_str().into(),
                resources: res.clone(),
            });
        }
        let active = new.active;
        self.call("add_framework", |a| a.add_framework(&info, &allocations, active, &options))?;
        for a in &allocations {
            // An agent added earlier may already have recorded some of it.
            let recorded = self.ledger.held(id, a.agent, &a.role);
            let missing = a.resources.clone() - &recorded;
            self.ledger.add(id, a.agent, &a.role, &missing);
        }
        self.frameworks[id.index()] =
            Some(FrameworkRecord { info, options, present: true, active });
        if active {
            self.allocate_all()?;
        }
        Ok(id)
    }

    /// Removes a framework: what it held goes back, its tasks end.
    pub(super) fn remove_framework(&mut self, id: FrameworkId) -> Result<(), String> {
        self.call("remove_framework", |a| a.remove_framework(id))?;
        self.ledger.clear_framework(id);
        self.finishes.retain(|_, f| *f != id);
        let ended: Vec<_> = self.tasks.range((id, 0)..=(id, u64::MAX)).map(|(k, _)| *k).collect();
        for key in ended {
            self.end_task(key, TaskEnd::FrameworkRemoved);
        }
        if let Some(rec) = self.frameworks[id.index()].as_mut() {
            rec.present = false;
        }
        Ok(())
    }

    /// Activates a framework and runs the allocator over every agent.
    pub(super) fn activate_framework(&mut self, id: FrameworkId) -> Result<(), String> {
        self.call("activate_framework", |a| a.activate_framework(id))?;
        self.set_framework_active(id, true);
        self.allocate_all()
    }

    /// Deactivates a framework (it gets no offers until activated).
    pub(super) fn deactivate_framework(&mut self, id: FrameworkId) -> Result<(), String> {
        self.call("deactivate_framework", |a| a.deactivate_framework(id))?;
        self.set_framework_active(id, false);
        Ok(())
    }

    fn set_framework_active(&mut self, fw: FrameworkId, active: bool) {
        if let Some(Some(rec)) = self.frameworks.get_mut(fw.index()) {
            rec.active = active;
        }
    }

    /// Changes a framework's roles, capabilities, suppressed roles or `min_allocatable_resources`
    /// (each `None`: unchanged).
    pub(super) fn update_framework(
        &mut self,
        id: FrameworkId,
        roles: Option<&[String]>,
        capabilities: Option<FrameworkCapabilities>,
        suppressed_roles: Option<&[String]>,
        min_allocatable: Option<&[RoleMinAllocatable]>,
    ) -> Result<(), String> {
        let rec = self.framework(id).ok_or("unknown framework")?;
        let mut info = rec.info.clone();
        let mut options = rec.options.clone();
        if let Some(r) = roles {
            if r.is_empty() {
                return Err("a framework needs at least one role".into());
            }
            info.roles = rstrings(r).into();
        }
        if let Some(c) = capabilities {
            info.capabilities = c;
        }
        if let Some(s) = suppressed_roles {
            options.suppressed_roles = rstrings(s).into();
        }
        if let Some(m) = min_allocatable {
            options.min_allocatable_resources = m.to_vec().into();
        }
        self.call("update_framework", |a| a.update_framework(&info, &options))?;
        let rec = self.frameworks[id.index()].as_mut().expect("present");
        rec.info = info;
        rec.options = options;
        Ok(())
    }

    /// What `fw` holds on `agent`, per role.
    pub fn held_on(
        &self,
        fw: FrameworkId,
        agent: AgentId,
    ) -> std::collections::BTreeMap<String, Resources> {
        self.ledger.held_on(fw, agent)
    }

    /// Gives back what a framework holds on an agent, per role (`targets`), with an optional
    /// refuse filter; its tasks there that no longer fit in what it still holds end with
    /// their resources.
    pub(super) fn recover_resources(
        &mut self,
        fw: FrameworkId,
        agent: AgentId,
        targets: &[(String, Resources)],
        refuse_seconds: Option<f64>,
    ) -> Result<(), String> {
        for (role, res) in targets {
            self.call("recover_resources", |a| {
                a.recover_resources(fw, agent, role, res, refuse_seconds)
            })?;
            self.ledger.remove(fw, agent, role, res);
        }
        self.reconcile_tasks(fw, agent);
        Ok(())
    }

    /// Ends the framework's tasks on `agent` that no longer fit in what it holds there (in
    /// launch order: the first launched keep their resources).
    fn reconcile_tasks(&mut self, fw: FrameworkId, agent: AgentId) {
        let mut held = self.ledger.held_on(fw, agent);
        let gone: Vec<_> = self
            .tasks
            .range((fw, 0)..=(fw, u64::MAX))
            .filter(|(_, t)| t.agent == agent)
            .filter(|(_, t)| match held.get_mut(&t.role) {
                Some(h) if h.contains(&t.resources) => {
                    h.subtract(&t.resources);
                    false
                }
                _ => true,
            })
            .map(|(k, _)| *k)
            .collect();
        for key in gone {
            self.end_task(key, TaskEnd::ResourcesRecovered);
        }
    }

    /// Suppresses a framework's offers in `roles` (empty: all its roles).
    pub(super) fn suppress_offers(
        &mut self,
        id: FrameworkId,
        roles: &[RString],
    ) -> Result<(), String> {
        self.call("suppress_offers", |a| a.suppress_offers(id, roles))?;
        self.record_suppression(id, roles, true);
        Ok(())
    }

    /// Revives a framework's offers in `roles` (empty: all its roles); with `allocate_now`
    /// runs the allocator over every agent, otherwise the next periodic run serves it.
    pub(super) fn revive_offers(
        &mut self,
        id: FrameworkId,
        roles: &[RString],
        allocate_now: bool,
    ) -> Result<(), String> {
        self.call("revive_offers", |a| a.revive_offers(id, roles))?;
        self.record_suppression(id, roles, false);
        if allocate_now { self.allocate_all() } else { Ok(()) }
    }

    /// Keeps the host's record of suppressed roles (`roles` empty: all the framework's roles).
    fn record_suppression(&mut self, fw: FrameworkId, roles: &[RString], suppressed: bool) {
        let Some(Some(rec)) = self.frameworks.get_mut(fw.index()) else { return };
        let roles: Vec<RString> =
            if roles.is_empty() { rec.info.roles.to_vec() } else { roles.to_vec() };
        let list = &mut rec.options.suppressed_roles;
        for r in roles {
            let present = list.contains(&r);
            if suppressed && !present {
                list.push(r);
            } else if !suppressed && present {
                list.retain(|x| *x != r);
            }
        }
    }

    /// A framework states its demand (Mesos's `REQUEST`, ABI 3's [`Request`]s), replacing
    /// what it stated before; passed to the allocator after the host's checks
    /// ([`Allocator::request`](allocator_api::Allocator::request)): a request without a role
    /// gets the framework's first role; a role the framework is not subscribed to, or a
    /// request that [`Request::invalid`] refuses, refuses the whole call.
    pub(super) fn request(&mut self, fw: FrameworkId, requests: &[Request]) -> Result<(), String> {
        let info = self.framework_info(fw).ok_or_else(|| format!("unknown framework {fw}"))?;
        let first = info.roles.first();
        for (i, r) in requests.iter().enumerate() {
            let role = match (r.role.as_str(), first) {
                ("", Some(first)) => first.as_str(),
                ("", None) => {
                    return Err(format!(
                        "request {i} of framework '{}': the framework has no role",
                        info.name
                    ));
                }
                (role, _) => role,
            };
            if !info.roles.iter().any(|x| x.as_str() == role) {
                return Err(format!(
                    "request {i} of framework '{}': role '{role}' is not one of its roles",
                    info.name
                ));
            }
            if let Some(why) = r.invalid() {
                return Err(format!("request {i} of framework '{}': {why}", info.name));
            }
        }
        // Copied only when a role must be filled in.
        let filled: Vec<Request>;
        let checked = match first.filter(|_| requests.iter().any(|r| r.role.is_empty())) {
            None => requests,
            Some(first) => {
                let first = first.clone();
                filled = requests
                    .iter()
                    .map(|r| match r.role.is_empty() {
                        true => Request { role: first.clone(), ..r.clone() },
                        false => r.clone(),
                    })
                    .collect();
                &filled
            }
        };
        self.call("request", |a| a.request(fw, checked))
    }

    /// A framework's answer to an inverse offer.
    pub(super) fn update_inverse_offer(
        &mut self,
        agent: AgentId,
        fw: FrameworkId,
        status: Option<InverseOfferStatus>,
        refuse_seconds: Option<f64>,
    ) -> Result<(), String> {
        self.call("update_inverse_offer", |al| {
            al.update_inverse_offer(agent, fw, status, refuse_seconds)
        })
    }
}
