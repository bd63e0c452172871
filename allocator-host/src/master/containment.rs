//! Fault containment around the allocator: every call goes through `Master::call`, which
//! names the handles in a module's messages, and on a module fault applies
//! `--on_module_failure`: falls back to the built-in (rebuilt from the host's records, so no
//! allocation is lost or duplicated) and repeats the call there, restarts the module (a fresh
//! instance — in a fresh worker when its worker died — given the same records) and repeats the
//! call on it, or stops the master.
//!
//! The call in flight when a module fails: the host records a call's effect only after the
//! allocator accepted it, so neither the host's records nor a rebuilt allocator hold it; it is
//! repeated once on the replacement (the built-in, or the restarted module), which keeps the two
//! equal. Nothing that failed earlier is replayed: a rebuild replays only the host's records.
//! A repeat that fails again is the next fault (the next restart, or the fallback past the
//! restart limit).

use super::fallback::{Records, builtin_drf, rebuild_builtin, replay};
use crate::hierarchical::HierarchicalAllocator;
use crate::registry::{BUILTIN_ALLOCATOR, BUILTIN_SORTER};
use allocator_api::{Allocator, ModuleError};

use super::Master;

/// The allocator being driven.
// Public only for the workspace's own crates and tests; not promised.
#[doc(hidden)]
pub enum Engine {
    /// The built-in `hierarchical` allocator (supports `set_sorters`).
    Builtin(Box<HierarchicalAllocator>),
    /// An allocator module.
    Module(Box<dyn Allocator>),
    /// The built-in `hierarchical` allocator running in a worker process beside its isolated
    /// sorter modules (`ModuleRegistry::create_builtin_in_worker`): driven like an isolated
    /// allocator module, but its faults are the sorter modules' (a fallback rebuilds the
    /// built-in with `drf` sorters here; a restart creates it again in a fresh worker).
    /// `set_sorters` is refused for it, as for modules.
    Hosted(Box<dyn Allocator>),
}

impl Engine {
    pub(super) fn get(&mut self) -> &mut dyn Allocator {
        match self {
            Engine::Builtin(a) => a.as_mut(),
            Engine::Module(a) | Engine::Hosted(a) => a.as_mut(),
        }
    }

    /// The allocator, for read-only calls (`explain`).
    pub(super) fn allocator(&self) -> &dyn Allocator {
        match self {
            Engine::Builtin(a) => a.as_ref(),
            Engine::Module(a) | Engine::Hosted(a) => a.as_ref(),
        }
    }
}

/// What the host does when a module call fails (`--on_module_failure`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Stop using the module and continue with the built-in (`hierarchical` for an allocator,
    /// `drf` for a sorter), rebuilt from the host's records. The default.
    #[default]
    Fallback,
    /// Stop with the reason (exit code 2).
    Stop,
    /// Re-create the failed module — the allocator module, or the sorter modules of the
    /// built-in allocator — from the same library with the same parameters (an isolated
    /// module in a fresh worker when its worker died), give it the host's records as a
    /// fallback would, and repeat the call on it; at most `limit` times in a run, then as
    /// [`Fallback`](Self::Fallback).
    Restart {
        /// The most restarts in a run (`--module_restart_limit`).
        limit: u32,
    },
}

/// The default of `--module_restart_limit`.
pub const DEFAULT_RESTART_LIMIT: u32 = 3;

impl Master<'_> {
    /// Calls the allocator (`what` names the call in messages); on a module fault, applies the
    /// failure policy. After a stop every call fails with the reason.
    pub(super) fn call(
        &mut self,
        what: &str,
        mut f: impl FnMut(&mut dyn Allocator) -> allocator_api::Result<()>,
    ) -> Result<(), String> {
        if let Some(reason) = &self.stopped {
            return Err(reason.clone());
        }
        let result = self.call_contained(what, &mut f);
        self.allocator_failed |= result.is_err();
        result
    }

    /// [`call`](Self::call) once the master is known to be running.
    fn call_contained(
        &mut self,
        what: &str,
        f: &mut impl FnMut(&mut dyn Allocator) -> allocator_api::Result<()>,
    ) -> Result<(), String> {
        loop {
            // Module calls run under the registry's budget and watchdog
            // (crate::watchdog).
            let result = f(self.engine.get()).map_err(|mut e| {
                e.message = self.name_handles(&e.message).into();
                e
            });
            let e = match result {
                Ok(()) => return Ok(()),
                Err(e) if !e.is_fault() => {
                    self.allocator_unsupported |= e.kind == allocator_api::ErrorKind::UNSUPPORTED;
                    return check_call(&self.setup.allocator, what, Err(e));
                }
                Err(e) => e,
            };
            match self.setup.on_module_failure {
                FailurePolicy::Stop => {
                    let message = check_call(&self.setup.allocator, what, Err(e));
                    self.stopped = message.clone().err();
                    return message;
                }
                FailurePolicy::Restart { limit }
                    if self.restarts < u64::from(limit) && self.runs_a_module() =>
                {
                    match self.restart(what, &e, limit) {
                        // The call in flight is repeated on the restarted module.
                        Ok(()) => continue,
                        Err(why) => log::error!("the restart failed: {why}"),
                    }
                }
                FailurePolicy::Restart { .. } | FailurePolicy::Fallback => {}
            }
            self.fall_back(what, &e)?;
            let r = f(self.engine.get());
            return check_call(&self.setup.allocator, what, r);
        }
    }

    /// `true` when the engine is a module or runs sorter modules.
    fn runs_a_module(&self) -> bool {
        matches!(self.engine, Engine::Module(_) | Engine::Hosted(_))
            || !self.sorter_modules().is_empty()
    }

    /// The loaded sorter modules the built-in allocator runs (each named once).
    fn sorter_modules(&self) -> Vec<String> {
        let mut names: Vec<String> = [&self.setup.role_sorter, &self.setup.framework_sorter]
            .into_iter()
            .filter(|n| self.registry.module(n).is_some())
            .cloned()
            .collect();
        names.dedup();
        names
    }

    /// `sorter module 'x'` or `sorter modules 'x' and 'y'`: the sorter modules the built-in
    /// allocator runs, for messages.
    fn sorter_module_names(&self) -> String {
        match self.sorter_modules().as_slice() {
            [one] => format!("sorter module '{one}'"),
            many => format!("sorter modules '{}'", many.join("' and '")),
        }
    }

    /// Restarts the failed module (see [`FailurePolicy::Restart`]) and says so in one error
    /// record: the module, the cause, the count. The engine is replaced only when the
    /// fresh module holds the host's records.
    fn restart(&mut self, what: &str, e: &ModuleError, limit: u32) -> Result<(), String> {
        self.restarts += 1;
        let count = format!("restart {} of {limit}", self.restarts);
        let registry = self.registry;
        match &mut self.engine {
            Engine::Module(_) => {
                let name = self.setup.allocator.clone();
                log::error!(
                    "allocator module '{name}' failed in {what} ({e}); restarting it ({count})"
                );
                let mut fresh = registry
                    .create_allocator_module_with(
                        &name,
                        &self.setup.options,
                        &self.setup.allocator_parameters,
                    )
                    .map_err(|e| e.to_string())?;
                replay(fresh.as_mut(), &self.records()).map_err(|e| {
                    format!("allocator module '{name}' refused the host's records: {e}")
                })?;
                self.engine = Engine::Module(fresh);
            }
            Engine::Hosted(_) => {
                log::error!(
                    "{} failed in {what} ({e}); restarting it ({count})",
                    self.sorter_module_names()
                );
                // A fresh built-in allocator in a worker (a fresh worker when the last one
                // died), given the host's records as a restarted allocator module is.
                let mut fresh = registry
                    .create_builtin_in_worker(&self.setup.options)
                    .map_err(|e| e.to_string())?
                    .ok_or("its sorter modules are no longer isolated")?;
                replay(fresh.as_mut(), &self.records()).map_err(|e| {
                    format!("the built-in allocator in its worker refused the host's records: {e}")
                })?;
                self.engine = Engine::Hosted(fresh);
            }
            Engine::Builtin(_) => {
                log::error!(
                    "{} failed in {what} ({e}); restarting it ({count})",
                    self.sorter_module_names()
                );
                let role = registry
                    .sorter_factory(&self.setup.role_sorter, "--role_sorter")
                    .map_err(|e| e.to_string())?;
                let framework = registry
                    .sorter_factory(&self.setup.framework_sorter, "--framework_sorter")
                    .map_err(|e| e.to_string())?;
                // The built-in allocator's own records are the host's for its sorters (they
                // hold what it allocated); its sorters are rebuilt from them.
                let Engine::Builtin(alloc) = &mut self.engine else { unreachable!("matched") };
                alloc.replace_sorters(role, framework)?;
            }
        }
        Ok(())
    }

    /// Replaces a failed module by the built-in: an allocator module by `hierarchical` with
    /// `drf` sorters, a sorter module inside the built-in allocator by `drf`.
    fn fall_back(&mut self, what: &str, e: &ModuleError) -> Result<(), String> {
        let sorter_modules = !self.sorter_modules().is_empty();
        match &mut self.engine {
            Engine::Module(_) => {
                log::error!(
                    "allocator module '{}' failed in {what} ({e}); continuing with the built-in hierarchical allocator",
                    self.setup.allocator
                );
                self.rebuild_builtin()?;
            }
            Engine::Hosted(_) => {
                log::error!(
                    "a sorter module failed in {what} ({e}); continuing with the built-in drf sorters"
                );
                // The allocator's own records were in the worker: the built-in is rebuilt
                // here, with drf sorters, from the host's.
                self.rebuild_builtin()?;
            }
            Engine::Builtin(alloc) if sorter_modules => {
                log::error!(
                    "a sorter module failed in {what} ({e}); continuing with the built-in drf sorters"
                );
                alloc.replace_sorters(builtin_drf(), builtin_drf())?;
                self.setup.role_sorter = BUILTIN_SORTER.into();
                self.setup.framework_sorter = BUILTIN_SORTER.into();
            }
            Engine::Builtin(_) => {
                return Err(format!("the built-in allocator failed in {what}: {e}"));
            }
        }
        self.fallbacks += 1;
        Ok(())
    }

    /// A fresh built-in allocator holding the host's record of agents, frameworks, weights,
    /// quotas, whitelist and allocations ([`super::fallback::rebuild_builtin`]).
    fn rebuild_builtin(&mut self) -> Result<(), String> {
        let builtin = rebuild_builtin(&self.records())?;
        self.engine = Engine::Builtin(Box::new(builtin));
        self.setup.allocator = BUILTIN_ALLOCATOR.into();
        self.setup.role_sorter = BUILTIN_SORTER.into();
        self.setup.framework_sorter = BUILTIN_SORTER.into();
        Ok(())
    }

    /// The host's records of the cluster, for a rebuilt or restarted allocator.
    fn records(&self) -> Records<'_> {
        Records {
            now: self.now,
            options: &self.setup.options,
            weights: &self.weights,
            quotas: &self.quotas,
            whitelist: self.whitelist.as_deref(),
            frameworks: self.frameworks.iter().flatten().filter(|f| f.present).collect(),
            agents: (self.agents.iter().filter(|a| a.present))
                .map(|a| (a, self.ledger.on_agent(a.info.id)))
                .collect(),
            paused: self.paused,
        }
    }

    /// A module's message with the names the host knows added to the handles it names
    /// (`unknown framework#1` → `unknown framework 'f1' (#1)`).
    fn name_handles(&self, message: &str) -> String {
        crate::names::name_handles(message, |kind, n| match kind {
            "framework" => self.framework_names.get(n as usize).cloned(),
            _ => self.agent_ids.iter().find(|(_, id)| id.0 == n).map(|(name, _)| name.clone()),
        })
    }
}

/// The user's line for a failed call: a fault names the allocator, a refusal the call.
pub(super) fn check_call(
    allocator: &str,
    what: &str,
    r: allocator_api::Result<()>,
) -> Result<(), String> {
    r.map_err(|e: ModuleError| {
        // Allocators often start their messages with the call's name; say it once.
        let call = what.split(' ').next().unwrap_or(what);
        let text = e.to_string();
        let reason = text.strip_prefix(call).and_then(|t| t.strip_prefix(": ")).unwrap_or(&text);
        if e.is_fault() {
            format!("allocator '{allocator}' failed in {what}: {reason}")
        } else {
            format!("the allocator refused {what}: {reason}")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::check_call;
    use allocator_api::ModuleError;

    #[test]
    fn a_refusal_names_the_call_once() {
        let refused = Err(ModuleError::rejected("update_quota: quota on nested role 'a/x'"));
        assert_eq!(
            check_call("hierarchical", "update_quota", refused).unwrap_err(),
            "the allocator refused update_quota: quota on nested role 'a/x'"
        );
    }

    #[test]
    fn a_refusal_without_the_call_name_is_kept_whole() {
        let refused = Err(ModuleError::rejected("no such agent"));
        assert_eq!(
            check_call("hierarchical", "recover_resources (declined)", refused).unwrap_err(),
            "the allocator refused recover_resources (declined): no such agent"
        );
    }
}
