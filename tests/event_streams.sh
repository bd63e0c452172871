#!/usr/bin/env bash
# Records the event stream of every scenario, to compare an allocator or sorter change with the
# behaviour before it (issue 17: "behaviour is a contract").
#
#   tests/event_streams.sh record DIR          # every scenario, every sorter set-up, into DIR
#   tests/event_streams.sh compare BEFORE AFTER # differences, timing fields left out
#
# `record` runs target/debug/allocator-master (build it first: cargo build --workspace) on each
# allocator scenario with the built-in sorters and with examples/modules.json, on each sorter
# scenario with the built-ins and the modules, on each common sorter scenario with every shipped
# sorter, on the fault scenarios with the faulty fixture modules, and on the embedded default
# workload (built-in sorters; random role and weighted-priority framework sorters), and on the
# decayed-usage scenario with the drf_decay role sorter. `compare`
# drops the timing fields (`micros`, and the allocation-run latency metrics of the summary) and
# prints a diff per file that differs; it exits 1 if any does.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/debug/allocator-master

record() {
    local out=$1 tmp
    mkdir -p "$out"
    tmp=$(mktemp -d)
    run() { # name, then allocator-master arguments
        local name=$1
        shift
        "$bin" "$@" --output "$out/$name.jsonl" >/dev/null 2>"$out/$name.stderr" || echo "exit $?" >>"$out/$name.stderr"
    }
    for f in tests/scenarios/allocator/*.json examples/scenarios/*.json; do
        local n
        n=$(basename "$(dirname "$f")")_$(basename "$f" .json)
        run "$n" --scenario "$f"
        run "$n.modules" --scenario "$f" --modules examples/modules.json
    done
    for f in tests/scenarios/sorters/*/*.json; do
        local n
        n=sorters_$(basename "$(dirname "$f")")_$(basename "$f" .json)
        run "$n" --scenario "$f"
        run "$n.modules" --scenario "$f" --modules examples/modules.json
    done
    run default_workload
    run default_workload.random_weighted_priority --modules examples/modules.json \
        --role_sorter random --framework_sorter weighted_priority
    run allocator_decayed_usage_orders_roles_by_when_they_used_the_cluster.drf_decay \
        --scenario tests/scenarios/allocator/decayed_usage_orders_roles_by_when_they_used_the_cluster.json \
        --modules examples/modules.json --role_sorter drf_decay
    local faulty
    faulty=$(realpath target/debug/libfaulty_modules.so)
    printf '{"libraries": [{"file": "%s", "modules": [{"name": "faulty_allocator"}, {"name": "panicky"}]}]}' \
        "$faulty" >"$tmp/faulty.json"
    run faults_allocator_fails_mid_run --scenario tests/scenarios/faults/allocator_fails_mid_run.json \
        --modules "$tmp/faulty.json" --allocator faulty_allocator
    run faults_allocator_overallocates --scenario tests/scenarios/faults/allocator_overallocates.json \
        --modules "$tmp/faulty.json" --allocator faulty_allocator
    run faults_sorter_panics --scenario tests/scenarios/faults/sorter_panics.json \
        --modules "$tmp/faulty.json" --role_sorter panicky
    rm -r "$tmp"
}

# One event per line, timing fields removed, keys sorted.
normalise() {
    jq -cS 'del(.micros)
        | if .event == "summary" and .metrics then
            .metrics |= with_entries(select(.key | test("allocation_run(_latency)?_ms") | not))
          else . end' "$1"
}

compare() {
    local before=$1 after=$2 differ=0 n
    for n in $( (cd "$before" && ls -- *.jsonl; cd "$after" && ls -- *.jsonl) | sort -u); do
        if [[ ! -f $before/$n || ! -f $after/$n ]]; then
            echo "== $n: only in one of the two"
            differ=1
        elif ! diff -q <(normalise "$before/$n") <(normalise "$after/$n") >/dev/null; then
            echo "== $n"
            diff <(normalise "$before/$n") <(normalise "$after/$n") || true
            differ=1
        fi
    done
    return $differ
}

case ${1:-} in
record) record "$2" ;;
compare) compare "$2" "$3" ;;
*)
    echo "usage: $0 record DIR | compare BEFORE AFTER" >&2
    exit 2
    ;;
esac
