//! `allocator-master serve`: the master live, in real time, with an HTTP endpoint.
//!
//! One thread (the caller's) owns the [`Driver`]: the allocator, the host's ledger and the
//! simulated frameworks. Like Mesos's allocator process it works from one FIFO queue: the HTTP
//! server ([`allocator_http`]: hyper on a runtime of its own, with head, body and idle timeouts,
//! a 1 MiB body limit and per-address and global connection limits) reads the connections and
//! puts complete requests on the queue; the master thread answers them in order between
//! allocation runs. A slow or idle client holds only its own connection. The loop is the
//! host's one wall-clock loop ([`allocator_host::wall_clock::run`], as for an embedder's
//! `MasterActor`) with serve's wiring. The virtual clock follows the wall clock (times `speed`):
//! scenario events play at their times, and a periodic allocation runs every
//! `allocation_interval`; after the last event the master keeps running periodically.
//!
//! Endpoints (JSON bodies and answers; the routing table, with the realm each path needs, is
//! `routes.rs`):
//!
//! | request | answer |
//! |---|---|
//! | `GET /metrics/snapshot` | flat Mesos-named metrics ([`Driver::metrics`] plus the queue's) |
//! | `GET /state` | [`Driver::state`] |
//! | `POST /quota` | the `update_quota` event's fields: `role`, [`guarantees`, `limits`] |
//! | `POST /weights` | the `update_weights` event's fields: `weights` {role: number} |
//! | `POST /sorters` | the `set_sorters` event's fields: [`role_sorter`, `framework_sorter`] |
//! | `GET /explain?role=R`, `?framework=F` | why it got what it got at the last run ([`allocator_sim::explain`]) |
//! | `GET /explain?pod=NS/NAME` | kube mode: where the pod is and, while it waits, why ([`allocator_kube::KubeScheduler::explain_pod`]) |
//! | `POST /plan` | one scenario event (a change); answers [`allocator_sim::plan::Plan::to_json`], changes nothing |
//! | `POST /api/v1/scheduler` | the Mesos v1 scheduler API ([`crate::clients::mesos`]) |
//! | `POST /api/v1` | the Mesos v1 operator API ([`crate::clients::operator`]) |
//! | `GET /version` | `{"version": "1.12.0"}` (what Mesos clients read before subscribing) |
//!
//! Frameworks connected over the scheduler API are a client of the master beside the
//! scenario's: their calls are answered on the master thread like any request, the master's
//! events reach them after the simulated frameworks', and each pass of the loop (at least
//! every 100 ms) ticks them on the wall clock (heartbeats, resends, failover timeouts).
//!
//! A POST is parsed by the scenario parser (the same checks as a scenario event) and applied
//! as its [`Command`] by [`Driver::command`]; bad input gets `400 {"error": …}` and changes
//! nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::auth::{Action, Auth, Caller};
use crate::clients::mesos::MesosFrameworks;
use crate::clients::operator::SchedulerView;
use allocator_host::master::Command;
use allocator_host::wall_clock::{Flow, WallClock, Wiring};
use allocator_sim::allocator_scenario::{AllocatorScenario, Op};
use allocator_sim::driver::Driver;
use allocator_sim::output::EventStream;
use allocator_sim::scenario::Document;

/// How `serve` runs.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// `HOST:PORT` to listen on (port 0: any free port).
    pub listen: String,
    /// Virtual seconds per wall-clock second.
    pub speed: f64,
    /// Stop after this many wall-clock seconds (`None`: run until killed).
    pub duration: Option<f64>,
    /// Wall-clock seconds between `HEARTBEAT` events on scheduler streams.
    pub heartbeat_interval: f64,
    /// Authentication and authorization ([`crate::auth`]).
    pub auth: Auth,
    /// The HTTP server's limits and timeouts.
    pub http_limits: allocator_http::Limits,
    /// What frameworks may hold (`--max_frameworks`, `--max_framework_info_bytes`).
    pub framework_limits: crate::clients::mesos::FrameworkLimits,
    /// Serve HTTPS with these PEM files (`None`: plain HTTP).
    pub tls: Option<allocator_http::TlsFiles>,
    /// Keep the master's registry in this directory (`--work_dir`), restoring it at start
    /// ([`crate::master_registry`]); `None`: nothing survives a restart.
    pub work_dir: Option<std::path::PathBuf>,
    /// The master's name (`--hostname`), accepted in a request's `Host` header beside IP
    /// addresses and `localhost`.
    pub hostname: Option<String>,
    /// Every flag the master runs with (name, value), for `/master/flags` and `GET_FLAGS`.
    pub flags: Vec<(String, String)>,
    /// Schedule a Kubernetes cluster (`allocator-master kube`) instead of serving frameworks
    /// over the scheduler API.
    pub kube: Option<allocator_kube::KubeOptions>,
}

/// A request read in full by the HTTP server.
type Incoming = allocator_http::Request;

/// Serves `scenario` live until `options.duration` has passed. Prints `serving on
/// http://ADDR` on stderr once listening. `Err` when the address cannot be bound or a module
/// fault stops the master (`--on_module_failure stop`).
pub fn serve(
    driver: &mut Driver<'_>,
    scenario: &AllocatorScenario,
    out: &mut EventStream,
    options: &ServeOptions,
) -> Result<(), String> {
    if !(options.speed.is_finite() && options.speed > 0.0) {
        return Err(format!("--speed must be a positive number, not {}", options.speed));
    }
    if !(options.heartbeat_interval.is_finite() && options.heartbeat_interval > 0.0) {
        return Err(format!(
            "--heartbeat_interval must be a positive number, not {}",
            options.heartbeat_interval
        ));
    }
    let heartbeat = Duration::from_secs_f64(options.heartbeat_interval);
    match &options.kube {
        Some(kube) => driver.attach_client(allocator_kube::KubeScheduler::connect(kube.clone())?),
        None => driver.attach_client(
            MesosFrameworks::new(heartbeat).with_limits(options.framework_limits.clone()),
        ),
    }
    crate::descriptors::survive_file_size_limit();
    let registry = match &options.work_dir {
        Some(dir) => Some(crate::master_registry::Store::open(dir)?),
        None => None,
    };
    let tls = options.tls.as_ref().map(allocator_http::Tls::load).transpose()?;
    let mut limits = options.http_limits.clone();
    if let Some(available) = crate::descriptors::raise_soft_limit()
        && crate::descriptors::fit_places(&mut limits, available)
    {
        log::warn!(
            "the open-file limit is {available}: {} request and {} stream places (raise the hard limit, ulimit -Hn, for more)",
            limits.max_connections,
            limits.max_streams
        );
    }
    let (server, requests) = allocator_http::Server::bind_tls(&options.listen, limits, tls)
        .map_err(|e| format!("cannot listen on '{}': {e}", options.listen))?;
    let (scheme, addr) = (server.scheme(), server.addr());
    eprintln!("serving on {scheme}://{addr}");
    log::info!("serving on {scheme}://{addr}");
    let queued = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::channel::<Incoming>();
    // Counts requests into the master's queue (`event_queue_dispatches`).
    let counter = {
        let queued = queued.clone();
        std::thread::Builder::new()
            .name("http-queue".into())
            .spawn(move || {
                for request in requests {
                    queued.fetch_add(1, Ordering::SeqCst);
                    if tx.send(request).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| format!("cannot start the HTTP queue thread: {e}"))?
    };
    // The flags as the master runs with them: the address it is bound to, the registry.
    let mut options = options.clone();
    options
        .flags
        .retain(|(k, _)| !["ip", "port", "listen", "registry", "work_dir"].contains(&k.as_str()));
    options.flags.push(("ip".into(), addr.ip().to_string()));
    options.flags.push(("port".into(), addr.port().to_string()));
    let store = if options.work_dir.is_some() { "replicated_log" } else { "in_memory" };
    options.flags.push(("registry".into(), store.into()));
    if let Some(dir) = &options.work_dir {
        options.flags.push(("work_dir".into(), dir.display().to_string()));
    }
    options.flags.sort();
    let options = &options;
    let (modules, setup) = (driver.master().registry(), driver.initial_setup().clone());
    let result = crate::planner::with_planner(modules, &setup, |planner| {
        let mut live = Live::new(driver, scenario, options, queued, planner)?;
        if options.kube.is_some() {
            // The watches' news reach the master loop by polling its queue of inputs.
            live.poll = KUBE_POLL;
        }
        let restored = registry.map(|(store, state)| {
            live.store = Some(store);
            state
        });
        live.run(out, &rx, restored)
    });
    // The master ends the frameworks' streams itself: a stop never waits for a client.
    let _ = driver.with_client(out, |m: &mut MesosFrameworks, _| {
        m.close_streams();
        Ok(())
    });
    drop(server);
    drop(rx);
    let _ = counter.join();
    result
}

/// The web page a browser gets at `/`: the live cluster, shares over time, explanations,
/// what-if and the operator actions, all through the endpoints above (built into the binary:
/// nothing to install beside it).
const WEB_PAGE: &str = include_str!("web/index.html");

mod routes;

/// How often the master loop looks at the interrupt flag when nothing else wakes it.
const INTERRUPT_POLL: Duration = Duration::from_millis(100);

/// How often the master loop takes the Kubernetes watches' news when nothing else wakes it.
const KUBE_POLL: Duration = Duration::from_millis(10);

/// The master loop's state.
struct Live<'s, 'r> {
    driver: &'s mut Driver<'r>,
    events: &'s [(String, Op)],
    interval: f64,
    /// The virtual clock on the wall clock.
    clock: WallClock,
    /// When the master started (its uptime).
    start: Instant,
    deadline: Option<Instant>,
    /// Next scenario event to play.
    cursor: usize,
    /// Virtual time the scenario waits for before its next event.
    hold: f64,
    queued: Arc<AtomicU64>,
    latency_ms: Vec<f64>,
    operator: crate::clients::operator::Operator,
    auth: &'s Auth,
    /// The master's name beside its addresses (`--hostname`).
    hostname: Option<&'s str>,
    planner: &'s crate::planner::Planner,
    /// The master's registry, when it survives restarts (`--work_dir`).
    store: Option<crate::master_registry::Store>,
    /// Why the last registry write failed, while it keeps failing.
    registry_failing: Option<String>,
    /// The frameworks' [records generation](MesosFrameworks::records_generation) last
    /// written to the registry (`None`: not yet).
    registry_generation: Option<u64>,
    /// Subscribers to the operator API's event stream.
    streams: crate::clients::operator_events::OperatorStreams,
    /// The longest the loop waits for a request before it catches up again.
    poll: Duration,
}

impl<'s, 'r> Live<'s, 'r> {
    fn new(
        driver: &'s mut Driver<'r>,
        scenario: &'s AllocatorScenario,
        options: &'s ServeOptions,
        queued: Arc<AtomicU64>,
        planner: &'s crate::planner::Planner,
    ) -> Result<Live<'s, 'r>, String> {
        let start = Instant::now();
        let v0 = driver.master().now();
        Ok(Live {
            interval: driver.master().allocation_interval(),
            events: &scenario.events,
            clock: WallClock::new(v0, options.speed)?,
            start,
            hold: v0,
            deadline: options.duration.map(|d| start + Duration::from_secs_f64(d.max(0.0))),
            cursor: 0,
            queued,
            latency_ms: Vec::new(),
            operator: crate::clients::operator::Operator::with_flags(options.flags.clone()),
            auth: &options.auth,
            hostname: options.hostname.as_deref(),
            planner,
            store: None,
            registry_failing: None,
            registry_generation: None,
            streams: crate::clients::operator_events::OperatorStreams::new(
                Duration::from_secs_f64(options.heartbeat_interval),
            ),
            poll: INTERRUPT_POLL,
            driver,
        })
    }

    /// Runs the master on the wall clock ([`allocator_host::wall_clock::run`]) until the
    /// duration is over, the master is interrupted or stopped, or the HTTP queue is gone; the
    /// registry's state is restored first, over the scenario's agents of time 0.
    fn run(
        mut self,
        out: &mut EventStream,
        rx: &mpsc::Receiver<Incoming>,
        restored: Option<crate::master_registry::State>,
    ) -> Result<(), String> {
        // The scenario's agents of time 0 come first: the registry's changes apply to them.
        self.catch_up(out)?;
        if let Some(state) = restored {
            self.restore(state, out)?;
        }
        let clock = self.clock;
        let poll = self.poll;
        let result = allocator_host::wall_clock::run(
            &mut ServeLoop { live: &mut self, out },
            &clock,
            rx,
            Some(poll),
        );
        self.streams.close();
        result
    }

    /// Plays the scenario events that are due and advances the virtual clock to now.
    fn catch_up(&mut self, out: &mut EventStream) -> Result<(), String> {
        loop {
            while self.cursor < self.events.len() && self.driver.master().now() >= self.hold - 1e-9
            {
                let (location, op) = &self.events[self.cursor];
                match op {
                    Op::Advance(s) => self.hold = self.driver.master().now() + s,
                    Op::Tick => self.hold = self.driver.master().now() + self.interval,
                    op => {
                        if let Err(e) = self.driver.apply(self.cursor, op, out) {
                            self.fatal()?;
                            log::error!("scenario {location}: {e}");
                        }
                    }
                }
                self.cursor += 1;
            }
            let called = Instant::now();
            let mut target = self.clock.virtual_at(called);
            let playing = self.cursor < self.events.len();
            if playing {
                target = target.min(self.hold);
            }
            if target <= self.driver.master().now() {
                return Ok(());
            }
            let due = self.driver.master().next_periodic();
            if let Err(e) = self.driver.advance(target - self.driver.master().now(), out) {
                self.fatal()?;
                log::error!("advancing the clock: {e}");
            }
            if due <= target {
                let late = called.saturating_duration_since(self.clock.wall_at(due));
                allocator_host::metrics::push_sample(
                    &mut self.latency_ms,
                    late.as_secs_f64() * 1e3,
                );
            }
            if !(playing && self.driver.master().now() >= self.hold - 1e-9) {
                return Ok(());
            }
        }
    }

    /// The registry's view of the master now ([`crate::master_registry`]).
    /// With the frameworks only when `frameworks` (they are what grows).
    fn snapshot(&self, frameworks: bool) -> crate::master_registry::State {
        use crate::master_registry::{QuotaText, State, VERSION};
        let master = self.driver.master();
        let ops = self.operator.records();
        let (frameworks, removed_frameworks) = match self.driver.client::<MesosFrameworks>() {
            Some(m) if frameworks => m.records(),
            _ => Default::default(),
        };
        State {
            version: VERSION,
            quotas: master
                .quotas()
                .iter()
                .map(|(role, q)| {
                    let text = QuotaText {
                        guarantees: q.guarantees.to_string(),
                        limits: q.limits.to_string(),
                    };
                    (role.clone(), text)
                })
                .collect(),
            weights: master.weights().clone(),
            role_sorter: Some(master.setup().role_sorter.clone()),
            framework_sorter: Some(master.setup().framework_sorter.clone()),
            maintenance_schedule: ops
                .schedule
                .as_ref()
                .map(|s| serde_json::to_value(s).unwrap_or_default()),
            down_machines: ops
                .down
                .iter()
                .map(|m| serde_json::to_value(m).unwrap_or_default())
                .collect(),
            gone_agents: ops.gone,
            frameworks,
            removed_frameworks,
        }
    }

    /// Writes the registry between requests. A write that fails (out of descriptors, a full
    /// disk) does not stop the master: it is said once, retried on every pass, and until it
    /// works each change is answered `503` (its write failed too), so nothing acknowledged is
    /// missing from the registry.
    fn keep_registry(&mut self) {
        match self.persist() {
            Ok(()) => {
                if let Some(e) = self.registry_failing.take() {
                    log::warn!("the registry is written again (it failed: {e})");
                }
            }
            Err(e) => {
                if self.registry_failing.is_none() {
                    log::error!("{e}; retrying on every pass, changes answered 503 until then");
                    self.registry_failing = Some(e);
                }
            }
        }
    }

    /// Writes the registry if anything in it changed. `Err` when it cannot (a request that
    /// made a change is then answered `503`).
    /// The frameworks are read (and compared) only when they changed since they were last
    /// written, so that a pass, or a weight change, costs what it changed.
    fn persist(&mut self) -> Result<(), String> {
        if self.store.is_none() {
            return Ok(());
        }
        let generation = self.driver.client::<MesosFrameworks>().map(|m| m.records_generation());
        let frameworks = self.registry_generation != generation;
        let state = self.snapshot(frameworks);
        let store = self.store.as_mut().expect("checked");
        if store.save_sections(&state, frameworks)? {
            log::debug!("registry written");
        }
        self.registry_generation = generation;
        Ok(())
    }

    /// Applies a registry read at start: sorters, weights, quotas, the operator's maintenance
    /// and gone agents, then the frameworks, which have their failover timeout to subscribe
    /// again. What the allocator refuses now is skipped with a warning.
    fn restore(
        &mut self,
        state: crate::master_registry::State,
        out: &mut EventStream,
    ) -> Result<(), String> {
        if state == (crate::master_registry::State { version: state.version, ..Default::default() })
        {
            // A new work_dir (or one whose registry holds nothing): nothing to restore.
            log::info!("the registry is empty: nothing to restore");
            eprintln!(
                "the registry in --work_dir is empty: nothing restored (changes are kept there from now on)"
            );
            return Ok(());
        }
        let restored = restored_parts(&state);
        let setup = self.driver.master().setup().clone();
        let sorters = Command::SetSorters {
            role_sorter: state.role_sorter.filter(|s| *s != setup.role_sorter),
            framework_sorter: state.framework_sorter.filter(|s| *s != setup.framework_sorter),
        };
        let mut commands = Vec::new();
        if !matches!(sorters, Command::SetSorters { role_sorter: None, framework_sorter: None }) {
            commands.push(sorters);
        }
        if !state.weights.is_empty() {
            commands.push(Command::UpdateWeights(state.weights.into_iter().collect()));
        }
        for (role, q) in state.quotas {
            let parse = |t: &str| allocator_api::Quantities::parse(t).map_err(|e| e.to_string());
            match (parse(&q.guarantees), parse(&q.limits)) {
                (Ok(guarantees), Ok(limits)) => commands
                    .push(Command::UpdateQuota(role, allocator_api::Quota { guarantees, limits })),
                (Err(e), _) | (_, Err(e)) => log::warn!("registry: quota of '{role}': {e}"),
            }
        }
        for command in &commands {
            if let Err(e) = self.driver.command(command, out) {
                self.fatal()?;
                log::warn!("registry: {command:?} not restored: {e}");
            }
        }
        fn parse<T: serde::de::DeserializeOwned>(v: Value, what: &str) -> Option<T> {
            serde_json::from_value(v)
                .map_err(|e| log::warn!("registry: {what} not restored: {e}"))
                .ok()
        }
        let records = crate::clients::operator::OperatorRecords {
            schedule: state.maintenance_schedule.and_then(|v| parse(v, "maintenance schedule")),
            down: state
                .down_machines
                .into_iter()
                .filter_map(|m| parse(m, "down machine"))
                .collect(),
            gone: state.gone_agents,
        };
        if let Err(e) = self.operator.restore(&mut self.driver.applying(out), records) {
            self.fatal()?;
            log::warn!("registry: maintenance not fully restored: {e}");
        }
        let (frameworks, removed) = (state.frameworks, state.removed_frameworks);
        let count = frameworks.len();
        self.driver.with_client(out, |m: &mut MesosFrameworks, master| {
            m.restore(frameworks, removed, master)
        })?;
        log::info!("registry restored ({count} framework(s) waiting to subscribe)");
        eprintln!("restored the registry: {restored}");
        self.persist()
    }

    /// `Err` (stop the master) once a module fault under `--on_module_failure stop` happened.
    fn fatal(&self) -> Result<(), String> {
        match self.driver.master().stopped() {
            Some(reason) => Err(reason.to_owned()),
            None => Ok(()),
        }
    }

    fn metrics(&self) -> Map<String, Value> {
        let mut m = self.driver.metrics();
        m.insert(
            "allocator/mesos/event_queue_dispatches".into(),
            json!(self.queued.load(Ordering::SeqCst)),
        );
        allocator_host::metrics::write_timing(
            &mut m,
            "allocator/mesos/allocation_run_latency_ms",
            &self.latency_ms,
        );
        m.insert("master/plans_refused".into(), json!(self.planner.refused()));
        allocator_host::metrics::write_mesos_master_metrics(&mut m, self.driver.master());
        m.insert("master/uptime_secs".into(), json!(self.start.elapsed().as_secs_f64()));
        let offers = self.driver.client::<MesosFrameworks>().map_or(0, |m| m.outstanding_offers());
        m.insert("master/outstanding_offers".into(), json!(offers));
        if let Some(kube) = self.driver.client::<allocator_kube::KubeScheduler>() {
            for (name, value) in kube.metrics() {
                m.insert(name, json!(value));
            }
        }
        crate::system_metrics::write(&mut m);
        m
    }

    /// Answers one request: Mesos's media-type checks, then authentication in the realm of
    /// its path, authorization, and the handler `routes.rs` names. `Err` stops the master.
    fn answer(&mut self, request: Incoming, out: &mut EventStream) -> Result<(), String> {
        if let Err(refusal) = check_media_types(&request) {
            request.respond_with(refusal);
            return Ok(());
        }
        if let Err(refusal) = check_host(&request, self.hostname) {
            log::warn!("{} {}: refused a request for another host", request.method, request.path);
            request.respond_with(refusal);
            return Ok(());
        }
        if let Err(refusal) = check_same_origin(&request) {
            log::warn!("{} {}: refused a cross-site request", request.method, request.path);
            request.respond_with(refusal);
            return Ok(());
        }
        let path = request.path.clone();
        let (realm, target) = routes::route(&request.method, &path);
        let principal = match realm {
            None => None,
            Some(realm) => match self.auth.authenticate(realm, request.header("Authorization")) {
                Ok(principal) => principal,
                Err(denied) => {
                    log::warn!(
                        "{} {}: {} (authentication)",
                        request.method,
                        request.path,
                        denied.status
                    );
                    request.respond_with(*denied);
                    return Ok(());
                }
            },
        };
        let caller = Caller { auth: self.auth, principal: principal.as_deref() };
        if let Err(denied) = authorize_endpoint(caller, &request, self.driver) {
            request.respond_with(*denied);
            return Ok(());
        }
        self.dispatch(target, request, caller, out)
    }
}

/// The live master as the wall-clock loop drives it: [`Live`] with the event stream its
/// clients write to.
struct ServeLoop<'a, 's, 'r> {
    live: &'a mut Live<'s, 'r>,
    out: &'a mut EventStream,
}

impl Wiring for ServeLoop<'_, '_, '_> {
    type Request = Incoming;

    /// Plays the scenario events that are due and advances the virtual clock to now.
    fn catch_up(&mut self, _: &WallClock) -> Result<(), String> {
        self.live.catch_up(self.out)
    }

    /// Ticks the frameworks over the scheduler API on the wall clock, flushes the event
    /// stream, writes the registry when it changed, and ticks the operator streams.
    fn after_catch_up(&mut self) -> Result<(), String> {
        let live = &mut *self.live;
        if let Err(e) =
            live.driver.with_client(self.out, |m: &mut MesosFrameworks, master| m.tick(master))
        {
            live.fatal()?;
            log::error!("scheduler API: {e}");
        }
        if let Err(e) = live
            .driver
            .with_client(self.out, |k: &mut allocator_kube::KubeScheduler, master| k.tick(master))
        {
            live.fatal()?;
            log::error!("kubernetes: {e}");
        }
        self.out.flush();
        crate::logging::expire();
        live.keep_registry();
        live.streams.tick(&live.driver.applying(self.out), live.auth);
        Ok(())
    }

    /// Answers one HTTP request; a change is in the registry before the next pass.
    fn handle(&mut self, incoming: Incoming) -> Result<Flow, String> {
        self.live.queued.fetch_sub(1, Ordering::SeqCst);
        // A GET changes nothing the registry keeps: no snapshot for it.
        let reads_only = incoming.method == "GET";
        self.live.answer(incoming, self.out)?;
        if !reads_only {
            self.live.keep_registry();
        }
        Ok(Flow::Continue)
    }

    /// Once the `--duration` is over or SIGINT/SIGTERM arrived.
    fn finished(&self) -> bool {
        self.live.deadline.is_some_and(|d| Instant::now() >= d)
            || self.live.driver.master().interrupted()
    }

    /// At the next periodic allocation run, the scenario's next event or the end of the
    /// `--duration`, whichever comes first.
    fn wake_at(&self, clock: &WallClock) -> Instant {
        let live = &*self.live;
        let mut next = live.driver.master().next_periodic();
        if live.cursor < live.events.len() {
            next = next.min(live.hold);
        }
        let wake = clock.wall_at(next);
        live.deadline.map_or(wake, |d| wake.min(d))
    }
}

/// What a registry holds, for the line that says it was restored (`2 weights, 1 quota, 3
/// frameworks that may subscribe again with their ids`); the sorters always are.
fn restored_parts(state: &crate::master_registry::State) -> String {
    let count = |n: usize, one: &str, many: &str| match n {
        0 => None,
        1 => Some(format!("1 {one}")),
        n => Some(format!("{n} {many}")),
    };
    let parts: Vec<String> = [
        count(state.weights.len(), "weight", "weights"),
        count(state.quotas.len(), "quota", "quotas"),
        state.maintenance_schedule.as_ref().map(|_| "the maintenance schedule".to_owned()),
        count(state.down_machines.len(), "machine down", "machines down"),
        count(state.gone_agents.len(), "agent marked gone", "agents marked gone"),
        count(state.frameworks.len(), "framework", "frameworks"),
    ]
    .into_iter()
    .flatten()
    .collect();
    match parts.is_empty() {
        true => "the sorters in use (nothing else was kept)".to_owned(),
        false => {
            let frameworks = if state.frameworks.is_empty() {
                ""
            } else {
                " (frameworks may subscribe again with their ids)"
            };
            format!("{}{frameworks}", parts.join(", "))
        }
    }
}

/// Whether an operator API body is a `SUBSCRIBE` call (answered with the event stream).
fn is_subscribe(body: &str) -> bool {
    serde_json::from_str::<Value>(body).is_ok_and(|v| v["type"] == "SUBSCRIBE")
}

/// The ACL checks of `serve`'s own endpoints that act on or name an object (the scheduler and
/// operator APIs check theirs per call; reads of frameworks, tasks, roles, weights and quotas
/// are filtered by object where they are answered: [`visible_state`], the Mesos endpoints,
/// plans). The body is read as the endpoint reads it; a body that does not parse is left to
/// the endpoint's own `400`.
fn authorize_endpoint(
    caller: Caller<'_>,
    request: &Incoming,
    driver: &Driver<'_>,
) -> Result<(), crate::auth::Denied> {
    let body = || serde_json::from_str::<Value>(&request.body).unwrap_or(Value::Null);
    match (request.method.as_str(), request.path.as_str()) {
        ("POST", "/quota") => {
            let body = body();
            let role = body.get("role").and_then(Value::as_str).unwrap_or_default();
            caller.may(Action::UpdateQuotas, &[role])
        }
        ("POST", "/weights") => {
            let body = body();
            let roles: Vec<&str> = body
                .get("weights")
                .and_then(Value::as_object)
                .map(|w| w.keys().map(String::as_str).collect())
                .unwrap_or_default();
            // No role named: the object `ANY`, as for every empty object list.
            caller.may(Action::UpdateWeights, &roles)
        }
        ("POST", "/sorters") => {
            let body = body();
            let names: Vec<&str> = ["role_sorter", "framework_sorter"]
                .into_iter()
                .filter_map(|k| body.get(k).and_then(Value::as_str))
                .collect();
            caller.may(Action::UpdateSorters, &names)
        }
        ("POST", "/plan") => caller.may(Action::Plan, &[]),
        ("PUT", path)
            if crate::clients::endpoints::mesos_endpoint("PUT", path) == Some("/weights") =>
        {
            let roles: Vec<String> = serde_json::from_str::<Vec<Value>>(&request.body)
                .unwrap_or_default()
                .iter()
                .filter_map(|w| w["role"].as_str().map(str::to_owned))
                .collect();
            let roles: Vec<&str> = roles.iter().map(String::as_str).collect();
            caller.may(Action::UpdateWeights, &roles)
        }
        ("GET", "/metrics/snapshot") => caller.may(Action::GetEndpoints, &["/metrics/snapshot"]),
        ("GET", "/explain") => may_explain(caller, driver),
        _ => Ok(()),
    }
}

/// An explanation names other roles (who is ahead, whose guarantees are held back, whose
/// reservations), their frameworks and the machines in maintenance: only a caller who may see
/// every role, quota, framework and scheduled machine of the master may have one, whatever it
/// asks about (and the refusal names nothing, so it tells nothing of what exists).
fn may_explain(caller: Caller<'_>, driver: &Driver<'_>) -> Result<(), crate::auth::Denied> {
    let master = driver.master();
    if let Some(role) = master.role_names().iter().find(|r| !caller.sees_role(r)) {
        return caller.may(Action::ViewRoles, &[role]);
    }
    if let Some(role) = master.quotas().keys().find(|r| !caller.sees_quota(r)) {
        return caller.may(Action::GetQuotas, &[role]);
    }
    for id in master.framework_ids() {
        let user = framework_user_named(driver, master.framework_name(id));
        if !caller.sees_framework(user) {
            return caller.may(Action::ViewFrameworks, &[user]);
        }
    }
    for agent in master.agent_records().filter(|a| a.unavailability.is_some()) {
        let host = agent.info.hostname.as_str();
        if !caller.sees_machine(host, false) {
            return caller.may(Action::GetMaintenanceSchedules, &[host]);
        }
    }
    Ok(())
}

/// The user of the framework named `name` in the live master
/// ([`crate::clients::operator::framework_user_named`]).
fn framework_user_named<'d>(driver: &'d Driver<'_>, name: &str) -> &'d str {
    let scheduler = driver.client::<MesosFrameworks>().map(|m| m as &dyn SchedulerView);
    crate::clients::operator::framework_user_named(driver.master(), scheduler, name)
}

/// How many samples of the dominant shares `GET /state` answers in `share_history` (one per
/// allocation run: 10 minutes at Mesos's default 1 s interval).
const SHARE_HISTORY: usize = 600;

/// How many samples of its time series (shares, utilisation, marks) a live master keeps: its
/// run has no end, so the oldest go (the web page's chart reads the last 600).
pub const HISTORY_KEPT: usize = 10_000;

/// `GET /state` ([`Driver::state`]) as `caller` may see it: the frameworks it may see, the
/// roles it may see (each with its quota only if it may see that), and the allocations of
/// those frameworks in those roles; with `share_history`, the last [`SHARE_HISTORY`] samples
/// of the dominant shares of the roles it may see ([`Driver::share_history`]).
pub(super) fn visible_state(driver: &Driver<'_>, caller: Caller<'_>) -> Value {
    let mut state = driver.state();
    let mut history = driver.share_history(SHARE_HISTORY);
    if let Some(Value::Object(shares)) = history.get_mut("shares") {
        shares.retain(|role, _| caller.sees_role(role));
    }
    state["share_history"] = history;
    let sees_framework = |f: &Value| {
        caller.sees_framework(framework_user_named(driver, f["framework"].as_str().unwrap_or("")))
    };
    let sees_role = |v: &Value| caller.sees_role(v["role"].as_str().unwrap_or(""));
    if let Some(Value::Array(frameworks)) = state.get_mut("frameworks") {
        frameworks.retain(sees_framework);
    }
    if let Some(Value::Array(roles)) = state.get_mut("roles") {
        roles.retain(sees_role);
        for role in roles.iter_mut() {
            if !caller.sees_quota(role["role"].as_str().unwrap_or("")) {
                role.as_object_mut().map(|r| r.remove("quota"));
            }
        }
    }
    if let Some(Value::Array(allocations)) = state.get_mut("allocations") {
        allocations.retain(|a| sees_framework(a) && sees_role(a));
    }
    // An agent's maintenance window only to a caller who may see it in the schedule.
    if let Some(Value::Array(agents)) = state.get_mut("agents") {
        for agent in agents.iter_mut() {
            let host = agent["hostname"].as_str().unwrap_or("").to_owned();
            if !caller.sees_machine(&host, false) {
                agent["unavailability"] = Value::Null;
            }
        }
    }
    state
}

/// Who a plan is for ([`crate::planner::Reader`]): `caller`, and the frameworks it may not see.
pub(super) fn plan_reader(driver: &Driver<'_>, caller: Caller<'_>) -> crate::planner::Reader {
    let master = driver.master();
    let hidden_frameworks = master
        .framework_ids()
        .map(|id| master.framework_name(id))
        .filter(|name| !caller.sees_framework(framework_user_named(driver, name)))
        .map(str::to_owned)
        .collect();
    crate::planner::Reader {
        auth: caller.auth.clone(),
        principal: caller.principal.map(str::to_owned),
        hidden_frameworks,
    }
}

/// A request must name this master in its `Host` header: an IP address (any: a browser that
/// connected to an address is no DNS rebinding), `localhost`, or the name given with
/// `--hostname`; any other name is refused `403`, so a site whose name an attacker points at
/// this master's address (DNS rebinding) can neither read nor change it. A request without
/// `Host` (HTTP/1.0 programs) is let through.
fn check_host(request: &Incoming, hostname: Option<&str>) -> Result<(), allocator_http::Response> {
    let Some(host) = request.header("Host") else { return Ok(()) };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    let known = name.parse::<std::net::IpAddr>().is_ok()
        || name.eq_ignore_ascii_case("localhost")
        || hostname.is_some_and(|h| name.eq_ignore_ascii_case(h));
    if known {
        return Ok(());
    }
    Err(allocator_http::Response::text(
        403,
        &format!("Host '{host}' is not a name of this master (give it with --hostname)"),
    ))
}

/// A browser's request from another site may change nothing (cross-site request forgery, a
/// page elsewhere posting `text/plain` or a form to this master): a request with any method
/// but `GET` and `HEAD` that a browser marks as coming from elsewhere — `Sec-Fetch-Site`
/// other than `same-origin` or `none`, or an `Origin` that is not the scheme, host and port
/// of the `Host` it was sent to — is refused `403` before authentication, whatever
/// credentials the browser holds. Programs (pymesos, curl, the Mesos CLI) send neither
/// header and are not affected; the master's own web page is same-origin.
fn check_same_origin(request: &Incoming) -> Result<(), allocator_http::Response> {
    if matches!(request.method.as_str(), "GET" | "HEAD") {
        return Ok(());
    }
    let refuse = |why: &str| {
        Err(allocator_http::Response::text(403, &format!("Cross-site request refused: {why}")))
    };
    if let Some(site) = request.header("Sec-Fetch-Site")
        && !site.eq_ignore_ascii_case("same-origin")
        && !site.eq_ignore_ascii_case("none")
    {
        return refuse(&format!("Sec-Fetch-Site is '{site}'"));
    }
    if let Some(origin) = request.header("Origin") {
        let host = request.header("Host").unwrap_or_default();
        let origin_host = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .map(|rest| rest.trim_end_matches('/'));
        if !origin_host.is_some_and(|o| !host.is_empty() && o.eq_ignore_ascii_case(host)) {
            return refuse(&format!("Origin '{origin}' is not this master ('{host}')"));
        }
    }
    Ok(())
}

/// Mesos's answers to a body or an `Accept` this master does not speak: `415` for a
/// protobuf (or other non-JSON) body, `406` when JSON is not acceptable. Only the v1 APIs
/// check them, as in Mesos.
fn check_media_types(request: &Incoming) -> Result<(), allocator_http::Response> {
    if !matches!(request.path.as_str(), "/api/v1/scheduler" | "/api/v1") {
        return Ok(());
    }
    let json = "application/json";
    if request.method == "POST" {
        let content_type = request.header("Content-Type").unwrap_or(json);
        let media = content_type.split(';').next().unwrap_or_default().trim();
        if !media.eq_ignore_ascii_case(json) {
            return Err(allocator_http::Response::text(
                415,
                &format!("Expecting 'Content-Type' of {json}"),
            ));
        }
    }
    if let Some(accept) = request.header("Accept") {
        let allows_json = accept.split(',').any(|range| {
            let media = range.split(';').next().unwrap_or_default().trim();
            ["application/json", "application/*", "*/*"]
                .iter()
                .any(|m| media.eq_ignore_ascii_case(m))
        });
        if !allows_json {
            return Err(allocator_http::Response::text(
                406,
                &format!("Expecting 'Accept' to allow '{json}'"),
            ));
        }
    }
    Ok(())
}

/// `GET /explain?role=R` or `?framework=F`: why it got what it got at the last run;
/// `?pod=NS/NAME` in kube mode ([`explain_pod`]).
fn explain(driver: &Driver<'_>, query: &str) -> (u16, Value) {
    let mut pairs = query.split('&').filter_map(|p| p.split_once('='));
    match pairs.next() {
        Some(("role", r)) if !r.is_empty() => {
            (200, driver.explain_role(&allocator_http::percent_decode(r)))
        }
        Some(("framework", f)) if !f.is_empty() => {
            (200, driver.explain_framework(&allocator_http::percent_decode(f)))
        }
        Some(("pod", p)) if !p.is_empty() => {
            explain_pod(driver, &allocator_http::percent_decode(p))
        }
        _ => (
            400,
            json!({"error": "give ?role=ROLE or ?framework=FRAMEWORK (or ?pod=NAMESPACE/NAME in kube mode)"}),
        ),
    }
}

/// `GET /explain?pod=NAMESPACE/NAME` (kube mode): where the pod is and, while it waits, why.
fn explain_pod(driver: &Driver<'_>, pod: &str) -> (u16, Value) {
    let Some(kube) = driver.client::<allocator_kube::KubeScheduler>() else {
        return (400, json!({"error": "?pod= is answered in kube mode only"}));
    };
    let Some((namespace, name)) = pod.split_once('/') else {
        return (400, json!({"error": "give ?pod=NAMESPACE/NAME"}));
    };
    match kube.explain_pod(namespace, name, driver.master()) {
        Some(answer) => (200, answer),
        None => (404, json!({"error": format!("no pod '{pod}' is known to this scheduler")})),
    }
}

fn respond(request: Incoming, status: u16, body: &Value) {
    request.respond(status, body.to_string());
}

/// Parses a POST body as the fields of scenario event `event` (SPEC section 4.1), with the
/// scenario parser's checks. The message names the field at fault.
pub fn parse_request(event: &str, body: &str) -> Result<Command, String> {
    let value: Value =
        serde_json::from_str(body).map_err(|e| format!("the body is not valid JSON: {e}"))?;
    let Value::Object(mut fields) = value else {
        return Err("the body must be a JSON object".into());
    };
    if fields.contains_key("op") {
        return Err("unknown field 'op' (the endpoint names the operation)".into());
    }
    fields.insert("op".into(), json!(event));
    let mut root = Map::new();
    root.insert("events".into(), json!([fields]));
    let doc = Document { file: "request".into(), root };
    let mut scenario = AllocatorScenario::parse(&doc).map_err(|e| match &e.field {
        Some(field) => format!("field '{field}': {}", e.message),
        None => e.message.clone(),
    })?;
    match scenario.events.pop().map(|(_, op)| op) {
        Some(Op::Command(command)) => Ok(command),
        _ => Err(format!("'{event}' is not a change to the cluster")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_body_parses_as_the_update_quota_event() {
        let op = parse_request("update_quota", r#"{"role": "a", "guarantees": "cpus:2"}"#).unwrap();
        assert!(
            matches!(op, Command::UpdateQuota(role, q) if role == "a" && q.guarantees.get("cpus").as_f64() == 2.0)
        );
    }

    #[test]
    fn a_body_naming_its_own_op_is_refused() {
        let e =
            parse_request("update_quota", r#"{"op": "remove_agent", "agent": "a1"}"#).unwrap_err();
        assert!(e.contains("'op'"), "{e}");
    }

    #[test]
    fn a_body_that_is_not_an_object_is_refused() {
        assert!(parse_request("update_weights", "[1, 2]").unwrap_err().contains("object"));
        assert!(parse_request("update_weights", "{").unwrap_err().contains("not valid JSON"));
    }

    #[test]
    fn a_bad_field_is_named_in_the_message() {
        let e = parse_request("update_weights", r#"{"weights": {"a": -1}}"#).unwrap_err();
        assert!(e.contains("weights"), "{e}");
    }
}
