//! Integer handles that the host assigns to clients, agents and frameworks.
//!
//! Handles keep strings off the hot path across the module boundary: the host maps each id
//! string to a dense `u32` once and passes the number on every call. Names travel only in the
//! calls that create an entity (for display and for hierarchical role paths).

use std::fmt;

use abi_stable::StableAbi;

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(StableAbi, Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
        pub struct $name(pub u32);

        impl $name {
            /// The handle as an index into dense per-entity tables.
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "#{}"), self.0)
            }
        }
    };
}

handle!(
    /// A sorter client (a role in a role sorter, a framework in a framework sorter). The host
    /// assigns it in [`Sorter::add`](crate::Sorter::add) and never reuses it while the client
    /// is in the sorter.
    ClientId,
    "client"
);
handle!(
    /// An agent. The host assigns it when the agent is first added and never reuses it for a
    /// different agent within one process.
    AgentId,
    "agent"
);
handle!(
    /// A framework. The host assigns it when the framework is first added and never reuses it
    /// for a different framework within one process.
    FrameworkId,
    "framework"
);

/// A hasher for integer handles: one rotate, xor and multiply per integer (FxHash-style)
/// instead of SipHash. Handles are dense integers the host assigns, not keys an attacker
/// chooses, so DoS-resistant hashing buys nothing on the allocation hot path.
#[derive(Default, Clone, Copy, Debug)]
pub struct IdHasher(u64);

const ID_HASH_SEED: u64 = 0x517c_c1b7_2722_0a95;

impl IdHasher {
    fn mix(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(ID_HASH_SEED);
    }
}

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.mix(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.mix(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }
}

/// A `HashMap` keyed by handles (or tuples of them), hashed with [`IdHasher`].
pub type IdMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

/// A `HashSet` of handles (or tuples of them), hashed with [`IdHasher`].
pub type IdSet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod hasher_tests {
    use super::*;

    #[test]
    fn id_maps_find_what_was_inserted() {
        let mut m: IdMap<(AgentId, FrameworkId), u32> = IdMap::default();
        for a in 0..100 {
            for f in 0..10 {
                m.insert((AgentId(a), FrameworkId(f)), a * 10 + f);
            }
        }
        assert_eq!(m.len(), 1000);
        assert_eq!(m[&(AgentId(42), FrameworkId(7))], 427);
    }
}
