//! From flags to what a run is given: the modules loaded, the master's set-up, the list of
//! modules.

use super::*;

use allocator_api::{AllocatorOptions, Quantities};

use allocator_host::master::DEFAULT_RESTART_LIMIT;
use allocator_host::master::{FailurePolicy, Setup};
use allocator_host::registry::{BUILTIN_ALLOCATOR, BUILTIN_SORTER, ModuleRegistry};
use allocator_sim::allocator_scenario::ScenarioConfig;

/// Creates the registry and loads the manifest; every module call it makes possible
/// (factories included) runs under the call budget and watchdog of `limits`.
pub(crate) fn load_modules(
    flags: &ModuleFlags,
    limits: &CallLimitFlags,
) -> Result<ModuleRegistry, String> {
    let mut registry = ModuleRegistry::new();
    let (budget, timeout) = limits.resolved();
    registry.watchdog().set_limits(budget, timeout);
    registry.set_isolation(flags.isolation()?);
    registry
        .load_flags(flags.modules.as_deref(), flags.modules_dir.as_deref())
        .map_err(|e| format!("error loading modules: {e}"))?;
    Ok(registry)
}

pub(crate) fn excluded_flag(flags: &AllocatorFlags) -> Option<Vec<String>> {
    flags
        .fair_sharing_excluded_resource_names
        .as_ref()
        .map(|s| s.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect())
}

/// Parses `--min_allocatable_resources` (`cpus:0.01|mem:32`).
pub fn parse_min_allocatable(text: &str) -> Result<Vec<Quantities>, String> {
    text.split('|')
        .filter(|s| !s.trim().is_empty())
        .map(|s| Quantities::parse(s).map_err(|e| format!("--min_allocatable_resources: {e}")))
        .collect()
}

/// The call budget when no flag sets it, milliseconds.
pub const DEFAULT_CALL_BUDGET_MS: f64 = 1000.0;
/// The watchdog timeout when no flag sets it, milliseconds.
pub const DEFAULT_CALL_TIMEOUT_MS: f64 = 30_000.0;

/// Merges flags (which win) over the scenario's config (which wins over the defaults).
pub fn setup(
    engine: &EngineFlags,
    flags: &AllocatorFlags,
    config: &ScenarioConfig,
) -> Result<Setup, String> {
    let mut options = AllocatorOptions::default();
    if let Some(i) = flags.allocation_interval.or(config.allocation_interval) {
        if !(i.is_finite() && i > 0.0) {
            return Err(format!(
                "--allocation_interval must be a positive number of seconds, got {i}"
            ));
        }
        options.allocation_interval = i;
    }
    if let Some(text) = &flags.min_allocatable_resources {
        options.min_allocatable_resources = parse_min_allocatable(text)?.into();
    } else if let Some(m) = &config.min_allocatable_resources {
        options.min_allocatable_resources = m.clone().into();
    }
    if let Some(ex) =
        excluded_flag(flags).or_else(|| config.fair_sharing_excluded_resource_names.clone())
    {
        options.fairness_excluded_resource_names = ex.iter().map(|s| s.as_str().into()).collect();
    }
    if let Some(g) = flags.filter_gpu_resources.or(config.filter_gpu_resources) {
        options.filter_gpu_resources = g;
    }
    options.seed = flags.seed.or(config.seed).unwrap_or(0);
    let pick = |flag: &Option<String>, cfg: &Option<String>, default: &str| {
        flag.clone().or_else(|| cfg.clone()).unwrap_or_else(|| default.to_owned())
    };
    let role_sorter = pick(&engine.role_sorter, &config.role_sorter, BUILTIN_SORTER);
    let framework_sorter = pick(&engine.framework_sorter, &config.framework_sorter, BUILTIN_SORTER);
    options.role_sorter = role_sorter.as_str().into();
    options.framework_sorter = framework_sorter.as_str().into();
    let on_module_failure = match flags.on_module_failure.as_deref() {
        Some("stop") => FailurePolicy::Stop,
        Some("restart") => FailurePolicy::Restart {
            limit: flags.module_restart_limit.unwrap_or(DEFAULT_RESTART_LIMIT),
        },
        _ if flags.module_restart_limit.is_some() => {
            return Err(
                "--module_restart_limit applies only with --on_module_failure restart".into()
            );
        }
        _ => FailurePolicy::Fallback,
    };
    let (call_budget_ms, call_timeout_ms) = flags.limits.resolved();
    Ok(Setup {
        call_budget_ms,
        call_timeout_ms,
        on_module_failure,
        allocator: pick(&engine.allocator, &config.allocator, BUILTIN_ALLOCATOR),
        role_sorter,
        framework_sorter,
        options,
        allocator_parameters: Vec::new(),
    })
}

/// The `--list_modules` table, with columns as wide as their widest entry.
pub fn modules_table(registry: &ModuleRegistry) -> String {
    let modules: Vec<_> = registry.modules().collect();
    if modules.is_empty() {
        return "no modules loaded (built in: allocator 'hierarchical', sorter 'drf')\n".into();
    }
    let header = ["NAME", "KIND", "API", "AUTHOR", "LIBRARY", "DESCRIPTION"];
    let rows: Vec<[String; 6]> = modules
        .iter()
        .map(|m| {
            [
                m.name.to_string(),
                m.kind.to_string(),
                m.api_version.to_string(),
                m.author.to_string(),
                m.library.display().to_string(),
                m.description.to_string(),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<w$}  "));
            }
        }
        text.trim_end().to_owned() + "\n"
    };
    let mut table = line(header.to_vec());
    for row in &rows {
        table.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    table
}

pub(crate) fn print_modules(registry: &ModuleRegistry) {
    print!("{}", modules_table(registry));
}
