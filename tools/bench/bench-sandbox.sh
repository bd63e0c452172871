#!/usr/bin/env bash
# Sandbox measurements (BENCHMARKS.md, "Isolation, the sandbox and explanations"; the log:
# docs/history/benchmarks.md, "Issue 31: the worker sandbox"): the binpack allocator
# module (examples/custom-allocator) and the DRF sorter modules, in-process, isolated without
# the sandbox and isolated with it, alternating, ROUNDS rounds (default 3). DeclineOffers 10,000 x 1,000.
# Build first, the commit before the sandbox and the one with it, each copied aside in
# target/release (the libraries are found beside the executable):
#   cargo build --release -p allocator-master -p drf_sorter -p binpack_allocator
#   cp target/release/allocator-master target/release/allocator-master-sandbox   # with it
#   (the same at the commit before) target/release/allocator-master-nosandbox
set -euo pipefail
cd "$(dirname "$0")/../.."
NEW=target/release/allocator-master-sandbox
OLD=target/release/allocator-master-nosandbox
dir=$(mktemp -d)
echo '{"libraries":[{"name":"drf_sorter","modules":[{"name":"drf"}]}]}' >"$dir/drf.json"
echo '{"libraries": [{"name": "binpack_allocator", "modules": [{"name": "binpack", "parameters": [{"key": "min_free_cpus", "value": "1"}]}]}]}' >"$dir/binpack.json"
date -u; uptime; id -u; git log --oneline -1
for round in $(seq 1 "${ROUNDS:-3}"); do
  for v in none:$NEW process:$OLD process:$NEW; do
    iso=${v%%:*}; bin=${v#*:}
    echo "### round $round binpack allocator module isolation=$iso $bin"
    $bin --modules "$dir/binpack.json" --allocator binpack --module_isolation $iso \
      bench decline-offers --agents 10000 --clients 1000 --rounds 5 2>&1 | grep "fw: runs" | head -1
  done
  for v in none:$NEW process:$OLD process:$NEW; do
    iso=${v%%:*}; bin=${v#*:}
    echo "### round $round DRF sorter modules isolation=$iso $bin"
    $bin --modules "$dir/drf.json" --role_sorter drf --framework_sorter drf --module_isolation $iso \
      bench decline-offers --agents 10000 --clients 1000 --rounds 5 2>&1 | grep "fw: runs" | head -1
  done
done
date -u; uptime
rm -r "$dir"
