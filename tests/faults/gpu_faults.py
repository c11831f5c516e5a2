#!/usr/bin/env python3
"""GPU out of memory, through the real `tandem tag --device cuda` with the
shipped models (the default detector, faces on).

At model load: another process (gpu_hog) holds all but a little of the
GPU's memory, as a second user's job does; tandem must stop with one clear
message before it tags anything, leave the catalog as it was, and a re-run
once the memory is back must tag everything.

Mid-run: once the run has committed its first batches, the same process
takes every byte the GPU has free. tandem holds the memory its plans,
decoders and buffers need from its first batches on, so the run must go on
undisturbed and end with the tags of a run nobody disturbed. (Where a
later allocation does fail, e.g. inside nvJPEG for a larger photo, a GPU
JPEG decoder hands its files to the CPU decoders, and inference splits a
batch that does not fit: tests/test_batch_split.cpp.)

  gpu_faults.py TANDEM_BINARY GPU_HOG
  env: TANDEM_MODELS (the shipped models), TANDEM_DARKNET_DATA (darknet's
  photos; default /usr/share/darknet/data)
  exit 0: all passed, 1: failures, 77: skipped (no GPU, photos or models)
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import faultlib

check = faultlib.check
DARKNET = Path(os.environ.get("TANDEM_DARKNET_DATA", "/usr/share/darknet/data"))
# Copies enough for several batches of 8 and a short last one, so the run
# has commits before its end and plans a second batch shape.
COPIES = 9
# Every photo gets its three best labels, whatever their scores, so a
# comparison does not hinge on a threshold.
BATCH = ["--batch", "8", "--top", "3", "--min-score", "0"]


class Gpu(faultlib.Tandem):
    """faultlib's runner without its tiny model: these runs use the shipped ones."""

    def __init__(self, binary, hog, work):
        self.binary, self.shim, self.hog, self.work = binary, None, hog, work

    def tag(self, case, extra=()):
        """tandem tag photos on cuda into case/c.sqlite: (process, [])."""
        return self.run(case, ["tag", "photos", "--device", "cuda", "--catalog", "c.sqlite", *BATCH, *extra],
                        timeout=600)


def new_case(work, name, photos):
    case = work / name
    (case / "photos").mkdir(parents=True)
    for i in range(COPIES):
        for p in photos:
            shutil.copy(p, case / "photos" / f"{i:02d}_{p.name}")
    return case


def labels(rows):
    """{photo: (status, ((label, score), ...))}."""
    return {name: (row[2], row[4]) for name, row in rows.items()}


def same_tags(a, b):
    """One photo's results agree across runs: the same status and labels,
    except where two labels' scores tie within 0.02 at the third place
    (a batch of another size may take other cuDNN algorithms, so fp16
    scores move in their last bits)."""
    if a[0] != b[0]:
        return False
    sa, sb = dict(a[1]), dict(b[1])
    floor = min(list(sa.values()) + list(sb.values()), default=0)
    return all(abs(sa[k] - sb[k]) <= 0.02 for k in sa.keys() & sb.keys()) and all(
        abs(s - floor) <= 0.02 for k, s in list(sa.items()) + list(sb.items()) if k not in sa.keys() & sb.keys())


def same_results(rows, reference, names=None):
    got = labels(rows)
    names = reference.keys() if names is None else names
    return got.keys() >= set(names) and all(same_tags(got[n], reference[n]) for n in names)


def said_out_of_memory(proc):
    return "out of GPU memory" in proc.stderr or "out of memory" in proc.stderr.lower()


def message(proc):
    lines = [line for line in proc.stderr.splitlines() if "memory" in line.lower()]
    return (lines or proc.stderr.strip().splitlines()[-2:] or ["(nothing)"])[:2]


def at_load(g, photos, reference):
    """Another process holds the memory before tandem starts."""
    case = new_case(g.work, "load", photos)
    first = case / "first"
    first.mkdir()
    # A catalog that already holds some photos must come through untouched.
    keep = sorted((case / "photos").iterdir())[:8]
    for p in keep:
        shutil.move(str(p), first / p.name)
    proc, _ = g.tag(case)
    for p in first.iterdir():
        shutil.move(str(p), case / "photos" / p.name)
    first.rmdir()
    before = faultlib.catalog_rows(case / "c.sqlite")
    if not check(proc.returncode == 0 and before and len(before) == len(photos) * COPIES - len(keep),
                 f"load: a first run tags part of the folder (exit {proc.returncode})"):
        return
    hog, held = hold_memory(g, 64)
    try:
        if not check(held.startswith("held "), f"load: another process holds the GPU's memory ({held})"):
            return
        proc, _ = g.tag(case)
    finally:
        hog.stdin.close()
        hog.wait(timeout=60)
    check(proc.returncode == 1 and said_out_of_memory(proc),
          f"load: exit {proc.returncode} with a message on GPU memory: {message(proc)}")
    check(proc.returncode != 1 or len(proc.stderr.strip().splitlines()) <= 6,
          f"load: a short message, not a trace ({len(proc.stderr.splitlines())} lines)")
    after = faultlib.catalog_rows(case / "c.sqlite")
    check(after == before and faultlib.integrity(case / "c.sqlite") == "ok",
          "load: the catalog is as it was before the failed run")
    proc, _ = g.tag(case)
    rows = faultlib.catalog_rows(case / "c.sqlite") or {}
    check(proc.returncode == 0 and len(rows) == len(reference) and same_results(rows, reference),
          f"load: a re-run with the memory back tags every photo as a clean run does ({faultlib.summary_line(proc)})")


def hold_memory(g, leave_mib):
    """gpu_hog started; returns (process, its "held ..." line)."""
    hog = subprocess.Popen([g.hog, str(leave_mib)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return hog, hog.stdout.readline().strip()


def committed(db):
    rows = faultlib.catalog_rows(db)
    return len(rows) if rows else 0


def mid_run(g, photos):
    """Another process takes the GPU's free memory while tandem tags."""
    many = 24  # copies of each photo: a run of some seconds on one CPU decoder
    case = g.work / "mid"
    (case / "photos").mkdir(parents=True)
    for i in range(many):
        for p in photos:
            shutil.copy(p, case / "photos" / f"{i:02d}_{p.name}")
    total = many * len(photos)
    clean = g.work / "mid-clean"
    shutil.copytree(case / "photos", clean / "photos")
    extra = ["--decoders", "1", "--nvjpeg", "off"]
    proc, _ = g.tag(clean, extra=extra)
    expected = labels(faultlib.catalog_rows(clean / "c.sqlite") or {})
    if not check(proc.returncode == 0 and len(expected) == total,
                 f"mid-run: a run nobody disturbs ({faultlib.summary_line(proc)})"):
        return
    env = dict(os.environ, HOME=str(case), XDG_CACHE_HOME=str(case / "cache"))
    cmd = [g.binary, "tag", "photos", "--device", "cuda", "--catalog", "c.sqlite", *BATCH, *extra]
    run = subprocess.Popen(cmd, cwd=case, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while run.poll() is None and committed(case / "c.sqlite") == 0:
        time.sleep(0.05)
    hog, held = hold_memory(g, 0)
    before = committed(case / "c.sqlite")
    running = run.poll() is None
    try:
        out, err = run.communicate(timeout=600)
    finally:
        hog.stdin.close()
        hog.wait(timeout=60)
    if not check(held.startswith("held ") and running and before < total,
                 f"mid-run: the memory was taken while the run went on ({held}; {before} of {total} committed)"):
        return
    rows = faultlib.catalog_rows(case / "c.sqlite") or {}
    summary = next((line for line in err.splitlines() if line.startswith("tagged ")), err[-300:])
    check(run.returncode == 0 and len(rows) == total and same_results(rows, expected),
          f"mid-run: the run completes with the undisturbed run's tags (exit {run.returncode}: {summary})")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    binary, hog = (str(Path(a).resolve()) for a in sys.argv[1:])
    # The runs get a HOME of their own: the models stay where they are.
    models = os.environ.get("TANDEM_MODELS") or str(Path.home() / ".cache" / "tandem" / "models")
    os.environ["TANDEM_MODELS"] = str(Path(models).resolve())
    photos = sorted(DARKNET.glob("*.jpg"))[:5]
    if not shutil.which("nvidia-smi") or subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode != 0:
        print("skipped: no NVIDIA GPU here")
        return 77
    if len(photos) < 3:
        print(f"skipped: darknet's photos not found in {DARKNET}")
        return 77
    with tempfile.TemporaryDirectory(prefix="tandem_gpu_faults_") as tmp:
        g = Gpu(binary, hog, Path(tmp))
        clean = new_case(g.work, "clean", photos)
        proc, _ = g.tag(clean)
        if proc.returncode != 0 and "model" in proc.stderr and "not found" in proc.stderr:
            print(f"skipped: the shipped models are not installed: {proc.stderr.strip()[-200:]}")
            return 77
        rows = faultlib.catalog_rows(clean / "c.sqlite") or {}
        reference = labels(rows)
        if not check(proc.returncode == 0 and len(reference) == len(photos) * COPIES,
                     f"a clean run on cuda tags every photo ({faultlib.summary_line(proc)})"):
            return 1
        at_load(g, photos, reference)
        mid_run(g, photos)
    return 1 if faultlib.tag_cli.failures else 0


if __name__ == "__main__":
    sys.exit(main())
