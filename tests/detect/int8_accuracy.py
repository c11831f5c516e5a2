#!/usr/bin/python3
"""The shipped detector in int8 keeps the float32 detections: `tandem tag
--precision int8 --calibrate CAL --float-layers 45` against the float32 run
of the same photos, by the criterion of bench/compare_detections.py (each
float32 object scoring >= 0.25 has an int8 one of the same label with IoU
>= 0.9 and a score within 0.05).

Photos: darknet's 7 and the first 40 of scripts/make-corpus with face-api's
demo group photos composed in; calibration on 40 photos of another seed,
which the check never sees. --float-layers 45 keeps in float the 45 convolutions that
alone move the heads most (the default keeps 8 and lands near 88%).

The target of 98% of objects is measured on 607 photos, where this setting
keeps 98.4% (docs/BENCHMARKS.md, "GPTQ weights and least-squared-error
ranges"); on these 47, which ctest can afford, it keeps 95.2% (120 of 126:
a handful of weak objects decide the share of so few), so this test holds
the quantizer to 90%, room for a CPU whose integer kernels round
differently: a regression (rounding, ranges, the choice of layers kept in
float; the default's 8 kept land near 88% on the large set) falls below
it.

Exit 77 (ctest: skipped) when darknet's photos, face-api's demo photos,
the wallpapers make-corpus reads or the detector are missing.

usage: int8_accuracy.py TANDEM_BIN MAKE_CORPUS [--photos N]
"""
import argparse
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

DARKNET = "/usr/share/darknet/data"
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# face-api's demo group photos (scripts/install-node-tools), the ones
# scripts/pack-corpus-sources packs as the corpus's people.
FACE_API_DEMO = os.path.join(REPO, "tools", "node", "node_modules", "@vladmandic", "face-api", "demo")
FLOOR = 0.90
TAG = ["--device", "cpu", "--json", "--min-score", "0.15", "--top", "100", "--faces", "off",
       "--thumbnails", "off", "--threads", "2"]


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def compare_detections():
    path = os.path.join(REPO, "bench", "compare_detections.py")
    spec = importlib.util.spec_from_file_location("compare_detections", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus(make_corpus, n, folder, seed, people):
    args = [sys.executable, make_corpus, str(n), folder, "--seed", str(seed), "--people", people]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        if "source photographs" in r.stderr:
            skip(r.stderr.strip().splitlines()[-1])
        sys.exit(f"make-corpus failed ({r.returncode}):\n{r.stderr}")


def tag(tandem, folder, extra, env):
    r = subprocess.run([tandem, "tag", folder, *TAG, *extra], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"tandem tag {' '.join(extra)} failed ({r.returncode}):\n{r.stderr}")
    sys.stderr.write("".join(line + "\n" for line in r.stderr.splitlines() if line.startswith("tandem: int8")))
    return {json.loads(line)["path"]: json.loads(line).get("objects", []) for line in r.stdout.splitlines()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tandem")
    ap.add_argument("make_corpus")
    ap.add_argument("--photos", type=int, default=40)
    o = ap.parse_args()
    darknet = sorted(glob.glob(os.path.join(DARKNET, "*.jpg")))
    if not darknet:
        skip(f"darknet's photos are not in {DARKNET} (apt-get install darknet)")
    if "centernet" not in subprocess.run([o.tandem, "models"], capture_output=True, text=True).stdout:
        skip("the detector is not installed (scripts/install-models)")
    group_photos = sorted(glob.glob(os.path.join(FACE_API_DEMO, "sample*.jpg")))
    if not group_photos:
        skip(f"face-api's demo photos are not in {FACE_API_DEMO} (scripts/install-node-tools)")
    cd = compare_detections()
    with tempfile.TemporaryDirectory() as tmp:
        photos, cal, people = (os.path.join(tmp, d) for d in ("photos", "calibrate", "people"))
        os.makedirs(people)
        for p in group_photos:
            shutil.copyfile(p, os.path.join(people, os.path.basename(p)))
        corpus(o.make_corpus, o.photos, os.path.join(photos, "corpus"), 1, people)
        corpus(o.make_corpus, 40, cal, 2, people)
        os.makedirs(os.path.join(photos, "darknet"))
        for p in darknet:
            os.symlink(p, os.path.join(photos, "darknet", os.path.basename(p)))
        env = dict(os.environ, TANDEM_CACHE_DIR=os.path.join(tmp, "cache"), XDG_CACHE_HOME=os.path.join(tmp, "xdg"))
        want = tag(o.tandem, photos, [], env)
        got = tag(o.tandem, photos, ["--precision", "int8", "--calibrate", cal, "--float-layers", "45"], env)
    opts = argparse.Namespace(min_score=0.25, floor=0.15, iou=0.9, score=0.05)
    within = total = 0
    for path, objects in sorted(want.items()):
        notes, pairs = [], []
        missing = cd.match(objects, got.get(path, []), opts, notes, "float32", pairs)
        total += len(pairs) + missing
        within += cd.within(pairs, opts)
        if notes:
            print(f"{os.path.relpath(path, tmp) if path.startswith(tmp) else path}: {'; '.join(notes)}")
    share = within / total if total else 0.0
    print(f"{within} of {total} float32 objects kept in int8 ({100 * share:.1f}%; at least {100 * FLOOR:.0f}% wanted)")
    if total == 0:
        sys.exit("no object scored >= 0.25 in float32: nothing was checked")
    sys.exit(0 if share >= FLOOR else 1)


if __name__ == "__main__":
    main()
