#!/usr/bin/python3
"""The gallery in a real browser: `tandem serve` and `tandem gallery` over a
catalog built here, checked by browser_test.js (headless Chromium through
playwright-core).

The catalog needs no model: `tandem people` creates an empty one with the
current schema, then the rows `tandem tag` would write are inserted with
sqlite3, pointing at real JPEGs copied into WORK/photos (the face-api demo
photos): an exact duplicate, a file whose name is markup, a file that cannot
be decoded (failed) and a row whose file is gone (missing). What the page
must show (expect.json) is derived from those rows.

usage: run_browser_test.py --tandem BIN [--samples DIR] --work DIR [--artifacts DIR] [--web DIR]
(--web DIR: the page's files from DIR, not the ones built into tandem)
Exit 77 (skipped) when node, chromium, playwright-core or the sample photos
are missing.
"""
import argparse
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
NODE_MODULES = os.path.join(REPO, "tools", "node", "node_modules")
DEFAULT_SAMPLES = os.path.join(NODE_MODULES, "@vladmandic", "face-api", "demo")
MODEL = "centernet"
HOSTILE = "<img src=x onerror=alert(1)>.jpg"
DESCRIPTOR = bytes(128 * 4)  # a float32[128] of zeros: nothing here reads it


def skip(message):
    print("SKIP: " + message)
    sys.exit(77)


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def chromium():
    """Debian's chromium (or another package's name for it), or None."""
    found = [shutil.which(n) for n in ("chromium", "chromium-headless-shell", "chromium-browser")]
    return next((p for p in found if p), None)


def jpeg_size(path):
    """(width, height) from a JPEG's SOF marker (no EXIF rotation in the samples)."""
    with open(path, "rb") as f:
        data = f.read()
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            i += 1
            continue
        marker = data[i + 1]
        length = int.from_bytes(data[i + 2:i + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            return int.from_bytes(data[i + 7:i + 9], "big"), int.from_bytes(data[i + 5:i + 7], "big")
        i += 2 + length
    raise ValueError(path + ": no SOF marker")


def person_boxes(*boxes):
    return [("person", 0.9 - 0.03 * k, b) for k, b in enumerate(boxes)]


# The photos, in the order their rows are written (their ids). Boxes are in
# pixels of the full-size photo, roughly where the people in the demo photos
# are. faces: (box, person key or None).
SAMPLE1 = dict(
    sample="sample1.jpg",
    meta=dict(taken_at="2017-11-01T12:51:52", taken_offset="-07:00", make="Canon", model="EOS 5D Mark IV",
              lens="EF24-70mm f/2.8L II USM", exposure_s=1 / 125, f_number=2.8, iso=800, focal_length_mm=50.0,
              latitude=37.7749, longitude=-122.4194, altitude_m=16.0),
    objects=person_boxes([160, 200, 760, 1280], [720, 320, 1240, 1280], [1200, 160, 1840, 1280])
    + [("wine glass", 0.61, [280, 1020, 420, 1280])],
    faces=[([460, 240, 680, 480], None), ([820, 380, 1060, 640], "p2"), ([1460, 180, 1700, 440], "alice")],
)
PHOTOS = [
    dict(SAMPLE1, name="sample1.jpg"),
    dict(name="sample2.jpg", sample="sample2.jpg",
         meta=dict(taken_at="2016-08-13T08:58:54", make="Sony", model="ILCE-7M3"),
         objects=person_boxes([160, 60, 880, 1300], [720, 120, 1300, 1300], [1240, 100, 1840, 1300])
         + [("couch", 0.72, [0, 280, 1920, 1367]), ("cell phone", 0.55, [68, 1252, 300, 1332])],
         faces=[([380, 120, 620, 380], "p2"), ([900, 200, 1120, 440], "p3")]),
    dict(name="sample3.jpg", sample="sample3.jpg",
         meta=dict(taken_at="2016-12-18T11:29:46", make="Canon", model="EOS 5D Mark IV"),
         objects=person_boxes([0, 160, 1000, 1350], [900, 120, 1480, 1350], [1340, 160, 1900, 1350])
         + [("couch", 0.66, [0, 600, 1920, 1350]), ("cup", 0.58, [580, 812, 740, 1032])],
         faces=[([600, 272, 820, 532], "alice"), ([1080, 172, 1320, 452], "p3")]),
    dict(name="sample4.jpg", sample="sample4.jpg",
         meta=dict(taken_at="2017-01-26T11:01:04", make="Sony", model="ILCE-7M3"),
         objects=person_boxes([80, 20, 720, 1448], [560, 0, 1000, 1448], [920, 80, 1340, 1448],
                              [1200, 60, 1840, 1448]),
         faces=[([240, 132, 440, 352], "p2")]),
    dict(name="sample5.jpg", sample="sample5.jpg",
         meta=dict(taken_at="2014-08-10T12:07:33"),
         objects=person_boxes([400, 300, 1000, 1398], [700, 60, 1100, 1200], [1100, 160, 1500, 1300],
                              [1300, 260, 1900, 1398], [200, 800, 800, 1398]),
         faces=[]),
    dict(name="sample6.jpg", sample="sample6.jpg", meta=None,
         objects=person_boxes([100, 400, 600, 1537], [500, 300, 1020, 1537], [980, 300, 1440, 1537],
                              [1360, 300, 1860, 1537]) + [("handbag", 0.5, [1500, 1200, 1800, 1500])],
         faces=[]),
    # The same bytes as sample1: tag finds the same things, and its duplicate.
    dict(SAMPLE1, name="sample1 copy.jpg"),
    # A name that is markup: the page must show it as text. Different bytes
    # (one byte appended after the image), so not a duplicate of sample6.
    dict(name=HOSTILE, sample="sample6.jpg", append=b"\0",
         meta=dict(make="<script>alert(2)</script>", model="X\"'<b>"),
         objects=person_boxes([100, 400, 600, 1537], [500, 300, 1020, 1537])
         + [("dog", 0.8, [200, 900, 700, 1500])],
         faces=[]),
    # Tagged once, gone since: listed as missing.
    dict(name="gone.jpg", sample=None, width=4000, height=3000,
         meta=dict(taken_at="2021-07-04T12:00:00", make="Canon", model="EOS 5D Mark IV"),
         objects=person_boxes([100, 100, 2000, 2900]) + [("cat", 0.88, [2200, 1500, 3800, 2900])],
         faces=[]),
    # Not an image: a failed row with its error.
    dict(name="broken.jpg", sample=None, garbage=b"this is not a JPEG\n" * 8,
         error_kind="decode", error="not a JPEG file: starts with 0x74 0x68", meta=None, objects=[], faces=[]),
]
PEOPLE = [("alice", "Alice"), ("p2", None), ("p3", None)]  # ids 1, 2, 3
RENAME = (2, "Bob")
MERGE = (2, 3)  # person 3 into person 2


def make_photos(samples, folder):
    os.makedirs(folder, exist_ok=True)
    for p in PHOTOS:
        path = os.path.join(folder, p["name"])
        p["path"] = path
        if p.get("sample"):
            with open(os.path.join(samples, p["sample"]), "rb") as f:
                data = f.read() + p.get("append", b"")
            p["width"], p["height"] = jpeg_size(os.path.join(samples, p["sample"]))
        elif "garbage" in p:
            data = p["garbage"]
            p["width"], p["height"] = 0, 0
        else:
            data = None
        if data is None:
            p["size"], p["mtime_ns"] = 123456, 1_600_000_000_000_000_000
            p["hash"] = hashlib.sha256(p["name"].encode()).hexdigest()
            continue
        with open(path, "wb") as f:
            f.write(data)
        st = os.stat(path)
        p["size"], p["mtime_ns"] = st.st_size, st.st_mtime_ns
        p["hash"] = hashlib.sha256(data).hexdigest()


def fill_catalog(catalog, photo_dir):
    db = sqlite3.connect(catalog)
    db.execute("PRAGMA foreign_keys = ON")
    has_roots = db.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'roots'").fetchone()[0]
    if not has_roots:
        fail(f"{catalog} has no roots table: this tandem is older than the gallery's schema")
    db.execute("INSERT INTO roots (path, added_at) VALUES (?, '2024-05-01T10:00:00.000Z')", (photo_dir,))
    person_id = {}
    for key, name in PEOPLE:
        person_id[key] = db.execute(
            "INSERT INTO people (name, centroid, faces, created_at) VALUES (?, ?, 0, '2024-05-01T10:00:00.000Z')",
            (name, DESCRIPTOR)).lastrowid
    for n, p in enumerate(PHOTOS):
        ok = "error" not in p
        p["id"] = db.execute(
            "INSERT INTO files (path, model_id, size, mtime_ns, content_hash, status, error_kind, error, decode_ms,"
            " infer_ms, width, height, tagged_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 10.0, 20.0, ?, ?, ?)",
            (p["path"], MODEL, p["size"], p["mtime_ns"], p["hash"], "ok" if ok else "failed",
             p.get("error_kind"), p.get("error"), p["width"], p["height"],
             "2024-05-01T10:%02d:00.000Z" % n)).lastrowid
        best = {}
        for label, score, _ in p["objects"]:
            best[label] = max(score, best.get(label, 0))
        for rank, (label, score) in enumerate(sorted(best.items(), key=lambda t: -t[1])):
            db.execute("INSERT INTO tags (file_id, rank, label, score) VALUES (?, ?, ?, ?)",
                       (p["id"], rank, label, score))
        for rank, (label, score, box) in enumerate(p["objects"]):
            db.execute("INSERT INTO objects (file_id, rank, label, score, x1, y1, x2, y2) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (p["id"], rank, label, score, *box))
        for rank, (box, who) in enumerate(p["faces"]):
            db.execute(
                "INSERT INTO faces (file_id, rank, score, x1, y1, x2, y2, landmarks, descriptor, age, gender_score,"
                " person_id) VALUES (?, ?, ?, ?, ?, ?, ?, '[]', ?, 30.5, 0.8, ?)",
                (p["id"], rank, 0.97 - 0.01 * rank, *box, DESCRIPTOR, person_id[who] if who else None))
        if p["meta"]:
            m = p["meta"]
            keys = list(m)
            db.execute(f"INSERT INTO photo_meta (file_id, {', '.join(keys)}) VALUES (?{', ?' * len(keys)})",
                       (p["id"], *(m[k] for k in keys)))
    db.execute("UPDATE people SET faces = (SELECT count(*) FROM faces WHERE person_id = people.id)")
    db.commit()
    db.close()
    return person_id


def expectations(person_id):
    """What the page must show, from the rows above."""
    names = {key: name for key, name in PEOPLE}
    by_hash = {}
    for p in PHOTOS:
        by_hash.setdefault(p["hash"], []).append(p["name"])
    photos = {}
    for p in PHOTOS:
        photos[p["name"]] = {
            "id": p["id"],
            "width": p["width"], "height": p["height"],
            "taken_at": (p["meta"] or {}).get("taken_at"),
            "missing": p.get("sample") is None and "garbage" not in p,
            "status": "failed" if "error" in p else "ok",
            "error": p.get("error"),
            "copies": len(by_hash[p["hash"]]),
            "objects": [{"label": label, "box": box} for label, _, box in p["objects"]],
            "faces": [{"person": person_id[who] if who else None, "name": names[who] if who else None, "box": box}
                      for box, who in p["faces"]],
        }
    # Newest date taken first, then the undated, newest tagged (highest id) first.
    dated = sorted({v["taken_at"] for v in photos.values() if v["taken_at"]}, reverse=True)
    undated = sorted((v["id"] for v in photos.values() if not v["taken_at"]), reverse=True)
    rank = {}
    for name, v in photos.items():
        rank[name] = dated.index(v["taken_at"]) if v["taken_at"] else len(dated) + undated.index(v["id"])

    def having(test):
        return sorted(name for name, v in photos.items() if test(v))

    tags = {label: having(lambda v, label=label: any(o["label"] == label for o in v["objects"]))
            for label in ("couch", "dog", "cat", "cup", "wine glass")}
    people = {str(person_id[key]): {"name": name,
                                    "photos": having(lambda v, i=person_id[key]: any(f["person"] == i for f in v["faces"])),
                                    "faces": sum(1 for v in photos.values() for f in v["faces"]
                                                 if f["person"] == person_id[key])}
              for key, name in PEOPLE}
    months = {m: having(lambda v, m=m: (v["taken_at"] or "").startswith(m)) for m in ("2017-11", "2016-12")}
    search = {"couch": tags["couch"], "alice": people[str(person_id["alice"])]["photos"],
              "sample5": ["sample5.jpg"]}
    return {
        "model": MODEL,
        "photos": photos,
        "rank": rank,
        "tags": tags,
        "people": people,
        "months": months,
        "search": search,
        "viewer": ["sample1.jpg", "sample2.jpg"],
        "duplicates": [sorted(v) for v in by_hash.values() if len(v) > 1],
        "hostile": HOSTILE,
        "missing": "gone.jpg",
        "failed": "broken.jpg",
        "rename": {"id": RENAME[0], "name": RENAME[1], "taken": "Alice"},
        "merge": {"into": MERGE[0], "from": MERGE[1]},
    }


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url, server, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if server.poll() is not None:
            fail(f"tandem serve exited with {server.returncode} before answering")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return json.load(r)
        except OSError:
            time.sleep(0.2)
    fail(f"tandem serve did not answer {url} within {seconds} s")


def run(cmd, env):
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(cmd)} exited with {r.returncode}:\n{r.stdout}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tandem", required=True)
    ap.add_argument("--samples", default=DEFAULT_SAMPLES, help="folder with sample1.jpg .. sample6.jpg")
    ap.add_argument("--work", required=True, help="scratch folder (emptied first)")
    ap.add_argument("--artifacts", help="screenshots (default WORK/artifacts)")
    ap.add_argument("--web", help="the page's files from this folder (gallery/web), not tandem's own")
    args = ap.parse_args()

    node = shutil.which("node")
    if not node:
        skip("no node")
    if not chromium():
        skip("no chromium (Debian package chromium)")
    if not os.path.isfile(os.path.join(NODE_MODULES, "playwright-core", "package.json")):
        skip("no playwright-core in tools/node (scripts/install-node-tools)")
    if not all(os.path.isfile(os.path.join(args.samples, f"sample{i}.jpg")) for i in range(1, 7)):
        skip(f"no sample photos in {args.samples} (tools/node's @vladmandic/face-api)")

    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    artifacts = os.path.abspath(args.artifacts or os.path.join(work, "artifacts"))
    os.makedirs(artifacts, exist_ok=True)
    photo_dir = os.path.realpath(os.path.join(work, "photos"))
    catalog = os.path.join(work, "cat.sqlite")
    static = os.path.join(work, "static")
    # Thumbnails the server makes go to a cache of this run's own, not the user's.
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))

    make_photos(args.samples, photo_dir)
    run([args.tandem, "people", catalog], env)  # an empty catalog with the current schema
    person_id = fill_catalog(catalog, photo_dir)
    expect = expectations(person_id)
    expect_path = os.path.join(work, "expect.json")
    with open(expect_path, "w") as f:
        json.dump(expect, f, indent=1)

    run([args.tandem, "gallery", catalog, static], env)

    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    cmd = [args.tandem, "serve", catalog, "--port", str(port), "--allow-edits"]
    print("$ " + " ".join(cmd), flush=True)
    log = open(os.path.join(work, "serve.log"), "w")
    server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    # A second, read-only server that wants a token, as one bound beyond
    # loopback must.
    token = "s3cret token/+&"
    token_port = free_port()
    token_url = f"http://127.0.0.1:{token_port}/"
    token_cmd = [args.tandem, "serve", catalog, "--port", str(token_port), "--token", token]
    print("$ " + " ".join(token_cmd[:-1] + ["SECRET"]), flush=True)
    token_server = subprocess.Popen(token_cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(url + "api/summary", server)
        wait_for(token_url + "api/summary?token=" + urllib.parse.quote(token, safe=""), token_server)
        test = [node, os.path.join(HERE, "browser_test.js"), "--url", url, "--expect", expect_path,
                "--artifacts", artifacts, "--tandem", args.tandem, "--catalog", catalog, "--static", static,
                "--tokenurl", token_url, "--token", token]
        if args.web:
            test += ["--web", os.path.abspath(args.web)]
        print("$ " + " ".join(test[:-1] + ["SECRET"]), flush=True)
        rc = subprocess.run(test, env=env).returncode
    finally:
        for s in (server, token_server):
            s.terminate()
            try:
                s.wait(timeout=10)
            except subprocess.TimeoutExpired:
                s.kill()
                s.wait()
        log.close()
    if rc not in (0, 77):
        with open(os.path.join(work, "serve.log")) as f:
            tail = f.read()[-4000:]
        print("--- tandem serve's output (last 4000 characters):\n" + tail, file=sys.stderr)
    sys.exit(rc)


if __name__ == "__main__":
    main()
