#!/usr/bin/python3
"""A catalog of N photos (default 1,000,000) with generated rows, for the
gallery's scale benchmark (bench/gallery_scale.py): `tandem serve` must
answer a filtered page in <= 50 ms p99 on it. Deterministic for a --seed.

The file is created by tandem itself (`TANDEM people CAT` opens the catalog,
creating it with TANDEM's schema, and lists nobody), so its tables, indexes,
triggers and FTS5 table are what `tandem tag` would have made; then this
script fills it with Python's sqlite3 in large transactions (executemany;
the journal stays WAL, as tandem keeps it; the schema's triggers fill the
file_paths trigram index as rows go in). The schema is then checked against
pipeline/catalog.cpp's kMigrations, applied to an empty in-memory database:
a TANDEM built from an older catalog.cpp with the same schema version (a
migration edited in place, as schema 5 was) is refused, since its catalog
would lack what the current server's queries name (INDEXED BY ...). A
TANDEM whose schema version is lower gets the missing migrations applied
from the source, with a note (its own `serve` then refuses the file: that
catalog is for a newer binary).

The shape is meant to look like a real library tagged by `tandem tag
/photos --catalog CAT` (the default model):
  files       one model ('centernet'); /photos/YYYY/MM/IMG_nnnnnn.jpg in
              walk order (ids follow the path, so roughly the date; the
              files do not exist: the server reports them missing), sizes,
              mtimes, 32-hex content hashes with ~1% exact duplicates,
              ~0.2% failed decodes (no tags)
  tags        1-4 per photo, labels from COCO's 80 drawn Zipf-like
              (s = 1.5: person in ~half the photos, the rarest ~0.1%);
              a tag's score is the best of its objects'
  objects     1-3 detections per tag (person up to 6), boxes in pixels
  photo_meta  ~90% of photos: taken_at spread over 2008-2026 (more photos
              in later years), ~10 cameras by era, GPS for ~30% of all
              photos around a few places
  faces       ~20% of photos (among those with a person) 1-3 faces,
              belonging Zipf-like to ~2,000 people, ~300 of them named;
              ~5% of faces ignored (no person); descriptors are zero
              blobs of the real size (1024 float32)
  roots       '/photos'
and ANALYZE at the end, as `tag` leaves a catalog: tag ends with
Catalog::refresh_statistics, a plain ANALYZE when the catalog has no
sqlite_stat1 (or its files have doubled since), which a freshly generated
file never has; the same libsqlite3 runs it here. The script checks that
sqlite_stat1 then holds files_by_model with the file count, the row
refresh_statistics reads. The server pins its page plans (CROSS JOIN,
INDEXED BY: gallery/photo_sql.h) rather than leave them to the planner;
the statistics still steer its summary, people and per-row lookups.
--no-analyze leaves sqlite_stat1 out: a catalog written by a tandem older
than refresh_statistics, to measure the server without statistics.

  bench/gallery_catalog.py CAT --tandem build/cli/tandem [--photos N] [--seed S] [--no-analyze] [--force]
"""
import argparse
import datetime
import os
import platform
import re
import sqlite3
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

COCO = ["person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
        "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
        "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
        "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
        "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
        "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch",
        "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard",
        "cell phone", "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase",
        "scissors", "teddy bear", "hair drier", "toothbrush"]

# Most common first (a family photo library's order, roughly); the Zipf
# weight of a label is 1 / rank^1.5.
LABEL_ORDER = ["person", "car", "chair", "cup", "dining table", "bottle", "potted plant", "dog", "bench", "boat",
               "bird", "cell phone", "handbag", "umbrella", "book", "couch", "bicycle", "wine glass", "cat",
               "backpack", "truck", "tv", "bowl", "clock", "traffic light", "bus", "cake", "laptop", "vase",
               "bed", "horse", "sports ball", "motorcycle", "kite", "teddy bear", "airplane", "train", "surfboard",
               "sink", "suitcase", "pizza", "cow", "sheep", "fork", "knife", "spoon", "banana", "orange",
               "sandwich", "refrigerator", "oven", "skis", "keyboard", "remote", "tie", "donut", "apple",
               "skateboard", "frisbee", "elephant", "tennis racket", "stop sign", "fire hydrant", "mouse",
               "broccoli", "carrot", "microwave", "toilet", "giraffe", "zebra", "hot dog", "snowboard",
               "parking meter", "baseball glove", "baseball bat", "scissors", "bear", "toaster", "hair drier",
               "toothbrush"]
assert sorted(LABEL_ORDER) == sorted(COCO) and len(LABEL_ORDER) == 80

# make, model, first year, last year, weight, width, height, phone (GPS on)
CAMERAS = [("Canon", "Canon EOS 400D DIGITAL", 2008, 2012, 1.0, 3888, 2592, False),
           ("NIKON CORPORATION", "NIKON D90", 2008, 2014, 0.8, 4288, 2848, False),
           ("Apple", "iPhone 4", 2010, 2013, 1.2, 2592, 1936, True),
           ("Canon", "Canon EOS 5D Mark III", 2012, 2021, 0.7, 5760, 3840, False),
           ("Apple", "iPhone 6", 2014, 2018, 1.5, 3264, 2448, True),
           ("samsung", "SM-G930F", 2016, 2019, 1.0, 4032, 3024, True),
           ("FUJIFILM", "X-T3", 2018, 2026, 0.6, 6240, 4160, False),
           ("Apple", "iPhone 11 Pro", 2019, 2023, 1.6, 4032, 3024, True),
           ("Google", "Pixel 7", 2022, 2026, 1.0, 4080, 3072, True),
           ("Apple", "iPhone 15 Pro", 2023, 2026, 1.6, 4032, 3024, True)]

# latitude, longitude, spread (degrees), weight
PLACES = [(52.52, 13.40, 0.08, 0.55),   # home: Berlin
          (38.72, -9.14, 0.05, 0.10),   # Lisbon
          (39.62, 2.95, 0.25, 0.10),    # Mallorca
          (40.74, -73.99, 0.05, 0.08),  # New York
          (47.10, 11.30, 0.40, 0.12),   # the Alps
          (35.68, 139.76, 0.08, 0.05)]  # Tokyo

FIRST = ["Anna", "Ben", "Clara", "David", "Emma", "Felix", "Greta", "Hannah", "Jonas", "Karl", "Lena", "Max",
         "Mia", "Noah", "Olivia", "Paul", "Sophie", "Tom", "Ursula", "Vera", "Walter", "Yusuf", "Zoe", "Elias",
         "Ida", "Leon", "Marie", "Oskar", "Rosa", "Theo"]
LAST = ["Schmidt", "Novak", "Garcia", "Okafor", "Tanaka", "Larsen", "Rossi", "Dubois", "Kowalski", "Silva",
        "Meyer", "Jansen", "Nguyen", "Haddad", "Berg"]

DESCRIPTOR_BYTES = 1024 * 4
START = datetime.datetime(2008, 1, 1)
END = datetime.datetime(2026, 12, 1)
BLOCK = 50_000  # photos per generator and transaction


def create_catalog(tandem, path):
    """The empty catalog, made by tandem (its schema), checked against (and,
    for an older schema version, brought up to) pipeline/catalog.cpp's."""
    r = subprocess.run([tandem, "people", path], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("gallery_catalog: `%s people %s` failed: %s" % (tandem, path, r.stderr.strip()))
    db = sqlite3.connect(path, isolation_level=None)
    have = db.execute("PRAGMA user_version").fetchone()[0]
    source = source_migrations()
    if not source:
        print("gallery_catalog: note: pipeline/catalog.cpp not found; the schema is %s's, unchecked" % tandem,
              flush=True)
        return db
    # The last version, the work queue's tables (pipeline/work_queue.cpp),
    # is written by code rather than kept in kMigrations.
    latest = len(source) + 1
    if have > latest:
        sys.exit("gallery_catalog: %s made schema version %d, newer than the source's %d: the source "
                 "tree is older than the binary" % (tandem, have, latest))
    if have < len(source):
        print("gallery_catalog: note: %s made schema version %d, pipeline/catalog.cpp has %d; applying "
              "migrations %d..%d from the source" % (tandem, have, len(source), have + 1, len(source)), flush=True)
        db.execute("BEGIN IMMEDIATE")
        for sql in source[have:]:
            for statement in split_sql(sql):
                db.execute(statement)
        db.execute("PRAGMA user_version = %d" % len(source))
        db.execute("COMMIT")
    want = schema_of(source_schema(source))
    got = {k: v for k, v in schema_of(db).items() if not k[1].startswith(("work", "sqlite_autoindex_work"))}
    if want != got:
        diff = sorted(set(want.items()) ^ set(got.items()))
        sys.exit("gallery_catalog: the schema %s made (version %d) is not pipeline/catalog.cpp's; was %s built "
                 "from an older source? differing objects: %s" % (tandem, have, tandem,
                                                                  "; ".join("%s %s" % (k, v) for k, v in diff)[:2000]))
    return db


def source_schema(source):
    """An in-memory database with kMigrations applied, as Catalog::migrate does."""
    mem = sqlite3.connect(":memory:", isolation_level=None)
    for sql in source:
        for statement in split_sql(sql):
            mem.execute(statement)
    return mem


def schema_of(db):
    """{(type, name): normalized SQL} of a database's schema (statistics left out)."""
    rows = db.execute("SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_stat%'").fetchall()
    return {(t, n): " ".join((sql or "").split()) for t, n, sql in rows}


def source_migrations():
    """kMigrations of pipeline/catalog.cpp, one SQL text each."""
    try:
        with open(os.path.join(REPO, "pipeline", "catalog.cpp")) as f:
            text = f.read()
    except OSError:
        return []
    body = text[text.index("kMigrations[] = {"):]
    body = body[:body.index("\n};")]
    return re.findall(r'R"sql\((.*?)\)sql"', body, re.S)


def split_sql(sql):
    """Statements of a migration; a trigger's body (BEGIN ... END;) stays
    whole."""
    out, cur = [], ""
    for part in sql.split(";"):
        cur += part
        if sqlite3.complete_statement(cur + ";"):
            if cur.strip():
                out.append(cur.strip())
            cur = ""
        else:
            cur += ";"
    if cur.strip():
        out.append(cur.strip())
    return out


def zipf_weights(n, s):
    w = 1.0 / np.arange(1, n + 1) ** s
    return w / w.sum()


def generate(db, n, seed, people_n, named_n, descriptor_bytes, log):
    """Fills the catalog; returns the row counts. Photos are made in blocks of
    BLOCK, each from its own seeded generator, one transaction each."""
    rng = np.random.default_rng([seed, 0])
    model = "centernet"

    # When each photo was taken (undated ones: made), sorted: ids follow the
    # walk order of /photos/YYYY/MM/. Density grows linearly from 1 (2008)
    # to 3 (2026): the inverse CDF of a + b x.
    span = (END - START).total_seconds()
    u = rng.random(n)
    a, b = 1.0, 2.0
    x = (-a + np.sqrt(a * a + 2 * b * u * (a + b / 2))) / b
    when = np.datetime64(START, "s") + np.sort(x * span).astype("timedelta64[s]")
    stamps = np.datetime_as_string(when, unit="s")  # YYYY-MM-DDTHH:MM:SS
    years = when.astype("datetime64[Y]").astype(np.int64) + 1970
    epoch_s = when.astype(np.int64)

    has_meta = rng.random(n) < 0.90
    dated = has_meta & (rng.random(n) < 0.965)
    failed = rng.random(n) < 0.002
    dup = rng.random(n) < 0.01
    dup_of = np.where(dup, (rng.random(n) * np.arange(n)).astype(np.int64), np.arange(n))  # an earlier photo
    hashes = rng.bytes(16 * n).hex()
    sizes = np.clip(rng.lognormal(np.log(3.2e6), 0.45, n), 2e5, 3e7).astype(np.int64)[dup_of]
    mtime_ns = epoch_s * 1000000000 + (rng.random(n) * 30 * 86400 * 1e9).astype(np.int64)
    # a camera in use that year, by weight
    cam_u = rng.random(n)
    cam = np.zeros(n, dtype=np.int64)
    for y in range(2008, 2027):
        cs = [i for i, c in enumerate(CAMERAS) if c[2] <= y <= c[3]]
        cum = np.cumsum([CAMERAS[i][4] for i in cs])
        sel = years == y
        cam[sel] = np.array(cs)[np.minimum(np.searchsorted(cum / cum[-1], cam_u[sel]), len(cs) - 1)]
    portrait = rng.random(n) < 0.3
    cam_w = np.array([c[5] for c in CAMERAS])[cam]
    cam_h = np.array([c[6] for c in CAMERAS])[cam]
    width = np.where(has_meta, np.where(portrait, cam_h, cam_w), np.where(portrait, 3000, 4000))
    height = np.where(has_meta, np.where(portrait, cam_w, cam_h), np.where(portrait, 4000, 3000))
    phone = np.array([c[7] for c in CAMERAS])[cam]
    gps_u = rng.random(n)
    gps = has_meta & np.where(phone, gps_u < 0.55, gps_u < 0.05)
    place_cum = np.cumsum([p[3] for p in PLACES])
    place = np.minimum(np.searchsorted(place_cum / place_cum[-1], rng.random(n)), len(PLACES) - 1)
    noise = rng.standard_normal((n, 2))
    spread = np.array([p[2] for p in PLACES])[place]
    lat = np.round(np.array([p[0] for p in PLACES])[place] + spread * noise[:, 0], 6)
    lon = np.round(np.array([p[1] for p in PLACES])[place] + spread * noise[:, 1], 6)
    label_p = zipf_weights(80, 1.5)
    person_p = zipf_weights(people_n, 1.0)

    insert_file = ("INSERT INTO files (id, path, model_id, size, mtime_ns, content_hash, status, error_kind, error, "
                   "decode_ms, infer_ms, width, height, tagged_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
    insert_tag = "INSERT INTO tags (file_id, rank, label, score) VALUES (?,?,?,?)"
    insert_obj = "INSERT INTO objects (file_id, rank, label, score, x1, y1, x2, y2) VALUES (?,?,?,?,?,?,?,?)"
    insert_meta = ("INSERT INTO photo_meta (file_id, taken_at, taken_offset, make, model, lens, exposure_s, "
                   "f_number, iso, focal_length_mm, latitude, longitude, altitude_m) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)")
    insert_face = ("INSERT INTO faces (id, file_id, rank, score, x1, y1, x2, y2, landmarks, descriptor, age, "
                   "gender_score, person_id, confirmed, ignored) VALUES (?,?,?,?,?,?,?,?,'[]',zeroblob(%d),?,?,?,?,?)"
                   % descriptor_bytes)

    # people first (faces.person_id references them; foreign keys are on, as
    # in tandem); names and face counts once the faces are known
    db.execute("BEGIN")
    db.executemany("INSERT INTO people (id, name, centroid, faces, created_at) VALUES (?, NULL, zeroblob(%d), 0, ?)"
                   % descriptor_bytes, [(p, "2026-11-20T09:%02d:%02d.000Z" % ((p // 60) % 60, p % 60))
                                        for p in range(1, people_n + 1)])
    db.execute("COMMIT")
    face_counts = [0] * (people_n + 1)  # [0]: ignored faces
    face_id = 0
    seconds = {}  # SQLite's time by table
    totals = {"files": 0, "tags": 0, "objects": 0, "photo_meta": 0, "faces": 0}
    tagged0 = np.datetime64("2026-11-20T09:00:00", "ms")
    labels = LABEL_ORDER
    for block, lo in enumerate(range(0, n, BLOCK)):
        hi = min(n, lo + BLOCK)
        B = hi - lo
        r = np.random.default_rng([seed, 1 + block])
        fids = np.arange(lo + 1, hi + 1)
        ok = ~failed[lo:hi]
        # tags: 1-4 distinct labels a photo; per label 1-3 objects (person 1-6)
        ntags = r.choice([1, 2, 3, 4], size=B, p=[0.35, 0.35, 0.2, 0.1]).tolist()
        draws = r.choice(80, size=(B, 10), p=label_p).tolist()
        many_u = r.random((B, 4)).tolist()
        face_pick = (r.random(B) < 0.4).tolist()
        ok_l = ok.tolist()
        obj_k, obj_label, face_k = [], [], []
        for k in range(B):
            if not ok_l[k]:
                continue
            seen = []
            for c in draws[k]:
                if c not in seen:
                    seen.append(c)
                    if len(seen) == ntags[k]:
                        break
            mu = many_u[k]
            for t, c in enumerate(seen):
                m = 1 + int(mu[t] ** 3 * (6 if c == 0 else 3))
                obj_k += [k] * m
                obj_label += [c] * m
            if 0 in seen and face_pick[k]:  # faces: 40% of the photos with a person, ~20% of all
                face_k.append(k)
        ok_ = np.array(obj_k, dtype=np.int64)
        ol = np.array(obj_label, dtype=np.int64)
        no = len(ok_)
        w = width[lo:hi][ok_].astype(np.float64)
        h = height[lo:hi][ok_].astype(np.float64)
        bw = (0.05 + 0.5 * r.random(no)) * w
        bh = (0.05 + 0.5 * r.random(no)) * h
        x1 = r.random(no) * (w - bw)
        y1 = r.random(no) * (h - bh)
        score = np.round(0.3 + 0.69 * r.random(no), 4)
        order = np.lexsort((-score, ok_))  # by photo, best first: the detector's order
        ok_, ol, score, x1, y1, bw, bh = ok_[order], ol[order], score[order], x1[order], y1[order], bw[order], bh[order]
        rank = np.arange(no) - np.searchsorted(ok_, ok_, "left")
        label_names = np.array(labels, dtype=object)
        objs = list(zip((ok_ + lo + 1).tolist(), rank.tolist(), label_names[ol].tolist(), score.tolist(),
                        np.round(x1, 1).tolist(), np.round(y1, 1).tolist(), np.round(x1 + bw, 1).tolist(),
                        np.round(y1 + bh, 1).tolist()))
        # a tag: the label's best object, tags in the order of their best scores
        _, first = np.unique(ok_ * 80 + ol, return_index=True)
        first.sort()
        tk = ok_[first]
        trank = np.arange(len(first)) - np.searchsorted(tk, tk, "left")
        tags = list(zip((tk + lo + 1).tolist(), trank.tolist(), label_names[ol[first]].tolist(),
                        score[first].tolist()))
        # faces
        fk = np.repeat(np.array(face_k, dtype=np.int64), r.choice([1, 2, 3], size=len(face_k), p=[0.6, 0.3, 0.1]))
        nf = len(fk)
        frank = np.arange(nf) - np.searchsorted(fk, fk, "left")
        fu = r.random((nf, 6))
        fw_ = width[lo:hi][fk].astype(np.float64)
        fh_ = height[lo:hi][fk].astype(np.float64)
        side = (0.04 + 0.12 * fu[:, 1]) * np.minimum(fw_, fh_)
        fx1 = fu[:, 2] * (fw_ - side)
        fy1 = fu[:, 3] * (fh_ - side * 1.2)
        ignored = fu[:, 5] < 0.05
        person = np.where(ignored, 0, r.choice(people_n, size=nf, p=person_p) + 1)
        for pid in person.tolist():
            face_counts[pid] += 1
        faces = list(zip(range(face_id + 1, face_id + nf + 1), (fk + lo + 1).tolist(), frank.tolist(),
                         np.round(0.6 + 0.4 * fu[:, 0], 4).tolist(), np.round(fx1, 1).tolist(),
                         np.round(fy1, 1).tolist(), np.round(fx1 + side, 1).tolist(),
                         np.round(fy1 + side * 1.2, 1).tolist(), np.round(5 + 70 * fu[:, 4], 1).tolist(),
                         np.round(fu[:, 1], 3).tolist(), [p or None for p in person.tolist()], [0] * nf,
                         ignored.astype(np.int64).tolist()))
        face_id += nf
        # files
        b_stamps = stamps[lo:hi].tolist()
        tagged = np.datetime_as_string(tagged0 + (fids * 350).astype("timedelta64[ms]"), unit="ms").tolist()
        b_hash = [hashes[32 * j:32 * j + 32] for j in dup_of[lo:hi].tolist()]
        okb = ok.tolist()
        files = list(zip(fids.tolist(), ["/photos/%s/%s/IMG_%06d.jpg" % (st[:4], st[5:7], f)
                                         for st, f in zip(b_stamps, range(lo + 1, hi + 1))],
                         [model] * B, sizes[lo:hi].tolist(), mtime_ns[lo:hi].tolist(), b_hash,
                         ["ok" if o else "failed" for o in okb], [None if o else "corrupt" for o in okb],
                         [None if o else "premature end of JPEG data" for o in okb],
                         np.round(20 + 30 * r.random(B), 3).tolist(),
                         np.where(ok, np.round(6 + 2 * r.random(B), 3), 0.0).tolist(),
                         np.where(ok, width[lo:hi], 0).tolist(), np.where(ok, height[lo:hi], 0).tolist(),
                         [t + "Z" for t in tagged]))
        # EXIF
        mk = np.flatnonzero(has_meta[lo:hi])
        nm = len(mk)
        ev = r.random((nm, 5))
        mi = mk + lo
        ph = phone[mi].tolist()
        taken = [st if d else None for st, d in zip(stamps[mi].tolist(), dated[mi].tolist())]
        g = gps[mi].tolist()
        cams = [CAMERAS[c] for c in cam[mi].tolist()]
        metas = list(zip((mi + 1).tolist(), taken,
                         [("+01:00" if t[5:7] in ("01", "02", "03", "11", "12") else "+02:00") if p and t else None
                          for t, p in zip(taken, ph)],
                         [c[0] for c in cams], [c[1] for c in cams], [None if p else "18-55mm" for p in ph],
                         np.round(1 / (30 + 2000 * ev[:, 0]), 6).tolist(), np.round(1.8 + 6 * ev[:, 1], 1).tolist(),
                         (100 * 2 ** (ev[:, 2] * 6).astype(np.int64)).tolist(),
                         np.round(4.2 + 50 * ev[:, 3], 1).tolist(),
                         [v if x else None for v, x in zip(lat[mi].tolist(), g)],
                         [v if x else None for v, x in zip(lon[mi].tolist(), g)],
                         [v if x else None for v, x in zip(np.round(30 + 200 * ev[:, 4], 1).tolist(), g)]))
        t = time.perf_counter()
        db.execute("BEGIN")
        for key, sql, rows in (("files", insert_file, files), ("tags", insert_tag, tags), ("objects", insert_obj, objs),
                               ("photo_meta", insert_meta, metas), ("faces", insert_face, faces)):
            db.executemany(sql, rows)
            t, seconds[key] = time.perf_counter(), seconds.get(key, 0.0) + time.perf_counter() - t
        db.execute("COMMIT")
        seconds["commit"] = seconds.get("commit", 0.0) + time.perf_counter() - t
        for key, rows in (("files", files), ("tags", tags), ("objects", objs), ("photo_meta", metas),
                          ("faces", faces)):
            totals[key] += len(rows)
        if block % 4 == 3 or hi == n:
            log("%d/%d photos" % (hi, n))

    # people: the most photographed are the ones named
    order = sorted(range(1, people_n + 1), key=lambda p: (-face_counts[p], p))
    names = ["%s %s" % (FIRST[k % len(FIRST)], LAST[(k // len(FIRST) + k) % len(LAST)]) for k in range(named_n)]
    name_of = dict(zip(order[:named_n], names))
    db.execute("BEGIN")
    db.executemany("UPDATE people SET name = ?, faces = ? WHERE id = ?",
                   [(name_of.get(p), face_counts[p], p) for p in range(1, people_n + 1)])
    # a few faces put there by hand
    db.execute("UPDATE faces SET confirmed = 1 WHERE person_id IN (SELECT id FROM people WHERE name IS NOT NULL) "
               "AND id % 50 = 0")
    db.execute("INSERT INTO roots (path, added_at) VALUES ('/photos', '2026-11-20T09:00:00.000Z')")
    db.execute("COMMIT")
    totals["people"] = people_n
    totals["named"] = len(name_of)
    log("SQLite's share: " + ", ".join("%s %.1f s" % kv for kv in seconds.items()))
    return totals


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("catalog")
    ap.add_argument("--tandem", required=True, help="the tandem binary (creates the file, its schema)")
    ap.add_argument("--photos", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--people", type=int, default=2000)
    ap.add_argument("--named", type=int, default=300)
    ap.add_argument("--descriptor-bytes", type=int, default=DESCRIPTOR_BYTES,
                    help="faces.descriptor and people.centroid size (default: 1024 float32)")
    ap.add_argument("--no-analyze", action="store_true", help="leave sqlite_stat1 out (tag runs ANALYZE; this is a catalog without it)")
    ap.add_argument("--force", action="store_true", help="replace CAT if it exists")
    a = ap.parse_args()
    if os.path.exists(a.catalog):
        if not a.force:
            sys.exit("gallery_catalog: %s exists (--force replaces it)" % a.catalog)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(a.catalog + suffix):
                os.remove(a.catalog + suffix)
    t0 = time.perf_counter()
    print("gallery_catalog: %s --photos %d --seed %d on %s, %d cores, Python %s, SQLite %s" % (
        a.catalog, a.photos, a.seed, platform.node(), os.cpu_count(), platform.python_version(),
        sqlite3.sqlite_version), flush=True)
    db = create_catalog(a.tandem, a.catalog)
    mode = db.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal", mode
    # A generated file: no fsyncs, a big page cache; the journal stays WAL.
    db.execute("PRAGMA synchronous = OFF")
    db.execute("PRAGMA cache_size = -1000000")
    db.execute("PRAGMA foreign_keys = ON")

    def log(msg):
        print("  %6.1f s  %s" % (time.perf_counter() - t0, msg), flush=True)

    totals = generate(db, a.photos, a.seed, a.people, a.named, a.descriptor_bytes, log)
    t_fill = time.perf_counter() - t0
    # What `tag` ends with (Catalog::refresh_statistics): a plain ANALYZE,
    # since this catalog has no sqlite_stat1 yet; see the docstring.
    if not a.no_analyze:
        db.execute("ANALYZE")
        stat = db.execute("SELECT stat FROM sqlite_stat1 WHERE tbl = 'files' AND idx = 'files_by_model'").fetchone()
        rows = db.execute("SELECT coalesce(max(id), 0) FROM files").fetchone()[0]
        if not stat or int(stat[0].split()[0]) != rows:
            sys.exit("gallery_catalog: after ANALYZE, sqlite_stat1 has %r for files_by_model, not %d rows" % (stat, rows))
    t_analyze = time.perf_counter() - t0 - t_fill
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    total = time.perf_counter() - t0
    size = os.path.getsize(a.catalog)
    print("gallery_catalog: %s; fill %.1f s, ANALYZE %.1f s, total %.1f s; %.0f MiB" % (
        ", ".join("%s %d" % kv for kv in totals.items()), t_fill, t_analyze, total, size / 2**20))


if __name__ == "__main__":
    main()
