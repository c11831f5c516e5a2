#!/usr/bin/env python3
"""Tag throughput of k `tandem tag --queue` workers on one PostgreSQL
catalog against k times one worker's (docs/SCALING.md; target >= 0.9 k
until the database is the limit). Each worker is pinned to cores of its
own (--cores-per-worker, a slice of the machine as a worker on a machine
of its own would have), with as many decoder and compute threads; the
server, on the same machine, is started by tests/postgres_server.py
(fsync on) and shares the cores. For each k: a fresh database, the k
workers started together on the same folder, the clock from their start
to the last one's exit; then every file is checked stored exactly once.
The peer in the same run, the machine's own ceiling: k independent
processes, each on its own k-th of the files (a folder of links) with a
SQLite catalog of its own, pinned the same way, no queue between them.

  bench/queue_workers.py --tandem build/cli/tandem --photos DIR [--workers 1,2]
                         [--cores-per-worker 1] [--device cpu] [-- TAG_ARGS...]

Prints a markdown table and one JSON line.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_workers(a, k, url, shares=None):
    """k pinned `tag` processes: on one queue at `url`, or each on its own
    folder of `shares` with its own SQLite catalog; seconds until the last exits."""
    procs = []
    cores = sorted(os.sched_getaffinity(0))
    start = time.perf_counter()
    for w in range(k):
        mine = cores[w * a.cores_per_worker:(w + 1) * a.cores_per_worker]
        if len(mine) < a.cores_per_worker:
            sys.exit("%d workers of %d cores need %d cores; this machine has %d" % (
                k, a.cores_per_worker, k * a.cores_per_worker, len(cores)))
        n = str(a.cores_per_worker)
        where = ["--catalog", url, "--queue"] if shares is None else ["--catalog", shares[w] + ".sqlite"]
        cmd = [a.tandem, "tag", a.photos if shares is None else shares[w], *where, "--device", a.device,
               "--threads", n, "--decoders", n, *a.tag_args]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                      preexec_fn=lambda m=mine: os.sched_setaffinity(0, m)))
    errors = []
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            errors.append(err[-500:])
    seconds = time.perf_counter() - start
    if errors:
        sys.exit("a worker failed: " + errors[0])
    return seconds


def independent(a, k, files):
    """k processes on k disjoint shares of the files, no queue: seconds."""
    with tempfile.TemporaryDirectory() as d:
        shares = []
        for w in range(k):
            share = os.path.join(d, "share%d" % w)
            os.makedirs(share)
            for f in files[w::k]:
                os.symlink(os.path.join(a.photos, f), os.path.join(share, f))
            shares.append(share)
        return run_workers(a, k, None, shares)


def inner(a):
    host, user = os.environ["TANDEM_TEST_POSTGRES_HOST"], os.environ["TANDEM_TEST_POSTGRES_USER"]
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    import postgres_server
    files = sorted(f for f in os.listdir(a.photos) if f.lower().endswith((".jpg", ".jpeg")))
    rows = []
    for k in a.workers:
        db = "workers_%d" % k
        postgres_server.create_database(db)
        url = "postgresql:///%s?host=%s&user=%s" % (db, host, user)
        seconds = run_workers(a, k, url)
        psql = [os.path.join(os.environ["TANDEM_TEST_POSTGRES_BIN"], "psql"), "-h", host, "-U", user, "-X", "-A",
                "-t", "-d", db, "-c", "SELECT count(*), count(DISTINCT path) FROM files"]
        stored, distinct = map(int, subprocess.run(psql, capture_output=True, text=True,
                                                   check=True).stdout.strip().split("|"))
        if stored != len(files) or distinct != len(files):
            sys.exit("%d workers stored %d rows of %d distinct paths for %d files" % (k, stored, distinct, len(files)))
        alone = independent(a, k, files)
        rows.append({"workers": k, "seconds": seconds, "img_per_s": len(files) / seconds,
                     "independent_img_per_s": len(files) / alone})
    one = rows[0]["img_per_s"] / rows[0]["workers"]
    print("| workers | cores each | seconds | img/s | img/s / (k x one worker's) | k independent processes, img/s | queue / independent |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        r["efficiency"] = r["img_per_s"] / (r["workers"] * one)
        print("| %d | %d | %.1f | %.2f | %.2f | %.2f | %.2f |" % (
            r["workers"], a.cores_per_worker, r["seconds"], r["img_per_s"], r["efficiency"],
            r["independent_img_per_s"], r["img_per_s"] / r["independent_img_per_s"]))
    print(json.dumps({"files": len(files), "device": a.device, "cores_per_worker": a.cores_per_worker,
                      "tag_args": a.tag_args, "runs": rows}))
    return 0


def main():
    argv = sys.argv[1:]
    tag_args = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser()
    p.add_argument("--tandem", required=True)
    p.add_argument("--photos", required=True)
    p.add_argument("--workers", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2])
    p.add_argument("--cores-per-worker", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.tag_args = tag_args
    a.tandem, a.photos = os.path.abspath(a.tandem), os.path.abspath(a.photos)
    if a.inner:
        return inner(a)
    server = os.path.join(HERE, "..", "tests", "postgres_server.py")
    cmd = [sys.executable, server, "--durable", sys.executable, os.path.abspath(__file__), "--inner",
           "--tandem", a.tandem, "--photos", a.photos, "--workers", ",".join(map(str, a.workers)),
           "--cores-per-worker", str(a.cores_per_worker), "--device", a.device]
    return subprocess.run(cmd + (["--", *tag_args] if tag_args else [])).returncode


if __name__ == "__main__":
    sys.exit(main())
