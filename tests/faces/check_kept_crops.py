#!/usr/bin/python3
"""Faces cut from the GPU's own decode against faces cut from CPU region decodes.

On a GPU `tandem tag` keeps the photos its JPEG engines decoded on the
device and cuts each face found in them from those full-size pixels; the
photos the CPU decodes get their faces from a region decode of the file
(pipeline/face_crop.h). Both must describe a face alike. This tags
face-api's demo group photos, stored upright and turned (EXIF 6, 3, 8),
twice on the GPU: with the JPEG engines (--nvjpeg on, one CPU decoder, so
that the engines take most photos) and without them (--nvjpeg off), and
reads both catalogs with Python's sqlite3:

  * the first run's summary says faces were cut from the GPU's decode;
  * every face found in one run pairs with one in the other (box IoU >=
    0.8), except faces below a score of 0.6 (the detectors' inputs differ
    by the decoders' rounding, which can move a marginal face across the
    threshold);
  * paired descriptors agree: cosine >= 0.95 each, median >= 0.99 (FaceRes
    against human's own pipeline agrees to 0.956 at worst, docs/BENCHMARKS.md).

Exit 77 (skipped) without a GPU, the photos (face-api's demo folder, or
$TANDEM_FACE_PHOTOS) or the face models.
usage: check_kept_crops.py TANDEM_BIN
"""
import glob
import os
import re
import shutil
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile

from check_tag_faces import turned_copy  # beside this script
from compare_human import SAMPLES, face_models_installed, iou


def tag(tandem, lib, cat, extra):
    cmd = [tandem, "tag", lib, "--catalog", cat, "--faces", "on", "--device", "cuda", "--thumbnails", "off"] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("FAILED: %s\n%s%s" % (" ".join(cmd), r.stdout[-3000:], r.stderr[-3000:]))
    return r.stderr


def faces_of(cat):
    """{file name: [(score, box, descriptor)]} from a catalog."""
    out = {}
    db = sqlite3.connect(cat)
    rows = db.execute("SELECT f.path, x.score, x.x1, x.y1, x.x2, x.y2, x.descriptor "
                      "FROM faces x JOIN files f ON f.id = x.file_id")
    for path, score, x1, y1, x2, y2, blob in rows:
        d = struct.unpack("<%df" % (len(blob) // 4), blob)
        out.setdefault(os.path.relpath(path, os.path.dirname(cat)), []).append((score, (x1, y1, x2, y2), d))
    db.close()
    return out


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = sum(x * x for x in a) ** 0.5
    nb = sum(y * y for y in b) ** 0.5
    return dot / (na * nb) if na and nb else 0.0


def unpaired(mine, theirs, label, problems):
    """Pairs each of `mine` with the best of `theirs`; returns the cosines."""
    cosines = []
    for score, box, desc in mine:
        best = max(theirs, key=lambda t: iou(box, t[1]), default=None)
        if best is None or iou(box, best[1]) < 0.8:
            if score >= 0.6:
                problems.append("%s: face %s (score %.2f) has no pair" % (label, box, score))
            continue
        cosines.append(cosine(desc, best[2]))
    return cosines


def main():
    tandem = sys.argv[1]
    if shutil.which("nvidia-smi") is None or subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode:
        print("SKIP: no NVIDIA GPU here")
        return 77
    photos = sorted(glob.glob(os.path.join(os.environ.get("TANDEM_FACE_PHOTOS", SAMPLES), "sample*.jpg")))
    if not photos:
        print("SKIP: face-api's demo photos (scripts/install-node-tools) missing")
        return 77
    if not face_models_installed():
        print("SKIP: the face models are not installed (scripts/install-models)")
        return 77
    problems = []
    with tempfile.TemporaryDirectory(prefix="kept_crops_") as tmp:
        lib = os.path.join(tmp, "photos")
        # Copies in folders of their own: enough files for the engines' share.
        # The demo photos are small (2.5 MP) and the one CPU decoder takes
        # one in milliseconds; with --nvjpeg on it starts only once the
        # engines have opened (1.2 s on the H200 host), before which it could
        # take every file.
        for copy in range(16):
            d = os.path.join(lib, "copy%d" % copy)
            os.makedirs(d)
            for p in photos:
                shutil.copy(p, d)
            for p, o in zip(photos, (6, 3, 8)):
                turned_copy(p, os.path.join(d, os.path.basename(p)[:-4] + "_turned%d.jpg" % o), o)
        gpu_cat, cpu_cat = os.path.join(tmp, "gpu.sqlite"), os.path.join(tmp, "cpu.sqlite")
        summary = tag(tandem, lib, gpu_cat, ["--nvjpeg", "on", "--decoders", "1"])
        tag(tandem, lib, cpu_cat, ["--nvjpeg", "off"])
        m = re.search(r"photos with faces: (\d+) cut from the GPU's decode, (\d+) decoded again", summary)
        if not m or int(m.group(1)) == 0:
            problems.append("no face was cut from the GPU's decode: %s" % summary[-800:])
        else:
            print("photos with faces: %s cut from the GPU's decode, %s decoded again" % (m.group(1), m.group(2)))
        gpu, cpu = faces_of(gpu_cat), faces_of(cpu_cat)
        cosines = []
        for name in sorted(set(gpu) | set(cpu)):
            cosines += unpaired(gpu.get(name, []), cpu.get(name, []), "GPU run, " + name, problems)
            unpaired(cpu.get(name, []), gpu.get(name, []), "CPU run, " + name, problems)
        if not cosines:
            problems.append("no faces paired")
        else:
            print("%d faces paired: descriptor cosine min %.4f, median %.4f" % (
                len(cosines), min(cosines), statistics.median(cosines)))
            if min(cosines) < 0.95 or statistics.median(cosines) < 0.99:
                problems.append("descriptors differ: min %.4f, median %.4f" % (
                    min(cosines), statistics.median(cosines)))
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
