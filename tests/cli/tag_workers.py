#!/usr/bin/env python3
"""`tandem tag --queue`: several workers share one catalog's work queue.

Runs beside a PostgreSQL server (tests/postgres_server.py starts it), and
on a SQLite catalog file too. On 48 photos (darknet's six, eight copies
each), with a reference catalog from one ordinary run:

  - 4 workers on one PostgreSQL catalog, 2 of them SIGKILLed mid-run:
    the 2 left take the dead workers' files once their 3 s leases run out,
    and the catalog ends with every file once, with the reference's
    objects and tags; `tandem status` counts all of them done;
  - the PostgreSQL server stopped mid-run and started again 3 s later:
    2 workers reconnect and end with the same catalog; stopped for good,
    a worker with --db-retry 3 gives up within seconds, exits non-zero
    naming the database, and no file is marked done that was not stored;
  - 2 workers on one SQLite catalog, 1 killed: the same;
  - --queue without --catalog, and with --force, are refused.

  tag_workers.py TANDEM_BINARY   exit 0: passed, 1: failures, 77: skipped
"""
import glob
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import postgres_server  # noqa: E402  (stops and starts the server it runs)
import tag_cli  # noqa: E402  (its check() and failure count)

check = tag_cli.check
DARKNET = "/usr/share/darknet/data"
NAMES = ["dog", "eagle", "giraffe", "horses", "kite", "person"]
# One decoder and one compute thread each: four workers share two cores.
WORKER = ["--device", "cpu", "--faces", "off", "--thumbnails", "off", "--threads", "1", "--decoders", "1"]


def tandem(*args, **kw):
    return subprocess.run([TANDEM, *args], capture_output=True, text=True, **kw)


def photos(d):
    folder = os.path.join(d, "photos")
    os.makedirs(folder)
    for copy in range(8):
        for n in NAMES:
            shutil.copy(os.path.join(DARKNET, n + ".jpg"), os.path.join(folder, "%s_%d.jpg" % (n, copy)))
    return folder


def contents(sqlite_file):
    """path -> (status, tags, objects) of a catalog file, without timings."""
    db = sqlite3.connect(sqlite_file)
    out, twice = {}, []
    for fid, path, status in db.execute("SELECT id, path, status FROM files"):
        tags = db.execute("SELECT label, score FROM tags WHERE file_id = ? ORDER BY rank", (fid,)).fetchall()
        objs = db.execute("SELECT label, score, x1, y1, x2, y2 FROM objects WHERE file_id = ? ORDER BY rank",
                          (fid,)).fetchall()
        if path in out:
            twice.append(path)
        out[path] = (status, tags, objs)
    check(not twice, "%s: every file stored once (twice: %s)" % (os.path.basename(sqlite_file), twice[:3]))
    return out


def same_results(got, want, what):
    """Same files, statuses and labels; scores and boxes as close as batches of other sizes allow."""
    if not check(sorted(got) == sorted(want), "%s: the same %d files (got %d)" % (what, len(want), len(got))):
        return
    worst = 0.0
    for path, (status, tags, objs) in want.items():
        g = got[path]
        if g[0] != status or [t[0] for t in g[1]] != [t[0] for t in tags] or [o[0] for o in g[2]] != [o[0] for o in objs]:
            check(False, "%s: %s differs: %s against %s" % (what, path, g, want[path]))
            return
        for a, b in zip(g[1] + g[2], tags + objs):
            worst = max([worst] + [abs(x - y) for x, y in zip(a[1:], b[1:])])
    check(worst < 1e-3, "%s: every file's tags and objects as the reference's (largest difference %.2g)" % (what, worst))


def start_workers(n, folder, catalog, log_dir, extra=()):
    procs = []
    for w in range(n):
        out = open(os.path.join(log_dir, "worker%d.log" % w), "w")
        procs.append(subprocess.Popen([TANDEM, "tag", folder, "--catalog", catalog, "--queue", "--claim", "2",
                                       "--lease", "3", *WORKER, *extra], stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True))
    return procs


def wait_all(procs, timeout):
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=timeout))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(None)
    return codes


def wait_until_done(catalog, n, procs):
    deadline = time.time() + 180
    while time.time() < deadline and done_count(catalog) < n and all(p.poll() is None for p in procs):
        time.sleep(0.3)


def stop_server_mid_run(logs, folder, url, workers, retry_s):
    """Starts the workers and stops the server (fast: connections cut) once
    a few files are done."""
    os.makedirs(logs)
    procs = start_workers(workers, folder, url, logs, ["--db-retry", str(retry_s)])
    wait_until_done(url, 4, procs)
    postgres_server.control("stop")
    return procs


def server_restart(d, folder, url, reference):
    """The server stops mid-run and is back 3 s later."""
    what = "PostgreSQL restarted mid-run"
    logs = os.path.join(d, "restart")
    procs = stop_server_mid_run(logs, folder, url, 2, 60)
    time.sleep(3)
    check(all(p.poll() is None for p in procs), "%s: the workers wait for the server" % what)
    postgres_server.control("start")
    codes = wait_all(procs, 300)
    text = "".join(open(os.path.join(logs, f)).read() for f in sorted(os.listdir(logs)))
    check(codes == [0, 0], "%s: both workers exit 0 (%s):\n%s" % (what, codes, text[-1500:]))
    check("reconnected after" in text, "%s: the workers say they reconnected:\n%s" % (what, text[-800:]))
    status = tandem("status", url).stdout
    check("48 of 48 files done" in status, "%s: status counts every file done:\n%s" % (what, status))
    copy = os.path.join(d, "restart.sqlite")
    r = tandem("catalog", "copy", url, copy)
    check(r.returncode == 0, "catalog copy after the restart: " + r.stderr[-300:])
    same_results(contents(copy), reference, what)


def server_gone(d, folder, url):
    """The server stops for good: the worker gives up after --db-retry."""
    what = "PostgreSQL gone mid-run"
    logs = os.path.join(d, "gone")
    procs = stop_server_mid_run(logs, folder, url, 1, 3)
    stopped = time.time()
    codes = wait_all(procs, 120)
    took = time.time() - stopped
    postgres_server.control("start")
    text = open(os.path.join(logs, "worker0.log")).read()
    check(codes[0] not in (0, None), "%s: the worker stops with an error (exit %s)" % (what, codes[0]))
    check("unreachable for" in text and "giving up" in text and "postgresql:///" in text,
          "%s: the error names the database and the wait:\n%s" % (what, text[-800:]))
    check(took < 60, "%s: the worker stopped %.0f s after the server (--db-retry 3)" % (what, took))
    copy = os.path.join(d, "gone.sqlite")
    r = tandem("catalog", "copy", url, copy)
    if check(r.returncode == 0, "catalog copy after the loss: " + r.stderr[-300:]):
        # A file is marked done in the transaction that stores it: as many
        # done as stored, whatever the loss cut short.
        stored = sqlite3.connect(copy).execute("SELECT count(*) FROM files").fetchone()[0]
        done = done_count(url)
        check(4 <= done < 48 and done == stored, "%s: %d files marked done, %d stored" % (what, done, stored))


def done_count(catalog):
    r = tandem("status", catalog)
    for line in r.stdout.splitlines():
        if " files done" in line:
            return int(line.split(": ", 1)[1].split()[0])
    return 0


def shared_run(d, folder, catalog, workers, kill, reference, what):
    logs = os.path.join(d, what.replace(" ", "_"))
    os.makedirs(logs)
    procs = start_workers(workers, folder, catalog, logs)
    wait_until_done(catalog, 6, procs)
    killed = [p for p in procs[:kill] if p.poll() is None]
    for p in killed:
        os.killpg(p.pid, signal.SIGKILL)
    check(len(killed) == kill, "%s: %d workers killed mid-run" % (what, len(killed)))
    codes = wait_all(procs, 300)
    survivors = codes[kill:]
    check(all(c == 0 for c in survivors), "%s: the workers left exit 0 (%s)" % (what, codes))
    status = tandem("status", catalog).stdout
    check("48 of 48 files done" in status, "%s: status counts every file done:\n%s" % (what, status))
    if catalog.endswith(".sqlite"):
        copy = catalog
    else:
        copy = os.path.join(d, what.replace(" ", "_") + ".sqlite")
        r = tandem("catalog", "copy", catalog, copy)
        check(r.returncode == 0, "catalog copy of the shared run: " + r.stderr[-300:])
    same_results(contents(copy), reference, what)


def main():
    global TANDEM
    TANDEM = os.path.abspath(sys.argv[1])
    if not all(os.path.exists(os.path.join(DARKNET, n + ".jpg")) for n in NAMES):
        print("skipped: darknet's photos are not installed")
        return 77
    with tempfile.TemporaryDirectory() as d:
        folder = photos(d)
        ref = os.path.join(d, "reference.sqlite")
        r = tandem("tag", folder, "--catalog", ref, *WORKER)
        if not check(r.returncode == 0, "the reference run: " + r.stderr[-300:]):
            return 1
        reference = contents(ref)
        check(len(reference) == 48, "the reference has 48 files")

        host, user = os.environ.get("TANDEM_TEST_POSTGRES_HOST"), os.environ.get("TANDEM_TEST_POSTGRES_USER")
        if host and user:
            url = "postgresql:///postgres?host=%s&user=%s" % (host, user)
            shared_run(d, folder, url, 4, 2, reference, "4 workers on PostgreSQL, 2 killed")
            base = "postgresql:///%s?host=%s&user=%s"
            postgres_server.create_database("restart")
            server_restart(d, folder, base % ("restart", host, user), reference)
            postgres_server.create_database("gone")
            server_gone(d, folder, base % ("gone", host, user))
        else:
            print("note: no PostgreSQL test server; the SQLite part only (ctest runs this beside one)")
        shared_run(d, folder, os.path.join(d, "shared.sqlite"), 2, 1, reference, "2 workers on SQLite, 1 killed")

        r = tandem("tag", folder, "--queue", *WORKER)
        check(r.returncode != 0 and "--queue needs --catalog" in r.stderr, "--queue without a catalog is refused")
        r = tandem("tag", folder, "--queue", "--force", "--catalog", ref, *WORKER)
        check(r.returncode != 0 and "--force with --queue" in r.stderr, "--queue --force is refused")
    return 1 if tag_cli.failures else 0


if __name__ == "__main__":
    sys.exit(main())
