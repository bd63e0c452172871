//! One packing experiment (one pod list, one allocator, one seed) through the master.
//!
//! The client is one framework (role `packing`, GPU-capable) that states each pod as a request
//! (`requestResources`) and then lets the next periodic allocation run answer: an allocator
//! that honours requests offers the slice it chose, and the framework launches the pod on it;
//! one that does not (the built-in) offers everything, and the framework launches the pod on
//! the first offer it fits in and declines the rest (refuse 0 s). No offer that fits means no
//! agent can take the pod: it is dropped, and counts as arrived.

use std::sync::Arc;

use allocator_api::abi::Parameter;
use allocator_api::resources::GPUS;
use allocator_api::{Allocation, Attribute, FrameworkCapabilities, Request};
use allocator_host::ModuleRegistry;
use allocator_host::master::{Command, Event, Master, Setup};
use placement_core::Node;
use placement_core::frag::{FragSum, TYPICAL_TASKS_PARAMETER, TypicalTask, format_table};

use super::trace::{NodeSpec, Pod};
use allocator_sim::clients::simulated::take;

const FRAMEWORK: &str = "packing";
/// Its role.
const ROLE: &str = "packing";

/// What one experiment recorded after each pod (placed or dropped).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Curve {
    /// Milli-GPU demand arrived so far.
    pub arrived: Vec<i64>,
    /// Milli-GPU allocated so far.
    pub allocated: Vec<i64>,
    /// The cluster's fragmentation, milli-GPU.
    pub fragmentation: Vec<f64>,
    /// Pods dropped.
    pub dropped: usize,
    /// Where each pod went, in arrival order: the index of its node in the node list (`None`:
    /// dropped).
    pub placements: Vec<Option<usize>>,
}

/// The cluster state the client keeps to measure fragmentation: each agent's free devices and
/// CPU, updated from what it launches.
struct Cluster {
    nodes: Vec<Node>,
    frag: Vec<f64>,
    total_frag: f64,
    sum: FragSum,
}

fn node_fragmentation(sum: FragSum, n: &Node, typical: &[TypicalTask]) -> f64 {
    placement_core::frag::fragmentation_by(sum, n.cpu, &n.gpus, n.model.as_deref(), typical)
}

impl Cluster {
    fn new(specs: &[NodeSpec], typical: &[TypicalTask], sum: FragSum) -> Cluster {
        let nodes: Vec<Node> = specs
            .iter()
            .map(|n| Node {
                cpu: n.resources.scalar("cpus").millis(),
                mem: n.resources.scalar("mem").millis(),
                gpus: vec![allocator_api::resources::DEVICE_MILLI; n.gpus as usize],
                model: Some(n.model.clone()).filter(|m| !m.is_empty()),
                ..Node::default()
            })
            .collect();
        let frag: Vec<f64> = nodes.iter().map(|n| node_fragmentation(sum, n, typical)).collect();
        let total_frag = frag.iter().sum();
        Cluster { nodes, frag, total_frag, sum }
    }

    fn launched(
        &mut self,
        agent: usize,
        piece: &allocator_api::Resources,
        typical: &[TypicalTask],
    ) {
        let node = &mut self.nodes[agent];
        node.cpu -= piece.scalar("cpus").millis();
        for r in piece.iter().filter(|r| r.is_gpu_device()) {
            if let Ok(d) = r.volume.parse::<usize>()
                && let Some(g) = node.gpus.get_mut(d)
            {
                *g -= r.value.quantity().millis();
            }
        }
        let f = node_fragmentation(self.sum, node, typical);
        self.total_frag += f - self.frag[agent];
        self.frag[agent] = f;
    }
}

/// How one experiment runs besides its inputs.
#[derive(Clone, Debug, Default)]
pub struct Knobs {
    /// Module parameters besides the typical tasks (the tie-break, Go's stream, …).
    pub parameters: Vec<(String, String)>,
    /// How the recorded fragmentation is summed.
    pub sum: FragSum,
}

/// Runs one experiment: `order` indexes `pods`; agents are added in the order of `nodes`.
#[allow(clippy::too_many_arguments)]
pub fn run_one(
    registry: &ModuleRegistry,
    allocator: &str,
    seed: u64,
    nodes: &[NodeSpec],
    pods: &[Pod],
    order: &[usize],
    typical: &[TypicalTask],
    knobs: &Knobs,
) -> Result<Curve, String> {
    let mut setup = Setup::new(allocator, "drf", "drf");
    setup.options.seed = seed;
    // The pod list's typical tasks, for a policy that measures fragmentation (FGD); other
    // modules ignore the parameter.
    setup.allocator_parameters = vec![Parameter {
        key: TYPICAL_TASKS_PARAMETER.into(),
        value: format_table(typical).into(),
    }];
    setup.allocator_parameters.extend(
        knobs
            .parameters
            .iter()
            .map(|(k, v)| Parameter { key: k.as_str().into(), value: v.as_str().into() }),
    );
    let mut master = Master::new(registry, setup)?;
    let mut add = Command::add_framework(FRAMEWORK, &[ROLE]);
    if let Command::AddFramework { capabilities, active, .. } = &mut add {
        *capabilities =
            FrameworkCapabilities::MULTI_ROLE.with(FrameworkCapabilities::GPU_RESOURCES);
        // Inactive until the first pod is stated, so that no run offers it the whole cluster.
        *active = false;
    }
    master.apply(&add)?;
    let mut agent_index: Vec<Option<usize>> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let mut cmd = Command::add_agent(&n.name, n.resources.clone());
        if let Command::AddAgent { attributes, .. } = &mut cmd
            && !n.model.is_empty()
        {
            attributes.push(Attribute {
                name: allocator_api::resources::MODEL_ATTRIBUTE.into(),
                value: n.model.as_str().into(),
            });
        }
        master.apply(&cmd)?;
        let id = master.agent_id(&n.name)?;
        let slot = id.0 as usize;
        if agent_index.len() <= slot {
            agent_index.resize(slot + 1, None);
        }
        agent_index[slot] = Some(i);
    }
    master.take_events();

    let mut cluster = Cluster::new(nodes, typical, knobs.sum);
    let mut curve = Curve::default();
    let (mut arrived, mut allocated) = (0i64, 0i64);
    for (k, &p) in order.iter().enumerate() {
        let pod = &pods[p];
        arrived += pod.gpu_milli();
        let request = Command::RequestResources {
            framework: FRAMEWORK.into(),
            requests: vec![Request::task(ROLE, pod.request.clone())],
        };
        master.apply(&request)?;
        if k == 0 {
            master.apply(&Command::ActivateFramework(FRAMEWORK.into()))?;
        } else {
            master.advance(1.0, &mut |_| Ok(()))?;
        }
        let offers: Vec<Arc<Allocation>> = master
            .take_events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Offer(o) => Some(o),
                _ => None,
            })
            .collect();
        let mut placed = false;
        let mut node = None;
        for offer in offers {
            let piece = if placed { None } else { take(&offer.resources, &pod.resources) };
            let tasks = match piece {
                Some(piece) => {
                    placed = true;
                    node = agent_index.get(offer.agent.0 as usize).copied().flatten();
                    allocated += piece.scalar(GPUS).millis();
                    if let Some(Some(i)) = agent_index.get(offer.agent.0 as usize) {
                        cluster.launched(*i, &piece, typical);
                    }
                    vec![(piece, None)]
                }
                None => Vec::new(),
            };
            master.apply(&Command::AnswerOffer { offer, tasks, refuse_seconds: 0.0 })?;
        }
        master.take_events();
        if !placed {
            curve.dropped += 1;
        }
        curve.placements.push(node);
        curve.arrived.push(arrived);
        curve.allocated.push(allocated);
        curve.fragmentation.push(cluster.total_frag);
    }
    check_ledger(&master, allocated)?;
    Ok(curve)
}

/// The master's own ledger must hold exactly the GPUs the client counted as allocated.
fn check_ledger(master: &Master<'_>, allocated: i64) -> Result<(), String> {
    let fw = master.framework_id(FRAMEWORK)?;
    let held: i64 = master.tasks_of(fw).map(|(_, t)| t.resources.scalar(GPUS).millis()).sum();
    if held != allocated {
        return Err(format!(
            "the master's tasks hold {held} milli-GPU, the experiment counted {allocated}"
        ));
    }
    Ok(())
}
