//! The tie-break: a random order of agents drawn once per seed.
//!
//! The artifact renames its nodes with a prefix from a per-seed permutation and its scheduler
//! takes the smallest name among the best-scoring nodes; so among equal scores the winner is
//! the agent first in a fixed random order drawn from the seed. Here an agent's place in that
//! order is a hash of the seed and its name: the same agent gets the same place whenever it is
//! added, whatever else is in the cluster, and two seeds give independent orders.

/// The agent's place in the per-seed order (smaller comes first).
pub fn rank(seed: u64, agent_name: &str) -> u64 {
    // FNV-1a over the name, then SplitMix64's finaliser over it mixed with the seed.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in agent_name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut z = h ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::rank;

    #[test]
    fn the_order_depends_on_the_seed_only() {
        assert_eq!(rank(42, "node-1"), rank(42, "node-1"));
        let order = |seed| {
            let mut names: Vec<String> = (0..50).map(|i| format!("node-{i}")).collect();
            names.sort_by_key(|n| rank(seed, n));
            names
        };
        assert_eq!(order(42), order(42));
        assert_ne!(order(42), order(43));
    }
}
