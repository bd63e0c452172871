#!/usr/bin/env python3
"""Compares `allocator-master experiment` results with the FGD artifact's cached results.

Usage: python3 tools/faithfulness.py OURS.csv ARTIFACT.csv [COLUMN [WHAT]]

Both files have the layout of the artifact's `analysis_allo_discrete.csv` (SPEC 7); the
artifact's policy names (`01-Random`, …) are matched to ours by what follows the dash. For each
pod list and policy it prints the mean over seeds at arrived-demand bucket COLUMN (default 100)
for both, and their difference (WHAT names the measure in the heading, default
"allocated GPU %"); then, per pod list, every pair of policies whose artifact means
differ by more than 1 percentage point, and whether ours rank them the same way. Markdown on
stdout; the exit status is 1 when a policy is more than 1 pp off on the default trace or a
ranking disagrees, else 0. Standard library only.
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


def main():
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
