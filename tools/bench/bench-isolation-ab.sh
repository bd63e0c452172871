#!/usr/bin/env bash
# A/B (docs/history/benchmarks.md, "Isolated sorters: fewer round trips"): the isolated DRF sorter modules
# built two ways — OLD=<a copy of the committed release build> (the reply poll yields) and
# target/release (a build with the variant under test, e.g. spinning) — beside in-process;
# alternating, 3 rounds. DeclineOffers 10,000 x 1,000.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$(mktemp -d)
echo '{"libraries":[{"name":"drf_sorter","modules":[{"name":"drf"}]}]}' >"$dir/drf.json"
cp target/release/libdrf_sorter.so "$dir/"
date -u; uptime
for pair in 1 2 3; do
  for v in none:target/release/allocator-master process:"${OLD:?the committed build, copied aside}" process:target/release/allocator-master; do
    iso=${v%%:*}; bin=${v#*:}
    echo "### $pair $iso $bin"
    $bin --modules "$dir/drf.json" --role_sorter drf --framework_sorter drf --module_isolation $iso \
      bench decline-offers --agents 10000 --clients 1000 --rounds 5 2>&1 | grep "fw: runs" | head -1
  done
done
date -u; uptime
rm -r "$dir"
