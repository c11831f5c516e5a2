#!/usr/bin/env python3
"""Injected faults, each a test, through the real `tandem` command line.

Writes (write_faults.py): disk full (ENOSPC), EIO on write, EIO on fsync,
and SIGKILL while `tandem tag` writes its catalog, an XMP sidecar, a
thumbnail or a --profile file, and while `tandem train` writes its
checkpoint. Inputs (input_faults.py): a photo truncated, rewritten in
place or replaced while it is read; files and folders it may not read or
write; a catalog another process holds locked.

Each must end with a clear message (the file and the reason), leave no
partial file in place of a good one, and be completed by a re-run. Faults
come from an LD_PRELOAD shim (fault_inject.c) that cuts writes to chosen
paths, fails them or their fsync, kills the process mid-write, or changes
a photo just before it is read. The photos are Debian darknet's samples;
the model is tests/cli/tag_cli.py's tiny classifier.

  check_faults.py TANDEM_BINARY [SHIM.so] [--only NAME]
      SHIM.so: the built shim (CMake target tandem_fault_inject); without
      it the shim is compiled here with cc. --only: run the cases whose
      group (catalog, sidecar, thumbnail, profile, checkpoint, photo,
      permission, lock) is NAME.
  exit 0: all passed, 1: failures, 77: skipped
"""
import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import faultlib
import input_faults
import write_faults


def build_shim(work):
    """The shim compiled from source (for runs outside the CMake build)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    out = work / "fault_inject.so"
    proc = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(out), str(faultlib.HERE / "fault_inject.c"),
                           "-ldl"], capture_output=True, text=True)
    return out if proc.returncode == 0 else None


def shim_works(t, work):
    """Whether the shim loads into tandem and sees its writes (an
    AddressSanitizer build, for one, refuses a preload ahead of its runtime)."""
    case = work / "shim-probe"
    case.mkdir()
    proc, fired = t.run(case, ["--version"], fault=r"count:0:\.never-written$")
    return proc.returncode == 0 and fired == [("count", "0")]


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("tandem")
    parser.add_argument("shim", nargs="?")
    names = [p.name for p in write_faults.TAG_POINTS] + ["checkpoint", *input_faults.GROUPS]
    parser.add_argument("--only", choices=names)
    args = parser.parse_args()
    if not all((faultlib.DARKNET / f"{p}.jpg").exists() for p in faultlib.PHOTOS):
        print("skipped: needs Debian's darknet sample photos (scripts/setup)")
        return 77
    with tempfile.TemporaryDirectory(prefix="tandem_faults_") as tmp:
        work = Path(tmp)
        work.chmod(0o755)  # the permission cases run tandem as another user
        shim = Path(args.shim).resolve() if args.shim else build_shim(work)
        if not shim:
            print("skipped: no shim given and no C compiler to build tests/faults/fault_inject.c")
            return 77
        t = faultlib.Tandem(str(Path(args.tandem).resolve()), shim, work)
        if not shim_works(t, work):
            print(f"skipped: the fault shim {shim} does not load into {args.tandem} (a sanitizer build?)")
            return 77
        ref = faultlib.Reference(t)
        if not faultlib.check(ref.complete, "a run without faults writes every output (the reference)"):
            return 1
        groups = {p.name: (lambda p=p: write_faults.run_tag_point(t, p, ref)) for p in write_faults.TAG_POINTS}
        groups["checkpoint"] = lambda: write_faults.run_checkpoint_point(t)
        groups.update(input_faults.groups(t, ref))
        for name, run in groups.items():
            if args.only in (None, name):
                print(f"--- {name}", flush=True)
                run()
    print(f"tandem faults: {faultlib.tag_cli.failures} failed")
    return 1 if faultlib.tag_cli.failures else 0


if __name__ == "__main__":
    sys.exit(main())
