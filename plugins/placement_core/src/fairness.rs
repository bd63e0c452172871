//! [`RoleOrder`]: whose stated demand a placement allocator places first: the roles in
//! weighted DRF order (Mesos's, from [`sorter_core::drf`], the same code the host's built-in
//! allocator links), so that under contention the role with the smallest weighted dominant
//! share goes first, as it would get the next offer from the built-in allocator.

use std::collections::BTreeMap;

use allocator_api::{
    AgentId, ClientId, Quantities, RVec, Resources, Result, RoleWeight, Sorter, SorterConfig,
};
use sorter_core::drf::{self, DrfSorter};

/// The roles of the frameworks a placement allocator knows, in DRF order.
pub struct RoleOrder {
    sorter: DrfSorter,
    /// Each role's client id and how many frameworks use it.
    roles: BTreeMap<String, (ClientId, usize)>,
    names: BTreeMap<ClientId, String>,
    next: u32,
    sorted: RVec<ClientId>,
}

impl RoleOrder {
    /// An empty order; `excluded` resource names are left out of shares.
    pub fn new(excluded: &[String]) -> RoleOrder {
        let config = SorterConfig {
            fairness_excluded_resource_names: excluded.iter().map(|n| n.as_str().into()).collect(),
            seed: 0,
        };
        RoleOrder {
            sorter: drf::create(&config),
            roles: BTreeMap::new(),
            names: BTreeMap::new(),
            next: 0,
            sorted: RVec::new(),
        }
    }

    /// A framework in `role` arrived.
    pub fn add_user(&mut self, role: &str) -> Result<()> {
        if let Some((_, users)) = self.roles.get_mut(role) {
            *users += 1;
            return Ok(());
        }
        let id = ClientId(self.next);
        self.next += 1;
        self.sorter.add(id, role)?;
        self.sorter.activate(id)?;
        self.roles.insert(role.to_owned(), (id, 1));
        self.names.insert(id, role.to_owned());
        Ok(())
    }

    /// A framework in `role` left (after what it held was given back).
    pub fn remove_user(&mut self, role: &str) -> Result<()> {
        let Some((id, users)) = self.roles.get_mut(role) else { return Ok(()) };
        *users -= 1;
        if *users == 0 {
            let id = *id;
            self.sorter.remove(id)?;
            self.roles.remove(role);
            self.names.remove(&id);
        }
        Ok(())
    }

    /// `role` now holds `r` more on `agent`.
    pub fn allocated(&mut self, role: &str, agent: AgentId, r: &Resources) -> Result<()> {
        match self.roles.get(role) {
            Some((id, _)) => self.sorter.allocated(*id, agent, r),
            None => Ok(()),
        }
    }

    /// `role` gave back `r` on `agent`.
    pub fn unallocated(&mut self, role: &str, agent: AgentId, r: &Resources) -> Result<()> {
        match self.roles.get(role) {
            Some((id, _)) => self.sorter.unallocated(*id, agent, r),
            None => Ok(()),
        }
    }

    /// An agent's total joins the pool.
    pub fn add_agent(&mut self, agent: AgentId, total: &Resources) -> Result<()> {
        let q: Quantities = total.scalar_quantities();
        self.sorter.add_agent(agent, &q)
    }

    /// An agent's total leaves the pool.
    pub fn remove_agent(&mut self, agent: AgentId) -> Result<()> {
        self.sorter.remove_agent(agent)
    }

    /// Sets role weights (roles not known yet are remembered by the sorter).
    pub fn update_weights(&mut self, weights: &[RoleWeight]) -> Result<()> {
        for w in weights {
            self.sorter.update_weight(w.role.as_str(), w.weight)?;
        }
        Ok(())
    }

    /// The roles, smallest weighted dominant share first (ties as Mesos breaks them).
    pub fn sorted(&mut self, out: &mut Vec<String>) -> Result<()> {
        self.sorter.sort(&mut self.sorted)?;
        out.clear();
        out.extend(self.sorted.iter().filter_map(|id| self.names.get(id).cloned()));
        Ok(())
    }
}
