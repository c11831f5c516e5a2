#!/usr/bin/env python3
"""What `--profile` costs `tandem tag` (the aim: <= 2% of throughput).

Runs `tandem tag DIR` with and without `--profile` alternately, N pairs (a
fresh catalog each time, so every run tags every file), and compares the
median rates that tag's summary reports (images/s after model load). The
order alternates (plain first in even pairs, profiled first in odd ones) so a
machine that speeds up or slows down during the series burdens both sides.

    python3 bench/profile_overhead.py DIR --tandem PATH --model M.onnx [--pairs 5] [-- tag options]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from passthrough_args import parse_with_passthrough

RATE = re.compile(r"([0-9.]+) s, ([0-9.]+) images/s")


def tag_rate(a, profile):
    tmp = tempfile.mkdtemp(prefix="profile_overhead_")
    cmd = [a.tandem, "tag", a.directory, "--model", a.model, "--catalog", os.path.join(tmp, "c.sqlite")] + a.tag_args
    if profile:
        cmd += ["--profile", os.path.join(tmp, "profile")]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    m = RATE.search(p.stderr)
    if p.returncode != 0 or not m:
        sys.exit("profile_overhead: %s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return float(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("directory")
    ap.add_argument("--tandem", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--pairs", type=int, default=5)
    a, extra = parse_with_passthrough(ap, sys.argv[1:])
    a.tag_args = extra
    tag_rate(a, False)  # warm-up: page cache, algorithm cache
    plain, profiled = [], []
    for i in range(a.pairs):
        for profile in ((False, True) if i % 2 == 0 else (True, False)):
            r = tag_rate(a, profile)
            (profiled if profile else plain).append(r)
            print("pair %d %-9s %8.2f img/s" % (i + 1, "profiled" if profile else "plain", r), flush=True)
    mp, mq = statistics.median(plain), statistics.median(profiled)
    ratio = mq / mp
    print("median plain %.2f img/s, profiled %.2f img/s: ratio %.4f (target >= 0.98: %s)" %
          (mp, mq, ratio, "met" if ratio >= 0.98 else "missed"))
    print(json.dumps({"plain": plain, "profiled": profiled, "median_plain": mp, "median_profiled": mq,
                      "ratio": ratio, "pairs": a.pairs}))


if __name__ == "__main__":
    main()
