#!/usr/bin/env bash
# replay.sh - the packing experiment's pod list through a real API server (issue 47): for each
# policy, a fresh test cluster (tools/kube/cluster.sh up + KWOK), the GPU nodes and the pods in
# the experiment's arrival order (`allocator-master kube-replay trace`), then `allocator-master
# kube` with the same module library and the experiment's module parameters, timed by
# `kube-replay measure`; prints the experiment's allocated-GPU share beside the cluster's.
#
#   tools/kube/replay.sh [--policies FGD,BestFit,Random] [--seed 42] [--node_limit N]
#                        [--pods data/alibaba-gpu-v2023/openb_pod_list_default.csv] [--out DIR]
#
# Needs target/release/allocator-master and the module libraries of examples/modules.json
# (`cargo build --release --workspace`).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
MASTER=${MASTER:-$root/target/release/allocator-master}
MODULES=${MODULES:-$root/examples/modules.json}
POLICIES=FGD,BestFit,Random SEED=42 LIMIT="" OUT=""
NODES_CSV=$root/data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv
PODS_CSV=$root/data/alibaba-gpu-v2023/openb_pod_list_default.csv
INTERVAL=${INTERVAL:-100ms}
WINDOW=${WINDOW:-1}     # pods stated a run: 1 as the experiment (see docs/faithfulness.md)
while [ $# -gt 0 ]; do
  case "$1" in
    --policies) POLICIES=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --node_limit) LIMIT=$2; shift 2 ;;
    --pods) PODS_CSV=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "usage: $0 [--policies LIST] [--seed N] [--node_limit N] [--pods CSV] [--out DIR]" >&2; exit 2 ;;
  esac
done
[ -x "$MASTER" ] || { echo "replay.sh: $MASTER missing: cargo build --release --workspace" >&2; exit 1; }
[ -n "$OUT" ] || OUT=$(mktemp -d "${TMPDIR:-/tmp}/allocator-replay.XXXXXX")
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
limit=(); [ -n "$LIMIT" ] && limit=(--node_limit "$LIMIT")

IFS=, read -r -a list <<< "$POLICIES"
for p in "${list[@]}"; do
  dir=$OUT/cluster-$p
  kubeconfig=$("$here/cluster.sh" up "$dir")
  "$here/cluster.sh" kwok "$dir"
  "$MASTER" kube-replay trace --kubeconfig "$kubeconfig" --nodes "$NODES_CSV" --pods "$PODS_CSV" \
    --seed "$SEED" "${limit[@]}" --allocator "$p" --modules "$MODULES" \
    --manifest_out "$OUT/$p-modules.json" --output "$OUT/$p-trace.json" 2> "$OUT/$p-trace.log" ||
    { cat "$OUT/$p-trace.log" >&2; "$here/cluster.sh" down "$dir"; exit 1; }
  pods=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pods"])' "$OUT/$p-trace.json")
  "$MASTER" kube-replay measure --kubeconfig "$kubeconfig" --namespace replay --expect "$pods" \
    --settle 60 --timeout 3600 --apiserver_pid "$(cat "$dir/apiserver.pid")" --label "$p" \
    --log "$OUT/$p-scheduler.log" --output "$OUT/$p-measure.json" -- \
    "$MASTER" kube --kubeconfig "$kubeconfig" --listen 127.0.0.1:0 --roles_config_map none \
    --modules "$OUT/$p-modules.json" --allocator "$p" --seed "$SEED" --allocation_interval "$INTERVAL" \
    --request_window "$WINDOW" || true
  "$here/cluster.sh" down "$dir"
done

python3 - "$OUT" "${list[@]}" <<'EOF'
import json, sys
out, names = sys.argv[1], sys.argv[2:]
print("| policy | nodes | GPUs | pods | experiment: allocated GPU % | pods placed | cluster: allocated GPU % | pods bound | difference (pp) |")
print("|---|---|---|---|---|---|---|---|---|")
for n in names:
    t = json.load(open(f"{out}/{n}-trace.json"))
    try:
        m = json.load(open(f"{out}/{n}-measure.json"))
    except OSError:
        m = {}
    e, c = t["experiment_allocated_percent"], m.get("allocated_gpu_percent")
    d = "-" if c is None else f"{c - e:+.2f}"
    cs = "-" if c is None else f"{c:.2f}"
    print(f"| {n} | {t['nodes']} | {t['gpus']} | {t['pods']} | {e:.2f} | {t['pods'] - t['experiment_dropped']} | {cs} | {m.get('bound', '-')} | {d} |")
EOF
