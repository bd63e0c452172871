#!/usr/bin/env bash
# bench.sh - `allocator-master kube` side by side with upstream kube-scheduler on one test cluster
# (issue 47): N fake nodes, then for each scheduler in turn a backlog of P pods in a namespace of
# its own, timed from the first to the last binding by a watch, with the scheduler's CPU time and
# peak RSS from /proc and the API server's CPU time over the same span; the pods are deleted
# before the next scheduler runs, so each starts on empty nodes.
#
#   tools/kube/bench.sh [--nodes 1000] [--pods 5000] [--qps 1000] [--burst 2000] [--out DIR]
#                       [--schedulers kube-scheduler,DRF,FGD] [--kwok] [--allocation_interval 100ms]
#                       [--repeat 1]
#
# The schedulers: `kube-scheduler` (the cached v1.37.2 binary, default plugins, no leader
# election, client QPS/burst as given), `DRF` (`allocator-master kube` with the built-in
# allocator and the drf sorters) and `FGD` (`--allocator FGD`, with a manifest naming only its
# library of examples/modules.json, as the shipped Deployment's names only FGD's), both
# with `--kube_api_qps`/`--kube_api_burst` as given and `--allocation_interval` 100 ms (a backlog
# is placed in runs of `--request_window` 256 pods; kube-scheduler schedules without pause). Results: DIR/<scheduler>.json, and a
# Markdown table on stdout. With `--repeat N` the schedulers take turns N times (kube-scheduler,
# DRF, FGD, kube-scheduler, …: the machine's drift falls on all alike); each run is a row
# (DIR/<scheduler>-<run>.json) and each scheduler's median a row of a second table, with the
# ratio of kube-scheduler's median CPU per pod to its own. Each run starts once the machine is
# quiet (at most 2 minutes' wait). Needs target/release/allocator-master and every library of
# examples/modules.json built in release (the command is printed when one is missing).
#
# Two builds side by side: a scheduler written `DRF@DIR` or `FGD@DIR` runs DIR/allocator-master
# with the libraries beside it (a copy of target/release from another commit), labelled
# `FGD@<DIR's name>`; e.g. `--schedulers FGD@/tmp/before,FGD --repeat 3` compares a change with
# the build before it in turns on the same cluster.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
MASTER=${MASTER:-$root/target/release/allocator-master}
NODES=1000 PODS=5000 QPS=1000 BURST=2000 OUT="" SCHEDULERS=kube-scheduler,DRF,FGD KWOK=0 INTERVAL=100ms REPEAT=1
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES=$2; shift 2 ;;
    --pods) PODS=$2; shift 2 ;;
    --qps) QPS=$2; shift 2 ;;
    --burst) BURST=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --schedulers) SCHEDULERS=$2; shift 2 ;;
    --kwok) KWOK=1; shift ;;
    --allocation_interval) INTERVAL=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    *) echo "usage: $0 [--nodes N] [--pods N] [--qps Q] [--burst B] [--out DIR] [--schedulers LIST] [--kwok] [--allocation_interval D] [--repeat N]" >&2; exit 2 ;;
  esac
done
libraries=$(python3 -c 'import json,sys; print(" ".join(l["name"] for l in json.load(open(sys.argv[1]))["libraries"]))' "$root/examples/modules.json")
build="cargo build --release -p allocator-master$(printf ' -p %s' $libraries)"
# A build: the binary and every library of examples/modules.json beside it.
check_build() {
  [ -x "$1" ] || { echo "bench.sh: $1 missing: $build" >&2; exit 1; }
  for lib in $libraries; do
    [ -f "$(dirname "$1")/lib$lib.so" ] || { echo "bench.sh: lib$lib.so missing next to $1: $build" >&2; exit 1; }
  done
}
check_build "$MASTER"
# Each entry of --schedulers: its scheduler, the binary it runs and its label (`FGD@DIR` runs
# DIR/allocator-master, labelled `FGD@<DIR's name>`), checked before the cluster starts.
IFS=, read -r -a list <<< "$SCHEDULERS"
schedulers=() builds=() labels=()
for entry in "${list[@]}"; do
  s=${entry%@*}
  if [ "$entry" = "$s" ]; then
    schedulers+=("$s") builds+=("$MASTER") labels+=("$s")
  else
    [ "$s" != kube-scheduler ] || { echo "bench.sh: $entry: kube-scheduler is the cached binary, not a build" >&2; exit 2; }
    check_build "${entry#*@}/allocator-master"
    schedulers+=("$s") builds+=("${entry#*@}/allocator-master") labels+=("$s@$(basename "${entry#*@}")")
  fi
done
eval "$("$here/cluster.sh" env)"
[ -n "$OUT" ] || OUT=$(mktemp -d "${TMPDIR:-/tmp}/allocator-bench.XXXXXX")
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
DIR="$OUT/cluster"
kubeconfig=$("$here/cluster.sh" up "$DIR")
trap '"$here/cluster.sh" down "$DIR"' EXIT
[ "$KWOK" = 1 ] && "$here/cluster.sh" kwok "$DIR"
apiserver=$(cat "$DIR/apiserver.pid")

cat > "$OUT/kube-scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: "$kubeconfig"
  qps: $QPS
  burst: $BURST
leaderElection:
  leaderElect: false
EOF

echo "bench.sh: $NODES nodes, $PODS pods a scheduler, client QPS $QPS burst $BURST; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$MASTER" kube-replay synthetic --kubeconfig "$kubeconfig" --namespace default --node_count "$NODES" \
  --node_cpu 32 --node_pods 110

# Waits (at most 2 minutes) until the machine has been quiet for 3 s in a row (less than a
# third of a core busy, all processes together: the API server and etcd done with the last
# pods' creation or deletion), so that no run starts on the previous one's leftovers.
settle() {
  local quiet=0 waited=0 before after
  before=$(awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat)
  while [ "$quiet" -lt 3 ] && [ "$waited" -lt 120 ]; do
    sleep 1; waited=$((waited + 1))
    after=$(awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat)
    if [ $((after - before)) -lt $(( $(getconf CLK_TCK) / 3 )) ]; then quiet=$((quiet + 1)); else quiet=0; fi
    before=$after
  done
  echo "bench.sh: quiet after ${waited} s" >&2
}

for run in $(seq 1 "$REPEAT"); do
for i in "${!schedulers[@]}"; do
  s=${schedulers[$i]} binary=${builds[$i]} label=${labels[$i]}
  tag=$label; [ "$REPEAT" = 1 ] || tag=$label-$run
  ns=bench-$(echo "$label" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9\n' '-')
  case "$s" in
    kube-scheduler)
      name=default-scheduler
      cmd=("$ALLOCATOR_KUBE_KUBE_SCHEDULER" --config "$OUT/kube-scheduler.yaml" --secure-port 0 -v 1) ;;
    DRF)
      name=allocator-scheduler
      cmd=("$binary" kube --kubeconfig "$kubeconfig" --listen 127.0.0.1:0 --roles_config_map none
           --kube_api_qps "$QPS" --kube_api_burst "$BURST" --allocation_interval "$INTERVAL") ;;
    *)
      # A manifest naming only the library of this allocator, as the shipped Deployment's
      # ConfigMap names only what it uses (examples/modules.json's ten libraries would cost
      # their loading at start: about 0.04 CPU-s and 21 MiB).
      python3 - "$root/examples/modules.json" "$s" > "$OUT/$s-modules.json" <<'EOF'
import json, sys
libraries = json.load(open(sys.argv[1]))["libraries"]
mine = [l for l in libraries if any(m.get("name") == sys.argv[2] for m in l.get("modules", []))]
if not mine:
    sys.exit(f"bench.sh: no library of examples/modules.json has the module {sys.argv[2]}")
print(json.dumps({"libraries": mine}))
EOF
      name=allocator-scheduler
      cmd=("$binary" kube --kubeconfig "$kubeconfig" --listen 127.0.0.1:0 --roles_config_map none
           --kube_api_qps "$QPS" --kube_api_burst "$BURST" --modules "$OUT/$s-modules.json"
           --allocator "$s" --allocation_interval "$INTERVAL") ;;
  esac
  "$MASTER" kube-replay synthetic --kubeconfig "$kubeconfig" --namespace "$ns" --pod_count "$PODS" \
    --scheduler_name "$name"
  sleep 2
  settle
  "$MASTER" kube-replay measure --kubeconfig "$kubeconfig" --namespace "$ns" --expect "$PODS" \
    --settle 30 --timeout 900 --apiserver_pid "$apiserver" --label "$tag" \
    --log "$OUT/$tag.log" --output "$OUT/$tag.json" -- "${cmd[@]}" || true
  # (Deleting thousands of pods can outlast the client's timeout on a loaded machine: the
  # next scheduler then starts with these pods still bound, counted as others' where they are.)
  "$MASTER" kube-replay synthetic --kubeconfig "$kubeconfig" --namespace "$ns" --clean ||
    echo "bench.sh: the pods of $ns were not all deleted" >&2
done
done

python3 - "$OUT" "$REPEAT" "${labels[@]}" <<'EOF'
import json, statistics, sys
out, repeat, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
tags = [(n, n if repeat == 1 else f"{n}-{r}") for r in range(1, repeat + 1) for n in names]
rows = []
for n, t in tags:
    try:
        rows.append((n, json.load(open(f"{out}/{t}.json"))))
    except OSError:
        rows.append((n, {"label": t}))
f = lambda v, d=1: "-" if v is None else f"{v:.{d}f}"
print("| scheduler | pods bound | pods/s (first to last bind) | scheduler CPU-s | CPU ms/pod | peak RSS MiB | API server CPU-s | API server cores busy (start to last bind) | load before → after |")
print("|---|---|---|---|---|---|---|---|---|")
for _, r in rows:
    print(f"| {r['label']} | {r.get('bound','-')}/{r.get('pods','-')} | {f(r.get('pods_per_second'))} | {f(r.get('scheduler_cpu_s'),2)} | {f(r.get('scheduler_cpu_ms_per_pod'),3)} | {f(r.get('scheduler_peak_rss_mib'),0)} | {f(r.get('apiserver_cpu_s'))} | {f(r.get('apiserver_cpu_share'),2)} | {r.get('load_average_before','')} → {r.get('load_average_after','')} |")
if repeat > 1:
    def median(n, key):
        vs = [r[key] for m, r in rows if m == n and r.get(key) is not None]
        return statistics.median(vs) if vs else None
    base = median("kube-scheduler", "scheduler_cpu_ms_per_pod")
    print()
    print(f"| scheduler | median of {repeat} runs: pods/s | CPU ms/pod | kube-scheduler's CPU per pod ÷ this | peak RSS MiB |")
    print("|---|---|---|---|---|")
    for n in names:
        cpu = median(n, "scheduler_cpu_ms_per_pod")
        ratio = f"{base / cpu:.1f}×" if base and cpu else "-"
        print(f"| {n} | {f(median(n, 'pods_per_second'))} | {f(cpu, 3)} | {ratio} | {f(median(n, 'scheduler_peak_rss_mib'), 0)} |")
EOF
