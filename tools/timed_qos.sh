#!/usr/bin/env bash
# The packing experiment's policies on the Alibaba GPU trace as a *timed* workload: its four QoS
# classes as roles under DRF, pods arriving (compressed by --load) and finishing, every policy a
# placement module choosing where (the built-in allocator for comparison, its frameworks taking
# the tightest device of each offer). Prints one table: per policy and role, the mean and p99
# wait and the time-averaged dominant share, beside GPU allocation and the GPU fragmentation
# line of the summary.
#
#   tools/timed_qos.sh [LOAD] [HORIZON]       # defaults: 1000000 (all pods within ~13 s), 600 s
#
# Needs target/release/allocator-master and the modules (cargo build --release) and the trace in
# data/alibaba-gpu-v2023/.
set -euo pipefail
cd "$(dirname "$0")/.."
load=${1:-1000000}
horizon=${2:-600}
T=data/alibaba-gpu-v2023
bin=target/release/allocator-master
scenario=$(mktemp --suffix=.json)
trap 'rm -f "$scenario"' EXIT
"$bin" import alibaba-gpu-v2023 --nodes "$T/openb_node_list_gpu_node.csv" \
    --pods "$T/openb_pod_list_default.csv" --load "$load" --horizon "$horizon" \
    --devices --request 100000 >"$scenario" 2>/dev/null
printf '%-13s %-11s %9s %9s %9s %8s %11s %12s\n' policy role "wait mean" "wait p99" "avg share" pending "GPU alloc" "GPU idle while waiting"
for a in hierarchical Random DotProd GpuClustering GpuPacking BestFit FGD; do
    "$bin" --scenario "$scenario" --modules examples/modules.json --allocator "$a" 2>/dev/null | awk -v a="$a" '
        /^ROLE/ { table = 1; next }
        table && NF == 10 { role[++n] = $1; share[n] = $3; pend[n] = $8; mean[n] = $9; p99[n] = $10; next }
        /^utilisation:/ { table = 0; match($0, /gpus [0-9.]+% \(avg [0-9.]+%\)/); g = substr($0, RSTART, RLENGTH); sub(/gpus [0-9.]+% \(avg /, "", g); sub(/\)/, "", g) }
        /^GPU fragmentation:/ { match($0, /[0-9.]+% of GPUs/); f = substr($0, RSTART, RLENGTH); sub(/ of GPUs/, "", f) }
        END { for (i = 1; i <= n; i++) printf "%-13s %-11s %9s %9s %9s %8s %11s %12s\n", (i == 1 ? a : ""), role[i], mean[i], p99[i], share[i], pend[i], (i == 1 ? g : ""), (i == 1 ? f : "") }'
done
