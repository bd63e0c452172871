//! Tasks and the clock: a framework answers an offer by launching tasks on part of it and
//! declining the rest; a task with a duration finishes when the clock reaches its end, and its
//! resources go back to the allocator. [`Master::advance`] moves the clock through task
//! finishes and periodic allocation runs.

use allocator_api::{AgentId, Allocation, FrameworkId, Resources};

use super::{EPSILON, Event, Master, TaskEnd, time_key};

/// A running task.
#[derive(Debug, Clone)]
pub struct Task {
    /// Where it runs.
    pub agent: AgentId,
    /// The role its resources are allocated to.
    pub role: String,
    /// What it holds.
    pub resources: Resources,
    /// Whether its launch was journaled (a client's answer, not a simulated framework's): its
    /// end is journaled too.
    pub journaled: bool,
}

/// At most this many periodic runs in one [`Master::advance`].
const MAX_RUNS: f64 = 10_000_000.0;

/// How many tasks of one answer are launched between looks at the interrupt flag.
const INTERRUPT_CHECK: usize = 4096;

impl Master<'_> {
    /// A framework's answer to `offer`: launches `tasks` (resources and an optional duration,
    /// in seconds) on parts of it and declines the rest with a refuse filter of
    /// `refuse_seconds`. Tasks must fit in the offer, one after another; nothing changes
    /// when one does not. Returns the launched tasks' ids, in order. `journaled`: whether the
    /// answer was journaled (the tasks' ends will be).
    ///
    /// When the master is interrupted (SIGINT, SIGTERM) in the middle of a huge answer, it
    /// launches the tasks so far and declines the rest, so that it stops within a bounded time
    /// however many tasks one offer holds; the ids returned say how many were launched.
    pub(super) fn answer_offer(
        &mut self,
        offer: &Allocation,
        tasks: &[(Resources, Option<f64>)],
        refuse_seconds: f64,
        journaled: bool,
    ) -> Result<Vec<u64>, String> {
        let mut remaining = offer.resources.clone();
        for (resources, _) in tasks {
            if !remaining.contains(resources) {
                return Err(format!(
                    "a task's resources {resources} do not fit in what is left of its offer ({remaining})"
                ));
            }
            remaining.subtract(resources);
        }
        let (fw, agent, role) = (offer.framework, offer.agent, offer.role.to_string());
        let mut ids = Vec::with_capacity(tasks.len());
        for (i, (resources, duration)) in tasks.iter().enumerate() {
            if i % INTERRUPT_CHECK == INTERRUPT_CHECK - 1 && self.interrupted() {
                // What is not launched is declined with the rest.
                for (r, _) in &tasks[i..] {
                    remaining.add(r);
                }
                break;
            }
            let task = self.next_task;
            ids.push(task);
            self.next_task += 1;
            self.tasks.insert(
                (fw, task),
                Task { agent, role: role.clone(), resources: resources.clone(), journaled },
            );
            if let Some(d) = duration {
                self.finishes.insert((time_key(self.now + d), task), fw);
            }
            self.outbox.push(Event::TaskLaunched {
                task,
                framework: fw,
                agent,
                role: role.clone(),
                resources: resources.clone(),
            });
        }
        for (resources, _) in &tasks[..ids.len()] {
            self.call("transition_offered_to_allocated", |a| {
                a.transition_offered_to_allocated(agent, resources)
            })?;
        }
        if !remaining.is_empty() {
            self.ledger.remove(fw, agent, &role, &remaining);
            self.call("recover_resources (declined)", |a| {
                a.recover_resources(fw, agent, &role, &remaining, Some(refuse_seconds))
            })?;
        }
        Ok(ids)
    }

    /// A framework kills one of its running tasks: its resources go back to the allocator.
    /// `Ok(false)` when no such task runs.
    pub(super) fn kill_task(&mut self, fw: FrameworkId, task: u64) -> Result<bool, String> {
        let Some(t) = self.tasks.get(&(fw, task)) else { return Ok(false) };
        let (agent, role, resources) = (t.agent, t.role.clone(), t.resources.clone());
        self.call("recover_resources (task killed)", |a| {
            a.recover_resources(fw, agent, &role, &resources, None)
        })?;
        self.ledger.remove(fw, agent, &role, &resources);
        self.end_task((fw, task), TaskEnd::Killed);
        Ok(true)
    }

    /// A running task of a framework.
    pub fn task(&self, fw: FrameworkId, task: u64) -> Option<&Task> {
        self.tasks.get(&(fw, task))
    }

    /// Forgets a task and says why it ended (its resources are dealt with by the caller).
    pub(super) fn end_task(&mut self, key: (FrameworkId, u64), end: TaskEnd) -> Option<Task> {
        let task = self.tasks.remove(&key)?;
        self.outbox.push(Event::TaskEnded { task: key.1, framework: key.0, end });
        Some(task)
    }

    /// A task ran for its duration: its resources go back to the allocator.
    fn finish_task(&mut self, fw: FrameworkId, task: u64) -> Result<(), String> {
        let Some(Task { agent, role, resources, journaled }) =
            self.end_task((fw, task), TaskEnd::Finished)
        else {
            return Ok(());
        };
        if !self.agents[agent.index()].present {
            return Ok(());
        }
        self.call("recover_resources (task finished)", |a| {
            a.recover_resources(fw, agent, &role, &resources, None)
        })?;
        self.ledger.remove(fw, agent, &role, &resources);
        if journaled && self.journal.is_on() {
            // The master finishes a task before the periodic run of the same instant.
            let recover = super::Command::RecoverResources {
                framework: self.framework_name(fw).to_owned(),
                agent: self.agent_name(agent).to_owned(),
                resources: Some(resources),
                role: Some(role),
                refuse_seconds: None,
            };
            self.journal.applied_before_run(self.now, recover);
        }
        Ok(())
    }

    /// The virtual time of the next thing the clock brings: a task's end or the next periodic
    /// allocation run, whichever is first. A master on the wall clock wakes then.
    pub fn next_due(&self) -> f64 {
        let finish = self.finishes.keys().next().map(|(t, _)| *t as f64 / 1e6);
        finish.map_or(self.next_periodic, |f| f.min(self.next_periodic))
    }

    /// Running tasks of a framework, in launch order.
    pub fn tasks_of(&self, fw: FrameworkId) -> impl Iterator<Item = (u64, &Task)> + '_ {
        self.tasks.range((fw, 0)..=(fw, u64::MAX)).map(|((_, id), t)| (*id, t))
    }

    /// Running tasks whose resources are allocated to `role`.
    pub fn tasks_in_role(&self, role: &str) -> usize {
        self.tasks.values().filter(|t| t.role == role).count()
    }

    /// Running tasks of a framework, by name (`None` for an unknown framework).
    pub fn running_tasks(&self, framework: &str) -> Option<usize> {
        let id = self.framework_ids.get(framework)?;
        Some(self.tasks_of(*id).count())
    }

    /// Moves the clock to `t` (emitting [`Event::Clock`]) and tells the allocator.
    fn set_clock(&mut self, t: f64) -> Result<(), String> {
        self.outbox.push(Event::Clock { from: self.now, to: t });
        self.now = t;
        self.call("set_time", |a| a.set_time(t))
    }

    /// Advances the virtual clock by `seconds`, finishing tasks and making the periodic runs
    /// that fall due. `deliver` is called after each step with the events so far waiting in
    /// the outbox, so that clients answer offers before the clock moves on. Stops early (the
    /// clock at the last step taken) when interrupted.
    pub fn advance(
        &mut self,
        seconds: f64,
        deliver: &mut dyn FnMut(&mut Self) -> Result<(), String>,
    ) -> Result<(), String> {
        let target = self.now + seconds;
        let runs = (target / self.interval).floor() - (self.now / self.interval).floor();
        if !target.is_finite() || runs > MAX_RUNS {
            return Err(format!(
                "advancing {seconds} s would make {runs:.0} periodic allocation runs at an interval of {} s (at most {MAX_RUNS} per event)",
                self.interval
            ));
        }
        loop {
            let next_finish = self.finishes.keys().next().map(|(t, _)| *t as f64 / 1e6);
            let next = match next_finish {
                Some(f) if f < self.next_periodic - EPSILON => f,
                _ => self.next_periodic,
            };
            if next > target + EPSILON || self.interrupted() {
                break;
            }
            self.set_clock(next)?;
            deliver(self)?;
            let due = time_key(self.now);
            while let Some((&key, &fw)) = self.finishes.iter().next() {
                if key.0 > due {
                    break;
                }
                self.finishes.remove(&key);
                self.finish_task(fw, key.1)?;
            }
            if (self.now - self.next_periodic).abs() < EPSILON {
                let agents = self.all_agents();
                self.allocate(&agents, true)?;
                self.next_periodic += self.interval;
            }
            deliver(self)?;
        }
        if self.interrupted() {
            return Ok(());
        }
        self.set_clock(target)?;
        deliver(self)
    }
}
