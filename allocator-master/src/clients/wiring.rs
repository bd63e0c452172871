//! The live master's wiring of its clients to the simulation's [`Driver`](allocator_sim::driver::Driver): the frameworks
//! connected over the scheduler API ([`MesosFrameworks`]) are the driver's live
//! [`Client`], and the driver's [`Applying`] is the operator API's [`Cluster`].

use allocator_api::FrameworkId;
use allocator_host::master::{Command, Event, Master};
use allocator_mesos::scheduler::FrameworkInfo;
use allocator_sim::driver::{Applying, Client};

use super::mesos::MesosFrameworks;
use super::operator::{Cluster, SchedulerView};

impl Client for MesosFrameworks {
    fn observe(&mut self, events: &[Event], master: &mut Master<'_>) -> Result<(), String> {
        MesosFrameworks::observe(self, events, master)
    }
}

impl SchedulerView for MesosFrameworks {
    fn framework_info(&self, id: FrameworkId) -> Option<&FrameworkInfo> {
        MesosFrameworks::framework_info(self, id)
    }

    fn task_name(&self, fw: FrameworkId, task: u64) -> Option<&str> {
        MesosFrameworks::task_name(self, fw, task)
    }

    fn principal(&self, framework: &str) -> Option<&str> {
        MesosFrameworks::principal(self, framework)
    }

    fn master_id(&self) -> &str {
        MesosFrameworks::master_id(self)
    }
}

impl<'r> Cluster<'r> for Applying<'_, 'r> {
    fn scheduler(&self) -> Option<&dyn SchedulerView> {
        self.driver().client::<MesosFrameworks>().map(|m| m as &dyn SchedulerView)
    }

    fn teardown(&mut self, framework: &str) -> Result<(), String> {
        let (driver, out) = self.parts();
        if driver.client::<MesosFrameworks>().is_some_and(|m| m.knows(framework)) {
            let name = framework.to_owned();
            driver
                .with_client(out, |m: &mut MesosFrameworks, master| m.teardown(&name, master))
                .map(drop)
        } else {
            driver
                .command(&Command::RemoveFramework(framework.to_owned()), out)
                .map(drop)
                .map_err(String::from)
        }
    }
}
