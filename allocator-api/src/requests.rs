//! Demand stated ahead of offers: [`Request`], what [`Allocator::request`] carries (ABI 3).
//!
//! A framework tells the allocator what it means to launch: `count` tasks of `resources`
//! each, under one of its roles, on agents whose attributes meet `constraints`. A request
//! whose `min_count` equals its `count` is **all or nothing** (a gang); requests that share a
//! [`GroupId`] are one gang together. The [`Allocator::request`] documentation says who does
//! what with them (which checks are the host's, which the module's, what withdraws a request).
//!
//! Mesos's allocator had `requestResources(frameworkId, vector<Request>)` with a `Request` of
//! an agent id and resources; ABI 1 and ABI 2 carried one [`Resources`] per task
//! ([`Allocator::request_resources`]). [`Request::flatten`] is how an ABI 3 request reaches a
//! module built for ABI 1 or 2.
//!
//! [`Allocator::request`]: crate::Allocator::request
//! [`Allocator::request_resources`]: crate::Allocator::request_resources

use std::fmt;

use abi_stable::StableAbi;
use abi_stable::std_types::{ROption, RString, RVec};

use crate::allocator::AgentInfo;
use crate::resources::Resources;

/// A group of requests that are placed together, all or nothing (a gang of several shapes,
/// such as one driver and four workers). The framework chooses the number; it means something
/// only within that framework's requests.
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct GroupId(pub u64);

impl fmt::Display for GroupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "group#{}", self.0)
    }
}

/// How a [`Constraint`] compares an agent attribute (Mesos's offer-constraint predicates and
/// Kubernetes's node-selector operators).
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct ConstraintOp(pub u8);

impl ConstraintOp {
    /// The agent has the attribute (any value).
    pub const EXISTS: ConstraintOp = ConstraintOp(0);
    /// The agent does not have the attribute.
    pub const NOT_EXISTS: ConstraintOp = ConstraintOp(1);
    /// The agent has the attribute with one of `values`.
    pub const IN: ConstraintOp = ConstraintOp(2);
    /// The agent does not have the attribute with any of `values` (an agent without the
    /// attribute passes, as in Kubernetes's `NotIn`).
    pub const NOT_IN: ConstraintOp = ConstraintOp(3);

    /// `exists`, `not_exists`, `in`, `not_in` (or `unknown`).
    pub fn name(self) -> &'static str {
        match self {
            ConstraintOp::EXISTS => "exists",
            ConstraintOp::NOT_EXISTS => "not_exists",
            ConstraintOp::IN => "in",
            ConstraintOp::NOT_IN => "not_in",
            _ => "unknown",
        }
    }

    /// The operator named `name` (the names [`name`](Self::name) gives).
    pub fn from_name(name: &str) -> Option<ConstraintOp> {
        [ConstraintOp::EXISTS, ConstraintOp::NOT_EXISTS, ConstraintOp::IN, ConstraintOp::NOT_IN]
            .into_iter()
            .find(|op| op.name() == name)
    }
}

/// One condition on an agent's attributes. `hostname` is the agent's hostname and `agent_id`
/// its id when the agent has no attribute of that name (pseudo-attributes, as Mesos's offer
/// constraints have `hostname`).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct Constraint {
    /// The attribute's name.
    pub attribute: RString,
    /// How it is compared.
    pub op: ConstraintOp,
    /// The values [`ConstraintOp::IN`] and [`ConstraintOp::NOT_IN`] compare with (ignored by
    /// the other two).
    pub values: RVec<RString>,
}

impl Constraint {
    /// A constraint that the attribute has one of `values`.
    pub fn is_in<S: AsRef<str>>(attribute: &str, values: &[S]) -> Constraint {
        Constraint {
            attribute: attribute.into(),
            op: ConstraintOp::IN,
            values: values.iter().map(|v| v.as_ref().into()).collect(),
        }
    }

    /// Whether `agent` meets the constraint. An unknown operator is never met.
    pub fn holds(&self, agent: &AgentInfo) -> bool {
        let name = self.attribute.as_str();
        let value = agent
            .attributes
            .iter()
            .find(|a| a.name.as_str() == name)
            .map(|a| a.value.as_str())
            .or_else(|| match name {
                "hostname" => Some(agent.hostname.as_str()),
                "agent_id" => Some(agent.name.as_str()),
                _ => None,
            });
        let listed = || value.is_some_and(|v| self.values.iter().any(|x| x.as_str() == v));
        match self.op {
            ConstraintOp::EXISTS => value.is_some(),
            ConstraintOp::NOT_EXISTS => value.is_none(),
            ConstraintOp::IN => listed(),
            ConstraintOp::NOT_IN => !listed(),
            _ => false,
        }
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.attribute, self.op.name())?;
        if matches!(self.op, ConstraintOp::IN | ConstraintOp::NOT_IN) {
            let values: Vec<&str> = self.values.iter().map(RString::as_str).collect();
            write!(f, " [{}]", values.join(","))?;
        }
        Ok(())
    }
}

/// What a framework means to launch: `count` tasks of `resources` each, under `role`, on
/// agents that meet every one of `constraints`.
///
/// * `min_count`: the fewest tasks worth placing at once. `min_count == count` (and
///   `count > 1`) makes the request **all or nothing**: a gang, offered whole in one allocation
///   run or not at all. `0` and `1` mean each task on its own.
/// * `group`: requests with the same group are one gang together: in one run each gets at
///   least its `min_count`, or none of them gets anything.
///
/// See [`Allocator::request`](crate::Allocator::request) for the contract.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct Request {
    /// The role the tasks run under: one of the framework's roles.
    pub role: RString,
    /// The gang the request belongs to, if any.
    pub group: ROption<GroupId>,
    /// How many tasks (at least 1).
    pub count: u32,
    /// The fewest tasks placed at once (`count` for all or nothing).
    pub min_count: u32,
    /// What each task needs.
    pub resources: Resources,
    /// Conditions on the agents the tasks may run on (all must hold).
    pub constraints: RVec<Constraint>,
}

impl Request {
    /// One task of `resources` under `role`, without a group or constraints.
    pub fn task(role: &str, resources: Resources) -> Request {
        Request::tasks(role, 1, resources)
    }

    /// `count` independent tasks of `resources` under `role`.
    pub fn tasks(role: &str, count: u32, resources: Resources) -> Request {
        Request {
            role: role.into(),
            group: ROption::RNone,
            count,
            min_count: 1.min(count),
            resources,
            constraints: RVec::new(),
        }
    }

    /// `count` tasks of `resources` under `role`, all or nothing.
    pub fn gang(role: &str, count: u32, resources: Resources) -> Request {
        Request { min_count: count, ..Request::tasks(role, count, resources) }
    }

    /// The request with `group` as its group.
    pub fn in_group(mut self, group: GroupId) -> Request {
        self.group = ROption::RSome(group);
        self
    }

    /// The request with `constraint` added.
    pub fn with_constraint(mut self, constraint: Constraint) -> Request {
        self.constraints.push(constraint);
        self
    }

    /// Whether the request is all or nothing on its own (`min_count == count > 1`).
    pub fn is_gang(&self) -> bool {
        self.count > 1 && self.min_count >= self.count
    }

    /// The fewest tasks placed at once, at least 1 and at most `count`.
    pub fn minimum(&self) -> u32 {
        self.min_count.clamp(1, self.count.max(1))
    }

    /// Whether `agent` meets every constraint.
    pub fn admits(&self, agent: &AgentInfo) -> bool {
        self.constraints.iter().all(|c| c.holds(agent))
    }

    /// Why the request cannot be taken as stated, or `None`: no tasks, a `min_count` above
    /// `count`, no resources per task.
    pub fn invalid(&self) -> Option<String> {
        if self.count == 0 {
            return Some("count is 0".to_owned());
        }
        if self.min_count > self.count {
            return Some(format!("min_count {} is above count {}", self.min_count, self.count));
        }
        if self.resources.is_empty() {
            return Some("no resources per task".to_owned());
        }
        None
    }

    /// The ABI 1 and ABI 2 form of `requests`
    /// ([`Allocator::request_resources`](crate::Allocator::request_resources)): one
    /// [`Resources`] per task, `count` copies of each request's `resources`, in order. Roles,
    /// groups, sizes and constraints are lost.
    pub fn flatten(requests: &[Request]) -> Vec<Resources> {
        let tasks = requests.iter().map(|r| r.count as usize).sum();
        let mut out = Vec::with_capacity(tasks);
        for r in requests {
            out.extend(std::iter::repeat_n(&r.resources, r.count as usize).cloned());
        }
        out
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} x ({}) under '{}'", self.count, self.resources, self.role)?;
        if self.is_gang() {
            write!(f, ", all or nothing")?;
        } else if self.minimum() > 1 {
            write!(f, ", at least {} at once", self.minimum())?;
        }
        if let ROption::RSome(g) = self.group {
            write!(f, ", {g}")?;
        }
        for c in &self.constraints {
            write!(f, ", {c}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::Attribute;
    use crate::ids::AgentId;

    fn agent(attributes: &[(&str, &str)]) -> AgentInfo {
        AgentInfo {
            id: AgentId(0),
            name: "a1".into(),
            hostname: "host1".into(),
            attributes: attributes
                .iter()
                .map(|(n, v)| Attribute { name: (*n).into(), value: (*v).into() })
                .collect(),
            capabilities: Default::default(),
        }
    }

    fn constraint(attribute: &str, op: ConstraintOp, values: &[&str]) -> Constraint {
        Constraint { op, ..Constraint::is_in(attribute, values) }
    }

    #[test]
    fn constraints_compare_attributes_as_kubernetes_node_selectors_do() {
        let a = agent(&[("zone", "a"), ("gpu", "V100")]);
        assert!(constraint("zone", ConstraintOp::IN, &["a", "b"]).holds(&a));
        assert!(!constraint("zone", ConstraintOp::IN, &["b"]).holds(&a));
        assert!(constraint("zone", ConstraintOp::NOT_IN, &["b"]).holds(&a));
        assert!(constraint("rack", ConstraintOp::NOT_IN, &["r1"]).holds(&a));
        assert!(constraint("gpu", ConstraintOp::EXISTS, &[]).holds(&a));
        assert!(constraint("rack", ConstraintOp::NOT_EXISTS, &[]).holds(&a));
        assert!(!constraint("zone", ConstraintOp(9), &["a"]).holds(&a));
    }

    #[test]
    fn hostname_and_agent_id_are_pseudo_attributes_unless_the_agent_has_them() {
        assert!(Constraint::is_in("hostname", &["host1"]).holds(&agent(&[])));
        assert!(Constraint::is_in("agent_id", &["a1"]).holds(&agent(&[])));
        assert!(!Constraint::is_in("hostname", &["host1"]).holds(&agent(&[("hostname", "x")])));
    }

    #[test]
    fn a_gang_is_min_count_equal_to_count() {
        let r: Resources = "cpus:1".parse().unwrap();
        assert!(Request::gang("a", 4, r.clone()).is_gang());
        assert!(!Request::gang("a", 1, r.clone()).is_gang());
        assert!(!Request::tasks("a", 4, r.clone()).is_gang());
        assert_eq!(Request { min_count: 0, ..Request::tasks("a", 4, r) }.minimum(), 1);
    }

    #[test]
    fn flatten_gives_one_resources_per_task_in_order() {
        let one: Resources = "cpus:1".parse().unwrap();
        let two: Resources = "cpus:2".parse().unwrap();
        let flat = Request::flatten(&[
            Request::tasks("a", 2, one.clone()),
            Request::task("b", two.clone()),
        ]);
        assert_eq!(flat, vec![one.clone(), one, two]);
    }

    #[test]
    fn invalid_requests_say_why() {
        let r: Resources = "cpus:1".parse().unwrap();
        assert!(Request::tasks("a", 0, r.clone()).invalid().is_some());
        assert!(Request { min_count: 3, ..Request::tasks("a", 2, r) }.invalid().is_some());
        assert!(Request::task("a", Resources::new()).invalid().is_some());
    }
}
