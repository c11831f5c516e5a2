#!/usr/bin/python3
"""`tandem tag` with faces, end to end, on face-api's demo group photos:

  * a copy stored turned (EXIF Orientation 6, 3, 8) gives its faces in the
    pixels of the upright photo: each pairs with the original's (IoU >=
    0.8), and every copy's face joins the original's person;
  * a photo without people (darknet's dog.jpg) has no faces;
  * `tandem people` lists them; a name given there survives tagging the
    photos again (--force) and a re-cluster, and shows as a person:NAME tag
    in --jsonl and --csv;
  * with --xmp, a photo of Alice gets an MWG face region named Alice and a
    digiKam People/Alice tag (read back with the exiv2 tool);
  * merge and forget do what they say, as read back with Python's sqlite3;
  * bad input: a crowd (the demo photos tiled 4 x 3, 88 faces, at a
    quarter of their size), one face filling a whole photo, faces cut by
    the photo's edge, tiny faces on a large canvas, a 1 x N panorama: the
    run succeeds, every box lies in the upright photo, the huge face is
    found.

Exit 77 (skipped) when the photos or the face models are missing.
usage: check_tag_faces.py TANDEM_BIN
"""
import csv
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from PIL import Image

from compare_human import SAMPLES, face_models_installed, iou  # beside this script

DOG = "/usr/share/darknet/data/dog.jpg"


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("FAILED: %s\n%s%s" % (" ".join(cmd), r.stdout[-3000:], r.stderr[-3000:]))
    return r.stdout


def turned_copy(src, dst, orientation):
    """Stores the photo so that a viewer applying `orientation` shows `src`."""
    im = Image.open(src)
    stored = {6: im.transpose(Image.ROTATE_90), 3: im.transpose(Image.ROTATE_180),
              8: im.transpose(Image.ROTATE_270)}[orientation]
    exif = Image.Exif()
    exif[0x0112] = orientation
    stored.save(dst, quality=95, exif=exif.tobytes())


def bad_input_photos(photos, lib):
    """Photos that stress the face stage, written to lib; returns
    {name: what to expect} (a minimum face count)."""
    samples = [Image.open(p).convert("RGB") for p in photos]
    tile = (640, 427)
    crowd = Image.new("RGB", (tile[0] * 4, tile[1] * 3))
    for k in range(12):
        t = samples[k % len(samples)].resize(tile)
        if k >= len(samples):
            t = t.transpose(Image.FLIP_LEFT_RIGHT)
        crowd.paste(t, ((k % 4) * tile[0], (k // 4) * tile[1]))
    crowd.save(os.path.join(lib, "crowd.jpg"), quality=92)
    # The first sample's faces sit in its middle third: a square there,
    # enlarged, fills the photo with one or two faces.
    s0 = samples[0]
    w, h = s0.size
    huge = s0.crop((w // 3, h // 6, w // 3 + h // 2, h // 6 + h // 2)).resize((3000, 3000), Image.BICUBIC)
    huge.save(os.path.join(lib, "huge.jpg"), quality=92)
    # Cut through the middle: the faces on the left half lose their right sides.
    s0.crop((0, 0, w // 2 + 7, h)).save(os.path.join(lib, "border.jpg"), quality=92)
    canvas = Image.new("RGB", (6000, 4000), (90, 110, 130))
    canvas.paste(s0.resize((w // 4, h // 4)), (4000, 2500))
    canvas.save(os.path.join(lib, "tiny.jpg"), quality=92)
    s0.resize((3000, 40)).save(os.path.join(lib, "panorama.jpg"), quality=92)
    return {"crowd.jpg": 0, "huge.jpg": 1, "border.jpg": 0, "tiny.jpg": 0, "panorama.jpg": 0}


def check_bad_input(tandem, photos, tmp, problems):
    lib = os.path.join(tmp, "bad")
    os.makedirs(lib)
    expect = bad_input_photos(photos, lib)
    cat = os.path.join(tmp, "bad.sqlite")
    run([tandem, "tag", lib, "--catalog", cat, "--faces", "on", "--device", "cpu"])
    rows = {os.path.basename(j["path"]): j for j in map(json.loads, open(jsonl_of(tandem, lib, cat,
                                                                                  os.path.join(tmp, "bad.jsonl"))))}
    counts = {}
    for name, least in expect.items():
        r = rows.get(name)
        if r is None or not r.get("ok", True):
            problems.append("%s: not tagged: %s" % (name, r))
            continue
        w, h = Image.open(os.path.join(lib, name)).size
        faces = r["faces"]
        counts[name] = len(faces)
        if len(faces) < least:
            problems.append("%s: %d faces, expected at least %d" % (name, len(faces), least))
        for f in faces:
            x1, y1, x2, y2 = f["box"]
            if not (-1 <= x1 < x2 <= w + 1 and -1 <= y1 < y2 <= h + 1):
                problems.append("%s (%dx%d): face box %s outside the photo" % (name, w, h, f["box"]))
        if name == "huge.jpg" and faces and max(f["box"][2] - f["box"][0] for f in faces) < 0.2 * w:
            problems.append("huge.jpg: the largest face is %s, under a fifth of the photo" %
                            max(faces, key=lambda f: f["box"][2] - f["box"][0])["box"])
    return counts


def main():
    tandem = sys.argv[1]
    photos = sorted(glob.glob(os.path.join(SAMPLES, "sample*.jpg")))[:3]
    if not photos or not os.path.exists(DOG):
        print("SKIP: face-api's demo photos (scripts/install-node-tools) or darknet's dog.jpg missing")
        return 77
    if not face_models_installed():
        print("SKIP: the face models are not installed (scripts/install-models)")
        return 77
    problems = []
    with tempfile.TemporaryDirectory(prefix="tag_faces_") as tmp:
        lib = os.path.join(tmp, "photos")
        os.makedirs(lib)
        for p in photos:
            shutil.copy(p, lib)
        shutil.copy(DOG, lib)
        turned = {}
        for p, o in zip(photos, (6, 3, 8)):
            name = os.path.basename(p)[:-4] + "_turned%d.jpg" % o
            turned_copy(p, os.path.join(lib, name), o)
            turned[os.path.join(lib, name)] = os.path.join(lib, os.path.basename(p))
        cat = os.path.join(tmp, "c.sqlite")
        jsonl, csvf = os.path.join(tmp, "t.jsonl"), os.path.join(tmp, "t.csv")
        run([tandem, "tag", lib, "--catalog", cat, "--faces", "on", "--device", "cpu"])
        rows = {j["path"]: j for j in map(json.loads, open(jsonl_of(tandem, lib, cat, jsonl)))}
        if rows[os.path.join(lib, "dog.jpg")]["faces"]:
            problems.append("dog.jpg has faces: %s" % rows[os.path.join(lib, "dog.jpg")]["faces"])
        for copy, original in turned.items():
            a, b = rows[original]["faces"], rows[copy]["faces"]
            if len(a) != len(b) or not a:
                problems.append("%s: %d faces, the original %d" % (copy, len(b), len(a)))
            for f in a:
                best = max(b, key=lambda g: iou(f["box"], g["box"]), default=None)
                if best is None or iou(f["box"], best["box"]) < 0.8:
                    problems.append("%s: no face where the original has %s" % (copy, f["box"]))
                elif best["person"] != f["person"]:
                    problems.append("%s: the face at %s is person %s, the original's %s" % (
                        copy, f["box"], best["person"], f["person"]))
        listing = run([tandem, "people", cat, "--json"])
        people = [json.loads(line) for line in listing.splitlines() if line.startswith("{")]
        if not people or people[0]["faces"] < 2:
            problems.append("people: %s" % people[:3])
        alice = people[0]["id"]
        run([tandem, "people", cat, "name", str(alice), "Alice"])
        run([tandem, "tag", lib, "--catalog", cat, "--faces", "on", "--device", "cpu", "--force", "--xmp"])
        if shutil.which("exiv2"):
            names = set()
            for x in glob.glob(os.path.join(lib, "*.xmp")):
                r = subprocess.run(["exiv2", "-q", "-Pkv", x], capture_output=True, text=True)
                names |= {line.split(None, 1)[1].strip() for line in r.stdout.splitlines()
                          if "/mwg-rs:Name" in line and len(line.split(None, 1)) == 2}
                if "People/Alice" in r.stdout and "Alice" not in names:
                    problems.append("%s: People/Alice without a region named Alice" % x)
            if "Alice" not in names:
                problems.append("no XMP face region named Alice (%s)" % sorted(names))
        run([tandem, "people", cat, "recluster"])
        db = sqlite3.connect(cat)
        named = db.execute("SELECT count(*) FROM faces x JOIN people p ON p.id = x.person_id WHERE p.name = 'Alice'"
                           ).fetchone()[0]
        if named != people[0]["faces"]:
            problems.append("Alice has %d faces after --force and recluster, %d before" % (named, people[0]["faces"]))
        rows = [json.loads(line) for line in open(jsonl_of(tandem, lib, cat, jsonl))]
        if not any(t["label"] == "person:Alice" for r in rows for t in r["tags"]):
            problems.append("no person:Alice tag in the JSONL")
        run([tandem, "tag", lib, "--catalog", cat, "--csv", csvf, "--device", "cpu"])
        if not any("person:Alice:" in r["tags"] for r in csv.DictReader(open(csvf, newline=""))):
            problems.append("no person:Alice tag in the CSV")
        # A re-cluster numbers unnamed people afresh: list them again.
        after = [json.loads(line) for line in run([tandem, "people", cat, "--json"]).splitlines()]
        other = [p["id"] for p in after if p["name"] is None][-1]
        run([tandem, "people", cat, "merge", str(alice), str(other)])
        merged = db.execute("SELECT count(*) FROM people WHERE id = ?", (other,)).fetchone()[0]
        if merged:
            problems.append("person %d still there after the merge" % other)
        run([tandem, "people", cat, "forget", str(alice)])
        left = db.execute("SELECT count(*) FROM faces WHERE ignored = 1").fetchone()[0]
        if left < 2:
            problems.append("forget left %d faces ignored" % left)
        bad = check_bad_input(tandem, photos, tmp, problems)
        print(json.dumps({"people": len(people), "faces": sum(p["faces"] for p in people), "bad_input_faces": bad}))
    for p in problems:
        print("PROBLEM " + p)
    return 1 if problems else 0


def jsonl_of(tandem, lib, cat, out):
    """The catalog's records as --jsonl writes them (a run that tags nothing new)."""
    run([tandem, "tag", lib, "--catalog", cat, "--jsonl", out, "--device", "cpu"])
    return out


if __name__ == "__main__":
    sys.exit(main())
