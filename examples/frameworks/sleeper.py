"""A small pymesos framework, written as for Apache Mesos, to run against
`allocator-master serve` (see README, "Developing a framework against allocator-master").

    python examples/frameworks/sleeper.py HOST:PORT [TASKS] [ROLE]

Launches TASKS (default 10) tasks of `sleep 5` with 0.5 CPU and 128 MB each, as offers allow,
declines what it does not use, and stops (tearing itself down) once every task finished.
"""

import sys

from pymesos import MesosSchedulerDriver, Scheduler

CPUS, MEM = 0.5, 128


def scalar(offer, name):
    return sum(r["scalar"]["value"] for r in offer["resources"]
               if r["name"] == name and r["type"] == "SCALAR")


class Sleeper(Scheduler):
    def __init__(self, tasks):
        self.to_launch = list(range(tasks))
        self.running = 0
        self.finished = 0
        self.tasks = tasks

    def registered(self, driver, framework_id, master_info):
        print("registered as", framework_id["value"])

    def resourceOffers(self, driver, offers):
        for offer in offers:
            cpus, mem = scalar(offer, "cpus"), scalar(offer, "mem")
            launch = []
            while self.to_launch and cpus >= CPUS and mem >= MEM:
                n = self.to_launch.pop(0)
                cpus, mem = cpus - CPUS, mem - MEM
                launch.append({
                    "name": "sleep-%d" % n,
                    "task_id": {"value": "sleep-%d" % n},
                    "agent_id": offer["agent_id"],
                    "resources": [
                        {"name": "cpus", "type": "SCALAR", "scalar": {"value": CPUS}},
                        {"name": "mem", "type": "SCALAR", "scalar": {"value": MEM}},
                    ],
                    "command": {"value": "sleep 5"},
                })
            if launch:
                driver.launchTasks(offer["id"], launch)
            else:
                driver.declineOffer(offer["id"], filters={"refuse_seconds": 5})
        if not self.to_launch:
            driver.suppressOffers()

    def statusUpdate(self, driver, update):
        state = update["state"]
        print(update["task_id"]["value"], state)
        if state == "TASK_FINISHED":
            self.finished += 1
            if self.finished == self.tasks:
                print("all %d tasks finished" % self.tasks)
                driver.stop()
        elif state in ("TASK_LOST", "TASK_ERROR", "TASK_FAILED", "TASK_KILLED", "TASK_DROPPED"):
            self.to_launch.append(int(update["task_id"]["value"].split("-")[1]))
            driver.reviveOffers()


if __name__ == "__main__":
    master = sys.argv[1]
    tasks = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    role = sys.argv[3] if len(sys.argv) > 3 else "sleepers"
    framework = {"user": "", "name": "sleeper", "roles": [role],
                 "capabilities": [{"type": "MULTI_ROLE"}]}
    MesosSchedulerDriver(Sleeper(tasks), framework, master).run()
