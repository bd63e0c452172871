//! Read queries that clients of the master share (the operator API, Mesos's endpoints, a
//! scheduler's views): which roles the master knows, who is in a role, and what a role or a
//! framework holds. Each reads the host's records only.

use std::collections::BTreeSet;

use allocator_api::{FrameworkId, Resources};

use super::Master;

impl Master<'_> {
    /// Every role the master knows, in name order: those holding resources, weighted, with a
    /// quota, or named by a framework.
    pub fn role_names(&self) -> Vec<String> {
        let mut names: BTreeSet<String> = self.role_alloc().keys().cloned().collect();
        names.extend(self.weights().keys().cloned());
        names.extend(self.quotas().keys().cloned());
        for fw in self.framework_ids() {
            if let Some(info) = self.framework_info(fw) {
                names.extend(info.roles.iter().map(|r| r.to_string()));
            }
        }
        names.into_iter().collect()
    }

    /// The frameworks subscribed to `role`, by name.
    pub fn frameworks_in_role(&self, role: &str) -> Vec<&str> {
        self.framework_ids()
            .filter(|fw| {
                self.framework_info(*fw).is_some_and(|i| i.roles.iter().any(|r| r.as_str() == role))
            })
            .map(|fw| self.framework_name(fw))
            .collect()
    }

    /// What `role` holds, offered or allocated, by the host's ledger.
    pub fn held_by_role(&self, role: &str) -> Resources {
        self.ledger()
            .iter()
            .filter(|a| a.role.as_str() == role)
            .fold(Resources::default(), |acc, a| acc + &a.resources)
    }

    /// What framework `fw` holds, offered or allocated, by the host's ledger.
    pub fn held_by_framework(&self, fw: FrameworkId) -> Resources {
        self.ledger()
            .iter()
            .filter(|a| a.framework == fw)
            .fold(Resources::default(), |acc, a| acc + &a.resources)
    }
}
