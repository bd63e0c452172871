//! `ACCEPT` (SPEC 6.1): the operations of the call, in order, on the offers it names.
//!
//! `RESERVE`, `UNRESERVE`, `CREATE` and `DESTROY` convert part of what is left of an offer (the
//! offer whose role the operation's resources are allocated to, that holds what the operation
//! consumes) and tell the allocator (`update_allocation`); the converted resources stay in the
//! offer for the operations after it, as in Mesos. `LAUNCH` and `LAUNCH_GROUP` place each task
//! on the first offer on its agent that still holds its resources. An operation that cannot be
//! carried out is dropped with a warning, as Mesos drops it; a task that cannot be placed gets
//! `TASK_ERROR`. What is left of each offer goes back with the call's filter.

use std::sync::Arc;

use allocator_api::{Allocation, Operation as ApiOperation, OperationKind, Resources};

use super::{MesosFrameworks, answer};
use allocator_host::master::{Command, Master};
use allocator_mesos::scheduler::{
    self as s, OperationType, TaskInfo, TaskState, TaskStatus, TaskStatusReason, TaskStatusSource,
};
use allocator_mesos::{AgentId, Filters, Resource, from_mesos};

/// The offers of one `ACCEPT` as its operations use them up.
struct Offered {
    /// The offers, their resources converted by the operations so far.
    offers: Vec<Arc<Allocation>>,
    /// What is left of each.
    remaining: Vec<Resources>,
    /// Tasks placed on each: resources and duration, and the task.
    placed: Vec<Vec<(Resources, Option<f64>)>>,
    tasks: Vec<Vec<TaskInfo>>,
}

impl MesosFrameworks {
    pub(super) fn take_offer(&mut self, fw: &str, offer: &str) -> Option<Arc<Allocation>> {
        match self.offers.get(offer) {
            Some((owner, _)) if owner == fw => self.offers.remove(offer).map(|(_, a)| a),
            _ => None,
        }
    }

    /// `ACCEPT`: carries out its operations in order on the offers named; the rest of the
    /// offers goes back with the call's filter. An unknown or stale offer makes every task of
    /// the call `TASK_LOST` (`TASK_DROPPED`) and gives the valid offers back.
    pub(super) fn accept(
        &mut self,
        fw: &str,
        accept: s::Accept,
        master: &mut Master<'_>,
    ) -> Result<(), String> {
        let refuse = Filters::refuse_seconds(accept.filters.as_ref());
        let known = accept
            .offer_ids
            .iter()
            .all(|o| self.offers.get(&o.value).is_some_and(|(owner, _)| owner == fw));
        let offers: Vec<Arc<Allocation>> =
            accept.offer_ids.iter().filter_map(|o| self.take_offer(fw, &o.value)).collect();
        if !known || offers.is_empty() {
            for a in &offers {
                answer(master, a, &[], refuse)?;
            }
            self.invalid_offers(fw, &accept.operations);
            return Ok(());
        }
        let n = offers.len();
        let mut offered = Offered {
            remaining: offers.iter().map(|a| a.resources.clone()).collect(),
            offers,
            placed: vec![Vec::new(); n],
            tasks: vec![Vec::new(); n],
        };
        for op in &accept.operations {
            match op.kind {
                OperationType::Launch | OperationType::LaunchGroup => {
                    for task in launched_tasks(op) {
                        self.launch(fw, task, &mut offered, master);
                    }
                }
                _ => {
                    if let Err(e) = self.convert(fw, op, &mut offered, master)? {
                        log::warn!("framework {fw}: {:?} operation dropped: {e}", op.kind);
                    }
                }
            }
        }
        for i in 0..offered.offers.len() {
            let offer = &offered.offers[i];
            let ids = answer(master, offer, &offered.placed[i], refuse)?;
            let agent = master.agent_name(offer.agent).to_owned();
            let launched = offered.tasks[i].iter().zip(&offered.placed[i]).zip(ids);
            for ((task, _), id) in launched {
                self.launched(fw, task, &agent, id);
            }
        }
        Ok(())
    }

    /// The tasks of an `ACCEPT` naming an unknown or stale offer: `TASK_LOST` (`TASK_DROPPED`
    /// for a `PARTITION_AWARE` framework) with `REASON_INVALID_OFFERS`.
    fn invalid_offers(&mut self, fw: &str, operations: &[s::Operation]) {
        let partition_aware = self.frameworks[fw].partition_aware();
        let state = if partition_aware { TaskState::TaskDropped } else { TaskState::TaskLost };
        for t in operations.iter().flat_map(launched_tasks) {
            let mut st = TaskStatus::new(t.task_id.clone(), state);
            st.reason = Some(TaskStatusReason::ReasonInvalidOffers);
            st.source = Some(TaskStatusSource::SourceMaster);
            st.message = Some("Offer is no longer valid".into());
            st.agent_id = Some(t.agent_id.clone());
            self.push_update(fw, &t.task_id.value, &t.agent_id.value, st, None);
        }
    }

    /// Places one task of a `LAUNCH` or `LAUNCH_GROUP`, or sends its `TASK_ERROR`.
    fn launch(&mut self, fw: &str, task: &TaskInfo, offered: &mut Offered, master: &Master<'_>) {
        match self.place(fw, task, offered, master) {
            Ok((i, res)) => {
                offered.remaining[i].subtract(&res);
                offered.placed[i].push((res, task.duration()));
                offered.tasks[i].push(task.clone());
            }
            Err(message) => {
                let mut st = TaskStatus::new(task.task_id.clone(), TaskState::TaskError);
                st.reason = Some(TaskStatusReason::ReasonTaskInvalid);
                st.source = Some(TaskStatusSource::SourceMaster);
                st.message = Some(message);
                st.agent_id = Some(task.agent_id.clone());
                self.push_update(fw, &task.task_id.value, &task.agent_id.value, st, None);
            }
        }
    }

    /// Which offer a task goes on, with its resources; `Err` is the `TASK_ERROR` message.
    fn place(
        &self,
        fw: &str,
        task: &TaskInfo,
        offered: &Offered,
        master: &Master<'_>,
    ) -> Result<(usize, Resources), String> {
        let f = &self.frameworks[fw];
        if f.tasks.get(&task.task_id.value).is_some_and(|t| !t.state.is_terminal()) {
            return Err(format!("Task has duplicate ID: {}", task.task_id.value));
        }
        let mut resources =
            from_mesos(&task.resources).map_err(|e| format!("Task uses invalid resources: {e}"))?;
        if let Some(executor) = &task.executor {
            let extra = from_mesos(&executor.resources)
                .map_err(|e| format!("Executor uses invalid resources: {e}"))?;
            resources += &extra;
        }
        if resources.is_empty() {
            return Err("Task uses no resources".into());
        }
        let mut on_agent = false;
        for (i, offer) in offered.offers.iter().enumerate() {
            if master.agent_name(offer.agent) != task.agent_id.value {
                continue;
            }
            on_agent = true;
            if offered.remaining[i].contains(&resources) {
                return Ok((i, resources));
            }
        }
        if !on_agent {
            return Err(format!(
                "Agent {} is not the agent of any offer accepted",
                task.agent_id.value
            ));
        }
        Err(format!(
            "Task uses more resources {resources} than available {}",
            offered.remaining.iter().fold(Resources::default(), |acc, r| acc + r)
        ))
    }

    /// `RESERVE`, `UNRESERVE`, `CREATE` or `DESTROY` on what is left of the offer it applies
    /// to. `Ok(Err(reason))`: the operation cannot be carried out and changes nothing.
    fn convert(
        &mut self,
        fw: &str,
        op: &s::Operation,
        offered: &mut Offered,
        master: &mut Master<'_>,
    ) -> Result<Result<(), String>, String> {
        let (kind, mesos_resources) = match op.kind {
            OperationType::Reserve => {
                (OperationKind::RESERVE, op.reserve.as_ref().map(|r| &r.resources))
            }
            OperationType::Unreserve => {
                (OperationKind::UNRESERVE, op.unreserve.as_ref().map(|r| &r.resources))
            }
            OperationType::Create => {
                (OperationKind::CREATE, op.create.as_ref().map(|v| &v.volumes))
            }
            OperationType::Destroy => {
                (OperationKind::DESTROY, op.destroy.as_ref().map(|v| &v.volumes))
            }
            other => return Ok(Err(format!("{other:?} is not carried out"))),
        };
        let mesos_resources = mesos_resources.map(Vec::as_slice).unwrap_or_default();
        let resources = match from_mesos(mesos_resources) {
            Ok(r) if !r.is_empty() => r,
            Ok(_) => return Ok(Err("the operation names no resources".into())),
            Err(e) => return Ok(Err(format!("invalid resources: {e}"))),
        };
        let operation = ApiOperation { kind, resources };
        let (consumed, converted) = match operation.conversion() {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        let role = allocation_role(mesos_resources);
        let Some(i) = (0..offered.offers.len()).find(|&i| {
            role.as_deref().is_none_or(|r| offered.offers[i].role.as_str() == r)
                && offered.remaining[i].contains(&consumed)
        }) else {
            return Ok(Err(format!("what is left of the offers does not hold {consumed}")));
        };
        let offer_role = offered.offers[i].role.to_string();
        if kind == OperationKind::RESERVE
            && let Some(r) = converted.iter().find(|r| r.reservation.as_str() != offer_role)
        {
            return Ok(Err(format!(
                "cannot reserve {r} for another role than the offer's allocation role '{offer_role}'"
            )));
        }
        master.apply(&Command::UpdateAllocation {
            framework: fw.to_owned(),
            agent: master.agent_name(offered.offers[i].agent).to_owned(),
            role: offer_role,
            operations: vec![operation],
        })?;
        let apply = |r: &Resources| -> Resources { r.clone() - &consumed + &converted };
        offered.remaining[i] = apply(&offered.remaining[i]);
        Arc::make_mut(&mut offered.offers[i]).resources = apply(&offered.offers[i].resources);
        Ok(Ok(()))
    }

    /// Records a launched task and sends `TASK_STARTING`, then `TASK_RUNNING`.
    fn launched(&mut self, fw: &str, task: &TaskInfo, agent: &str, master_id: u64) {
        let f = self.frameworks.get_mut(fw).expect("known");
        f.tasks.insert(
            task.task_id.value.clone(),
            super::TaskRecord {
                master: Some(master_id),
                agent: agent.to_owned(),
                state: TaskState::TaskStaging,
                pending: Default::default(),
            },
        );
        for state in [TaskState::TaskStarting, TaskState::TaskRunning] {
            let mut st = TaskStatus::new(task.task_id.clone(), state);
            st.source = Some(TaskStatusSource::SourceExecutor);
            st.agent_id = Some(AgentId::new(agent));
            self.push_update(fw, &task.task_id.value, agent, st, None);
        }
    }
}

/// The tasks an operation launches (`LAUNCH`'s or `LAUNCH_GROUP`'s), none for others.
fn launched_tasks(op: &s::Operation) -> impl Iterator<Item = &TaskInfo> {
    let launch = op.launch.iter().flat_map(|l| l.task_infos.iter());
    let group = op.launch_group.iter().flat_map(|g| g.task_group.tasks.iter());
    launch.chain(group)
}

/// The role the resources of an operation are allocated to (`allocation_info.role`), when
/// they say.
fn allocation_role(resources: &[Resource]) -> Option<String> {
    resources.iter().find_map(|r| r.allocation_info.as_ref().and_then(|a| a.role.clone()))
}
