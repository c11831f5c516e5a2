#!/usr/bin/python3
"""The fuzzing record per target, as a markdown table: total CPU time,
executions, the latest coverage and corpus, findings, from the runs
scripts/fuzz appended to docs/fuzz-runs.tsv.

    fuzz_summary.py [docs/fuzz-runs.tsv]"""
import csv
import sys
from collections import OrderedDict


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "docs/fuzz-runs.tsv"
    with open(path, newline="") as f:
        runs = list(csv.DictReader(f, delimiter="\t"))
    by_target = OrderedDict()
    for r in sorted(runs, key=lambda r: r["target"]):
        t = by_target.setdefault(r["target"], {"seconds": 0, "executions": 0, "runs": 0, "findings": 0})
        t["seconds"] += int(r["cpu_s"])
        t["executions"] += int(r["executions"])
        t["runs"] += 1
        t["findings"] = max(t["findings"], int(r["findings"]))  # findings/ keeps every run's
        t["last"] = r
    print("| target | runs | CPU hours | executions | coverage (edges) | features | corpus | inputs in findings/ | last run |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for name, t in by_target.items():
        last = t["last"]
        print(f"| `{name}` | {t['runs']} | {t['seconds'] / 3600:.2f} | {t['executions']:,} | {last['coverage_edges']} | "
              f"{last['features']} | {last['corpus']} | {t['findings']} | {last['date'][:10]} ({last['commit']}) |")
    total = sum(t["seconds"] for t in by_target.values()) / 3600
    print(f"\n{total:.2f} CPU hours in all.")


if __name__ == "__main__":
    main()
