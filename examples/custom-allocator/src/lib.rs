//! `binpack`: an allocator module as a third party would write it, against `allocator-api`
//! alone.
//!
//! It packs work onto as few agents as possible, so that whole agents stay free for large tasks
//! (and can be drained): in every allocation run it offers agents **busiest first** (largest
//! allocated fraction of CPUs), each to the next framework in round-robin order that may use
//! it. It honours what every allocator must: offers only what is free on an agent, only
//! unreserved resources and reservations of the framework's role (or its ancestors), nothing
//! to inactive frameworks or suppressed roles, refuse filters (clamped as Mesos does), the
//! whitelist, pause and resume, GPU and capability gating, minimum allocatable sets (global
//! and per framework), and it gives back everything a removed framework or agent held.
//!
//! Parameters (manifest `parameters`):
//! * `min_free_cpus` (default `0.5`): agents with fewer free CPUs than this are not offered
//!   (a threshold against offering slivers).

use std::collections::{BTreeMap, BTreeSet};

use allocator_api::{
    AgentCapabilities, AgentId, AgentInfo, Allocation, Allocator, AllocatorOptions,
    FrameworkCapabilities, FrameworkId, FrameworkInfo, FrameworkOptions, ModuleError, OfferBatch,
    Parameters, RString, RefuseFilter, Resources, Result, Scalar, Unavailability,
};

struct Agent {
    hostname: String,
    capabilities: AgentCapabilities,
    total: Resources,
    free: Resources,
    active: bool,
}

struct Framework {
    role: String,
    active: bool,
    capabilities: FrameworkCapabilities,
    /// Its own min-allocatable sets per role.
    options: FrameworkOptions,
    suppressed: BTreeSet<String>,
    /// Refuse filters by agent (the clamps and lifetime are `allocator-api`'s).
    filters: BTreeMap<AgentId, RefuseFilter>,
}

/// The bin-packing allocator.
pub struct BinPack {
    min_free_cpus: Scalar,
    now: f64,
    agents: BTreeMap<AgentId, Agent>,
    frameworks: BTreeMap<FrameworkId, Framework>,
    /// What each framework holds on each agent (offered or in use).
    held: BTreeMap<(FrameworkId, AgentId), Resources>,
    /// Where the round-robin over frameworks resumes.
    next: usize,
    /// `pause` until `resume`: the host keeps calling `allocate`, which offers nothing.
    paused: bool,
    /// The hostnames that may be offered (`None`: all); the host does not filter them.
    whitelist: Option<BTreeSet<String>>,
    /// The host's options: GPU filtering, the allocation interval, the minimum allocatable.
    options: AllocatorOptions,
}

impl BinPack {
    /// Creates the allocator from its manifest parameters.
    pub fn new(params: Parameters<'_>) -> std::result::Result<BinPack, String> {
        let min: f64 = params.parse_or("min_free_cpus", 0.5)?;
        let min_free_cpus =
            Scalar::from_f64(min).filter(|s| !s.millis().is_negative()).ok_or_else(|| {
                format!("parameter 'min_free_cpus' must be a non-negative number, got {min}")
            })?;
        Ok(BinPack {
            min_free_cpus,
            now: 0.0,
            agents: BTreeMap::new(),
            frameworks: BTreeMap::new(),
            held: BTreeMap::new(),
            next: 0,
            paused: false,
            whitelist: None,
            options: AllocatorOptions::default(),
        })
    }

    /// Uses the host's options (GPU filtering, allocation interval, minimum allocatable).
    pub fn with_options(mut self, options: &AllocatorOptions) -> BinPack {
        self.options = options.clone();
        self
    }

    fn busy_fraction(a: &Agent) -> f64 {
        let total = a.total.scalar("cpus").as_f64();
        if total <= 0.0 { 0.0 } else { 1.0 - a.free.scalar("cpus").as_f64() / total }
    }
}

fn unknown(what: &str, id: impl std::fmt::Display) -> ModuleError {
    ModuleError::rejected(format!("{what}: unknown {id}"))
}

impl Allocator for BinPack {
    fn set_time(&mut self, now: f64) -> Result<()> {
        self.now = now;
        Ok(())
    }

    fn add_framework(
        &mut self,
        f: &FrameworkInfo,
        used: &[Allocation],
        active: bool,
        o: &FrameworkOptions,
    ) -> Result<()> {
        let role = f.roles.first().map(RString::to_string).unwrap_or_default();
        let suppressed = o.suppressed_roles.iter().map(RString::to_string).collect();
        let (capabilities, options) = (f.capabilities, o.clone());
        let fw =
            Framework { role, active, capabilities, options, suppressed, filters: BTreeMap::new() };
        self.frameworks.insert(f.id, fw);
        for u in used {
            if let Some(a) = self.agents.get_mut(&u.agent) {
                // What the agent already reported for this framework counts once.
                let held = self.held.entry((f.id, u.agent)).or_default();
                let new = u.resources.clone() - &held.intersection(&u.resources);
                a.free -= &new;
                *held += &new;
            }
        }
        Ok(())
    }

    fn remove_framework(&mut self, f: FrameworkId) -> Result<()> {
        // Removing a framework releases everything it was offered or uses.
        self.frameworks.remove(&f).ok_or_else(|| unknown("remove_framework", f))?;
        let gone: Vec<(FrameworkId, AgentId)> =
            self.held.keys().filter(|k| k.0 == f).copied().collect();
        for key in gone {
            let r = self.held.remove(&key).expect("listed");
            if let Some(a) = self.agents.get_mut(&key.1) {
                a.free += &r;
            }
        }
        Ok(())
    }

    fn activate_framework(&mut self, f: FrameworkId) -> Result<()> {
        self.frameworks.get_mut(&f).ok_or_else(|| unknown("activate_framework", f))?.active = true;
        Ok(())
    }

    fn deactivate_framework(&mut self, f: FrameworkId) -> Result<()> {
        let fw = self.frameworks.get_mut(&f).ok_or_else(|| unknown("deactivate_framework", f))?;
        fw.active = false;
        fw.filters.clear();
        Ok(())
    }

    fn add_agent(
        &mut self,
        a: &AgentInfo,
        _: Option<&Unavailability>,
        total: &Resources,
        used: &[Allocation],
    ) -> Result<()> {
        let mut free = total.clone();
        for u in used {
            free -= &u.resources;
            *self.held.entry((u.framework, a.id)).or_default() += &u.resources;
        }
        let hostname = a.hostname.to_string();
        let agent = Agent {
            hostname,
            capabilities: a.capabilities,
            total: total.clone(),
            free,
            active: true,
        };
        self.agents.insert(a.id, agent);
        Ok(())
    }

    fn remove_agent(&mut self, a: AgentId) -> Result<()> {
        self.agents.remove(&a).ok_or_else(|| unknown("remove_agent", a))?;
        self.held.retain(|k, _| k.1 != a);
        for fw in self.frameworks.values_mut() {
            fw.filters.remove(&a);
        }
        Ok(())
    }

    fn activate_agent(&mut self, a: AgentId) -> Result<()> {
        self.agents.get_mut(&a).ok_or_else(|| unknown("activate_agent", a))?.active = true;
        Ok(())
    }

    fn deactivate_agent(&mut self, a: AgentId) -> Result<()> {
        self.agents.get_mut(&a).ok_or_else(|| unknown("deactivate_agent", a))?.active = false;
        Ok(())
    }

    fn recover_resources(
        &mut self,
        f: FrameworkId,
        a: AgentId,
        _: &str,
        r: &Resources,
        refuse: Option<f64>,
    ) -> Result<()> {
        if let Some(agent) = self.agents.get_mut(&a) {
            agent.free += r;
        }
        if let Some(h) = self.held.get_mut(&(f, a)) {
            *h -= r;
        }
        let interval = self.options.allocation_interval;
        if let (Some(fw), Some(filter)) =
            (self.frameworks.get_mut(&f), RefuseFilter::new(r.clone(), refuse, self.now, interval))
        {
            fw.filters.insert(a, filter);
        }
        Ok(())
    }

    fn suppress_offers(&mut self, f: FrameworkId, roles: &[RString]) -> Result<()> {
        let fw = self.frameworks.get_mut(&f).ok_or_else(|| unknown("suppress_offers", f))?;
        let role = fw.role.clone();
        fw.suppressed.extend(if roles.is_empty() {
            vec![role]
        } else {
            roles.iter().map(RString::to_string).collect()
        });
        Ok(())
    }

    fn revive_offers(&mut self, f: FrameworkId, _: &[RString]) -> Result<()> {
        let fw = self.frameworks.get_mut(&f).ok_or_else(|| unknown("revive_offers", f))?;
        fw.suppressed.clear();
        fw.filters.clear();
        Ok(())
    }

    fn pause(&mut self) -> Result<()> {
        self.paused = true;
        Ok(())
    }

    fn resume(&mut self) -> Result<()> {
        self.paused = false;
        Ok(())
    }

    fn update_whitelist(&mut self, hostnames: Option<&[RString]>) -> Result<()> {
        self.whitelist = hostnames.map(|h| h.iter().map(RString::to_string).collect());
        Ok(())
    }

    fn allocate(&mut self, agents: &[AgentId], periodic: bool, out: &mut OfferBatch) -> Result<()> {
        if self.paused {
            return Ok(());
        }
        let eligible: Vec<FrameworkId> = self
            .frameworks
            .iter()
            .filter(|(_, f)| f.active && !f.suppressed.contains(&f.role))
            .map(|(id, _)| *id)
            .collect();
        if eligible.is_empty() {
            return Ok(());
        }
        // Busiest agents first; ties by id, so a run is deterministic.
        let mut order: Vec<AgentId> = agents
            .iter()
            .copied()
            .filter(|a| {
                self.agents.get(a).is_some_and(|x| {
                    x.active && self.whitelist.as_ref().is_none_or(|w| w.contains(&x.hostname))
                })
            })
            .collect();
        order.sort_by(|a, b| {
            let (fa, fb) =
                (Self::busy_fraction(&self.agents[a]), Self::busy_fraction(&self.agents[b]));
            fb.total_cmp(&fa).then(a.cmp(b))
        });
        order.dedup();
        for agent_id in order {
            if self.agents[&agent_id].free.scalar("cpus") < self.min_free_cpus {
                continue;
            }
            let has_gpus = self.agents[&agent_id].total.scalar("gpus").is_positive();
            for step in 0..eligible.len() {
                let fw_id = eligible[(self.next + step) % eligible.len()];
                let fw = &self.frameworks[&fw_id];
                let caps = fw.capabilities;
                if self.options.filter_gpu_resources
                    && has_gpus
                    && !caps.has(FrameworkCapabilities::GPU_RESOURCES)
                    || !self.agents[&agent_id].capabilities.admit(caps, &fw.role)
                {
                    continue;
                }
                let offer = self.agents[&agent_id].free.allocatable_to(&fw.role);
                let filtered =
                    fw.filters.get(&agent_id).is_some_and(|f| f.blocks(self.now, periodic, &offer));
                let min = fw
                    .options
                    .min_allocatable_for(&fw.role, &self.options.min_allocatable_resources);
                if !offer.meets_minimum(min) || filtered {
                    continue;
                }
                self.agents.get_mut(&agent_id).expect("present").free -= &offer;
                *self.held.entry((fw_id, agent_id)).or_default() += &offer;
                out.offers.push(Allocation {
                    framework: fw_id,
                    agent: agent_id,
                    role: fw.role.as_str().into(),
                    resources: offer,
                });
                self.next = (self.next + step + 1) % eligible.len();
                break;
            }
        }
        Ok(())
    }
}

allocator_api::export_modules! {
    allocator {
        name: "binpack",
        author: "Example Org <infra@example.org>",
        description: "packs offers onto the busiest agents first (parameter min_free_cpus)",
        create: |options, params| {
            BinPack::new(params).map(|b| b.with_options(options))
        },
    },
}

#[cfg(test)]
mod tests {
    use allocator_api::abi::Parameter;
    use allocator_api::{AgentCapabilities, RVec};

    use super::*;

    fn agent(id: u32) -> AgentInfo {
        AgentInfo {
            id: AgentId(id),
            name: format!("a{id}").as_str().into(),
            hostname: format!("a{id}").as_str().into(),
            attributes: RVec::new(),
            capabilities: AgentCapabilities::all(),
        }
    }

    fn framework(id: u32, role: &str) -> FrameworkInfo {
        FrameworkInfo {
            id: FrameworkId(id),
            name: format!("f{id}").as_str().into(),
            roles: vec![RString::from(role)].into(),
            capabilities: FrameworkCapabilities::MULTI_ROLE,
        }
    }

    fn res(s: &str) -> Resources {
        s.parse().unwrap()
    }

    #[test]
    fn the_busiest_agent_is_offered_first() {
        let mut b = BinPack::new(Parameters(&[])).unwrap();
        b.add_framework(&framework(0, "r"), &[], true, &FrameworkOptions::default()).unwrap();
        b.add_agent(&agent(0), None, &res("cpus:4;mem:100"), &[]).unwrap();
        let busy = Allocation {
            framework: FrameworkId(0),
            agent: AgentId(1),
            role: "r".into(),
            resources: res("cpus:3"),
        };
        b.add_agent(&agent(1), None, &res("cpus:4;mem:100"), &[busy]).unwrap();
        let mut out = OfferBatch::default();
        b.allocate(&[AgentId(0), AgentId(1)], true, &mut out).unwrap();
        assert_eq!(out.offers[0].agent, AgentId(1));
        assert_eq!(out.offers[0].resources, res("cpus:1;mem:100"));
    }

    #[test]
    fn agents_below_the_threshold_are_not_offered() {
        let p = [Parameter { key: "min_free_cpus".into(), value: "2".into() }];
        let mut b = BinPack::new(Parameters(&p)).unwrap();
        b.add_framework(&framework(0, "r"), &[], true, &FrameworkOptions::default()).unwrap();
        b.add_agent(&agent(0), None, &res("cpus:1;mem:100"), &[]).unwrap();
        let mut out = OfferBatch::default();
        b.allocate(&[AgentId(0)], true, &mut out).unwrap();
        assert!(out.offers.is_empty());
    }

    #[test]
    fn a_bad_parameter_is_an_error_naming_it() {
        let p = [Parameter { key: "min_free_cpus".into(), value: "lots".into() }];
        let e = BinPack::new(Parameters(&p)).err().unwrap();
        assert!(e.starts_with("parameter 'min_free_cpus' = 'lots'"), "{e}");
    }

    #[test]
    fn removing_a_framework_frees_what_it_held() {
        let mut b = BinPack::new(Parameters(&[])).unwrap();
        b.add_framework(&framework(0, "r"), &[], true, &FrameworkOptions::default()).unwrap();
        b.add_agent(&agent(0), None, &res("cpus:4;mem:100"), &[]).unwrap();
        let mut out = OfferBatch::default();
        b.allocate(&[AgentId(0)], true, &mut out).unwrap();
        assert_eq!(out.offers.len(), 1);
        b.remove_framework(FrameworkId(0)).unwrap();
        b.add_framework(&framework(1, "r"), &[], true, &FrameworkOptions::default()).unwrap();
        out.clear();
        b.allocate(&[AgentId(0)], true, &mut out).unwrap();
        assert_eq!(out.offers[0].resources, res("cpus:4;mem:100"));
    }

    #[test]
    fn other_roles_reservations_are_never_offered() {
        let mut b = BinPack::new(Parameters(&[])).unwrap();
        b.add_framework(&framework(0, "r1"), &[], true, &FrameworkOptions::default()).unwrap();
        b.add_agent(&agent(0), None, &res("cpus:2;cpus(r2):2;mem:10"), &[]).unwrap();
        let mut out = OfferBatch::default();
        b.allocate(&[AgentId(0)], true, &mut out).unwrap();
        assert_eq!(out.offers[0].resources, res("cpus:2;mem:10"));
    }
}
