#!/usr/bin/env python3
"""tandem's CUPTI kernel timings against Nsight Compute's (what a profiler's kernel times must match).

Runs the same `tandem bench` twice on the GPU machine: once with
--profile DIR (CUPTI Activity records, what summary/trace report), once under
`ncu` measuring gpu__time_duration of every kernel (no cache flush, no clock
locking, so kernels run as they do without ncu). Kernels are grouped by their
function name (return type, template arguments and parameters dropped: the
two tools print them differently) and each group's mean duration compared;
the check is the CUPTI total of the bench run against the same launches
priced at ncu's means:  sum_k count_cupti(k) * mean_ncu(k) / sum_k total_cupti(k).

    python3 bench/profile_vs_ncu.py --tandem PATH MODEL [--out DIR] [-- bench options]
"""
import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

from passthrough_args import parse_with_passthrough


def base_name(name):
    """'void ns::f<a, b<c>>(int, float)' -> 'ns::f'."""
    s = name.strip().replace("(anonymous namespace)", "{anonymous}")
    out, depth = [], 0
    for ch in s:  # drop template argument lists, nested ones too
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    s = "".join(out)
    s = s.split("(")[0].strip()
    return s.split(" ")[-1] if " " in s else s


def cupti_kernels(trace_path):
    with open(trace_path) as f:
        t = json.load(f)
    events = t["traceEvents"] if isinstance(t, dict) else t
    groups = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            groups[base_name(e["name"])].append(float(e["dur"]) * 1e3)  # us -> ns
    return groups


UNIT_NS = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}


def ncu_kernels(csv_text):
    start = csv_text.find('"ID"')
    if start < 0:
        raise SystemExit("profile_vs_ncu: no CSV table in ncu's output:\n" + csv_text[-3000:])
    groups = defaultdict(list)
    for row in csv.DictReader(io.StringIO(csv_text[start:])):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        groups[base_name(row["Kernel Name"])].append(value * UNIT_NS.get(row["Metric Unit"], 1.0))
    return groups


def run(cmd, env):
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit("profile_vs_ncu: command failed (%d):\n%s" % (p.returncode, (p.stderr or p.stdout)[-3000:]))
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tandem", required=True)
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--out", help="keep the profile and the comparison here")
    ap.add_argument("model")
    a, extra = parse_with_passthrough(ap, sys.argv[1:])
    a.bench_args = extra
    out = a.out or tempfile.mkdtemp(prefix="profile_vs_ncu_")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, TANDEM_CACHE_DIR=os.path.join(out, "cache"))
    bench = [a.tandem, "bench", a.model, "--device", "cuda"] + a.bench_args
    run(bench + ["--iterations", "3", "--warmup", "1"], env)  # fills the algorithm cache: no search kernels below
    run(bench + ["--profile", os.path.join(out, "profile")], env)
    cupti = cupti_kernels(os.path.join(out, "profile", "trace.json"))
    ncu = run([a.ncu, "--csv", "--metrics", "gpu__time_duration.sum", "--cache-control", "none",
               "--clock-control", "none", "--graph-profiling", "node"] + bench + ["--iterations", "3", "--warmup", "1"],
              env).stdout
    ref = ncu_kernels(ncu)
    rows, priced, total = [], 0.0, 0.0
    for k, durs in cupti.items():
        c_total = sum(durs)
        if k in ref:
            n_mean = sum(ref[k]) / len(ref[k])
            priced += len(durs) * n_mean
            total += c_total
        rows.append({"kernel": k, "cupti_count": len(durs), "cupti_total_ns": c_total,
                     "cupti_mean_ns": c_total / len(durs), "ncu_count": len(ref.get(k, [])),
                     "ncu_mean_ns": (sum(ref[k]) / len(ref[k])) if k in ref else None})
    rows.sort(key=lambda r: -r["cupti_total_ns"])
    unmatched = sum(r["cupti_total_ns"] for r in rows if r["ncu_mean_ns"] is None)
    print("\n%-48s %7s %12s %12s %7s %12s %8s" % ("kernel (function)", "n", "CUPTI total", "CUPTI mean", "ncu n",
                                                "ncu mean", "ratio"))
    for r in rows[:15]:
        ratio = r["cupti_mean_ns"] / r["ncu_mean_ns"] if r["ncu_mean_ns"] else float("nan")
        print("%-48s %7d %10.3f ms %9.1f us %7d %9.1f us %8.3f" % (
            r["kernel"][-48:], r["cupti_count"], r["cupti_total_ns"] / 1e6, r["cupti_mean_ns"] / 1e3, r["ncu_count"],
            (r["ncu_mean_ns"] or 0) / 1e3, ratio))
    agreement = total / priced if priced else float("nan")
    verdict = "met" if abs(agreement - 1) <= 0.05 else "missed"
    print("\nCUPTI kernel total %.3f ms vs the same launches at ncu's means %.3f ms: ratio %.4f (target within 5%%: %s);"
          " %.3f ms of CUPTI kernel time had no ncu match" % (total / 1e6, priced / 1e6, agreement, verdict,
                                                              unmatched / 1e6))
    with open(os.path.join(out, "profile_vs_ncu.json"), "w") as f:
        json.dump({"ratio": agreement, "verdict": verdict, "cupti_matched_ns": total, "ncu_priced_ns": priced,
                   "unmatched_ns": unmatched, "kernels": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
