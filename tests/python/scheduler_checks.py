"""Checks of `allocator-master serve`'s scheduler API with pymesos's MesosSchedulerDriver.

Usage: python scheduler_checks.py HOST:PORT CHECK [ARGS...]

Each check drives one or more pymesos frameworks (written as a user writes one, for Apache
Mesos) against a running `serve`, and prints one JSON line of what it saw; the Rust tests in
tests/tests/serve_scheduler_api.rs start the master and assert on that line. A check
gives up after 30 s and prints what it saw so far (exit code 3).
"""

import http.client
import json
import os
import sys
import threading
import time

from pymesos import MesosSchedulerDriver, Scheduler

MASTER = sys.argv[1]
seen = {}

# pymesos 0.3.15's `MesosSchedulerDriver._send` has a mutable default argument, `headers={}`,
# shared by every driver in the process: it sets `Mesos-Stream-Id` in that dict and then sends,
# so two drivers in one process (the checks that run two frameworks) can send each other's
# stream id, which the master rightly refuses (400). Each call gets its own dict here.
_pymesos_send = MesosSchedulerDriver._send


def _send_with_own_headers(self, body, path="/api/v1/scheduler", method="POST", headers=None):
    return _pymesos_send(self, body, path, method, dict(headers or {}))


MesosSchedulerDriver._send = _send_with_own_headers


def done(code=0):
    print(json.dumps(seen))
    sys.stdout.flush()
    os._exit(code)


threading.Timer(30, lambda: done(3)).start()


def framework(name, roles=("r1",), **extra):
    info = {"user": "", "name": name, "roles": list(roles),
            "capabilities": [{"type": "MULTI_ROLE"}]}
    info.update(extra)
    return info


def task(offer, task_id, cpus=1.0, duration=None):
    t = {"name": task_id, "task_id": {"value": task_id}, "agent_id": offer["agent_id"],
         "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": cpus}},
                       {"name": "mem", "type": "SCALAR", "scalar": {"value": 32}}],
         "command": {"value": "true"}}
    if duration is not None:
        t["labels"] = {"labels": [{"key": "duration", "value": str(duration)}]}
    return t


def get(path):
    conn = http.client.HTTPConnection(*MASTER.split(":"), timeout=10)
    conn.request("GET", path)
    return json.loads(conn.getresponse().read())


def post(path, body, headers=None):
    conn = http.client.HTTPConnection(*MASTER.split(":"), timeout=10)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    conn.request("POST", path, body=body if isinstance(body, str) else json.dumps(body), headers=h)
    r = conn.getresponse()
    return r.status, r.read().decode()


def frameworks_state():
    return {f["framework"]: f for f in get("/state")["frameworks"]}


def run(sched, info, **kw):
    driver = MesosSchedulerDriver(sched, info, MASTER, **kw)
    driver.start()
    return driver


def _finish(info, **driver_kw):
    """One task with `sleep 1` runs to TASK_FINISHED; the master counts it while it runs."""
    seen.update(updates=[], running_in_state=None)

    class S(Scheduler):
        launched = False

        def resourceOffers(self, driver, offers):
            for o in offers:
                if self.launched:
                    driver.declineOffer(o["id"])
                    continue
                self.launched = True
                t = task(o, "t-1")
                t["command"] = {"value": "sleep 1"}
                driver.launchTasks(o["id"], [t])

        def statusUpdate(self, driver, update):
            seen["updates"].append(update["state"])
            if update["state"] == "TASK_RUNNING":
                fw = frameworks_state().get(driver.framework_id, {})
                seen["running_in_state"] = fw.get("tasks_running")
            if update["state"] == "TASK_FINISHED":
                done()

    run(S(), info, **driver_kw)


def check_finish():
    """One task with `sleep 1` runs to TASK_FINISHED; the master counts it while it runs."""
    _finish(framework("finish"))


def check_finish_with_credentials():
    """`check_finish` with HTTP Basic credentials `ARGS[0]:ARGS[1]` (pymesos's `principal` and
    `secret`), against a master that authenticates frameworks."""
    _finish(framework("finish", principal=sys.argv[3]), principal=sys.argv[3],
            secret=sys.argv[4])


def check_decline():
    """Offers declined with a one-hour filter are not offered again; `ARGS[0]` seconds later
    the framework has seen only the first round."""
    seen.update(first=0, later=0)
    start = time.time()

    class S(Scheduler):
        def resourceOffers(self, driver, offers):
            key = "first" if time.time() - start < 1.5 else "later"
            seen[key] += len(offers)
            driver.declineOffer([o["id"] for o in offers],
                                filters={"refuse_seconds": float(sys.argv[3])})

    run(S(), framework("decline"))
    time.sleep(5)
    done()


def check_suppress_revive():
    """A framework that declines and suppresses gets no offers until it revives."""
    seen.update(before=0, suppressed=0, revived=0)
    phase = ["before"]

    class S(Scheduler):
        def resourceOffers(self, driver, offers):
            seen[phase[0]] += len(offers)
            driver.declineOffer([o["id"] for o in offers], filters={"refuse_seconds": 0})
            if phase[0] == "before":
                driver.suppressOffers()
                phase[0] = "suppressed"

    driver = run(S(), framework("suppress"))
    time.sleep(3.5)
    phase[0] = "revived"
    driver.reviveOffers()
    time.sleep(1.5)
    done()


def check_kill():
    """A task without duration runs until killed: TASK_KILLED."""
    seen.update(updates=[])

    class S(Scheduler):
        launched = False

        def resourceOffers(self, driver, offers):
            for o in offers:
                if self.launched:
                    driver.declineOffer(o["id"])
                    continue
                self.launched = True
                driver.launchTasks(o["id"], [task(o, "forever")])

        def statusUpdate(self, driver, update):
            seen["updates"].append(update["state"])
            if update["state"] == "TASK_RUNNING":
                driver.killTask({"value": "forever"})
            if update["state"] == "TASK_KILLED":
                done()

    run(S(), framework("kill"))


def check_reconcile():
    """Explicit reconciliation answers a running task with its state and an unknown one with
    TASK_LOST; implicit reconciliation answers the running task."""
    seen.update(explicit=[], implicit=[])
    phase = ["launch"]

    class S(Scheduler):
        launched = False

        def resourceOffers(self, driver, offers):
            for o in offers:
                if self.launched:
                    driver.declineOffer(o["id"])
                    continue
                self.launched = True
                driver.launchTasks(o["id"], [task(o, "r-1")])

        def statusUpdate(self, driver, update):
            entry = [update["task_id"]["value"], update["state"], update.get("reason")]
            if phase[0] == "launch" and update["state"] == "TASK_RUNNING":
                phase[0] = "explicit"
                driver.reconcileTasks([{"task_id": {"value": "r-1"}},
                                       {"task_id": {"value": "nope"}}])
            elif phase[0] == "explicit":
                seen["explicit"].append(entry)
                if len(seen["explicit"]) == 2:
                    phase[0] = "implicit"
                    driver.reconcileTasks([])
            elif phase[0] == "implicit":
                seen["implicit"].append(entry)
                done()

    run(S(), framework("reconcile"))


def check_teardown():
    """`stop()` tears the framework down: the master forgets it and its tasks."""
    seen.update(present_before=None, present_after=None)

    class S(Scheduler):
        def resourceOffers(self, driver, offers):
            pass

        def statusUpdate(self, driver, update):
            pass

    class Launcher(S):
        launched = False

        def resourceOffers(self, driver, offers):
            if not self.launched:
                self.launched = True
                driver.launchTasks(offers[0]["id"], [task(offers[0], "td-1")])

        def statusUpdate(self, driver, update):
            if update["state"] == "TASK_RUNNING":
                fws = frameworks_state()
                seen["present_before"] = driver.framework_id in fws
                seen["tasks_before"] = fws[driver.framework_id]["tasks_running"]
                seen["id"] = driver.framework_id
                threading.Thread(target=stop, args=(driver,)).start()

    def stop(driver):
        driver.stop()
        time.sleep(1)
        seen["present_after"] = seen["id"] in frameworks_state()
        done()

    run(Launcher(), framework("teardown"))


def check_failover():
    """A framework that re-subscribes with its id within its failover timeout keeps its task."""
    seen.update(ids=[], reregistered=False, running_after=None)

    class S(Scheduler):
        launched = False

        def registered(self, driver, framework_id, master_info):
            seen["ids"].append(framework_id["value"])

        def resourceOffers(self, driver, offers):
            if not self.launched:
                self.launched = True
                driver.launchTasks(offers[0]["id"], [task(offers[0], "fo-1")])

        def statusUpdate(self, driver, update):
            if update["state"] == "TASK_RUNNING" and not seen.get("failed_over"):
                seen["failed_over"] = True
                threading.Thread(target=failover, args=(driver,)).start()

    def failover(driver):
        fid = driver.framework_id
        driver.stop(failover=True)
        time.sleep(1)
        seen["active_while_away"] = frameworks_state()[fid]["active"]
        info = framework("failover", failover_timeout=60, id={"value": fid})

        class Again(Scheduler):
            def registered(self, d, framework_id, master_info):
                seen["ids"].append(framework_id["value"])

            def reregistered(self, d, master_info):
                seen["reregistered"] = True

        run(Again(), info)
        time.sleep(1)
        fw = frameworks_state()[fid]
        seen["running_after"] = fw["tasks_running"]
        seen["active_after"] = fw["active"]
        done()

    run(S(), framework("failover", failover_timeout=60))


def check_subscribe_and_leave():
    """Subscribes with a long failover timeout, then stops without tearing down (as a scheduler
    whose process ends); prints its framework id."""
    seen.update(id=None)

    class S(Scheduler):
        def registered(self, driver, framework_id, master_info):
            seen["id"] = framework_id["value"]
            threading.Thread(target=leave, args=(driver,)).start()

    def leave(driver):
        driver.stop(failover=True)
        done()

    run(S(), framework("returning", failover_timeout=600))


def check_resubscribe():
    """Subscribes again with the framework id given (after a master restart), as a scheduler
    that fails over does; prints the id it was given and whether the master shows it active."""
    seen.update(ids=[], active=None)
    fid = sys.argv[3]

    class S(Scheduler):
        def registered(self, driver, framework_id, master_info):
            seen["ids"].append(framework_id["value"])
            threading.Thread(target=look).start()

        def reregistered(self, driver, master_info):
            seen["ids"].append(fid)
            threading.Thread(target=look).start()

    def look():
        time.sleep(0.5)
        seen["active"] = frameworks_state()[fid]["active"]
        done()

    run(S(), framework("returning", failover_timeout=600, id={"value": fid}))


def check_bad_calls():
    """Bad calls get 400/403 with a one-line reason and change nothing."""
    before = get("/state")["frameworks"]
    path = "/api/v1/scheduler"
    calls = {
        "malformed": post(path, "{"),
        "unknown_type": post(path, {"type": "NOPE"}),
        "no_framework_id": post(path, {"type": "REVIVE"}),
        "unknown_framework": post(path, {"type": "REVIVE", "framework_id": {"value": "nobody"}},
                                  {"Mesos-Stream-Id": "x"}),
        "accept_without_accept": post(path, {"type": "ACCEPT", "framework_id": {"value": "f"}}),
    }
    # A subscribed framework calling with another stream id.
    sub = {"type": "SUBSCRIBE", "subscribe": {"framework_info": framework("bad")}}
    conn = http.client.HTTPConnection(*MASTER.split(":"), timeout=10)
    conn.request("POST", path, body=json.dumps(sub), headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    stream_id = r.getheader("Mesos-Stream-Id")
    line = r.fp.readline()  # chunk size line
    size = int(r.fp.readline())
    event = json.loads(r.fp.read(size))
    fid = event["subscribed"]["framework_id"]["value"]
    calls["wrong_stream_id"] = post(path, {"type": "REVIVE", "framework_id": {"value": fid}},
                                    {"Mesos-Stream-Id": stream_id + "x"})
    calls["bad_role"] = post(path, {"type": "SUPPRESS", "framework_id": {"value": fid},
                                    "suppress": {"roles": ["not-mine"]}},
                             {"Mesos-Stream-Id": stream_id})
    calls["good"] = post(path, {"type": "REVIVE", "framework_id": {"value": fid}},
                         {"Mesos-Stream-Id": stream_id})
    seen["calls"] = {k: [s, b] for k, (s, b) in calls.items()}
    seen["chunk_line"] = line.decode().strip() != ""
    after = [f for f in get("/state")["frameworks"] if f["framework"] != fid]
    seen["unchanged"] = before == after
    done()


def check_weights():
    """Two frameworks in roles `w1` and `w3` with unbounded demand for 3.5-second tasks; prints
    their running-task counts sampled every 0.25 s over ARGS[0] seconds after a warm-up. (Tasks
    that end between runs leave an agent idle until the next run and the framework's answer;
    tasks much longer than that gap, ending between runs, keep the samples steady: 1-second
    tasks ending at the run's instant left half the samples at zero.)"""
    seen.update(samples=[])
    counter = [0]

    class Greedy(Scheduler):
        def resourceOffers(self, driver, offers):
            for o in offers:
                cpus = sum(r["scalar"]["value"] for r in o["resources"] if r["name"] == "cpus")
                mem = sum(r["scalar"]["value"] for r in o["resources"] if r["name"] == "mem")
                n = int(min(cpus, mem // 32))
                tasks = []
                for _ in range(n):
                    counter[0] += 1
                    tasks.append(task(o, "w-%d" % counter[0], duration=3.5))
                driver.launchTasks(o["id"], tasks, filters={"refuse_seconds": 0})

    ids = {}
    for role in ("w1", "w3"):
        d = run(Greedy(), framework(role, roles=(role,)))
        ids[role] = d
    time.sleep(4)
    for _ in range(int(float(sys.argv[3]) / 0.25)):
        fws = frameworks_state()
        seen["samples"].append({role: fws.get(d.framework_id, {}).get("tasks_running", 0)
                                for role, d in ids.items()})
        time.sleep(0.25)
    done()


def check_agent_gone():
    """MARK_AGENT_GONE on an agent with an outstanding offer rescinds it; on an agent running a
    task, the task is TASK_LOST with REASON_AGENT_REMOVED."""
    seen.update(rescinded=[], updates=[], kept=None)

    class S(Scheduler):
        started = False

        def resourceOffers(self, driver, offers):
            if self.started:
                return
            self.started = True
            offers = sorted(offers, key=lambda o: o["agent_id"]["value"])
            seen["kept"] = offers[1]["id"]["value"]
            driver.launchTasks(offers[0]["id"], [task(offers[0], "g-1")])
            self.agents = [o["agent_id"]["value"] for o in offers[:2]]

        def offerRescinded(self, driver, offer_id):
            seen["rescinded"].append(offer_id["value"])

        def statusUpdate(self, driver, update):
            seen["updates"].append([update["state"], update.get("reason")])
            if update["state"] == "TASK_RUNNING":
                for agent in reversed(self.agents):
                    post("/api/v1", {"type": "MARK_AGENT_GONE",
                                     "mark_agent_gone": {"agent_id": {"value": agent}}})
            if update["state"] == "TASK_LOST":
                time.sleep(0.3)
                done()

    run(S(), framework("gone"))


def check_invalid_launches():
    """Tasks that do not fit, or name another agent, get TASK_ERROR; tasks on an offer already
    used get TASK_LOST with REASON_INVALID_OFFERS."""
    seen.update(updates={})

    class S(Scheduler):
        started = False

        def resourceOffers(self, driver, offers):
            if self.started:
                return
            self.started = True
            a, b = offers[0], offers[1]
            big = task(a, "too-big", cpus=1000)
            elsewhere = task(a, "elsewhere")
            elsewhere["agent_id"] = b["agent_id"]
            driver.launchTasks(a["id"], [big, elsewhere, task(a, "fine")])
            driver.launchTasks(a["id"], [task(a, "stale")])

        def statusUpdate(self, driver, update):
            seen["updates"].setdefault(update["task_id"]["value"], []).append(
                [update["state"], update.get("reason")])
            if len(seen["updates"]) == 4 and len(seen["updates"]["fine"]) >= 2:
                done()

    run(S(), framework("invalid"))


def check_heartbeats():
    """SUBSCRIBED says the heartbeat interval; HEARTBEAT events follow at that pace."""
    sub = {"type": "SUBSCRIBE", "subscribe": {"framework_info": framework("hb")}}
    conn = http.client.HTTPConnection(*MASTER.split(":"), timeout=10)
    conn.request("POST", "/api/v1/scheduler", body=json.dumps(sub),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    start = time.time()
    # Read the raw RecordIO stream (http.client undoes the chunking).
    buf = b""
    kinds = []
    interval = None
    while time.time() - start < float(sys.argv[3]):
        buf += r.read1(65536)
        while b"\n" in buf:
            size, rest = buf.split(b"\n", 1)
            n = int(size)
            if len(rest) < n:
                break
            event = json.loads(rest[:n])
            buf = rest[n:]
            kinds.append(event["type"])
            if event["type"] == "SUBSCRIBED":
                interval = event["subscribed"]["heartbeat_interval_seconds"]
    seen["interval"] = interval
    seen["heartbeats"] = kinds.count("HEARTBEAT")
    seen["first"] = kinds[0]
    done()


def check_resend():
    """An update not acknowledged is sent again (after 10 s); the next waits for the
    acknowledgement, then follows."""
    seen.update(updates=[])
    start = time.time()

    class S(Scheduler):
        launched = False

        def resourceOffers(self, driver, offers):
            if not self.launched:
                self.launched = True
                driver.launchTasks(offers[0]["id"], [task(offers[0], "rs-1")])

        def statusUpdate(self, driver, update):
            seen["updates"].append([update["state"], round(time.time() - start)])
            starting = [u for u in seen["updates"] if u[0] == "TASK_STARTING"]
            if len(starting) == 2 and update["state"] == "TASK_STARTING":
                driver.acknowledgeStatusUpdate(update)
            if update["state"] == "TASK_RUNNING":
                done()

    run(S(), framework("resend"), implicit_acknowledgements=False)


def check_update_framework():
    """UPDATE_FRAMEWORK moves the framework to other roles: later offers are in the new role."""
    seen.update(roles_after=[], state_roles=None)
    phase = ["first"]

    class S(Scheduler):
        def resourceOffers(self, driver, offers):
            if phase[0] == "after":
                seen["roles_after"] += [o["allocation_info"]["role"] for o in offers]
            driver.declineOffer([o["id"] for o in offers], filters={"refuse_seconds": 0})
            if phase[0] == "first":
                phase[0] = "updating"
                info = framework("update", roles=("r2",), id={"value": driver.framework_id})
                driver._send({"type": "UPDATE_FRAMEWORK", "framework_id": info["id"],
                              "update_framework": {"framework_info": info}})
                seen["state_roles"] = frameworks_state()[driver.framework_id]["roles"]
                phase[0] = "after"
            if len(seen["roles_after"]) >= 4:
                done()

    run(S(), framework("update"))


def check_inverse_offers():
    """Maintenance scheduled on an agent where a framework runs a task sends it an inverse
    offer; the framework accepts it."""
    seen.update(inverse=[], accepted=None)

    class S(Scheduler):
        launched = False

        def resourceOffers(self, driver, offers):
            if self.launched:
                return
            self.launched = True
            o = sorted(offers, key=lambda o: o["agent_id"]["value"])[0]
            self.agent = o["agent_id"]["value"]
            driver.launchTasks(o["id"], [task(o, "io-1")])

        def statusUpdate(self, driver, update):
            if update["state"] == "TASK_RUNNING":
                window = {"machine_ids": [{"hostname": self.agent}],
                          "unavailability": {"start": {"nanoseconds": 3600 * 10**9}}}
                post("/api/v1", {"type": "UPDATE_MAINTENANCE_SCHEDULE",
                                 "update_maintenance_schedule": {"schedule": {"windows": [window]}}})

        def inverseOffers(self, driver, offers):
            for o in offers:
                seen["inverse"].append([o["agent_id"]["value"],
                                        o["unavailability"]["start"]["nanoseconds"]])
            seen["agent"] = self.agent
            driver.acceptInverseOffers([o["id"] for o in offers])
            seen["accepted"] = True
            time.sleep(0.3)
            done()

    run(S(), framework("inverse"))


def check_removed_cannot_resubscribe():
    """A framework torn down cannot subscribe again with its id: ERROR, then the stream ends."""
    sub = {"type": "SUBSCRIBE", "subscribe": {"framework_info": framework("gone")}}
    conn = http.client.HTTPConnection(*MASTER.split(":"), timeout=10)
    conn.request("POST", "/api/v1/scheduler", body=json.dumps(sub),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    size = int(r.fp.readline().split(b"\n")[0], 16)  # the chunk's size
    record = r.fp.read(size)
    event = json.loads(record.split(b"\n", 1)[1])
    fid = event["subscribed"]["framework_id"]
    stream_id = r.getheader("Mesos-Stream-Id")
    status, _ = post("/api/v1/scheduler", {"type": "TEARDOWN", "framework_id": fid},
                     {"Mesos-Stream-Id": stream_id})
    seen["teardown"] = status
    info = framework("gone", id=fid)
    conn = http.client.HTTPConnection(*MASTER.split(":"), timeout=10)
    conn.request("POST", "/api/v1/scheduler",
                 body=json.dumps({"type": "SUBSCRIBE", "subscribe": {"framework_info": info}}),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    body = r.read()
    events = []
    while body:
        n, rest = body.split(b"\n", 1)
        events.append(json.loads(rest[:int(n)]))
        body = rest[int(n):]
    seen["events"] = [e["type"] for e in events]
    seen["message"] = events[0].get("error", {}).get("message")
    seen["present"] = fid["value"] in frameworks_state()
    done()


def check_record():
    """A session worth recording: one framework reserves a CPU and launches tasks that finish
    on it and elsewhere, declining the rest with a filter; another declines, runs one task it
    kills, suppresses and revives. Ends when the first has seen its six tasks finish."""
    seen.update(finished=0, reserved=0, killed=0)

    class Builder(Scheduler):
        launched = 0

        def resourceOffers(self, driver, offers):
            for o in offers:
                if self.launched >= 6:
                    driver.declineOffer(o["id"], filters={"refuse_seconds": 2})
                    continue
                self.launched += 1
                t = task(o, "b-%d" % self.launched, duration=1 + self.launched % 3)
                ops = [{"type": "LAUNCH", "launch": {"task_infos": [t]}}]
                if self.launched == 1:
                    cpu = {"name": "cpus", "type": "SCALAR", "scalar": {"value": 1},
                           "allocation_info": {"role": "r1"},
                           "reservations": [{"type": "DYNAMIC", "role": "r1"}]}
                    t["resources"][0] = dict(cpu)
                    ops.insert(0, {"type": "RESERVE", "reserve": {"resources": [cpu]}})
                driver.acceptOffers([o["id"]], ops, filters={"refuse_seconds": 2})

        def statusUpdate(self, driver, update):
            if update["state"] == "TASK_RUNNING" and update["task_id"]["value"] == "b-1":
                seen["reserved"] = 1
            if update["state"] == "TASK_FINISHED":
                seen["finished"] += 1
                if seen["finished"] == 6:
                    time.sleep(1)
                    done()

    class Other(Scheduler):
        phase = "start"

        def resourceOffers(self, driver, offers):
            if self.phase == "start":
                self.phase = "running"
                o, rest = offers[0], offers[1:]
                driver.launchTasks(o["id"], [task(o, "o-1")])
                if rest:
                    driver.declineOffer([r["id"] for r in rest], filters={"refuse_seconds": 1.5})
                threading.Timer(1.5, lambda: driver.killTask({"value": "o-1"})).start()
                return
            driver.declineOffer([o["id"] for o in offers], filters={"refuse_seconds": 1.5})

        def statusUpdate(self, driver, update):
            if update["state"] == "TASK_KILLED":
                seen["killed"] = 1
                driver.suppressOffers()
                threading.Timer(1.0, driver.reviveOffers).start()

    run(Builder(), framework("builder", roles=("r1",)))
    run(Other(), framework("other", roles=("r2",)))


def on_one_agent(name, step):
    """A framework in role r1 that keeps to the agent of its first offer (declining the others
    for an hour) and answers each offer there with the operations `step(offer)` gives,
    refusing nothing."""
    class S(Scheduler):
        agent = None

        def resourceOffers(self, driver, offers):
            for o in offers:
                if self.agent not in (None, o["agent_id"]["value"]):
                    driver.declineOffer(o["id"], filters={"refuse_seconds": 3600})
                    continue
                self.agent = o["agent_id"]["value"]
                driver.acceptOffers([o["id"]], step(o), filters={"refuse_seconds": 0})

    run(S(), framework(name, roles=("r1",)))


def check_reserve():
    """RESERVE one CPU of the first offer; the agent's next offer carries the reservation;
    UNRESERVE it; the offer after that has none."""
    seen.update(steps=[])
    cpu = {"name": "cpus", "type": "SCALAR", "scalar": {"value": 1},
           "allocation_info": {"role": "r1"}, "reservations": [{"type": "DYNAMIC", "role": "r1"}]}

    def step(o):  # pre-refinement format (no RESERVATION_REFINEMENT): reserved ones have `role`
        held = [r for r in o["resources"] if r.get("role", "*") != "*"]
        seen["steps"].append([r["name"] + ":" + r["role"] for r in held])
        if len(seen["steps"]) == 1:
            return [{"type": "RESERVE", "reserve": {"resources": [cpu]}}]
        if held:
            return [{"type": "UNRESERVE", "unreserve": {"resources": held}}]
        done()

    on_one_agent("reserve", step)


def check_volume():
    """RESERVE disk, CREATE a volume on it, DESTROY it, UNRESERVE the disk: each next offer of
    the agent shows what the operation before it made."""
    seen.update(steps=[])
    disk = {"name": "disk", "type": "SCALAR", "scalar": {"value": 100},
            "allocation_info": {"role": "r1"}, "role": "r1", "reservation": {}}
    volume = dict(disk, disk={"persistence": {"id": "v1"},
                              "volume": {"container_path": "v1", "mode": "RW"}})
    plan = [("RESERVE", "reserve", {"resources": [disk]}),
            ("CREATE", "create", {"volumes": [volume]}),
            ("DESTROY", "destroy", {"volumes": [volume]}),
            ("UNRESERVE", "unreserve", {"resources": [disk]})]

    def step(o):
        shown = []
        for r in o["resources"]:
            if r["name"] == "disk" and r.get("role", "*") != "*":
                vid = r.get("disk", {}).get("persistence", {}).get("id")
                shown.append("disk(%s)%s:%g" % (r["role"], "[%s]" % vid if vid else "",
                                                r["scalar"]["value"]))
        seen["steps"].append(shown)
        if len(seen["steps"]) > len(plan):
            done()
        kind, field, body = plan[len(seen["steps"]) - 1]
        return [{"type": kind, field: body}]

    on_one_agent("volume", step)

def check_plan():
    """A framework runs one task and declines the rest without a filter; once offers come
    back, `POST /plan` removing the task's agent is asked for: the forks know the framework
    and offer to it."""
    seen.update(framework=None, agent=None)

    class S(Scheduler):
        offers_seen = 0

        def resourceOffers(self, driver, offers):
            self.offers_seen += len(offers)
            rest = offers
            if seen["agent"] is None:
                o, rest = offers[0], offers[1:]
                seen["agent"] = o["agent_id"]["value"]
                driver.launchTasks(o["id"], [task(o, "p-1")], filters={"refuse_seconds": 0})
            driver.declineOffer([o["id"] for o in rest], filters={"refuse_seconds": 0})
            if self.offers_seen >= 8 and seen["framework"] is None:
                seen["framework"] = driver.framework_id
                threading.Thread(target=ask).start()

    def ask():
        change = {"op": "remove_agent", "agent": seen["agent"]}
        status, body = post("/plan", change)
        plan = json.loads(body)
        seen["status"] = status
        mine = lambda k: sorted(o["agent"] for o in plan["offers"][k]
                                if o["framework"] == seen["framework"])
        seen["without"], seen["with_change"] = mine("without"), mine("with_change")
        done()

    run(S(), framework("planner", roles=("r1",)))


def summary(o):
    """An offer's resources as the allocator's resource text, a device as `gpus[ID]:share`."""
    parts = []
    for r in o["resources"]:
        device = r.get("disk", {}).get("persistence", {}).get("id")
        parts.append("%s%s:%g" % (r["name"], "[%s]" % device if device else "",
                                  r["scalar"]["value"]))
    return o["agent_id"]["value"] + " " + ";".join(sorted(parts))


def check_request():
    """A GPU framework states its next task with `REQUEST` (cpus 1, mem 128, half a GPU), twice:
    each time it is offered exactly the slice the placement module picks, launches its task on
    it, and asks again. Offers that are not a placement (the plain offers before the first
    request is seen) are declined without a filter."""
    seen.update(placements=[], updates=[], other_offers=0)
    ask = [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1}},
           {"name": "mem", "type": "SCALAR", "scalar": {"value": 128}},
           {"name": "gpus", "type": "SCALAR", "scalar": {"value": 0.5}}]

    class S(Scheduler):
        def registered(self, driver, framework_id, master_info):
            driver.requestResources([{"resources": ask}])

        def resourceOffers(self, driver, offers):
            for o in offers:
                cpus = sum(r["scalar"]["value"] for r in o["resources"] if r["name"] == "cpus")
                if cpus != 1 or len(seen["placements"]) == 2:
                    seen["other_offers"] += 1
                    driver.declineOffer(o["id"], filters={"refuse_seconds": 0})
                    continue
                seen["placements"].append(summary(o))
                n = len(seen["placements"])
                t = {"name": "p-%d" % n, "task_id": {"value": "p-%d" % n},
                     "agent_id": o["agent_id"], "resources": o["resources"],
                     "command": {"value": "sleep 3600"}}
                driver.launchTasks(o["id"], [t])
                if n < 2:
                    driver.requestResources([{"resources": ask}])

        def statusUpdate(self, driver, update):
            seen["updates"].append([update["task_id"]["value"], update["state"]])
            running = [u for u in seen["updates"] if u[1] == "TASK_RUNNING"]
            if len(running) == 2:
                done()

    run(S(), framework("placed", roles=("ml",),
                       capabilities=[{"type": "MULTI_ROLE"}, {"type": "GPU_RESOURCES"}]))


if __name__ == "__main__":
    globals()["check_" + sys.argv[2]]()
