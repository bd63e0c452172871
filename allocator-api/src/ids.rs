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
