//! A Kubernetes client of the master core: the same allocator and sorter modules that run
//! in simulations and behind the Mesos APIs schedule the pods of a real cluster.
//!
//! * [`api`]: the API side on a tokio runtime of its own: watchers on nodes, pods and the roles
//!   ConfigMap (kube-rs `runtime::watcher`), and the writer of bindings, `FailedScheduling`
//!   events and `PodScheduled` conditions within a bounded rate; [`client`]: the client it
//!   speaks with, HTTP/2 where the API server takes it; [`watched`]: pods decoded with only
//!   the fields the scheduler reads.
//! * [`scheduler`]: [`KubeScheduler`], the client on the master's thread: its books from the
//!   watches, the commands that bring the master in line, the answers to offers.
//! * [`convert`]: nodes as agents, pods as asks and demand — every conversion, one function
//!   each; [`filter`]: selectors, node affinity, taints, and what is not supported;
//!   [`quantity`]: Kubernetes quantities.
//! * [`replay`]: loading a test cluster with fake nodes and pods (the trace replay, the
//!   benchmark) and reading back what is bound where.
//!
//! What this crate must never know: the command line and the HTTP endpoints (the binary wires
//! it into `serve`'s loop), and Mesos's JSON.

pub mod api;
pub mod client;
pub mod convert;
pub mod filter;
pub mod gang;
pub mod lease;
pub mod quantity;
pub mod replay;
pub mod scheduler;
pub mod watched;

pub use api::KubeOptions;
pub use scheduler::KubeScheduler;
