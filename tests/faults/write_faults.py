"""Disk full, I/O errors, failed fsyncs and SIGKILL while tandem writes its
catalog, a sidecar, a thumbnail, a profile or a checkpoint.

For each point and fault, two runs: one from nothing ("fresh") and one
over the complete outputs of an earlier run ("over good"). The fault falls
part way through the bytes a clean run writes there (counted by the shim).
Each must end with a message naming the file and the reason (or die by
the SIGKILL), leave no file at an output's name that is not a whole one
(the same as a run that never failed, or the earlier run's), and a re-run
without the fault must complete the work: the outputs of a run that never
failed."""
from pathlib import Path

from faultlib import (PHOTOS, REASONS, TAG_ARGS, catalog_rows, check, files_under, final_name, integrity,
                      new_case, parses_as_complete, same_row, thumbnail_name, thumbnail_pixels, file_uri)

THUMB_ROOTS = ("cache/thumbnails", "c.sqlite.thumbnails")


class TagPoint:
    """One place `tandem tag` writes to: its files, and how to judge them."""

    def __init__(self, name, pattern, args, share, faults):
        self.name, self.pattern, self.args, self.share, self.faults = name, pattern, args, share, faults

    def command(self, t, force=False):
        return ["tag", "photos", "--model", str(t.model), *TAG_ARGS, *self.args, *(["--force"] if force else [])]

    def slots(self, case, ref):
        """Each output a complete run leaves, as the names (relative to the
        case) it may have: a thumbnail lives in the cache or beside the
        catalog."""
        if self.name == "sidecar":
            return [(f"photos/{p}.jpg.xmp",) for p in PHOTOS]
        if self.name == "thumbnail":
            return [tuple(f"{root}/{flavor}/{thumbnail_name(case / 'photos' / f'{p}.jpg')}" for root in THUMB_ROOTS)
                    for p in PHOTOS for flavor in ("large", "normal")]
        if self.name == "profile":
            return [(f"prof/{n}",) for n in ref.profile]
        return [("c.sqlite",)]

    def whole(self, case, name, ref):
        """Whether the file at output `name` is a complete, right one."""
        data = (case / name).read_bytes()
        if self.name == "sidecar":
            return data == ref.sidecars.get(Path(name).name)
        if self.name == "thumbnail":
            try:
                size, pixels, uri = thumbnail_pixels(case / name)
            except Exception:  # PIL raises many kinds on a torn PNG
                return False
            flavor = Path(name).parent.name
            for p in PHOTOS:
                if thumbnail_name(case / "photos" / f"{p}.jpg") == Path(name).name:
                    return (size, pixels) == ref.thumbnails.get((f"{p}.jpg", flavor)) and \
                        uri == file_uri(case / "photos" / f"{p}.jpg")
            return False
        return parses_as_complete(name, data)

    def problems(self, case, ref, complete):
        """What is wrong with this point's outputs in `case`: torn or wrong
        files, and with `complete`, missing ones."""
        if self.name == "catalog":
            return catalog_problems(case / "c.sqlite", ref, complete)
        out = []
        for names in self.slots(case, ref):
            present = [n for n in names if (case / n).exists()]
            out += [f"torn or wrong: {n}" for n in present if not self.whole(case, n, ref)]
            if complete and not present:
                out.append(f"missing: {names[0]}")
        return out


def catalog_problems(db, ref, complete):
    state = integrity(db)
    if state != "ok":
        return [f"integrity_check: {state}"]
    rows = catalog_rows(db) or {}
    wrong = [n for n, r in rows.items() if n not in ref.rows or not same_row(r, ref.rows[n])]
    missing = sorted(set(ref.rows) - set(rows)) if complete else []
    return [f"row differs from a clean run's: {n}" for n in wrong] + [f"no row: {n}" for n in missing]


TAG_POINTS = [
    # The catalog's bytes depend on timing: batches ready together share a
    # transaction, and a loaded machine writes fewer, larger ones than the
    # counting run did. A quarter of the count is reached however they fall.
    TagPoint("catalog", r"/c\.sqlite(-wal|-journal|-shm)?$", ["--catalog", "c.sqlite", "--thumbnails", "off"], 0.25,
             ["enospc", "eio", "kill", "syncfail"]),
    TagPoint("sidecar", r"\.xmp", ["--catalog", "c.sqlite", "--thumbnails", "off", "--xmp"], 0.5,
             ["enospc", "eio", "kill", "syncfail"]),
    # Both the shared cache and the folder beside the catalog fail; the
    # cache alone failing is in input_faults. Thumbnails are not fsynced.
    TagPoint("thumbnail", r"thumbnails/", ["--catalog", "c.sqlite"], 0.5, ["enospc", "eio", "kill"]),
    # Late in the bytes, so the fault falls in report.html or summary.json,
    # files that show whether they are whole. Profiles are not fsynced.
    TagPoint("profile", r"/prof/", ["--profile", "prof"], 0.85, ["enospc", "eio", "kill"]),
]


def judge_faulted_run(label, proc, fired, named, fault):
    """The faulty run's end: the fault fired, and the run died by it or said
    which file failed (one of `named`, a name or a list) and why."""
    if not check(bool(fired), f"{label}: the injected fault fired"):
        return
    if fault == "kill":
        check(proc.returncode == -9, f"{label}: killed (exit {proc.returncode})")
        return
    named = [named] if isinstance(named, str) else named
    said = proc.stderr.strip().splitlines()
    telling = [line for line in said if any(n in line for n in named) or any(r in line for r in REASONS[fault])]
    check(proc.returncode not in (0, -9) and any(r in proc.stderr for r in REASONS[fault]) and
          any(n in proc.stderr for n in named),
          f"{label}: exit {proc.returncode}, a message naming {named[0] if len(named) == 1 else 'a failed file'} "
          f"and the reason: {(telling or said[-3:])[:2]}")


def note_leftovers(label, case, known):
    """Temporary files a killed or failed write left beside the outputs: not
    in place of a good file, but litter that no later run removes."""
    left = [n for n in files_under(case) if n not in known and not (n.startswith("photos/") and n.endswith(".jpg"))]
    if left:
        print(f"     note: {label}: left behind: {left[:4]}{' ...' if len(left) > 4 else ''}")


def known_files(point, case, ref):
    names = {n for names in point.slots(case, ref) for n in names}
    return names | {"c.sqlite", "c.sqlite-wal", "c.sqlite-shm", "fault.log"}


def run_tag_point(t, point, ref):
    for scenario in ("fresh", "over good"):
        over = scenario == "over good"
        force = over and point.name != "profile"  # a profile is written anew by any run
        slug = scenario.replace(" ", "-")
        counting = new_case(t.work, f"{point.name}-count-{slug}")
        if over:
            t.run(counting, point.command(t))
        total = t.count(counting, point.command(t, force), point.pattern)
        for fault in point.faults:
            label = f"{point.name} {fault} {scenario}"
            case = new_case(t.work, f"{point.name}-{fault}-{slug}")
            if over:
                first, _ = t.run(case, point.command(t))
                check(first.returncode == 0 and not point.problems(case, ref, True),
                      f"{label}: the earlier run is complete")
            spec = f"{fault}:{int(total * point.share)}:{point.pattern}"
            proc, fired = t.run(case, point.command(t, force), fault=spec)
            names = [n for group in point.slots(case, ref) for n in group]
            hit = final_name(fired[0][1], names) if fired else None
            # Thumbnails are written by several threads: once the disk is
            # full every later one fails too, and the run names the first
            # failure it recorded, which need not be the write the shim cut.
            named = [Path(n).name for n in names] if point.name == "thumbnail" else Path(hit or "c.sqlite").name
            judge_faulted_run(label, proc, fired, named, fault)
            bad = point.problems(case, ref, complete=over)
            check(not bad, f"{label}: no torn or wrong file at an output's name {bad[:4]}")
            note_leftovers(label, case, known_files(point, case, ref))
            again, _ = t.run(case, point.command(t))
            bad = point.problems(case, ref, complete=True)
            check(again.returncode == 0 and not bad,
                  f"{label}: a re-run completes the work (exit {again.returncode}) {bad[:4]}")


TRAIN_ARGS = ["train", "--arch", "lenet5", "--data", "fashion-mnist", "--limit-train", "128", "--limit-test", "64",
              "--batch", "64", "--seed", "3"]


def train_reference(t):
    """Checkpoints after one and two epochs, and the model, of runs that
    never failed (a resumed run is bit-identical to them on the CPU)."""
    case = t.work / "train-reference"
    case.mkdir()
    t.run(case, [*TRAIN_ARGS, "--epochs", "1", "--checkpoint", "one.ckpt"])
    proc, _ = t.run(case, [*TRAIN_ARGS, "--epochs", "2", "--checkpoint", "two.ckpt", "--out", "m.onnx"])
    if not check(proc.returncode == 0 and (case / "one.ckpt").exists(),
                 f"training reference runs {proc.stderr.strip()[-300:]}"):
        return None
    return {n: (case / n).read_bytes() for n in ("one.ckpt", "two.ckpt", "m.onnx")}


def run_checkpoint_point(t):
    ref = train_reference(t)
    if not ref:
        return
    size = len(ref["one.ckpt"])
    command = [*TRAIN_ARGS, "--epochs", "2", "--checkpoint", "ck.ckpt", "--out", "m.onnx"]
    # Half way through the first checkpoint none may be left; half way
    # through the second, the first must be.
    for scenario, limit, before in (("fresh", size // 2, None), ("over good", size + size // 2, "one.ckpt")):
        for fault in ("enospc", "eio", "kill", "syncfail"):
            label = f"checkpoint {fault} {scenario}"
            case = t.work / f"checkpoint-{fault}-{scenario.replace(' ', '-')}"
            case.mkdir()
            proc, fired = t.run(case, command, fault=f"{fault}:{limit}:ck\\.ckpt")
            judge_faulted_run(label, proc, fired, "ck.ckpt", fault)
            left = (case / "ck.ckpt").read_bytes() if (case / "ck.ckpt").exists() else None
            want = "the first epoch's" if before else "absent"
            check(left == (ref[before] if before else None),
                  f"{label}: ck.ckpt is {want} ({'absent' if left is None else f'{len(left)} bytes'})")
            note_leftovers(label, case, {"ck.ckpt", "m.onnx", "fault.log"})
            resume = ["--resume"] if (case / "ck.ckpt").exists() else []
            again, _ = t.run(case, [*command, *resume])
            done = all((case / n).exists() and (case / n).read_bytes() == ref[r]
                       for n, r in (("ck.ckpt", "two.ckpt"), ("m.onnx", "m.onnx")))
            check(again.returncode == 0 and done,
                  f"{label}: a re-run{' --resume' if resume else ''} ends bit-identical to a run that never "
                  f"failed (exit {again.returncode}) {again.stderr.strip()[-200:]}")


def run_write_faults(t, ref):
    for point in TAG_POINTS:
        run_tag_point(t, point, ref)
    run_checkpoint_point(t)
