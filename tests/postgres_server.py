#!/usr/bin/env python3
"""Runs a command beside a PostgreSQL server of its own: Debian's
postgresql, initdb into a temporary folder, listening on a unix socket
there only (no TCP port), fsync off (a test server), stopped and removed
at the end. The command finds it through TANDEM_TEST_POSTGRES_HOST (the
socket folder) and TANDEM_TEST_POSTGRES_USER (a superuser, trusted on the
socket); postgresql:///DB?host=...&user=... reaches database DB. A test
that stops and starts the server mid-run (a database that goes away) calls
control("stop") and control("start") from this module.

As root (CI) the server runs as the postgres user, as PostgreSQL requires.
TANDEM_POSTGRES_BIN names another server's bin folder (a copy unpacked
where Debian's packages are not installed).

  postgres_server.py [--durable] COMMAND [ARG...]
      the command's exit status; 77 (skipped) when PostgreSQL is missing.
      --durable keeps fsync on (for benchmarks of commits: bench/queue_scale.py).
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile


def server_bin():
    """Debian's newest server, or the one TANDEM_POSTGRES_BIN names (a copy
    unpacked on a host without one)."""
    given = os.environ.get("TANDEM_POSTGRES_BIN")
    if given:
        return given if os.path.exists(os.path.join(given, "initdb")) else None
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(found[-1]) if found else None


def as_server_user(cmd):
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "postgres", "--", *cmd]


def pg_ctl(bindir, data, top, action, durable=False):
    """Starts (waiting until it accepts connections) or stops (fast: open
    connections are cut) the server."""
    if action == "start":
        options = "-k %s -c listen_addresses='' -c max_connections=200%s" % (top, "" if durable else " -F")
        cmd = ["-o", options, "-w", "-l", os.path.join(top, "server.log"), "start"]
    else:
        cmd = ["-m", "fast", "-w", "stop"]
    subprocess.run(as_server_user([os.path.join(bindir, "pg_ctl"), "-D", data, *cmd]), check=True,
                   capture_output=True)


def control(action):
    """For the command run beside the server: stops or starts it again."""
    pg_ctl(os.environ["TANDEM_TEST_POSTGRES_BIN"], os.environ["TANDEM_TEST_POSTGRES_DATA"],
           os.environ["TANDEM_TEST_POSTGRES_HOST"], action, os.environ.get("TANDEM_TEST_POSTGRES_DURABLE") == "1")


def create_database(name):
    """A new, empty database on the server (for a catalog of its own)."""
    subprocess.run([os.path.join(os.environ["TANDEM_TEST_POSTGRES_BIN"], "createdb"), "-h",
                    os.environ["TANDEM_TEST_POSTGRES_HOST"], "-U", os.environ["TANDEM_TEST_POSTGRES_USER"], name],
                   check=True, capture_output=True)


def main():
    args = sys.argv[1:]
    durable = bool(args) and args[0] == "--durable"
    if durable:
        args = args[1:]
    if not args:
        print(__doc__)
        return 2
    bindir = server_bin()
    if not bindir:
        print("skipped: no PostgreSQL server (Debian's postgresql)")
        return 77
    top = tempfile.mkdtemp(prefix="tandem_pg_")
    data = os.path.join(top, "data")
    if os.geteuid() == 0:
        shutil.chown(top, "postgres", "postgres")
    user = "tandem"
    try:
        subprocess.run(as_server_user([os.path.join(bindir, "initdb"), "-D", data, "-A", "trust", "-U", user,
                                       "-E", "UTF8", "--locale", "C"]),
                       check=True, capture_output=True)
        pg_ctl(bindir, data, top, "start", durable)
        env = dict(os.environ, TANDEM_TEST_POSTGRES_HOST=top, TANDEM_TEST_POSTGRES_USER=user,
                   TANDEM_TEST_POSTGRES_BIN=bindir, TANDEM_TEST_POSTGRES_DATA=data,
                   TANDEM_TEST_POSTGRES_DURABLE="1" if durable else "0")
        try:
            return subprocess.run(args, env=env).returncode
        finally:
            subprocess.run(as_server_user([os.path.join(bindir, "pg_ctl"), "-D", data, "-m", "immediate", "stop"]),
                           capture_output=True)
    except subprocess.CalledProcessError as e:
        print("cannot start the test server: %s\n%s" % (e.cmd, (e.stderr or b"").decode()[-2000:]))
        log = os.path.join(top, "server.log")
        if os.path.exists(log):
            print(open(log).read()[-2000:])
        return 1
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
