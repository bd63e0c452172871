//! `Together`: a gang's tasks go to as few agents as they fit on — each member where its gang
//! already is and where the rest of the gang has room — and a lone task where it leaves the
//! fewest GPUs, then CPUs, free. `placement_core` places the gang all or nothing.

use placement_core::{Ask, Members, Node, Placement, PlacementAllocator};

/// The policy: a score per agent that can take the task; the highest wins.
#[derive(Debug, Default)]
pub struct Together;

impl Placement for Together {
    fn score(&mut self, node: &Node, ask: &Ask) -> i64 {
        let gpu_left = node.gpu_free() - ask.gpu.total(); // milli-GPU
        let cpu_left = node.cpu - ask.cpu; // milli-CPU
        -(gpu_left * 1_000_000 + cpu_left)
    }

    fn score_member(&mut self, node: &Node, ask: &Ask, group: &Members<'_>) -> i64 {
        let mates = group.placed.iter().filter(|&&a| a == node.agent).count() as i64;
        let room = i64::from(node.copies(ask, group.left));
        ((mates + room) << 40) + self.score(node, ask)
    }
}

allocator_api::export_modules! {
    allocator {
        name: "Together",
        author: "Example Org <infra@example.org>",
        description: "places each gang on as few agents as it fits on, all or nothing",
        create: |options, _params| {
            Ok::<_, String>(PlacementAllocator::new(Together, options))
        },
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api::AgentId;

    #[test]
    fn a_gang_goes_where_all_of_it_fits_and_its_members_stay_together() {
        let ask = Ask::parse("cpus:1;mem:1;gpus:1").unwrap();
        let big = Node {
            agent: AgentId(1),
            cpu: 8000,
            mem: 8000,
            gpus: vec![1000; 4],
            ..Node::default()
        };
        let tight = Node {
            agent: AgentId(2),
            cpu: 8000,
            mem: 8000,
            gpus: vec![1000; 2],
            ..Node::default()
        };
        assert!(Together.score(&tight, &ask) > Together.score(&big, &ask), "alone: tightest");
        let first = Members { placed: &[], left: 4 };
        assert!(
            Together.score_member(&big, &ask, &first) > Together.score_member(&tight, &ask, &first)
        );
        let second = Members { placed: &[AgentId(1)], left: 3 };
        assert!(
            Together.score_member(&big, &ask, &second)
                > Together.score_member(&tight, &ask, &second)
        );
    }
}
