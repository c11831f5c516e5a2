#!/usr/bin/env python3
"""GPU out of memory, through the real `tandem tag --device cuda` with the
shipped models (the default detector, faces on).

At model load: another process (gpu_hog) holds all but a little of the
GPU's memory, as a second user's job does; tandem must stop with one clear
message before it tags anything, leave the catalog as it was, and a re-run
once the memory is back must tag everything.

Mid-run: the fault shim (fault_inject.c, action cudaoom) fails every CUDA
device allocation once a third of the run's catalog writes are through, as
when another process took the memory meanwhile. Inference allocates
nothing after its first batches (its plans keep their memory), so what
meets the fault is the GPU JPEG decoder when larger photos come: with
--nvjpeg auto its files go to the CPU decoders, the run completes and says
so; with --nvjpeg on (GPU decoding required) the run stops with the
reason, keeps what it committed, and a re-run completes the rest. Either
way the tags equal a run's without the fault.

  gpu_faults.py TANDEM_BINARY SHIM.so GPU_HOG
  env: TANDEM_MODELS (the shipped models), TANDEM_DARKNET_DATA (darknet's
  photos; default /usr/share/darknet/data)
  exit 0: all passed, 1: failures, 77: skipped (no GPU, photos or models)
"""
import os
import shutil
import subprocess
import sys
import tempfile
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

    def __init__(self, binary, shim, hog, work):
        self.binary, self.shim, self.hog, self.work = binary, shim, hog, work

    def tag(self, case, fault=None, extra=()):
        """tandem tag photos on cuda into case/c.sqlite: (process, [(action, what)])."""
        return self.run(case, ["tag", "photos", "--device", "cuda", "--catalog", "c.sqlite", *BATCH, *extra],
                        fault=fault, timeout=600)


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
    hog = subprocess.Popen([g.hog, "64"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    held = hog.stdout.readline().strip()
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


LARGE = 12


def add_large_photos(case, photos):
    """48-MP JPEGs that sort last: decoded at 1/8 they still need more than
    the small photos' buffers. Enough of them that the GPU decoders get
    some beside the one CPU decoder."""
    made = case.parent / "large.jpg"
    if not made.exists():
        from PIL import Image
        with Image.open(photos[0]) as im:
            im.convert("RGB").resize((8000, 6000)).save(made, quality=85)
    for i in range(LARGE):
        shutil.copy(made, case / "photos" / f"zz_large_{i}.jpg")


def mid_run(g, photos, reference, required):
    """Device allocations fail once a third of the catalog is written."""
    name = "mid-run" + (" (GPU decoding required)" if required else "")
    # One CPU decoder beside the GPU's, so the GPU decoders see large photos.
    extra = ["--decoders", "1", "--nvjpeg", "on" if required else "auto"]
    clean = new_case(g.work, f"mid-clean-{required}", photos)
    add_large_photos(clean, photos)
    proc, fired = g.tag(clean, fault=r"count:0:/c\.sqlite", extra=extra)
    total = int(fired[0][1]) if fired else 0
    expected = labels(faultlib.catalog_rows(clean / "c.sqlite") or {})
    if not check(proc.returncode == 0 and total > 0 and len(expected) == len(reference) + LARGE,
                 f"{name}: a clean run with large photos ({faultlib.summary_line(proc)})"):
        return
    case = new_case(g.work, f"mid-{required}", photos)
    add_large_photos(case, photos)
    proc, fired = g.tag(case, fault=rf"cudaoom:{total // 3}:/c\.sqlite", extra=extra)
    failed = [what for action, what in fired if action == "cudaoom"]
    if not check(bool(failed), f"{name}: a device allocation failed after {total // 3} catalog bytes ({fired[:2]})"):
        print("     " + "\n     ".join(proc.stderr.strip().splitlines()[-6:]))
        return
    rows = faultlib.catalog_rows(case / "c.sqlite") or {}
    done = {n for n, (status, _) in labels(rows).items() if status == "ok"}
    print(f"     {name}: {failed[0]} failed; exit {proc.returncode}, {len(done)} of {len(expected)} tagged; "
          f"{faultlib.summary_line(proc)}")
    if not required:
        check(proc.returncode == 0 and "ran out of GPU memory, the CPU decoders took their files" in proc.stderr,
              f"{name}: the run completes and says the CPU took the GPU decoder's files: {message(proc)}")
        check(len(rows) == len(expected) and same_results(rows, expected), f"{name}: every photo tagged as in a clean run")
        return
    check(proc.returncode == 1 and said_out_of_memory(proc),
          f"{name}: exit {proc.returncode} with a message on GPU memory: {message(proc)}")
    check(0 < len(done) < len(expected), f"{name}: the fault fell inside the run ({len(done)} photos committed)")
    check(same_results(rows, expected, done) and faultlib.integrity(case / "c.sqlite") == "ok",
          f"{name}: what was committed is whole and right")
    proc, _ = g.tag(case, extra=extra)
    rows = faultlib.catalog_rows(case / "c.sqlite") or {}
    check(proc.returncode == 0 and len(rows) == len(expected) and same_results(rows, expected),
          f"{name}: a re-run completes the rest as a clean run does ({faultlib.summary_line(proc)})")


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    binary, shim, hog = (str(Path(a).resolve()) for a in sys.argv[1:])
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
        g = Gpu(binary, shim, hog, Path(tmp))
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
        mid_run(g, photos, reference, required=False)
        mid_run(g, photos, reference, required=True)
    return 1 if faultlib.tag_cli.failures else 0


if __name__ == "__main__":
    sys.exit(main())
