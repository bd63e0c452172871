//! The `allocator-master` command line (SPEC section 1): `main`, the dispatch to a runner and
//! the exit codes. `flags.rs` is the schema (every flag and subcommand), `http_flags.rs`
//! serve's HTTP flags, `setup.rs` what a run is given (modules, the master's set-up),
//! `runs.rs` the runners (a scenario or the default workload, `serve`, a plan, the soak, the
//! import); [`mod@bench`] and [`mod@experiment`]: the `bench` and `experiment` subcommands;
//! [`mod@kube_replay`]: `kube-replay`, loading a Kubernetes test cluster and measuring on it.

pub mod bench;

pub mod experiment;
mod flags;
mod http_flags;
pub mod kube_replay;
mod runs;
mod setup;
pub use flags::*;
pub use http_flags::HttpFlags;
use runs::*;
use setup::*;
pub use setup::{
    DEFAULT_CALL_BUDGET_MS, DEFAULT_CALL_TIMEOUT_MS, modules_table, parse_min_allocatable, setup,
};

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Exit code: a scenario expectation failed.
pub const EXIT_EXPECTATION_FAILED: u8 = 1;
/// Exit code: bad usage, a bad manifest, a module that cannot be loaded or created, or a
/// scenario that cannot be parsed.
pub const EXIT_USAGE: u8 = 2;

/// Parses the process's arguments and runs; returns the exit code.
pub fn main() -> ExitCode {
    let args = Args::parse();
    let log_dir = match &args.command {
        Some(Command::Serve(serve)) => serve.log_dir.as_deref(),
        Some(Command::Kube(kube)) => kube.serve.log_dir.as_deref(),
        _ => None,
    };
    if let Err(message) = crate::logging::init(log_dir) {
        eprintln!("allocator-master: {message}");
        return ExitCode::from(EXIT_USAGE);
    }
    allocator_host::watchdog::report_modules_that_end_the_process();
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("allocator-master: {message}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Every flag of this process's command line, given or defaulted, by its long name (as
/// Mesos's `/master/flags` and `GET_FLAGS` list them); durations in Mesos's format.
fn given_flags() -> Vec<(String, String)> {
    use clap::CommandFactory;
    let command = Args::command();
    let Ok(matches) = command.clone().try_get_matches_from(std::env::args_os()) else {
        return Vec::new();
    };
    let mut flags = std::collections::BTreeMap::new();
    let mut collect = |cmd: &clap::Command, m: &clap::ArgMatches| {
        for arg in cmd.get_arguments() {
            let (Some(long), id) = (arg.get_long(), arg.get_id().as_str()) else { continue };
            let mut value = match m.try_get_raw(id) {
                Ok(Some(raw)) => {
                    let values: Vec<String> =
                        raw.map(|v| v.to_string_lossy().into_owned()).collect();
                    values.join(",")
                }
                // Not given: the default its help states (`[default: 1secs]`), if any.
                _ => {
                    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                    let Some(default) =
                        help.split("[default: ").nth(1).and_then(|rest| rest.split(']').next())
                    else {
                        continue;
                    };
                    default.to_owned()
                }
            };
            if arg.get_value_names().is_some_and(|n| n.iter().any(|n| n == "DURATION"))
                && let Ok(seconds) = crate::duration::seconds(&value)
            {
                value = crate::duration::format_seconds(seconds);
            }
            flags.insert(long.to_owned(), value);
        }
    };
    collect(&command, &matches);
    if let Some((name, sub)) = matches.subcommand()
        && let Some(cmd) = command.find_subcommand(name)
    {
        collect(cmd, sub);
    }
    flags.into_iter().collect()
}

/// Everything one allocator run (a scenario, the default workload, or `serve`) is given.
struct RunSetup<'a> {
    engine: EngineFlags,
    allocator: AllocatorFlags,
    run: RunFlags,
    report: Option<&'a PathBuf>,
    serve: Option<&'a ServeArgs>,
    /// `kube`: serve a Kubernetes cluster (its `serve` flags in `serve`).
    kube: Option<&'a KubeArgs>,
}

/// `serve`, or `kube` with its `serve` flags: the live master, its flags merged with the outer
/// ones.
fn run_live(
    args: &Args,
    name: &str,
    serve: &ServeArgs,
    kube: Option<&KubeArgs>,
) -> Result<u8, String> {
    refuse_outer_flags(args, name, Applies::RUN)?;
    serve.refuse_unsupported()?;
    let registry = load_modules(
        &serve.modules.clone().or(&args.modules),
        &serve.allocator.limits.clone().or(&args.allocator.limits),
    )?;
    let setup = RunSetup {
        engine: serve.engine.clone().or(&args.engine),
        allocator: serve.allocator.clone().or(&args.allocator),
        run: serve.run.clone().or(&args.run),
        report: None,
        serve: Some(serve),
        kube,
    };
    run_allocation(&registry, &setup)
}

/// Runs with parsed arguments; `Err` is a one-line message for exit code 2.
pub fn run(args: &Args) -> Result<u8, String> {
    let Some(command) = &args.command else {
        let registry = load_modules(&args.modules, &args.allocator.limits)?;
        if args.list_modules {
            print_modules(&registry);
            return Ok(0);
        }
        let setup = RunSetup {
            engine: args.engine.clone(),
            allocator: args.allocator.clone(),
            run: args.run.clone(),
            report: args.report.as_ref(),
            serve: None,
            kube: None,
        };
        return run_allocation(&registry, &setup);
    };
    match command {
        Command::Import(import) => {
            refuse_outer_flags(args, "import", Applies::NOTHING)?;
            run_import(import)
        }
        Command::Soak(soak) => {
            refuse_outer_flags(args, "soak", Applies::NOTHING)?;
            run_soak(soak)
        }
        Command::Conformance(c) => {
            refuse_outer_flags(args, "conformance", Applies::MODULES)?;
            let limits = c.limits.clone().or(&args.allocator.limits);
            let registry = load_modules(&c.modules.clone().or(&args.modules), &limits)?;
            let (subject, checks) = match (&c.allocator, &c.sorter) {
                (Some(a), _) => (
                    format!("allocator '{a}'"),
                    allocator_conformance::run_allocator_checks(&registry, a, c.time_bound_ms),
                ),
                (None, Some(s)) => (
                    format!("sorter '{s}'"),
                    allocator_conformance::run_sorter_checks(&registry, s),
                ),
                (None, None) => {
                    return Err(
                        "conformance needs the subject to check: --allocator NAME or --sorter NAME"
                            .into(),
                    );
                }
            };
            Ok(if allocator_conformance::report(&subject, &checks) {
                0
            } else {
                EXIT_EXPECTATION_FAILED
            })
        }
        Command::Bench(bench) => {
            refuse_outer_flags(args, "bench", Applies::MODULES_AND_ENGINE)?;
            let limits = bench.limits.clone().or(&args.allocator.limits);
            let registry = load_modules(&bench.modules.clone().or(&args.modules), &limits)?;
            let engine = bench.engine.clone().or(&args.engine);
            bench::run(&engine, bench, &registry)
        }
        Command::Serve(serve) => run_live(args, "serve", serve, None),
        Command::Kube(kube) => run_live(args, "kube", &kube.serve, Some(kube)),
        Command::KubeReplay(r) => {
            refuse_outer_flags(args, "kube-replay", Applies::NOTHING)?;
            kube_replay::run(r)
        }
        Command::Experiment(e) => {
            refuse_outer_flags(args, "experiment", Applies::MODULES)?;
            experiment::run(e, &args.modules, &args.allocator.limits)
        }
        Command::Plan(plan) => {
            refuse_outer_flags(args, "plan", Applies::RUN)?;
            let registry = load_modules(
                &plan.modules.clone().or(&args.modules),
                &plan.allocator.limits.clone().or(&args.allocator.limits),
            )?;
            run_plan(
                &registry,
                plan,
                &plan.engine.clone().or(&args.engine),
                &plan.allocator.clone().or(&args.allocator),
                &plan.run.clone().or(&args.run),
            )
        }
    }
}

/// Which of the flags given before a subcommand the subcommand uses.
#[derive(Clone, Copy)]
struct Applies {
    modules: bool,
    engine: bool,
    limits: bool,
    run: bool,
}

impl Applies {
    const NOTHING: Applies = Applies { modules: false, engine: false, limits: false, run: false };
    const MODULES: Applies = Applies { modules: true, engine: false, limits: true, run: false };
    const MODULES_AND_ENGINE: Applies =
        Applies { modules: true, engine: true, limits: true, run: false };
    const RUN: Applies = Applies { modules: true, engine: true, limits: true, run: true };
}

/// Refuses flags given before `subcommand` that it does not use, instead of ignoring them.
fn refuse_outer_flags(args: &Args, subcommand: &str, applies: Applies) -> Result<(), String> {
    let mut given: Vec<&str> = Vec::new();
    if !applies.modules && args.modules.any() {
        given.push(if args.modules.modules.is_some() {
            "--modules"
        } else if args.modules.modules_dir.is_some() {
            "--modules_dir"
        } else {
            "--module_isolation/--module_memory_limit_mb/--module_worker_user"
        });
    }
    if !applies.engine && args.engine.any() {
        given.push("--allocator/--role_sorter/--framework_sorter");
    }
    if !applies.limits {
        given.extend(args.allocator.limits.given());
    }
    if !applies.run {
        given.extend(args.allocator.given());
        if args.run.scenario.is_some() {
            given.push("--scenario");
        }
        if args.run.output.is_some() {
            given.push("--output");
        }
    }
    if args.report.is_some() {
        given.push("--report");
    }
    if args.list_modules {
        given.push("--list_modules");
    }
    match given.as_slice() {
        [] => Ok(()),
        flags => Err(format!(
            "{} does not apply to '{subcommand}' (see 'allocator-master {subcommand} --help')",
            flags.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_host::registry::ModuleRegistry;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("allocator-master").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_definition_is_consistent() {
        Args::command().debug_assert();
    }

    fn serve_args(args: &[&str]) -> ServeArgs {
        let mut all = vec!["serve"];
        all.extend_from_slice(args);
        match parse(&all).unwrap().command {
            Some(Command::Serve(s)) => *s,
            other => panic!("not serve: {other:?}"),
        }
    }

    #[test]
    fn serve_listens_on_mesoss_port_5050_on_loopback_by_default() {
        assert_eq!(serve_args(&[]).address(), "127.0.0.1:5050");
        assert_eq!(serve_args(&["--port", "0"]).address(), "127.0.0.1:0");
        assert_eq!(serve_args(&["--ip", "0.0.0.0", "--port", "5051"]).address(), "0.0.0.0:5051");
        assert_eq!(serve_args(&["--ip", "::1"]).address(), "[::1]:5050");
        assert_eq!(serve_args(&["--listen", "127.0.0.1:7"]).address(), "127.0.0.1:7");
        assert!(parse(&["serve", "--listen", "127.0.0.1:7", "--port", "8"]).is_err());
    }

    #[test]
    fn time_flags_take_mesos_durations() {
        let s = serve_args(&["--allocation_interval=1secs", "--heartbeat_interval", "500ms"]);
        assert_eq!(s.allocator.allocation_interval, Some(1.0));
        assert_eq!(s.heartbeat_interval, 0.5);
        assert_eq!(serve_args(&["--duration", "2mins"]).duration, Some(120.0));
        assert_eq!(serve_args(&[]).heartbeat_interval, 15.0);
        let a = parse(&["--allocation_interval", "250ms", "--module_call_timeout_ms", "2secs"])
            .unwrap();
        assert_eq!(a.allocator.allocation_interval, Some(0.25));
        assert_eq!(a.allocator.limits.module_call_timeout_ms, Some(2000.0));
        let e = parse(&["--allocation_interval", "1sec"]).unwrap_err().to_string();
        assert!(e.contains("unknown unit 'sec'"), "{e}");
    }

    /// Every flag of every (sub)command, with the command's name.
    fn all_flags() -> Vec<(String, clap::Arg)> {
        fn walk(cmd: &clap::Command, path: String, out: &mut Vec<(String, clap::Arg)>) {
            for arg in cmd.get_arguments() {
                out.push((path.clone(), arg.clone()));
            }
            for sub in cmd.get_subcommands() {
                walk(sub, format!("{path} {}", sub.get_name()), out);
            }
        }
        let mut out = Vec::new();
        walk(&Args::command(), "allocator-master".into(), &mut out);
        out
    }

    #[test]
    fn flags_are_snake_case_with_a_kebab_case_alias() {
        for (cmd, arg) in all_flags() {
            let Some(long) = arg.get_long() else { continue };
            assert!(!long.contains('-'), "{cmd}: --{long} should be snake_case");
            if long.contains('_') {
                let kebab = long.replace('_', "-");
                let aliases = arg.get_all_aliases().unwrap_or_default();
                assert!(aliases.contains(&kebab.as_str()), "{cmd}: --{long} lacks --{kebab}");
            }
        }
    }

    #[test]
    fn kebab_case_flags_are_accepted() {
        let a = parse(&["--role-sorter", "random", "--framework-sorter", "drf", "--list-modules"])
            .unwrap();
        assert_eq!(a.engine.role_sorter.as_deref(), Some("random"));
        assert!(a.list_modules);
    }

    #[test]
    fn conformance_takes_a_time_bound_with_its_subject() {
        let a = parse(&["conformance", "--allocator", "x", "--time-bound-ms", "500"]).unwrap();
        let Some(Command::Conformance(c)) = a.command else { panic!("not conformance") };
        assert_eq!((c.allocator.as_deref(), c.time_bound_ms), (Some("x"), 500.0));
        assert!(parse(&["conformance", "--sorter", "drf", "--time_bound_ms", "5"]).is_ok());
    }

    #[test]
    fn conformance_without_a_subject_is_a_usage_error_not_a_panic() {
        let a = parse(&["conformance", "--time-bound-ms", "500"]).unwrap();
        assert_eq!(
            run(&a).unwrap_err(),
            "conformance needs the subject to check: --allocator NAME or --sorter NAME"
        );
    }

    #[test]
    fn conformance_refuses_two_subjects() {
        assert!(parse(&["conformance", "--allocator", "a", "--sorter", "s"]).is_err());
    }

    #[test]
    fn module_and_engine_flags_may_come_before_or_after_a_subcommand() {
        for args in [
            &["--modules", "m.json", "--role_sorter", "drf", "bench", "all"][..],
            &["bench", "all", "--modules", "m.json", "--role_sorter", "drf"],
            &["--modules", "m.json", "serve", "--listen", "127.0.0.1:0", "--scenario", "s.json"],
            &["serve", "--listen", "127.0.0.1:0", "--seed", "3", "--output", "-"],
            &["conformance", "--modules", "m.json", "--sorter", "random"],
            &["--modules", "m.json", "conformance", "--sorter", "random"],
            &["soak", "--agents", "10", "--runs", "5", "--soak-seed", "2"],
            &["import", "alibaba-gpu-v2023", "--nodes", "n", "--pods", "p", "--time-scale", "10"],
        ] {
            assert!(parse(args).is_ok(), "{args:?}: {}", parse(args).unwrap_err());
        }
    }

    #[test]
    fn the_call_budget_and_watchdog_can_be_set_for_every_mode_that_calls_modules() {
        for args in [
            &["conformance", "--sorter", "s", "--module_call_timeout_ms", "500"][..],
            &["--module_call_timeout_ms", "500", "conformance", "--sorter", "s"],
            &["bench", "all", "--module_call_budget_ms", "5"],
            &["serve", "--listen", "127.0.0.1:0", "--module_call_timeout_ms", "500"],
            &["--module_call_budget_ms", "5", "--scenario", "s.json"],
        ] {
            assert!(parse(args).is_ok(), "{args:?}: {}", parse(args).unwrap_err());
        }
        let a = parse(&[
            "--module_call_timeout_ms",
            "500",
            "import",
            "alibaba-gpu-v2023",
            "--nodes",
            "n",
            "--pods",
            "p",
        ])
        .unwrap();
        assert!(run(&a).unwrap_err().starts_with("--module_call_timeout_ms does not apply"));
    }

    #[test]
    fn subcommands_list_only_the_flags_they_use() {
        let cmd = Args::command();
        let flags = |name: &str| -> Vec<String> {
            let sub = cmd.find_subcommand(name).expect(name);
            sub.get_arguments().filter_map(|a| a.get_long().map(str::to_owned)).collect()
        };
        for (sub, absent) in [
            ("import", &["report", "allocator", "scenario", "modules", "seed"][..]),
            ("soak", &["report", "allocator", "scenario", "output"]),
            ("conformance", &["report", "scenario", "output", "role_sorter"]),
            ("bench", &["report", "scenario", "output", "allocation_interval"]),
            ("serve", &["report", "list_modules"]),
        ] {
            for flag in absent {
                assert!(!flags(sub).iter().any(|f| f == flag), "{sub} lists --{flag}");
            }
        }
    }

    #[test]
    fn a_flag_before_a_subcommand_that_does_not_use_it_is_refused() {
        let a = parse(&["--scenario", "x.json", "soak"]).unwrap();
        assert_eq!(
            run(&a).unwrap_err(),
            "--scenario does not apply to 'soak' (see 'allocator-master soak --help')"
        );
    }

    #[test]
    fn serve_help_does_not_call_scenario_run_and_exit() {
        let mut cmd = Args::command();
        let help = cmd.find_subcommand_mut("serve").unwrap().render_help().to_string();
        assert!(!help.contains("and exit"), "{help}");
        assert!(help.contains("--scenario"));
    }

    #[test]
    fn an_empty_registry_says_what_is_built_in() {
        let registry = ModuleRegistry::new();
        assert!(modules_table(&registry).starts_with("no modules loaded"));
    }
}
