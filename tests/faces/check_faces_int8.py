#!/usr/bin/python3
"""FaceRes in int8 keeps its descriptors: `tandem faces --precision int8
--calibrate DIR` (FaceRes quantized on the faces of DIR's photos, found and
cropped as `faces` crops them) against the same photos in float32.

Calibration on face-api's demo photos sample1-3, the check on sample4-6
(faces no calibration saw): the same faces found (the detector stays in
float), and every descriptor's cosine similarity to its float32 one >= 0.99.
Exit 77 (ctest: skipped) when the photos or the models are missing.

usage: check_faces_int8.py TANDEM_BIN
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

from compare_human import SAMPLES, models_dir, skip  # beside this script

MIN_COSINE = 0.99


def faces(tandem, photos, extra):
    r = subprocess.run([tandem, "faces", *photos, "--json", "--descriptors", "--device", "cpu", *extra],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"tandem faces {' '.join(extra)} failed ({r.returncode}):\n{r.stderr}")
    sys.stderr.write("".join(line + "\n" for line in r.stderr.splitlines() if line.startswith("tandem: int8")))
    out = {}
    for line in r.stdout.splitlines():
        rec = json.loads(line)
        out[os.path.basename(rec["path"])] = [f["descriptor"] for f in rec["faces"]]
    return out


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def main():
    tandem = sys.argv[1]
    names = [f"sample{i}.jpg" for i in range(1, 7)]
    if not all(os.path.exists(os.path.join(SAMPLES, n)) for n in names):
        skip(f"face-api's demo photos are not in {SAMPLES} (scripts/install-node-tools)")
    if not all(os.path.exists(os.path.join(models_dir(), m + ".json")) for m in ("blazeface", "faceres")):
        skip(f"blazeface and faceres are not in {models_dir()} (scripts/install-models)")
    with tempfile.TemporaryDirectory() as tmp:
        cal = os.path.join(tmp, "calibrate")
        os.makedirs(cal)
        for n in names[:3]:
            shutil.copy(os.path.join(SAMPLES, n), cal)
        photos = [os.path.join(SAMPLES, n) for n in names[3:]]
        want = faces(tandem, photos, [])
        got = faces(tandem, photos, ["--precision", "int8", "--calibrate", cal])
    failures, sims = [], []
    for photo, descriptors in want.items():
        if len(got.get(photo, [])) != len(descriptors):
            failures.append(f"{photo}: {len(descriptors)} faces in float32, {len(got.get(photo, []))} in int8")
            continue
        for i, (a, b) in enumerate(zip(descriptors, got[photo])):
            c = cosine(a, b)
            sims.append(c)
            if c < MIN_COSINE:
                failures.append(f"{photo} face {i}: cosine {c:.4f} < {MIN_COSINE}")
    if not sims:
        sys.exit("no face found in " + ", ".join(names[3:]))
    print(f"{len(sims)} faces: cosine to float32 min {min(sims):.4f}, median {sorted(sims)[len(sims) // 2]:.4f}")
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()
