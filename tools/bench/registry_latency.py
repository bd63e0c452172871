#!/usr/bin/env python3
"""A weight change's latency with N registered frameworks (issue 43): writes a registry with N
frameworks (each FrameworkInfo about INFO bytes, a week's failover timeout) into a fresh
work_dir, starts `BIN serve --work_dir` on it, and times POST /weights (each written to the
registry before it is answered), then prints the median and the 90th percentile.

    tools/bench/registry_latency.py BIN [N] [INFO] [CHANGES]
"""
import json, os, re, statistics, subprocess, sys, tempfile, time, http.client

bin_, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1000
info_bytes = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
changes = int(sys.argv[4]) if len(sys.argv) > 4 else 100
work = tempfile.mkdtemp()
os.chmod(work, 0o700)
frameworks = [{"id": f"fw-{i:05}", "principal": None,
               "info": {"user": "u", "name": "x" * info_bytes, "roles": ["r1"],
                        "failover_timeout": 604800.0, "id": {"value": f"fw-{i:05}"},
                        "capabilities": [{"type": "MULTI_ROLE"}]}} for i in range(n)]
json.dump({"version": 1, "frameworks": frameworks}, open(os.path.join(work, "registry.json"), "w"))
master = subprocess.Popen([bin_, "serve", "--listen", "127.0.0.1:0", "--work_dir", work,
                           "--scenario", "tests/python/cluster.json", "--duration", "600"],
                          stderr=subprocess.PIPE, text=True)
addr = None
for line in master.stderr:
    m = re.search(r"http://(\S+)", line)
    if m:
        addr = m.group(1)
        break
host, port = addr.rsplit(":", 1)
took = []
for i in range(changes):
    c = http.client.HTTPConnection(host, int(port))
    body = json.dumps({"weights": {"r1": 1 + (i % 7)}})
    start = time.perf_counter()
    c.request("POST", "/weights", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    took.append((time.perf_counter() - start) * 1e3)
    assert r.status == 200, r.status
master.terminate()
master.wait()
took.sort()
size = sum(os.path.getsize(os.path.join(work, f)) for f in os.listdir(work))
print(f"{n} frameworks x {info_bytes} B: weight change median {statistics.median(took):.2f} ms, "
      f"p90 {took[int(len(took) * 0.9)]:.2f} ms, max {took[-1]:.2f} ms; work_dir {size / 1e6:.1f} MB")
