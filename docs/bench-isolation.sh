#!/usr/bin/env bash
# Issue 22 measurements: in-process against isolated, alternating, one sequence.
cd /work/wt-iso
B=target/release/allocator-master
date -u; uptime; git log --oneline -1
for pair in 1 2 3; do
  for iso in none process; do
    echo "### pair $pair DeclineOffers DRF sorter module isolation=$iso"
    $B --modules /tmp/iso-drf.json --role_sorter drf --framework_sorter drf --module_isolation $iso \
      bench decline-offers --agents 10000 --clients 1000 --rounds 5 2>&1 | grep "fw: runs\|fw: setup" | head -2
    echo "### pair $pair DeclineOffers binpack allocator module isolation=$iso"
    $B --modules /tmp/iso-binpack.json --allocator binpack --module_isolation $iso \
      bench decline-offers --agents 10000 --clients 1000 --rounds 5 2>&1 | grep "fw: runs\|fw: setup" | head -2
  done
done
for pair in 1 2 3; do
  for iso in none process; do
    echo "### pair $pair default workload DRF sorter modules isolation=$iso"
    /usr/bin/time -f "wall %e s, user %U s, sys %S s, RSS %M KB" $B --modules /tmp/iso-drf.json --role_sorter drf --framework_sorter drf \
      --module_isolation $iso --output /dev/null 2>&1 | grep -E "latency|wall"
    echo "### pair $pair default workload binpack allocator module isolation=$iso"
    /usr/bin/time -f "wall %e s, user %U s, sys %S s, RSS %M KB" $B --modules /tmp/iso-binpack.json --allocator binpack \
      --module_isolation $iso --output /dev/null 2>&1 | grep -E "latency|wall"
  done
done
date -u; uptime
