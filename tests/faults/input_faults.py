"""Faults on what tandem reads or may touch: a photo that changes while it
is read, files and folders it may not read or write, and a catalog that
another process holds locked."""
import os
import re
import shutil
import sqlite3
import subprocess
import time

from faultlib import (DARKNET, PHOTOS, TAG_ARGS, catalog_rows, check, integrity, new_case, same_row, summary_line,
                      thumbnail_name)
from write_faults import catalog_problems


def tag_args(t, *extra):
    return ["tag", "photos", "--model", str(t.model), *TAG_ARGS, "--catalog", "c.sqlite", "--thumbnails", "off", *extra]


# --- a photo that changes while it is read ---------------------------------

def photo_truncated(t, ref):
    """Cut to 5,000 bytes after tandem sized it, before it read it (a copy
    still being written, a sync tool mid-update); then whole again."""
    case = new_case(t.work, "photo-truncated")
    dog = case / "photos" / "dog.jpg"
    proc, fired = t.run(case, tag_args(t), fault=r"truncate:5000:/photos/dog\.jpg$")
    check(bool(fired), "truncated while read: the fault fired")
    line = next((line for line in proc.stderr.splitlines() if str(dog) in line), "")
    check(proc.returncode == 1 and line and not re.search(r": Success\b", line),
          f"truncated while read: exit {proc.returncode}, the photo named with a reason, "
          f"not a stale errno: {line.strip()!r}")
    rows = catalog_rows(case / "c.sqlite") or {}
    check(all(n in rows and same_row(rows[n], r) for n, r in ref.rows.items() if n != "dog.jpg") and
          rows.get("dog.jpg", (None,) * 3)[2] == "failed",
          "truncated while read: the other photos tagged, dog.jpg failed")
    dog.write_bytes((DARKNET / "dog.jpg").read_bytes())  # whole again, a new mtime
    again, _ = t.run(case, tag_args(t))
    check(again.returncode == 0 and not catalog_problems(case / "c.sqlite", ref, True),
          f"truncated while read, whole again: a re-run tags it like a clean run: {summary_line(again)}")


def photo_changed(t, ref, action):
    """dog.jpg becomes kite.jpg while tandem reads it: overwritten in place
    (`rewrite`: the reader's file changes under it) or renamed over
    (`replace`: the reader keeps the old file). Whatever the run stored, a
    re-run must store kite.jpg's tags for it."""
    case = new_case(t.work, f"photo-{action}")
    label = f"{'rewritten in place' if action == 'rewrite' else 'replaced by a rename'} while read"
    proc, fired = t.run(case, tag_args(t), fault=rf"{action}:5000:/photos/dog\.jpg$",
                        with_file=DARKNET / "kite.jpg")
    check(bool(fired), f"{label}: the fault fired")
    check(proc.returncode in (0, 1) and integrity(case / "c.sqlite") == "ok",
          f"{label}: the run ends normally (exit {proc.returncode}): {summary_line(proc)}")
    again, _ = t.run(case, tag_args(t))
    rows = catalog_rows(case / "c.sqlite") or {}
    check(again.returncode == 0 and "tagged 1 images" in summary_line(again) and
          same_row(rows.get("dog.jpg", ()), ref.rows["kite.jpg"]),
          f"{label}: a re-run tags the new content: {summary_line(again)}")


def run_photo_faults(t, ref):
    photo_truncated(t, ref)
    photo_changed(t, ref, "rewrite")
    photo_changed(t, ref, "replace")


# --- permissions ----------------------------------------------------------

def as_user():
    """How to run tandem so that permissions apply: as is, or from root (who
    may read and write anything) as nobody."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        return None
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]


def give_to_user(case, user):
    if user:
        subprocess.run(["chown", "-R", "65534:65534", str(case)], check=True)


def unreadable_inputs(t, ref, user):
    """A photo and a folder of photos tandem may not read: the run goes on,
    names each with the reason, and its exit status says work was left;
    readable again, a re-run tags them."""
    case = new_case(t.work, "perm-unreadable")
    (case / "photos" / "locked").mkdir()
    (case / "photos" / "horses.jpg").rename(case / "photos" / "locked" / "horses.jpg")
    t.model.chmod(0o644)
    give_to_user(case, user)
    photo, folder = case / "photos" / "eagle.jpg", case / "photos" / "locked"
    photo.chmod(0)
    folder.chmod(0)
    proc, _ = t.run(case, tag_args(t), user=user)
    said = [line for line in proc.stderr.splitlines() if str(photo) in line or str(folder) in line]
    check(len(said) >= 2 and all("ermission denied" in line for line in said),
          f"unreadable photo and folder: each named with the reason: {said}")
    rows = catalog_rows(case / "c.sqlite") or {}
    check(set(rows) == set(ref.rows) - {"eagle.jpg", "horses.jpg"},
          f"unreadable photo and folder: the run goes on with the rest ({len(rows)} tagged)")
    check(proc.returncode != 0 and " 0 not images" in summary_line(proc),
          f"unreadable photo and folder: exit {proc.returncode} and not counted as 'not images': {summary_line(proc)}")
    photo.chmod(0o644)
    folder.chmod(0o755)
    again, _ = t.run(case, tag_args(t), user=user)
    check(again.returncode == 0 and not catalog_problems(case / "c.sqlite", ref, True),
          f"readable again: a re-run tags them: {summary_line(again)}")


def read_only_photo_folder(t, ref, user):
    """--xmp into a folder tandem may not write: the sidecar is named with
    the reason; writable again, a re-run writes every sidecar."""
    case = new_case(t.work, "perm-sidecars")
    give_to_user(case, user)
    (case / "photos").chmod(0o555)
    proc, _ = t.run(case, tag_args(t, "--xmp"), user=user)
    check(proc.returncode != 0 and "ermission denied" in proc.stderr and ".xmp" in proc.stderr,
          f"read-only photo folder with --xmp: exit {proc.returncode}, the sidecar named with the reason: "
          f"{proc.stderr.strip().splitlines()[-1:]}")
    (case / "photos").chmod(0o755)
    again, _ = t.run(case, tag_args(t, "--xmp"), user=user)
    missing = [p for p in PHOTOS if not (case / "photos" / f"{p}.jpg.xmp").exists()]
    check(again.returncode == 0 and not missing,
          f"writable again: a re-run writes every sidecar (missing: {missing}): {summary_line(again)}")


def unwritable_catalog_folder(t, ref, user):
    case = new_case(t.work, "perm-catalog")
    (case / "db").mkdir()
    give_to_user(case, user)
    (case / "db").chmod(0o555)
    args = ["tag", "photos", "--model", str(t.model), *TAG_ARGS, "--catalog", "db/c.sqlite", "--thumbnails", "off"]
    proc, _ = t.run(case, args, user=user)
    check(proc.returncode != 0 and "db/c.sqlite" in proc.stderr and "ermission denied" in proc.stderr,
          f"catalog in a folder it may not write: exit {proc.returncode}, named with the reason: "
          f"{proc.stderr.strip().splitlines()[-1:]}")
    (case / "db").chmod(0o755)
    again, _ = t.run(case, args, user=user)
    check(again.returncode == 0 and not catalog_problems(case / "db" / "c.sqlite", ref, True),
          f"writable again: a re-run makes the catalog: {summary_line(again)}")


def unwritable_thumbnail_cache(t, ref, user):
    """The shared cache refused: thumbnails go beside the catalog, and the
    run says so (the designed fallback)."""
    case = new_case(t.work, "perm-thumbnails")
    (case / "cache" / "thumbnails").mkdir(parents=True)
    give_to_user(case, user)
    (case / "cache" / "thumbnails").chmod(0o555)
    args = ["tag", "photos", "--model", str(t.model), *TAG_ARGS, "--catalog", "c.sqlite"]
    proc, _ = t.run(case, args, user=user)
    beside = case / "c.sqlite.thumbnails"
    have = [p for p in PHOTOS for f in ("large", "normal")
            if (beside / f / thumbnail_name(case / "photos" / f"{p}.jpg")).exists()]
    check(proc.returncode == 0 and "c.sqlite.thumbnails" in proc.stderr and len(have) == 2 * len(PHOTOS),
          f"thumbnail cache not writable: every thumbnail beside the catalog ({len(have)} of {2 * len(PHOTOS)}), "
          f"and said: {proc.stderr.strip().splitlines()[-1:]}")


def unwritable_profile_folder(t, ref, user):
    case = new_case(t.work, "perm-profile")
    (case / "out").mkdir()
    give_to_user(case, user)
    (case / "out").chmod(0o555)
    args = ["tag", "photos", "--model", str(t.model), *TAG_ARGS, "--profile", "out/prof"]
    proc, _ = t.run(case, args, user=user)
    check(proc.returncode != 0 and "out/prof" in proc.stderr and "ermission denied" in proc.stderr,
          f"--profile into a folder it may not write: exit {proc.returncode}, named with the reason: "
          f"{proc.stderr.strip().splitlines()[-1:]}")


def run_permission_faults(t, ref):
    user = as_user()
    if user is None:
        print("     skipped: running as root without setpriv, permissions cannot deny anything")
        return
    if user:
        print("     (as root: tandem runs as nobody through setpriv, where permissions apply)")
    unreadable_inputs(t, ref, user)
    read_only_photo_folder(t, ref, user)
    unwritable_catalog_folder(t, ref, user)
    unwritable_thumbnail_cache(t, ref, user)
    unwritable_profile_folder(t, ref, user)


# --- a catalog locked by another process ----------------------------------

def hold_lock(db):
    con = sqlite3.connect(str(db), isolation_level=None)
    con.execute("BEGIN EXCLUSIVE")
    return con


def locked_catalog(t, ref, hold_s):
    """Another process holds the catalog's write lock for hold_s seconds
    (None: past tandem's patience). tandem waits and finishes once it goes,
    or stops with a message naming the catalog and the lock."""
    label = f"catalog locked {'for ' + str(hold_s) + ' s' if hold_s else 'throughout'}"
    case = new_case(t.work, f"lock-{hold_s or 'held'}")
    t.run(case, tag_args(t))
    for p in ("dog", "kite"):
        os.utime(case / "photos" / f"{p}.jpg", ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    env = dict(os.environ, HOME=str(case), XDG_CACHE_HOME=str(case / "cache"))
    lock = hold_lock(case / "c.sqlite")
    start = time.monotonic()
    proc = subprocess.Popen([t.binary, *tag_args(t)], cwd=case, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        if hold_s:
            time.sleep(hold_s)
            lock.execute("COMMIT")
        out, err = proc.communicate(timeout=600)
    finally:
        lock.close()
    took = time.monotonic() - start
    rows = catalog_rows(case / "c.sqlite") or {}
    finished = proc.returncode == 0 and not catalog_problems(case / "c.sqlite", ref, True) and \
        "tagged 2 images" in err
    refused = proc.returncode == 1 and "c.sqlite" in err and "lock" in err
    check(finished or refused,
          f"{label}: waited and finished, or said the catalog is locked (exit {proc.returncode} after {took:.1f} s): "
          f"{[line for line in err.splitlines() if 'CUDA' not in line][:2]}")
    check(integrity(case / "c.sqlite") == "ok" and len(rows) == len(PHOTOS), f"{label}: the catalog is intact")
    if refused:
        again, _ = t.run(case, tag_args(t))
        check(again.returncode == 0 and "tagged 2 images" in summary_line(again),
              f"{label}: unlocked, a re-run completes the work: {summary_line(again)}")


def run_lock_faults(t, ref):
    locked_catalog(t, ref, 2)
    locked_catalog(t, ref, None)


GROUPS = ("photo", "permission", "lock")


def groups(t, ref):
    runs = (run_photo_faults, run_permission_faults, run_lock_faults)
    return {name: (lambda run=run: run(t, ref)) for name, run in zip(GROUPS, runs)}
