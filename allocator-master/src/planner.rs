//! What-if plans off the master thread (`serve`'s `POST /plan`).
//!
//! A plan replays everything the master applied into two fresh masters (with and without the
//! change, [`allocator_sim::plan::plan`]): far more work than any other request. The master thread
//! only parses the change and takes a copy of its journal, then hands the job to one of
//! [`WORKERS`] planner threads, which answer the request themselves; allocation runs and other
//! requests go on meanwhile. At most [`QUEUED`] jobs wait for a worker: past that a plan is
//! answered `503` at once, so a flood of plans cannot pile up work or memory. When the master
//! stops, waiting plans are answered `503` and a plan in progress finishes first.
//!
//! A plan is answered with what its caller may see ([`Reader`]): the offers of frameworks and
//! roles it may see, the shares of roles it may see.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use serde_json::json;

use allocator_host::ModuleRegistry;
use allocator_host::master::{Command, Setup};
use allocator_http::Request;
use allocator_sim::allocator_scenario::Op;

/// Planner threads: plans made at once.
pub const WORKERS: usize = 2;
/// Plans that may wait for a planner thread.
pub const QUEUED: usize = 4;

/// Who a plan is for, carried to the planner thread: the rules, the principal, and the
/// frameworks it may not see (decided on the master thread, which knows their users).
#[derive(Clone, Debug)]
pub struct Reader {
    /// The rules ([`crate::auth::Auth`], a copy).
    pub auth: crate::auth::Auth,
    /// The authenticated principal, if any.
    pub principal: Option<String>,
    /// The names of the frameworks it may not see.
    pub hidden_frameworks: BTreeSet<String>,
}

impl Reader {
    fn caller(&self) -> crate::auth::Caller<'_> {
        crate::auth::Caller { auth: &self.auth, principal: self.principal.as_deref() }
    }

    /// Leaves out of `plan` what this reader may not see.
    fn filter(&self, plan: &mut allocator_sim::plan::Plan) {
        let caller = self.caller();
        plan.retain(
            |framework, role| !self.hidden_frameworks.contains(framework) && caller.sees_role(role),
            |role| caller.sees_role(role),
        );
    }
}

/// One plan to make and answer.
struct Job {
    request: Request,
    history: Vec<Op>,
    change: Command,
    reader: Reader,
}

/// The master thread's handle on the planner threads. See the [module documentation](self).
pub struct Planner {
    tx: SyncSender<Job>,
    stopping: Arc<AtomicBool>,
    refused: AtomicU64,
}

impl Planner {
    /// Queues a plan of `change` after `history` for `request`; `Err` gives the request back
    /// when [`QUEUED`] plans already wait (the caller answers `503`).
    pub fn submit(
        &self,
        request: Request,
        history: Vec<Op>,
        change: Command,
        reader: Reader,
    ) -> Result<(), Box<Request>> {
        match self.tx.try_send(Job { request, history, change, reader }) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                Err(Box::new(job.request))
            }
        }
    }

    /// Plans refused because too many waited.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// Runs `f` with a [`Planner`] whose threads make plans from `registry` and `setup` (the
/// master's); they are stopped and joined when `f` returns.
pub fn with_planner<R>(
    registry: &ModuleRegistry,
    setup: &Setup,
    f: impl FnOnce(&Planner) -> R,
) -> R {
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel(QUEUED);
        let rx = Arc::new(Mutex::new(rx));
        let stopping = Arc::new(AtomicBool::new(false));
        for i in 0..WORKERS {
            let (rx, stopping) = (rx.clone(), stopping.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("planner-{i}"))
                .spawn_scoped(scope, move || work(registry, setup, &rx, &stopping));
            if let Err(e) = spawned {
                log::error!("cannot start a planner thread: {e}");
            }
        }
        let planner = Planner { tx, stopping, refused: AtomicU64::new(0) };
        let result = f(&planner);
        planner.stopping.store(true, Ordering::SeqCst);
        drop(planner);
        result
    })
}

/// A planner thread: makes and answers plans until the master stops.
fn work(
    registry: &ModuleRegistry,
    setup: &Setup,
    rx: &Mutex<Receiver<Job>>,
    stopping: &AtomicBool,
) {
    loop {
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        if stopping.load(Ordering::SeqCst) {
            let body = json!({"error": "the master is stopping"});
            job.request.respond(503, body.to_string());
            continue;
        }
        let (status, body) =
            match allocator_sim::plan::plan(registry, setup, &job.history, &job.change) {
                Ok(mut plan) => {
                    job.reader.filter(&mut plan);
                    (200, plan.to_json())
                }
                Err(message) => (400, json!({"error": message})),
            };
        job.request.respond(status, body.to_string());
    }
}
