"""Benchmark load for `serve` (BENCHMARKS.md, "The live master"; its log: docs/history/benchmarks.md,
"Issue 19: `serve` with real frameworks"): N pymesos
frameworks in roles r00.., each launching every 2-CPU/4 GB slot it is offered as a 20 s task.

    python tests/python/bench_frameworks.py HOST:PORT N SECONDS
"""
import sys, time, threading, os, json
from pymesos import MesosSchedulerDriver, Scheduler
master, n, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
counter = [0]; lock = threading.Lock()
class Greedy(Scheduler):
    def resourceOffers(self, driver, offers):
        for o in offers:
            cpus = sum(r["scalar"]["value"] for r in o["resources"] if r["name"] == "cpus")
            mem = sum(r["scalar"]["value"] for r in o["resources"] if r["name"] == "mem")
            k = int(min(cpus // 2, mem // 4096))
            tasks = []
            for _ in range(k):
                with lock:
                    counter[0] += 1; c = counter[0]
                tasks.append({"name": "t", "task_id": {"value": "t-%d" % c}, "agent_id": o["agent_id"],
                  "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 2}},
                                {"name": "mem", "type": "SCALAR", "scalar": {"value": 4096}}],
                  "labels": {"labels": [{"key": "duration", "value": "20"}]}})
            if tasks:
                driver.launchTasks(o["id"], tasks, filters={"refuse_seconds": 1})
            else:
                driver.declineOffer(o["id"], filters={"refuse_seconds": 1})
for i in range(n):
    MesosSchedulerDriver(Greedy(), {"user": "", "name": "f%02d" % i, "roles": ["r%02d" % i],
        "capabilities": [{"type": "MULTI_ROLE"}]}, master).start()
time.sleep(secs)
print(json.dumps({"launched": counter[0]})); sys.stdout.flush(); os._exit(0)
