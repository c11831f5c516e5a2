#!/usr/bin/python3
"""`tandem faces` against @vladmandic/human on the same photos.

Human (tools/node/human_faces.js: its own BlazeFace + FaceRes pipeline in
TF.js, WASM backend, rotation and face mesh off) is the pipeline tandem's
follows; the photos are face-api's demo group photos (npm
@vladmandic/face-api, pinned in tools/node). Every face either side finds
above --min-score + --margin must be found by the other, and each pair must
agree:
  crop box IoU >= --iou (human's box is the enlarged square tandem calls
      "crop", clamped to the photo);
  landmarks within --landmarks x the box's side;
  age within --age years (FaceRes reads age as a decade bin nudged toward
      its likelier neighbour, so a small change of the crop can move it a
      whole bin: 16 of 22 demo faces agree within 0.2 years, the rest by
      5-12), and the median difference within --median-age;
  the same gender where human is sure of it (genderScore >= 0.3);
  descriptors: cosine >= --cosine, and human's descriptor nearest to
      tandem's (among the photo's faces) is its pair's. (Human's own
      similarity saturates at 1 below a distance of 4, and the same face
      lies within 3.4 of itself here, other faces 9.2 or more away, so its
      value is reported, not checked.)
The two decode and resample differently (jpeg-js and TF.js's resizeBilinear
and cropAndResize from the full photo; libjpeg-turbo DCT scaling, PIL's
antialiased bilinear and a region decode for the crop), hence tolerances.
Exit 77 (ctest: skipped) when Node, the Node tools, the photos or the
models are missing.

A GPU host has no Node: --save-reference FILE writes human's answer (the
photos named by file name) and stops, and the photos are to be copied
beside FILE; --reference FILE reads it instead of running Node, with the
photos beside it.

usage: compare_human.py TANDEM_BIN [--device cuda] [--precision fp16]
           [--save-reference FILE | --reference FILE] [PHOTO...]
"""
import argparse
import glob
import json
import math
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE_TOOLS = os.path.join(REPO, "tools", "node")
SAMPLES = os.path.join(NODE_TOOLS, "node_modules", "@vladmandic", "face-api", "demo")
SKIP = 77


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)


def models_dir():
    return os.environ.get("TANDEM_MODELS") or os.path.join(os.path.expanduser("~"), ".cache", "tandem", "models")


def face_models_installed():
    return os.path.exists(os.path.join(models_dir(), "blazeface.json"))


def run_json_lines(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(" ".join(cmd))
        print(r.stdout[-3000:], r.stderr[-3000:])
        sys.exit(1)
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def human_faces(photos, min_score):
    if not shutil.which("node"):
        skip("node not found")
    script = os.path.join(NODE_TOOLS, "human_faces.js")
    if not os.path.isdir(os.path.join(NODE_TOOLS, "node_modules", "@vladmandic", "human")):
        skip("tools/node has no @vladmandic/human (scripts/install-node-tools)")
    return run_json_lines(["node", script, models_dir(), *photos, "--min-score", str(min_score)])


def iou(a, b):
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def human_box(f):
    x, y, w, h = f["box"]
    return [x, y, x + w, y + h]


def tandem_crop(f, width, height):
    x1, y1, x2, y2 = f["crop"]
    return [max(0, x1), max(0, y1), min(width, x2), min(height, y2)]


def cosine(a, b):
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b)) / (na * nb) if na and nb else 0.0


def similarity(a, b):
    """human's match.similarity with its defaults (order 2, multiplier 25,
    min 0.2, max 0.8): (0.8 - 0.05 |a - b|) / 0.6, clamped to 0..1."""
    d = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    return max(0.0, min(1.0, (0.8 - 0.05 * d) / 0.6))


def compare_photo(ours, ref, a, problems, stats):
    w, h = ours["width"], ours["height"]
    strong = a.min_score + a.margin
    pairs = []
    used = set()
    for r in ref["faces"]:
        best, best_iou = None, 0.3
        for k, f in enumerate(ours["faces"]):
            v = iou(human_box(r), tandem_crop(f, w, h))
            if k not in used and v > best_iou:
                best, best_iou = k, v
        if best is None:
            if r["score"] >= strong:
                problems.append("%s: human's face %.2f at %s not found" % (ours["path"], r["score"], r["box"]))
            continue
        used.add(best)
        pairs.append((r, ours["faces"][best], best_iou))
    for k, f in enumerate(ours["faces"]):
        if k not in used and f["score"] >= strong:
            problems.append("%s: tandem's face %.2f at %s not in human's" % (ours["path"], f["score"], f["box"]))
    for r, f, v in pairs:
        where = "%s: face at %s" % (ours["path"], r["box"])
        side = max(1.0, r["box"][2])
        worst_mark = max(math.dist(p, q) for p, q in zip(r["landmarks"], f["landmarks"])) / side
        sim = similarity(r["descriptor"], f["descriptor"])
        cos = cosine(r["descriptor"], f["descriptor"])
        nearest = min(ref["faces"], key=lambda x: math.dist(x["descriptor"], f["descriptor"]))
        stats["pairs"] += 1
        stats["ages"].append(abs(r["age"] - f["age"]))
        stats["worst_cosine"] = min(stats["worst_cosine"], cos)
        stats["worst_iou"] = min(stats["worst_iou"], v)
        stats["worst_landmark"] = max(stats["worst_landmark"], worst_mark)
        stats["worst_age"] = max(stats["worst_age"], abs(r["age"] - f["age"]))
        stats["worst_similarity"] = min(stats["worst_similarity"], sim)
        if v < a.iou:
            problems.append("%s: crop IoU %.3f < %.2f" % (where, v, a.iou))
        if worst_mark > a.landmarks:
            problems.append("%s: a landmark %.3f of the box away" % (where, worst_mark))
        if abs(r["age"] - f["age"]) > a.age:
            problems.append("%s: age %.1f against human's %.1f" % (where, f["age"], r["age"]))
        if r["genderScore"] >= 0.3 and r["gender"] != f["gender"]:
            problems.append("%s: %s against human's %s" % (where, f["gender"], r["gender"]))
        if cos < a.cosine:
            problems.append("%s: descriptor cosine %.3f < %.2f" % (where, cos, a.cosine))
        if nearest is not r:
            problems.append("%s: its descriptor is nearer another of human's faces" % where)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tandem")
    ap.add_argument("photos", nargs="*")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--min-score", type=float, default=0.5)
    ap.add_argument("--margin", type=float, default=0.1, help="faces this close to the threshold may be missing")
    ap.add_argument("--iou", type=float, default=0.8)
    ap.add_argument("--landmarks", type=float, default=0.08)
    ap.add_argument("--age", type=float, default=13.0)
    ap.add_argument("--median-age", type=float, default=1.0)
    ap.add_argument("--cosine", type=float, default=0.9)
    ap.add_argument("--save-reference")
    ap.add_argument("--reference")
    a = ap.parse_args()
    photos = a.photos or sorted(glob.glob(os.path.join(SAMPLES, "sample*.jpg")))
    if not photos and not a.reference:
        skip("no photos: face-api's demo photos come with scripts/install-node-tools")
    if not face_models_installed():
        skip("the face models are not installed (scripts/install-models)")
    if a.reference:
        with open(a.reference) as f:
            ref = json.load(f)
        for r in ref:
            r["path"] = os.path.join(os.path.dirname(os.path.abspath(a.reference)), r["path"])
        photos = [r["path"] for r in ref]
    else:
        ref = human_faces(photos, a.min_score)
        if a.save_reference:
            for r in ref:
                r["path"] = os.path.basename(r["path"])
            with open(a.save_reference, "w") as f:
                json.dump(ref, f)
            print("saved human's faces of %d photos to %s" % (len(ref), a.save_reference))
            return 0
    ours = run_json_lines([a.tandem, "faces", "--json", "--descriptors", "--device", a.device, "--precision",
                           a.precision, "--min-score", str(a.min_score), *photos])
    by_path = {o["path"]: o for o in ours}
    problems = []
    stats = dict(photos=len(ref), pairs=0, human_faces=sum(len(r["faces"]) for r in ref),
                 tandem_faces=sum(len(o.get("faces", [])) for o in ours), worst_iou=1.0, worst_landmark=0.0,
                 worst_age=0.0, worst_similarity=1.0, worst_cosine=1.0, ages=[])
    for r in ref:
        o = by_path.get(r["path"])
        if o is None or "error" in o:
            problems.append("%s: tandem gave no faces (%s)" % (r["path"], o and o.get("error")))
            continue
        compare_photo(o, r, a, problems, stats)
    ages = sorted(stats.pop("ages"))
    stats["median_age_difference"] = ages[len(ages) // 2] if ages else 0.0
    if stats["median_age_difference"] > a.median_age:
        problems.append("median age difference %.1f > %.1f" % (stats["median_age_difference"], a.median_age))
    if stats["pairs"] == 0:
        problems.append("no face paired")
    print(json.dumps(stats))
    for p in problems:
        print("MISMATCH " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
