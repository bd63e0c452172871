//! What a placement policy sees of an agent ([`Node`]) and of a task ([`Ask`]).

use allocator_api::resources::ResourceFlags;
use allocator_api::resources::{DEVICE_MILLI, Demand, Device, GpuAsk, MODEL_ATTRIBUTE};
use allocator_api::{AgentId, AgentInfo, Quantities, Resource, Resources};

/// An agent's free, placeable resources: unreserved, non-revocable CPUs, memory and GPU
/// devices, and its GPU model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Node {
    /// The agent's handle (what [`Placement::score_member`](crate::Placement::score_member)
    /// compares with the agents a group's members took).
    pub agent: AgentId,
    /// Free CPUs, in milli-CPU.
    pub cpu: i64,
    /// Free memory, in thousandths of a MiB (the resource's fixed point).
    pub mem: i64,
    /// Free milli-GPU of each device, in device order; a fully used device is 0.
    pub gpus: Vec<i64>,
    /// Its `gpu_model` attribute.
    pub model: Option<String>,
    /// The GPU tasks placed here that are still here, by shape: `(ask, count)`, counts above
    /// zero, in the order the shapes first came. Kept by the allocator: a placed request adds
    /// its shape; resources recovered from the agent in exactly one task's shape (one device's
    /// share, or whole devices) remove one; a removed framework's go. Plain offers (no
    /// request) are not counted.
    pub gpu_tasks: Vec<(GpuAsk, u32)>,
}

impl Node {
    /// Free milli-GPU over all devices (`R_n`).
    pub fn gpu_free(&self) -> i64 {
        self.gpus.iter().sum()
    }

    /// Devices with nothing in use.
    pub fn idle_devices(&self) -> usize {
        self.gpus.iter().filter(|&&f| f >= DEVICE_MILLI).count()
    }

    /// GPU tasks of shape `shape` placed here.
    pub fn tasks_of(&self, shape: GpuAsk) -> u32 {
        self.gpu_tasks.iter().find(|(s, _)| *s == shape).map_or(0, |(_, n)| *n)
    }

    /// How many tasks of `ask` fit here together, up to `most` (CPU, memory, the GPU model
    /// and the sharing rule: each share on its tightest device, whole GPUs on idle devices).
    pub fn copies(&self, ask: &Ask, most: u32) -> u32 {
        copies_that_fit(self, ask, most)
    }

    /// Whether the node can take `ask`: CPU, memory, the GPU model and the sharing rule
    /// (other resources are checked by the allocator).
    pub fn fits(&self, ask: &Ask) -> bool {
        self.cpu >= ask.cpu
            && self.mem >= ask.mem
            && ask.demand.accepts_model(self.model.as_deref())
            && ask.gpu.fits(self.gpus.iter().copied())
    }

    /// Rebuilds the view from an agent's free resources, its devices (from its total) and its
    /// info.
    pub(crate) fn refresh(&mut self, free: &Resources, devices: &[Device], info: &AgentInfo) {
        self.agent = info.id;
        let plain = |r: &&Resource| r.is_unreserved() && r.flags == ResourceFlags::NONE;
        self.cpu =
            free.iter().filter(plain).filter(|r| r.name.as_str() == "cpus").map(millis).sum();
        self.mem = free.iter().filter(plain).filter(|r| r.name.as_str() == "mem").map(millis).sum();
        self.gpus.clear();
        self.gpus.extend(devices.iter().map(|d| {
            free.iter()
                .find(|r| r.is_gpu_device() && plain(r) && r.volume == d.id)
                .map_or(0, millis)
        }));
        self.model = info
            .attributes
            .iter()
            .find(|a| a.name.as_str() == MODEL_ATTRIBUTE)
            .map(|a| a.value.to_string());
    }
}

/// The scalar quantities of `r` besides CPUs and memory.
fn other_scalars(r: &Resources) -> Quantities {
    let mut other = Quantities::new();
    for q in r.scalar_quantities().iter() {
        if q.name.as_str() != "cpus" && q.name.as_str() != "mem" {
            other.add_amount(q.name, q.value);
        }
    }
    other
}

fn millis(r: &Resource) -> i64 {
    r.value.quantity().millis()
}

/// A task's demand, as placement scores it.
#[derive(Clone, Debug, PartialEq)]
pub struct Ask {
    /// CPUs asked, in milli-CPU.
    pub cpu: i64,
    /// Memory asked, in thousandths of a MiB.
    pub mem: i64,
    /// What it asks of the GPU devices.
    pub gpu: GpuAsk,
    /// The whole demand (models, other resources).
    pub demand: Demand,
    /// The scalars it asks besides CPUs and memory (which [`Node::fits`] checks), for the
    /// allocator to find among the agent's unreserved resources.
    pub(crate) other: Quantities,
}

/// A task's shape for counting: milli-CPU, memory, milli-GPU per device, devices, models.
pub type Shape = (i64, i64, i64, u32, Vec<String>);

impl Ask {
    /// The ask's shape (what tells two tasks apart for counting).
    pub fn shape(&self) -> Shape {
        (self.cpu, self.mem, self.gpu.per_device(), self.gpu.devices(), self.demand.models.clone())
    }

    /// The ask of a request written as resource text (`cpus:4;mem:1024;gpus:0.5`, with
    /// `gpu_models:{A,B}` for accepted models), as a framework would state it.
    pub fn parse(request: &str) -> Result<Ask, String> {
        let resources: Resources = request.parse().map_err(|e| format!("'{request}': {e}"))?;
        Demand::from_request(&resources).map(Ask::new)
    }

    /// The ask of a demand.
    pub fn new(demand: Demand) -> Ask {
        let r = &demand.resources;
        Ask {
            cpu: r.scalar("cpus").millis(),
            mem: r.scalar("mem").millis(),
            gpu: demand.gpus,
            other: other_scalars(r),
            demand,
        }
    }
}

/// How many tasks of `ask` fit on `node` together, up to `most` (CPU, memory and the GPU
/// sharing rule; each share on its tightest device, whole GPUs on idle devices).
pub(crate) fn copies_that_fit(node: &Node, ask: &Ask, most: u32) -> u32 {
    let mut n = node.clone();
    let mut copies = 0;
    while copies < most && n.fits(ask) {
        n.cpu -= ask.cpu;
        n.mem -= ask.mem;
        match ask.gpu {
            GpuAsk::None => {}
            GpuAsk::Share(m) => {
                let Some(i) = allocator_api::resources::tightest_fit(&n.gpus, m) else { break };
                n.gpus[i] -= m;
            }
            GpuAsk::Whole(k) => {
                let mut picks = Vec::new();
                if !allocator_api::resources::lowest_free(&n.gpus, k, &mut picks) {
                    break;
                }
                for i in picks {
                    n.gpus[i] = 0;
                }
            }
        }
        copies += 1;
        if ask.cpu == 0 && ask.mem == 0 && ask.gpu == GpuAsk::None {
            return most; // nothing is used up: as many as asked fit
        }
    }
    copies
}

/// Counts of GPU tasks by shape (see [`Node::gpu_tasks`]).
pub(crate) fn count_task(tasks: &mut Vec<(GpuAsk, u32)>, shape: GpuAsk, add: bool) -> bool {
    match tasks.iter().position(|(s, _)| *s == shape) {
        Some(i) if add => tasks[i].1 += 1,
        Some(i) => {
            tasks[i].1 -= 1;
            if tasks[i].1 == 0 {
                tasks.remove(i);
            }
        }
        None if add => tasks.push((shape, 1)),
        None => return false,
    }
    true
}

/// The shape of one task's GPUs in `resources`, when its device entries are exactly one: a
/// share of one device, or whole devices; `None` for no devices or anything else.
pub(crate) fn task_shape(resources: &Resources) -> Option<GpuAsk> {
    let mut shares = resources.iter().filter(|r| r.is_gpu_device()).map(millis);
    let first = shares.next()?;
    let rest: Vec<i64> = shares.collect();
    if rest.is_empty() && first < DEVICE_MILLI {
        return Some(GpuAsk::Share(first));
    }
    (first == DEVICE_MILLI && rest.iter().all(|&m| m == DEVICE_MILLI))
        .then(|| GpuAsk::Whole(1 + rest.len() as u32))
}
