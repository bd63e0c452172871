//! A minimal third-party master that embeds `allocator-host`: it loads modules by the usual
//! flags, creates the allocator and sorters they name (falling back to the built-in
//! hierarchical DRF allocator when a module fails), and drives them on the wall clock through
//! [`MasterActor`] — with the offer guard, fault containment and module isolation of the
//! `allocator-master` binary, since it is the same master core.
//!
//! Its cluster is made up: `--agents` agents of 8 cpus and 16 GiB, `--frameworks` frameworks
//! in roles `r0`, `r1`, …; each framework launches one task of 1 cpu and 1 GiB for 2 s on
//! every offer and declines the rest for 1 s. After `--seconds` it prints one line of totals
//! and exits 0; a module fault under `--on_module_failure stop` exits 2 with the reason.
//!
//! ```sh
//! embed-master --modules examples/modules.json --role_sorter random --seconds 3
//! ```

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use allocator_host::ModuleRegistry;
use allocator_host::actor::{ActorOptions, MasterActor};
use allocator_host::master::{Command, Event, FailurePolicy, Setup};

fn main() -> ExitCode {
    // With `isolation: process`, modules run in workers: this executable, started again.
    if allocator_host::is_worker_invocation() {
        allocator_host::worker_main();
    }
    // Module faults and the master's refusals are reported through `log`.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("embed-master: {message}");
            ExitCode::from(2)
        }
    }
}

/// `--name value` pairs; every flag takes a value.
fn flags(args: Vec<String>) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::new();
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n.to_owned(), v.to_owned()),
            None => (flag.clone(), args.next().ok_or(format!("{flag} needs a value"))?),
        };
        let name = name.strip_prefix("--").ok_or(format!("unexpected argument '{name}'"))?;
        out.insert(name.replace('-', "_"), value);
    }
    Ok(out)
}

fn run(args: Vec<String>) -> Result<(), String> {
    let flags = flags(args)?;
    let get = |name: &str, default: &str| flags.get(name).cloned().unwrap_or(default.into());
    let number = |name: &str, default: &str| -> Result<f64, String> {
        get(name, default).parse().map_err(|e| format!("--{name}: {e}"))
    };
    let mut registry = ModuleRegistry::new();
    registry
        .load_flags(flags.get("modules").map(String::as_str), None)
        .map_err(|e| e.to_string())?;
    let mut setup = Setup::new(
        &get("allocator", "hierarchical"),
        &get("role_sorter", "drf"),
        &get("framework_sorter", "drf"),
    );
    setup.options.allocation_interval = number("allocation_interval", "0.2")?;
    setup.on_module_failure = match get("on_module_failure", "fallback").as_str() {
        "fallback" => FailurePolicy::Fallback,
        "stop" => FailurePolicy::Stop,
        "restart" => FailurePolicy::Restart { limit: 3 },
        other => return Err(format!("--on_module_failure: unknown policy '{other}'")),
    };
    let (actor, events) = MasterActor::spawn(registry, setup, ActorOptions::default())?;
    let master = actor.handle();
    for f in 0..number("frameworks", "3")? as usize {
        master
            .apply(Command::add_framework(&format!("f{f}"), &[&format!("r{f}")]))
            .map_err(|e| e.to_string())?;
    }
    for a in 0..number("agents", "4")? as usize {
        let resources = "cpus:8;mem:16384".parse().map_err(|e| format!("{e}"))?;
        master.apply(Command::add_agent(&format!("a{a}"), resources)).map_err(|e| e.to_string())?;
    }
    // The frameworks: answer every offer as it comes, until the time is up.
    let (mut offers, mut tasks) = (0u64, 0u64);
    let deadline = Instant::now() + Duration::from_secs_f64(number("seconds", "3")?);
    while let Ok(event) = events.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let Event::Offer(offer) = event else { continue };
        offers += 1;
        let task = "cpus:1;mem:1024".parse().map_err(|e| format!("{e}"))?;
        let fits = offer.resources.contains(&task);
        let launch = if fits { vec![(task, Some(2.0))] } else { vec![] };
        let answer = Command::AnswerOffer { offer, tasks: launch, refuse_seconds: 1.0 };
        if let Ok(allocator_host::master::Applied::Launched(ids)) = master.apply(answer) {
            tasks += ids.len() as u64;
        }
    }
    let totals = master.metrics().and_then(|m| Ok((m, master.query(|m| m.setup().clone())?)));
    actor.shutdown()?; // the reason, when a module fault stopped the master
    let (metrics, setup) = totals.map_err(|e| e.to_string())?;
    let metric = |name: &str| metrics.get(name).and_then(|v| v.as_f64()).unwrap_or(0.0);
    let allocator = setup.allocator;
    println!(
        "offers {offers}, tasks launched {tasks}, allocation runs {}, module fallbacks {}, \
         dropped offers {}, allocator now '{allocator}'",
        metric("allocator/mesos/allocation_runs"),
        metric("allocator/module_fallbacks"),
        metric("allocator/guard/dropped_offers"),
    );
    Ok(())
}
