#!/usr/bin/env python3
"""`tandem tag` end to end through the command line, checked with tools
nobody here wrote: Python's sqlite3 and csv modules, JSON, exiv2 (-px reads
the XMP sidecars), SHA-256 of the photos.

The photos are Debian darknet's samples (/usr/share/darknet/data/*.jpg,
scripts/setup installs darknet) plus a truncated JPEG, an empty one and a
text file; the kill test tags a folder of camera-like JPEGs generated here
with PIL (some progressive). The model is a tiny ImageNet-shaped ONNX
classifier (Conv, Relu, GlobalAveragePool, Gemm to 1000 classes; seeded
random weights) written here with onnx.helper, so the test runs offline in
well under a minute on two cores.

With --objects, the installed detector (the default model) tags dog.jpg and
person.jpg on the CPU instead: the objects in the catalog, JSONL, CSV and
--json agree, sit inside the photo, and match what `tandem detect --json`
(its own decode and batch path) finds in the same photos.

  tag_cli.py TANDEM_BINARY [--objects]   exit 0: all passed, 1: failures, 77: skipped
"""
import csv
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DARKNET = Path("/usr/share/darknet/data")
PHOTOS = ["dog", "eagle", "giraffe", "horses", "kite", "person", "scream"]
TAG_ARGS = ["--top", "3", "--min-score", "0"]  # every photo gets 3 tags, whatever the scores

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures += 1
    return ok


def make_model(path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    weights = {
        "w1": rng.normal(0, 0.5, (8, 3, 3, 3)).astype(np.float32),
        "b1": rng.normal(0, 0.1, (8,)).astype(np.float32),
        "w2": rng.normal(0, 1.0, (1000, 8)).astype(np.float32),
        "b2": np.zeros(1000, np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["input", "w1", "b1"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "tiny_classifier",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 1000])],
        [numpy_helper.from_array(a, n) for n, a in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def make_photo_folder(folder):
    folder.mkdir()
    for name in PHOTOS:
        shutil.copy(DARKNET / f"{name}.jpg", folder / f"{name}.jpg")
    (folder / "corrupt.jpg").write_bytes((DARKNET / "dog.jpg").read_bytes()[:3000])
    (folder / "empty.jpg").write_bytes(b"")
    (folder / "notes.txt").write_text("not a photo\n")


def make_generated_folder(folder, n):
    """n camera-like JPEGs (noise over gradients, every fourth progressive)
    plus a truncated and an empty one."""
    import numpy as np
    from PIL import Image

    folder.mkdir()
    rng = np.random.default_rng(1)
    for i in range(n):
        w, h = 480 + 8 * (i % 5), 360
        y, x = np.mgrid[0:h, 0:w]
        base = rng.integers(0, 256, 3)
        px = np.stack([(base[c] + x * (c + 1) // 4 + y * (3 - c) // 3) % 256 for c in range(3)], -1)
        px = px.astype(np.uint8) // 2 + rng.integers(0, 128, (h, w, 3), dtype=np.uint8)
        Image.fromarray(px).save(folder / f"img_{i:03d}.jpg", quality=90, progressive=i % 4 == 0)
    (folder / "truncated.jpg").write_bytes((folder / "img_001.jpg").read_bytes()[:2000])
    (folder / "empty.jpg").write_bytes(b"")
    return n + 2


def tag(tandem, args, timeout=120):
    return subprocess.run([tandem, "tag", *args], capture_output=True, text=True, timeout=timeout)


def summary(proc):
    """The summary's first line ("tagged N images, ..."), from stderr."""
    for line in proc.stderr.splitlines():
        if line.startswith(("tagged ", "decoded ")):
            return line
    return "(no summary) " + proc.stderr[-500:]


def catalog_rows(db, full=False):
    """Per file (ordered by path): what a run must reproduce, or with `full`
    every column (timings, tagged_at) too, with its tags (rank, label, score)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        columns = "*" if full else "path, size, mtime_ns, content_hash, model_id, status, error_kind"
        files = con.execute(f"SELECT id, {columns} FROM files ORDER BY path").fetchall()
        rows = []
        for f in files:
            tags = con.execute("SELECT rank, label, score FROM tags WHERE file_id = ? ORDER BY rank", (f[0],)).fetchall()
            rows.append((f[1:], tuple(tags)))
        return rows
    finally:
        con.close()


def same_results(a, b):
    """Two catalogs' rows (catalog_rows) say the same: files, labels in order,
    scores within 1e-5 (one image's scores must not depend on the rest of
    its batch, but need not be bit-identical)."""
    def close(ta, tb):
        return len(ta) == len(tb) and all(
            x[:2] == y[:2] and abs(x[2] - y[2]) <= 1e-5 for x, y in zip(ta, tb))
    return len(a) == len(b) and all(fa == fb and close(ta, tb) for (fa, ta), (fb, tb) in zip(a, b))


def row_count(db):
    """Files in the catalog now, None while it cannot be read (not created yet)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05)
        try:
            return con.execute("SELECT count(*) FROM files").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return None


def sqlite_check(db):
    con = sqlite3.connect(str(db))
    try:
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        n, distinct = con.execute("SELECT count(*), count(DISTINCT path || '|' || model_id) FROM files").fetchone()
        return integrity, n, distinct
    finally:
        con.close()


def sha256_of(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.jpg"))}


def xmp_subject(sidecar):
    """Xmp.dc.subject's keywords as exiv2 reads them from the sidecar."""
    out = subprocess.run(["exiv2", "-px", str(sidecar)], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("Xmp.dc.subject "):
            return [w.strip() for w in line.split(None, 3)[3].split(",")]
    return None


def test_outputs(tandem, model, work):
    """A first run: exit code, catalog, JSONL, CSV, sidecars, photos untouched."""
    photos = work / "photos"
    make_photo_folder(photos)
    before = sha256_of(photos)
    db, jsonl, csv_path = work / "c.sqlite", work / "t.jsonl", work / "t.csv"
    proc = tag(tandem, [str(photos), "--model", str(model), "--catalog", str(db), "--jsonl", str(jsonl),
                        "--csv", str(csv_path), "--xmp", *TAG_ARGS])
    check(proc.returncode == 1, f"first run exits 1 when files failed (got {proc.returncode})")
    check(proc.stdout == "", "results going to files only: nothing on stdout")
    check(summary(proc).startswith("tagged 7 images, 2 failed, 0 up to date (skipped), 1 not images"),
          "first run summary: " + summary(proc))

    rows = {Path(r[0][0]).name: r for r in catalog_rows(db)}
    check(sorted(rows) == sorted([f"{p}.jpg" for p in PHOTOS] + ["corrupt.jpg", "empty.jpg"]),
          f"one catalog row per image file, none for the text file: {sorted(rows)}")
    for name in PHOTOS:
        (path, size, _, digest, _, status, _), tags = rows.get(f"{name}.jpg", ((None,) * 7, ()))
        raw = (DARKNET / f"{name}.jpg").read_bytes()
        check(status == "ok" and len(tags) == 3 and size == len(raw) and len(digest or "") == 32,
              f"{name}.jpg: ok, 3 tags, size and hash stored ({status}, {len(tags)} tags)")
    for name, kind in [("corrupt.jpg", "corrupt"), ("empty.jpg", "empty")]:
        (_, _, _, _, _, status, error_kind), tags = rows.get(name, ((None,) * 7, ()))
        check(status == "failed" and error_kind == kind and not tags, f"{name}: failed as {kind} ({error_kind})")

    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    check(len(lines) == 9 and all(
        [t["label"] for t in j["tags"]] == [t[1] for t in rows[Path(j["path"]).name][1]] for j in lines),
        f"JSONL: {len(lines)} lines, tags as in the catalog")
    with open(csv_path, newline="") as f:
        table = list(csv.DictReader(f))
    check(len(table) == 9 and {Path(r["path"]).name for r in table} == set(rows), f"CSV: {len(table)} rows")

    for name in PHOTOS:
        want = [t[1] for t in rows[f"{name}.jpg"][1]]
        got = xmp_subject(photos / f"{name}.jpg.xmp")
        check(got == want, f"{name}.jpg.xmp: exiv2 reads dc:subject {got}, the catalog says {want}")
    check(not (photos / "corrupt.jpg.xmp").exists() and not (photos / "empty.jpg.xmp").exists(),
          "no sidecar for a file that failed")
    check(sha256_of(photos) == before, "the photos' bytes are unchanged")
    check(object_rows(db) == {} and all(j["objects"] == [] for j in lines) and
          all(r["objects"] == "" for r in table), "a classifier stores and exports no objects")
    return photos, db


def test_reruns(tandem, model, photos, db):
    """Up-to-date files are skipped; a touched one is tagged again; --force tags all."""
    first = catalog_rows(db, full=True)
    args = [str(photos), "--model", str(model), "--catalog", str(db), *TAG_ARGS]
    proc = tag(tandem, args)
    check(proc.returncode == 0 and summary(proc).startswith("tagged 0 images, 0 failed, 9 up to date"),
          f"re-run: everything up to date (exit {proc.returncode}): {summary(proc)}")
    check(catalog_rows(db, full=True) == first, "re-run: the catalog is unchanged")

    dog = photos / "dog.jpg"
    st = dog.stat()
    os.utime(dog, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    proc = tag(tandem, args)
    check(summary(proc).startswith("tagged 1 images, 0 failed, 8 up to date"),
          f"after touching dog.jpg: only it is tagged again: {summary(proc)}")
    after = catalog_rows(db, full=True)
    changed = [Path(a[0][1]).name for a, b in zip(after, first) if a != b]
    check(len(after) == len(first) and changed == ["dog.jpg"], f"only dog.jpg's row changed: {changed}")
    content = catalog_rows(db)
    dog_row = [a for a in content if a[0][0].endswith("/dog.jpg")][0]
    check(dog_row[0][2] == dog.stat().st_mtime_ns, "dog.jpg's row has its new mtime")

    proc = tag(tandem, [*args, "--force", "--print"])
    check(proc.returncode == 1 and summary(proc).startswith("tagged 7 images, 2 failed, 0 up to date"),
          f"--force tags everything again: {summary(proc)}")
    printed = sorted(Path(line.split(": ")[0]).name for line in proc.stdout.splitlines())
    check(printed == sorted(Path(r[0][0]).name for r in content),
          f"--print: one line per file on stdout beside the catalog: {printed}")
    check(same_results(catalog_rows(db), content) and sqlite_check(db) == ("ok", 9, 9),
          "--force: the same results, still one row per file")


def object_rows(db):
    """{file name: [(label, score, [x1, y1, x2, y2]), ...] best first}, from the objects table."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT f.path, o.label, o.score, o.x1, o.y1, o.x2, o.y2 FROM objects o "
                           "JOIN files f ON f.id = o.file_id ORDER BY f.path, o.rank").fetchall()
    finally:
        con.close()
    out = {}
    for path, label, score, *box in rows:
        out.setdefault(Path(path).name, []).append((label, score, box))
    return out


def as_float32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def unmatched(objects, others):
    """Objects (score >= 0.3, clear of the 0.25 threshold) with no object of
    the same label in `others` overlapping it by IoU >= 0.9 and scoring
    within 0.02: the same detection found by another path."""
    return [(label, round(score, 3)) for label, score, box in objects if score >= 0.3 and not any(
        l == label and iou(box, b) >= 0.9 and abs(s - score) <= 0.02 for l, s, b in others)]


def csv_objects(field):
    """The CSV's objects column: "label:score:x1:y1:x2:y2;..." (labels may hold spaces)."""
    out = []
    for entry in filter(None, field.split(";")):
        label, *numbers = entry.rsplit(":", 5)
        out.append((label, float(numbers[0]), [float(v) for v in numbers[1:]]))
    return out


def test_objects(tandem, work):
    """The detector's objects through every output of `tandem tag`, against
    `tandem detect --json` on the same photos."""
    photos = work / "detector"
    photos.mkdir()
    for name in ("dog", "person"):
        shutil.copy(DARKNET / f"{name}.jpg", photos / f"{name}.jpg")
    (photos / "corrupt.jpg").write_bytes((DARKNET / "dog.jpg").read_bytes()[:3000])
    db, jsonl, csv_path = work / "objects.sqlite", work / "objects.jsonl", work / "objects.csv"
    args = [str(photos), "--device", "cpu", "--catalog", str(db)]
    proc = tag(tandem, [*args, "--jsonl", str(jsonl), "--csv", str(csv_path), "--json"], timeout=600)
    check(proc.returncode == 1 and summary(proc).startswith("tagged 2 images, 1 failed"),
          f"detector run: exit 1 (corrupt.jpg failed): {summary(proc)}")
    detect = subprocess.run([tandem, "detect", "--json", "--device", "cpu",
                             str(photos / "dog.jpg"), str(photos / "person.jpg")],
                            capture_output=True, text=True, timeout=600)
    reference = {Path(j["path"]).name: j for j in map(json.loads, detect.stdout.splitlines())}
    check(detect.returncode == 0 and sorted(reference) == ["dog.jpg", "person.jpg"],
          f"tandem detect --json on the same photos (exit {detect.returncode})")

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    sizes = dict((Path(p).name, (w, h)) for p, w, h in con.execute("SELECT path, width, height FROM files"))
    con.close()
    stored = object_rows(db)
    check(sorted(stored) == ["dog.jpg", "person.jpg"], f"objects for the photos, none for the failed file: {sorted(stored)}")
    for name, want in [("dog.jpg", {"dog", "bicycle"}), ("person.jpg", {"person", "dog"})]:
        objects = stored.get(name, [])
        labels = {label for label, _, _ in objects}
        check(want <= labels, f"{name}: objects include {sorted(want)}: {sorted(labels)}")
        w, h = sizes.get(name, (0, 0))
        ref = reference.get(name, {})
        check((w, h) == (ref.get("width"), ref.get("height")), f"{name}: size {w}x{h} as detect says")
        check(all(0 <= x1 < x2 <= w and 0 <= y1 < y2 <= h and 0.25 <= s <= 1 for _, s, (x1, y1, x2, y2) in objects),
              f"{name}: every box inside the {w}x{h} photo, scores in [0.25, 1]")
        theirs = [(o["label"], o["score"], o["box"]) for o in ref.get("objects", [])]
        missing, extra = unmatched(theirs, objects), unmatched(objects, theirs)
        check(not missing and not extra,
              f"{name}: the catalog's {len(objects)} objects are detect's {len(theirs)} (missing {missing}, extra {extra})")
        for label, score, box in objects:
            print(f"     {name}: {label} {score:.3f} [{', '.join(f'{v:.1f}' for v in box)}]")

    # Scores and corners are floats: the catalog holds their doubles, the
    # exports their shortest decimal forms; read as floats they agree exactly.
    def exact(objects):
        return [(label, as_float32(s), [as_float32(v) for v in box]) for label, s, box in objects]

    exported = {Path(j["path"]).name: j for j in map(json.loads, jsonl.read_text().splitlines())}
    check(all(exact((o["label"], o["score"], o["box"]) for o in exported[name]["objects"]) == exact(objects)
              for name, objects in stored.items()) and exported["corrupt.jpg"]["objects"] == [],
          "JSONL: the catalog's objects, floats exact")
    with open(csv_path, newline="") as f:
        table = {Path(r["path"]).name: r for r in csv.DictReader(f)}
    check(all(exact(csv_objects(table[name]["objects"])) == exact(objects) for name, objects in stored.items())
          and table["corrupt.jpg"]["objects"] == "", "CSV: the catalog's objects, floats exact")
    printed = {Path(j["path"]).name: j for j in map(json.loads, proc.stdout.splitlines())}
    check(sorted(printed) == ["corrupt.jpg", "dog.jpg", "person.jpg"] and all(
        (printed[name]["width"], printed[name]["height"]) == sizes[name] and
        len(printed[name]["objects"]) == len(objects) and all(
            o["label"] == label and abs(o["score"] - s) <= 5e-4 and
            all(abs(a - b) <= 0.05 + 1e-3 for a, b in zip(o["box"], box))
            for o, (label, s, box) in zip(printed[name]["objects"], objects))
        for name, objects in stored.items()) and printed["corrupt.jpg"]["objects"] == [],
        "--json: path, width, height and the catalog's objects (score to 0.001, box to 0.1)")

    # A changed file's objects are replaced, --force replaces them all: the
    # same objects, none twice.
    dog = photos / "dog.jpg"
    st = dog.stat()
    os.utime(dog, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    proc = tag(tandem, args, timeout=600)
    check(summary(proc).startswith("tagged 1 images, 0 failed, 2 up to date"), f"touched dog.jpg: {summary(proc)}")
    again = object_rows(db)
    check(set(again) == set(stored) and all(len(again[n]) == len(stored[n]) for n in stored),
          "touched dog.jpg: its objects replaced, not added")
    proc = tag(tandem, [*args, "--force"], timeout=600)
    check(summary(proc).startswith("tagged 2 images, 1 failed, 0 up to date"), f"--force: {summary(proc)}")
    forced = object_rows(db)
    check(set(forced) == set(stored) and all(len(forced[n]) == len(stored[n]) for n in stored),
          "--force: the same objects, none twice")


def test_decode_only(tandem, model, work):
    folder = work / "decode_only"
    make_photo_folder(folder)
    db, jsonl = work / "decode_only.sqlite", work / "decode_only.jsonl"
    proc = tag(tandem, [str(folder), "--model", str(model), "--decode-only", "--catalog", str(db),
                        "--jsonl", str(jsonl), "--xmp"])
    check(summary(proc).startswith("decoded 7 images, 2 failed"), f"--decode-only: {summary(proc)}")
    check(not db.exists() and not jsonl.exists() and not list(folder.glob("*.xmp")),
          "--decode-only writes no catalog, export or sidecar")


def test_bad_files_named(tandem, model, work):
    """A file with a photo's name and something else inside is a failed photo,
    named with its path and what it is, in the summary, the catalog and
    --json; a file with another name is only counted as not an image."""
    folder = work / "misnamed"
    folder.mkdir()
    shutil.copy(DARKNET / "dog.jpg", folder / "dog.jpg")
    (folder / "letter.jpg").write_text("Dear Alice,\nthe photos follow.\n")
    (folder / "anim.PNG").write_bytes(b"GIF89a" + bytes(64))
    (folder / "readme.txt").write_text("not a photo\n")
    db = work / "misnamed.sqlite"
    proc = tag(tandem, [str(folder), "--model", str(model), "--catalog", str(db), "--json", "--print", *TAG_ARGS])
    check(proc.returncode == 1 and summary(proc).startswith("tagged 1 images, 2 failed, 0 up to date (skipped), 1 not images"),
          f"misnamed files: exit 1, 2 failed, readme.txt not an image: {summary(proc)}")
    letter, anim = str(folder / "letter.jpg"), str(folder / "anim.PNG")
    check(f"[unsupported] {letter}: not a JPEG, PNG, WebP or HEIF image (starts with 44 65 61 72)" in proc.stderr
          and f"[unsupported] {anim}: GIF images are not supported" in proc.stderr,
          f"the summary names each misnamed file and what it is: {proc.stderr[-800:]}")
    printed = {Path(j["path"]).name: j for j in map(json.loads, proc.stdout.splitlines())}
    check(sorted(printed) == ["anim.PNG", "dog.jpg", "letter.jpg"]
          and not printed["letter.jpg"]["ok"] and printed["letter.jpg"]["error_kind"] == "unsupported"
          and "not a JPEG" in printed["letter.jpg"]["error"],
          f"--json: a failed record for each misnamed file: {sorted(printed)}")
    con = sqlite3.connect(db)
    rows = dict(con.execute("SELECT path, status || ' ' || coalesce(error_kind, '') FROM files").fetchall())
    con.close()
    check(rows == {str(folder / "dog.jpg"): "ok ", letter: "failed unsupported", anim: "failed unsupported"},
          f"catalog: the misnamed files failed as unsupported, readme.txt absent: {rows}")


def run_and_kill(tandem, args, db, total, when):
    """Starts `tandem tag`, SIGKILLs it once it has stored a `when[1]` share
    of the files left ("rows") or `when[1]` seconds after the start ("time");
    returns whether the kill ended it and the rows it left."""
    done = row_count(db) or 0
    enough = done + max(1, int(when[1] * (total - done)))
    proc = subprocess.Popen([tandem, "tag", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start = time.monotonic()
    while proc.poll() is None:
        if when[0] == "time" and time.monotonic() - start >= when[1]:
            break
        if when[0] == "rows" and (row_count(db) or 0) >= enough:
            break
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return proc.returncode == -signal.SIGKILL, row_count(db) or 0


def test_kill_and_rerun(tandem, model, work):
    """Runs SIGKILLed at moments spread over the run, then a run to the end,
    leave exactly the catalog of one uninterrupted run."""
    folder = work / "generated"
    total = make_generated_folder(folder, 160)
    reference, crashed = work / "reference.sqlite", work / "crashed.sqlite"
    common = [str(folder), "--model", str(model), "--batch", "2", *TAG_ARGS]
    tag(tandem, [*common, "--catalog", str(reference)])

    rng = random.Random(20261203)
    # Kills at random moments, and once a share of the files left is stored
    # (those surely land mid-run).
    plan = [("time", rng.uniform(0.02, 0.15)), ("rows", 0.2), ("time", rng.uniform(0.1, 0.4)),
            ("rows", 0.5), ("rows", 0.7), ("time", rng.uniform(0.05, 0.3))]
    mid_run = 0
    for when in plan:
        killed, rows = run_and_kill(tandem, [*common, "--catalog", str(crashed)], crashed, total, when)
        mid_run += killed and 0 < rows < total
        print(f"     kill at {when[0]} {when[1]:.3g}: {'killed' if killed else 'finished'}, {rows} of {total} rows")
    proc = tag(tandem, [*common, "--catalog", str(crashed)])
    check(proc.returncode in (0, 1), f"the run after the kills completes: {summary(proc)}")
    check(mid_run >= 1, f"{mid_run} kills landed mid-run (some but not all files in the catalog)")
    want, got = catalog_rows(reference), catalog_rows(crashed)
    check(len(want) == total and same_results(got, want),
          f"killed runs + re-run = the uninterrupted run's catalog ({len(got)} and {len(want)} rows)")
    check(sqlite_check(crashed) == ("ok", total, total), f"integrity ok, no file twice: {sqlite_check(crashed)}")


def test_device_list(tandem, model, work):
    """--device cpu,cpu: two pipelines share the files (32 batches each
    time one is free) and the sink; the results are one pipeline's."""
    folder = work / "two_pipelines"
    n = make_generated_folder(folder, 70)
    results = {}
    for devices in ("cpu", "cpu,cpu"):
        db = work / f"devices_{devices.replace(',', '_')}.sqlite"
        proc = tag(tandem, [str(folder), "--model", str(model), "--device", devices, "--batch", "1", "--json",
                            "--catalog", str(db), "--thumbnails", "off"], timeout=300)
        check(proc.returncode == 1 and summary(proc).startswith("tagged 70 images, 2 failed"),
              f"--device {devices}: 70 tagged, 2 failed: {summary(proc)}")
        lines = [json.loads(line) for line in proc.stdout.splitlines()]
        check(len(lines) == n and len({j["path"] for j in lines}) == n, f"--device {devices}: each file printed once")
        results[devices] = ({j["path"]: (j["ok"], j["tags"]) for j in lines}, catalog_rows(db))
    check(results["cpu,cpu"] == results["cpu"], "two pipelines give one pipeline's results, printed and stored")
    proc = tag(tandem, [str(folder), "--model", str(model), "--device", "cpu,cuda:0"])
    check(proc.returncode != 0 and "one kind" in proc.stderr, f"a mixed device list is refused: {proc.stderr[-200:]}")


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in ([], ["--objects"]):
        sys.exit(__doc__)
    tandem = os.path.abspath(sys.argv[1])
    if not all((DARKNET / f"{p}.jpg").exists() for p in PHOTOS) or not shutil.which("exiv2"):
        print("skipped: needs Debian's darknet sample photos and exiv2 (scripts/setup)")
        sys.exit(77)
    if sys.argv[2:] == ["--objects"]:
        models = subprocess.run([tandem, "models"], capture_output=True, text=True)
        if "centernet" not in models.stdout:
            print("skipped: the detector is not installed (scripts/install-models)")
            sys.exit(77)
        with tempfile.TemporaryDirectory(prefix="tandem_tag_objects_") as tmp:
            test_objects(tandem, Path(tmp))
        print(f"tandem tag objects: {failures} failed")
        sys.exit(1 if failures else 0)
    with tempfile.TemporaryDirectory(prefix="tandem_tag_cli_") as tmp:
        work = Path(tmp)
        model = work / "tiny.onnx"
        make_model(model)
        photos, db = test_outputs(tandem, model, work)
        test_reruns(tandem, model, photos, db)
        test_decode_only(tandem, model, work)
        test_bad_files_named(tandem, model, work)
        test_kill_and_rerun(tandem, model, work)
        test_device_list(tandem, model, work)
    print(f"tandem tag cli: {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
