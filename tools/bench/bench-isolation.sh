#!/usr/bin/env bash
# Isolation measurements (BENCHMARKS.md, "Isolation, the sandbox and explanations"; the log:
# docs/history/benchmarks.md, "Issue 22: isolation" and its steps): the DRF sorter module and the
# binpack allocator module (examples/custom-allocator), in-process against isolated,
# alternating, in one sequence. Build first:
#   cargo build --release -p allocator-master -p drf_sorter -p binpack_allocator
set -euo pipefail
cd "$(dirname "$0")/../.."
B=target/release/allocator-master
dir=$(mktemp -d)
echo '{"libraries":[{"name":"drf_sorter","modules":[{"name":"drf"}]}]}' >"$dir/drf.json"
echo '{"libraries": [{"name": "binpack_allocator", "modules": [{"name": "binpack", "parameters": [{"key": "min_free_cpus", "value": "1"}]}]}]}' >"$dir/binpack.json"
date -u; uptime; git log --oneline -1
for pair in 1 2 3; do
  for iso in none process; do
    echo "### pair $pair DeclineOffers DRF sorter module isolation=$iso"
    $B --modules "$dir/drf.json" --role_sorter drf --framework_sorter drf --module_isolation $iso \
      bench decline-offers --agents 10000 --clients 1000 --rounds 5 2>&1 | grep "fw: runs\|fw: setup" | head -2
    echo "### pair $pair DeclineOffers binpack allocator module isolation=$iso"
    $B --modules "$dir/binpack.json" --allocator binpack --module_isolation $iso \
      bench decline-offers --agents 10000 --clients 1000 --rounds 5 2>&1 | grep "fw: runs\|fw: setup" | head -2
  done
done
for pair in 1 2 3; do
  for iso in none process; do
    echo "### pair $pair default workload DRF sorter modules isolation=$iso"
    /usr/bin/time -f "wall %e s, user %U s, sys %S s, RSS %M KB" $B --modules "$dir/drf.json" \
      --role_sorter drf --framework_sorter drf --module_isolation $iso --output /dev/null 2>&1 | grep -E "latency|wall"
    echo "### pair $pair default workload binpack allocator module isolation=$iso"
    /usr/bin/time -f "wall %e s, user %U s, sys %S s, RSS %M KB" $B --modules "$dir/binpack.json" \
      --allocator binpack --module_isolation $iso --output /dev/null 2>&1 | grep -E "latency|wall"
  done
done
date -u; uptime
rm -r "$dir"
