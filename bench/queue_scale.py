#!/usr/bin/env python3
"""The catalog as a work queue at scale (docs/SCALING.md): a PostgreSQL
server of its own (tests/postgres_server.py --durable: fsync on, as a
real catalog's), a queue of N files (default 10 million, generated), then
bench/queue_throughput with 1, 4, 16 and 64 concurrent workers (threads
with a worker process's connections: claim 128 files, store a typical
result for each, repeat), each for S seconds; beside them, the peer in
the same run: pgbench's simple-update transactions with as many clients.
Then the tables' and indexes' sizes per million stored photos.

  bench/queue_scale.py --bin build/bench/queue_throughput [--rows N] [--seconds S]

Prints a markdown table and one JSON line.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def inner(a):
    host, user = os.environ["TANDEM_TEST_POSTGRES_HOST"], os.environ["TANDEM_TEST_POSTGRES_USER"]
    bindir = os.environ["TANDEM_TEST_POSTGRES_BIN"]
    psql = [os.path.join(bindir, "psql"), "-h", host, "-U", user, "-X", "-q", "-A", "-t"]
    subprocess.run(psql + ["-d", "postgres", "-c", "CREATE DATABASE queue_bench", "-c", "CREATE DATABASE pgbench"],
                   check=True)
    url = "postgresql:///queue_bench?host=%s&user=%s" % (host, user)
    fill = subprocess.run([a.bin, url, "--rows", str(a.rows), "--workers", "1", "--seconds", "1"],
                          capture_output=True, text=True)
    if fill.returncode != 0:
        sys.exit("filling the queue failed: " + fill.stderr)
    subprocess.run([os.path.join(bindir, "pgbench"), "-h", host, "-U", user, "-i", "-q", "-s", "10", "pgbench"],
                   check=True, capture_output=True)
    rows = []
    for w in a.workers:
        r = subprocess.run([a.bin, url, "--workers", str(w), "--seconds", str(a.seconds)], capture_output=True,
                           text=True)
        if r.returncode != 0:
            sys.exit("queue_throughput with %d workers failed: %s" % (w, r.stderr))
        row = json.loads(r.stdout.strip().splitlines()[-1])
        pb = subprocess.run([os.path.join(bindir, "pgbench"), "-h", host, "-U", user, "-b", "simple-update",
                             "-c", str(w), "-j", str(min(w, 4)), "-T", str(a.seconds), "pgbench"],
                            capture_output=True, text=True)
        tps = 0.0
        for line in pb.stdout.splitlines():
            if line.startswith("tps = "):
                tps = float(line.split()[2])
        row["pgbench_tps"] = tps
        row["stored_vs_pgbench_tps"] = row["stored_per_s"] / tps if tps else None
        rows.append(row)
    sizes = {}
    out = subprocess.run(psql + ["-d", "queue_bench", "-F", "\t", "-c", """
SELECT c.relname, pg_table_size(c.oid), pg_indexes_size(c.oid) FROM pg_class c
WHERE c.relname IN ('files', 'tags', 'objects', 'photo_meta', 'work', 'workers') ORDER BY 1"""],
                         capture_output=True, text=True, check=True).stdout
    stored = int(subprocess.run(psql + ["-d", "queue_bench", "-c", "SELECT count(*) FROM files"], capture_output=True,
                                text=True, check=True).stdout.strip())
    queued = int(subprocess.run(psql + ["-d", "queue_bench", "-c", "SELECT count(*) FROM work"], capture_output=True,
                                text=True, check=True).stdout.strip())
    for line in out.strip().splitlines():
        name, table, index = line.split("\t")
        per = stored if name != "work" else queued
        sizes[name] = {"table_mb_per_million": int(table) / 2**20 * 1e6 / max(per, 1),
                       "index_mb_per_million": int(index) / 2**20 * 1e6 / max(per, 1)}
    print("| workers | files claimed/s | files stored/s | claim ms p50 / p99 | commit ms p50 / p99 | pgbench simple-update tps (same clients) | stored files / pgbench tps |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| %d | %.0f | %.0f | %.1f / %.1f | %.1f / %.1f | %.0f | %.2f |" % (
            r["workers"], r["claimed_per_s"], r["stored_per_s"], r["claim_ms_p50"], r["claim_ms_p99"],
            r["commit_ms_p50"], r["commit_ms_p99"], r["pgbench_tps"], r["stored_vs_pgbench_tps"] or 0))
    print()
    print("| table | MB per million rows (table) | MB per million rows (indexes) |")
    print("| --- | --- | --- |")
    for name, s in sizes.items():
        print("| %s | %.0f | %.0f |" % (name, s["table_mb_per_million"], s["index_mb_per_million"]))
    print(json.dumps({"rows_queued": queued, "rows_stored": stored, "runs": rows, "sizes": sizes}))
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--seconds", type=int, default=20)
    p.add_argument("--workers", type=lambda s: [int(x) for x in s.split(",")], default=[1, 4, 16, 64])
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    a.bin = os.path.abspath(a.bin)
    if a.inner:
        return inner(a)
    server = os.path.join(HERE, "..", "tests", "postgres_server.py")
    return subprocess.run([sys.executable, server, "--durable", sys.executable, os.path.abspath(__file__), "--inner",
                           "--bin", a.bin, "--rows", str(a.rows), "--seconds", str(a.seconds),
                           "--workers", ",".join(map(str, a.workers))]).returncode


if __name__ == "__main__":
    sys.exit(main())
