#!/usr/bin/env python3
"""Compares `allocator-master experiment` results with the FGD artifact's cached results.

Usage: python3 tools/faithfulness.py OURS.csv ARTIFACT.csv [COLUMN [WHAT]]
       python3 tools/faithfulness.py --cells OURS.csv ARTIFACT.csv [TOLERANCE]

Both files have the layout of the artifact's `analysis_allo_discrete.csv` (SPEC 7); the
artifact's policy names (`01-Random`, …) are matched to ours by what follows the dash. For each
pod list and policy it prints the mean over seeds at arrived-demand bucket COLUMN (default 100)
for both, and their difference (WHAT names the measure in the heading, default
"allocated GPU %"); then, per pod list, every pair of policies whose artifact means
differ by more than 1 percentage point, and whether ours rank them the same way. Markdown on
stdout; the exit status is 1 when a policy is more than 1 pp off on the default trace or a
ranking disagrees, else 0.

With `--cells` (for `experiment --order artifact`, which reproduces the artifact seed for
seed) it compares every cell instead: each row of OURS (pod list, policy, seed) with the
artifact's row, bucket by bucket; a cell matches when the two differ by at most TOLERANCE
(default 0.01: one unit of the two decimals both files hold; each side rounds its own
bucket mean, and ours computes the per-pod percentage and the mean in a different
floating-point order than the artifact's pandas script, so a mean that lies on a rounding
boundary can print one unit apart), a row when all its cells do.
It prints, per policy, the rows that match of those compared, the cells that match, and the
largest difference, then the rows that do not match. The exit status is 1 when a row of a
policy other than Random does not match (the artifact's own Random runs are not
reproducible: docs/faithfulness.md). Standard library only.
"""

import csv
import sys
from collections import defaultdict
from itertools import combinations

POLICIES = ["Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"]


def means(path, column):
    cells = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            policy = row["sc_policy"].split("-", 1)[-1]
            trace = row["workload"].replace("openb_pod_list_", "")
            if row[column] != "":
                cells[(trace, policy)].append(float(row[column]))
    return {k: sum(v) / len(v) for k, v in cells.items()}


def rows(path):
    out = {}
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        buckets = [c for c in reader.fieldnames if c.isdigit()]
        for row in reader:
            policy = row["sc_policy"].split("-", 1)[-1]
            trace = row["workload"].replace("openb_pod_list_", "")
            out[(trace, policy, int(row["seed"]))] = {b: row[b] for b in buckets}
    return out


def compare_cells(ours_path, theirs_path, tolerance):
    ours, theirs = rows(ours_path), rows(theirs_path)
    stats = defaultdict(lambda: [0, 0, 0, 0, 0.0])  # rows, rows matching, cells, matching, worst
    bad = []
    for key in sorted(ours):
        if key not in theirs:
            continue
        s = stats[key[1]]
        s[0] += 1
        mismatched = 0
        for b, v in ours[key].items():
            w = theirs[key].get(b, "")
            if v == "" or w == "":
                continue
            d = abs(float(v) - float(w))
            s[2] += 1
            s[4] = max(s[4], d)
            if d <= tolerance + 1e-9:
                s[3] += 1
            else:
                mismatched += 1
        if mismatched == 0:
            s[1] += 1
        else:
            bad.append((key, mismatched))
    print(f"Cell by cell against the artifact (a cell matches within {tolerance} pp).\n")
    print("| policy | rows matching | cells matching | largest difference (pp) |")
    print("|---|---|---|---|")
    failed = False
    for p in POLICIES:
        if p not in stats:
            continue
        n, ok, c, cok, worst = stats[p]
        print(f"| {p} | {ok} / {n} | {cok} / {c} | {worst:.2f} |")
        if ok < n and p != "Random":
            failed = True
    if bad:
        print("\nRows that differ (pod list, policy, seed: cells off):\n")
        for (t, p, seed), m in bad:
            print(f"- {t}, {p}, {seed}: {m}")
    return 1 if failed else 0


def main():
    if sys.argv[1] == "--cells":
        tolerance = float(sys.argv[4]) if len(sys.argv) > 4 else 0.01
        return compare_cells(sys.argv[2], sys.argv[3], tolerance)
    ours_path, theirs_path = sys.argv[1], sys.argv[2]
    column = sys.argv[3] if len(sys.argv) > 3 else "100"
    what = sys.argv[4] if len(sys.argv) > 4 else "allocated GPU %"
    ours, theirs = means(ours_path, column), means(theirs_path, column)
    traces = sorted({t for t, _ in ours}, key=lambda t: (t != "default", t))
    policies = [p for p in POLICIES if any((t, p) in ours for t in traces)]
    failed = False
    print(f"Mean {what} at {column} % arrived, over the seeds in the files: "
          "ours / artifact (difference, pp).\n")
    print("| pod list | " + " | ".join(policies) + " |")
    print("|---|" + "---|" * len(policies))
    worst = 0.0
    for t in traces:
        cells = []
        for p in policies:
            if (t, p) in ours and (t, p) in theirs:
                d = ours[(t, p)] - theirs[(t, p)]
                worst = max(worst, abs(d))
                mark = " **!**" if abs(d) > 1.0 else ""
                cells.append(f"{ours[(t, p)]:.2f} / {theirs[(t, p)]:.2f} ({d:+.2f}){mark}")
                if t == "default" and abs(d) > 1.0:
                    failed = True
            else:
                cells.append("–")
        print(f"| {t} | " + " | ".join(cells) + " |")
    print(f"\nLargest difference: {worst:.2f} pp.\n")
    print("Rankings: pairs of policies whose artifact means differ by more than 1 pp.\n")
    print("| pod list | pairs | same order | disagreeing |")
    print("|---|---|---|---|")
    for t in traces:
        pairs = same = 0
        wrong = []
        for a, b in combinations(policies, 2):
            if (t, a) not in theirs or (t, b) not in theirs or (t, a) not in ours or (t, b) not in ours:
                continue
            gap = theirs[(t, a)] - theirs[(t, b)]
            if abs(gap) <= 1.0:
                continue
            pairs += 1
            if (ours[(t, a)] - ours[(t, b)]) * gap > 0:
                same += 1
            else:
                wrong.append(f"{a} vs {b}")
                failed = True
        print(f"| {t} | {pairs} | {same} | {', '.join(wrong) or '–'} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
