#!/usr/bin/python3
"""How far apart are one person's face descriptors, and another's? Chooses
the threshold tandem groups faces into people by, and measures clustering
algorithms' pairwise precision and recall.

Photos of real people: face-api's demo group photos (npm
@vladmandic/face-api, pinned in tools/node: 6 photos, 22 faces, each person
in one photo). Positives come from variants of each photo whose geometry is
known (flip, crop, rescale, JPEG re-encode, exposure), so every face found
in a variant is traced back to the face it shows in the original; faces of
different people are never the same identity.

  bench/face_clusters.py TANDEM_BIN [--out DIR] [--device cpu]

Prints the distance distributions (same person / different people, for the
Euclidean distance of the raw descriptors and the cosine distance), the
threshold sweep, and per algorithm the pairwise precision and recall:
  leader     incremental: a face joins the person of its nearest face if
             within T, else starts a person (file order)
  centroid   incremental: a face joins the person with the nearest mean
             unit descriptor if within T
  average    full re-cluster: agglomerative, average linkage, cut at T
"""
import argparse
import glob
import io
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image, ImageEnhance

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(REPO, "tools", "node", "node_modules", "@vladmandic", "face-api", "demo")


# ---- variants: (name, function(image) -> image, map(x, y, w, h) -> (x, y))

def variants():
    def flip(im):
        return im.transpose(Image.FLIP_LEFT_RIGHT)

    def crop(im, f=0.8):
        w, h = im.size
        return im.crop((int(w * (1 - f) / 2), int(h * (1 - f) / 2), int(w * (1 + f) / 2), int(h * (1 + f) / 2)))

    def scale(im, s):
        return im.resize((max(1, int(im.size[0] * s)), max(1, int(im.size[1] * s))), Image.BICUBIC)

    def reencode(im, q):
        b = io.BytesIO()
        im.save(b, "JPEG", quality=q)
        return Image.open(io.BytesIO(b.getvalue())).convert("RGB")

    def expose(im, f):
        return ImageEnhance.Brightness(im).enhance(f)

    return [
        ("original", lambda im: im, lambda x, y, w, h: (x, y)),
        ("flip", flip, lambda x, y, w, h: (w - x, y)),
        ("crop80", crop, lambda x, y, w, h: (x - int(w * 0.1), y - int(h * 0.1))),
        ("scale50", lambda im: scale(im, 0.5), lambda x, y, w, h: (x * 0.5, y * 0.5)),
        ("scale75", lambda im: scale(im, 0.75), lambda x, y, w, h: (x * 0.75, y * 0.75)),
        ("jpeg50", lambda im: reencode(im, 50), lambda x, y, w, h: (x, y)),
        ("dark60", lambda im: expose(im, 0.6), lambda x, y, w, h: (x, y)),
        ("bright140", lambda im: expose(im, 1.4), lambda x, y, w, h: (x, y)),
        ("flip+crop+jpeg70", lambda im: reencode(crop(flip(im)), 70),
         lambda x, y, w, h: (w - x - int(w * 0.1), y - int(h * 0.1))),
    ]


def run_faces(tandem, files, device):
    cmd = [tandem, "faces", "--json", "--descriptors", "--device", device, "--min-score", "0.5", *files]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("tandem faces failed: " + r.stderr[-2000:])
    return {j["path"]: j for j in (json.loads(line) for line in r.stdout.splitlines() if line.startswith("{"))}


def centre(f):
    b = f["box"]
    return (b[0] + b[2]) / 2, (b[1] + b[3]) / 2, b[2] - b[0]


def faces_with_identity(tandem, work, device):
    """[(identity, variant, descriptor)], identity = (photo, face index in the original)."""
    photos = sorted(glob.glob(os.path.join(SAMPLES, "sample*.jpg")))
    if not photos:
        sys.exit("no photos in %s (scripts/install-node-tools)" % SAMPLES)
    plan = []
    for p in photos:
        im = Image.open(p).convert("RGB")
        for name, make, _ in variants():
            out = os.path.join(work, "%s.%s.jpg" % (os.path.basename(p)[:-4], name))
            make(im).save(out, quality=95)
            plan.append((p, name, out))
    found = run_faces(tandem, [o for _, _, o in plan], device)
    originals = {p: found[os.path.join(work, "%s.original.jpg" % os.path.basename(p)[:-4])] for p in photos}
    rows, lost = [], 0
    maps = {name: m for name, _, m in variants()}
    for p, name, out in plan:
        orig, var = originals[p], found[out]
        w, h = orig["width"], orig["height"]
        for k, f in enumerate(orig["faces"]):
            cx, cy, side = centre(f)
            x, y = maps[name](cx, cy, w, h)
            shrink = var["width"] / w if name.startswith("scale") else 1.0  # the face's size in the variant
            near = [g for g in var["faces"] if math.dist(centre(g)[:2], (x, y)) < side * 0.25 * shrink]
            if len(near) != 1:
                lost += 1
                continue
            rows.append(((os.path.basename(p), k), name, np.array(near[0]["descriptor"], dtype=np.float64)))
    return rows, lost


def pair_distances(rows):
    same, diff = {"euclid": [], "cosine": []}, {"euclid": [], "cosine": []}
    units = [d / np.linalg.norm(d) for _, _, d in rows]
    for i, j in itertools.combinations(range(len(rows)), 2):
        e = float(np.linalg.norm(rows[i][2] - rows[j][2]))
        c = float(1 - units[i] @ units[j])
        target = same if rows[i][0] == rows[j][0] else diff
        target["euclid"].append(e)
        target["cosine"].append(c)
    return same, diff


def cluster_leader(units, t):
    labels, members = [], []
    for i, u in enumerate(units):
        best, best_d = -1, t
        for j in range(i):
            d = 1 - float(u @ units[j])
            if d <= best_d:
                best, best_d = labels[j], d
        labels.append(best if best >= 0 else len(members))
        if best < 0:
            members.append(1)
    return labels


def cluster_centroid(units, t):
    labels, sums = [], []
    for u in units:
        best, best_d = -1, t
        for k, s in enumerate(sums):
            d = 1 - float(u @ (s / np.linalg.norm(s)))
            if d <= best_d:
                best, best_d = k, d
        if best < 0:
            sums.append(u.copy())
            labels.append(len(sums) - 1)
        else:
            sums[best] += u
            labels.append(best)
    return labels


def cluster_average(units, t):
    clusters = [[i] for i in range(len(units))]
    sim = np.array([[1 - float(a @ b) for b in units] for a in units])
    while True:
        best, pair = t, None
        for a, b in itertools.combinations(range(len(clusters)), 2):
            d = float(np.mean(sim[np.ix_(clusters[a], clusters[b])]))
            if d <= best:
                best, pair = d, (a, b)
        if pair is None:
            break
        a, b = pair
        clusters[a] += clusters[b]
        del clusters[b]
    labels = [0] * len(units)
    for k, c in enumerate(clusters):
        for i in c:
            labels[i] = k
    return labels


def pairwise_pr(rows, labels):
    tp = fp = fn = 0
    for i, j in itertools.combinations(range(len(rows)), 2):
        same_person, same_cluster = rows[i][0] == rows[j][0], labels[i] == labels[j]
        tp += same_person and same_cluster
        fp += (not same_person) and same_cluster
        fn += same_person and not same_cluster
    return (tp / (tp + fp) if tp + fp else 1.0), (tp / (tp + fn) if tp + fn else 1.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tandem")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", help="also write face_clusters.json here")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="face_clusters_") as work:
        rows, lost = faces_with_identity(a.tandem, work, a.device)
    identities = sorted({r[0] for r in rows})
    print("%d faces of %d people in %d variants (%d faces not found again in a variant)" % (
        len(rows), len(identities), len(variants()), lost))
    same, diff = pair_distances(rows)
    for metric in ("euclid", "cosine"):
        s, d = np.array(same[metric]), np.array(diff[metric])
        print("%-7s same person: %d pairs, median %.3f, p99 %.3f, max %.3f | different: %d pairs, min %.3f, p1 %.3f, "
              "median %.3f | gap %.3f" % (metric, len(s), np.median(s), np.percentile(s, 99), s.max(), len(d), d.min(),
                                          np.percentile(d, 1), np.median(d), d.min() - s.max()))
    units = [r[2] / np.linalg.norm(r[2]) for r in rows]
    order = sorted(range(len(rows)), key=lambda i: (rows[i][1] != "original", rows[i][1], rows[i][0]))
    ordered_rows = [rows[i] for i in order]
    ordered_units = [units[i] for i in order]
    results = []
    print("\n| algorithm | threshold (cosine distance) | people found | pairwise precision | pairwise recall |")
    print("| --- | --- | --- | --- | --- |")
    for t in (0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55):
        for name, fn in (("leader", cluster_leader), ("centroid", cluster_centroid), ("average", cluster_average)):
            labels = fn(ordered_units, t)
            p, r = pairwise_pr(ordered_rows, labels)
            results.append({"algorithm": name, "threshold": t, "people": len(set(labels)), "precision": p,
                            "recall": r})
            print("| %s | %.2f | %d | %.4f | %.4f |" % (name, t, len(set(labels)), p, r))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "face_clusters.json"), "w") as f:
            json.dump({"faces": len(rows), "people": len(identities), "lost": lost,
                       "same": {k: [min(v), max(v)] for k, v in same.items()},
                       "different": {k: [min(v), max(v)] for k, v in diff.items()}, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
