#!/usr/bin/python3
"""What `tandem tag` stores of a photo's EXIF, against the exiv2 tool's
reading of the same files (the reference: tandem reads with libexif).

Photos written here with Pillow: a phone's (date with UTC offset, make,
model, lens, exposure, GPS south/west and below sea level; also as WebP
and, with libheif's heif-enc, as HEIC), an old
camera's (no offset, no GPS, date only in IFD0's DateTime), one without
EXIF, and one with absurd values (month 13, a latitude of 300 degrees, a
zero denominator, non-ASCII bytes in the make): each value tandem keeps
must equal exiv2's; the absurd ones must be absent, not stored.

Exit 77 (skipped) without the exiv2 tool or the detector model.
usage: check_exif.py TANDEM_BIN
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from PIL import Image
from PIL.TiffImagePlugin import IFDRational

EXIF_IFD, GPS_IFD = 0x8769, 0x8825


def photo(path, ifd0=None, exif=None, gps=None):
    img = Image.new("RGB", (320, 240), (120, 160, 200))
    ex = Image.Exif()
    for k, v in (ifd0 or {}).items():
        ex[k] = v
    if exif:
        ex[EXIF_IFD] = exif
    if gps:
        ex[GPS_IFD] = gps
    img.save(path, quality=90, exif=ex.tobytes() if (ifd0 or exif or gps) else b"")


def make_photos(lib):
    photo(os.path.join(lib, "phone.jpg"),
          ifd0={0x010F: "Apple", 0x0110: "iPhone 12", 0x0132: "2021:07:04 18:30:09"},
          exif={0x9003: "2021:07:04 18:30:05", 0x9011: "+02:00", 0xA434: "iPhone 12 back dual wide camera 4.2mm f/1.6",
                0x829A: IFDRational(1, 250), 0x829D: IFDRational(8, 5), 0x8827: 64, 0x920A: IFDRational(42, 10)},
          gps={1: "S", 2: (IFDRational(33), IFDRational(51), IFDRational(2441, 100)), 3: "W",
               4: (IFDRational(70), IFDRational(40), IFDRational(1234, 100)), 5: b"\x01", 6: IFDRational(125, 10)})
    photo(os.path.join(lib, "oldcamera.jpg"),
          ifd0={0x010F: "NIKON CORPORATION", 0x0110: "COOLPIX P100", 0x0132: "2009:12:31 23:59:59"},
          exif={0x829D: IFDRational(28, 10)})
    photo(os.path.join(lib, "noexif.jpg"))
    photo(os.path.join(lib, "absurd.jpg"),
          ifd0={0x010F: "Caf\u00e9 Cam", 0x0110: "X"},
          exif={0x9003: "2021:13:45 25:61:00", 0x9011: "+99:00", 0x829A: IFDRational(1, 0), 0x8827: 0},
          gps={1: "N", 2: (IFDRational(300), IFDRational(0), IFDRational(0)), 3: "E",
               4: (IFDRational(10), IFDRational(0), IFDRational(0))})
    photo(os.path.join(lib, "zerodate.jpg"), exif={0x9003: "0000:00:00 00:00:00"})
    # The phone's EXIF in a WebP's EXIF chunk and a HEIF's Exif item.
    with Image.open(os.path.join(lib, "phone.jpg")) as im:
        im.save(os.path.join(lib, "phone.webp"), exif=im.info["exif"])
    if shutil.which("heif-enc"):
        subprocess.run(["heif-enc", "-q", "50", os.path.join(lib, "phone.jpg"), "-o", os.path.join(lib, "phone.heic")],
                       check=True, capture_output=True)


def exiv2_values(path):
    """{key: plain value} as `exiv2 -Pkv` prints them."""
    r = subprocess.run(["exiv2", "-q", "-Pkv", path], capture_output=True, text=True, errors="replace")
    out = {}
    for line in r.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2:
            out[parts[0]] = parts[1].strip()
    return out


def rational(text, k=0):
    n, d = text.split()[k].split("/")
    return float(n) / float(d) if float(d) else None


def expected(v):
    """What tandem must store, from exiv2's reading (None: absent)."""
    date = v.get("Exif.Photo.DateTimeOriginal") or v.get("Exif.Image.DateTime")
    e = {"taken_at": None, "taken_offset": None, "make": v.get("Exif.Image.Make"),
         "model": v.get("Exif.Image.Model"), "lens": v.get("Exif.Photo.LensModel"),
         "exposure_s": None, "f_number": None, "iso": None, "focal_length_mm": None,
         "latitude": None, "longitude": None, "altitude_m": None}
    if date:
        e["taken_at"] = date[:10].replace(":", "-") + "T" + date[11:]
        if v.get("Exif.Photo.DateTimeOriginal"):
            e["taken_offset"] = v.get("Exif.Photo.OffsetTimeOriginal")
    for key, name in (("Exif.Photo.ExposureTime", "exposure_s"), ("Exif.Photo.FNumber", "f_number"),
                      ("Exif.Photo.FocalLength", "focal_length_mm")):
        if key in v:
            e[name] = rational(v[key])
    if "Exif.Photo.ISOSpeedRatings" in v:
        e["iso"] = int(v["Exif.Photo.ISOSpeedRatings"].split()[0])
    if "Exif.GPSInfo.GPSLatitude" in v:
        def dms(key, ref, negative):
            t = v[key]
            deg = rational(t, 0) + rational(t, 1) / 60 + rational(t, 2) / 3600
            return -deg if v.get(ref) == negative else deg
        e["latitude"] = dms("Exif.GPSInfo.GPSLatitude", "Exif.GPSInfo.GPSLatitudeRef", "S")
        e["longitude"] = dms("Exif.GPSInfo.GPSLongitude", "Exif.GPSInfo.GPSLongitudeRef", "W")
        if "Exif.GPSInfo.GPSAltitude" in v:
            alt = rational(v["Exif.GPSInfo.GPSAltitude"])
            e["altitude_m"] = -alt if v.get("Exif.GPSInfo.GPSAltitudeRef") == "1" else alt
    return e


# The absurd photo: exiv2 reads the values as written; tandem must drop
# these, and keep the make with its non-ASCII byte(s) replaced.
ABSURD = {"taken_at": None, "taken_offset": None, "exposure_s": None, "iso": None, "latitude": None,
          "longitude": None, "altitude_m": None}


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(b))
    return a == b


def check_backfill(tandem, lib, cat):
    """The catalog as one tagged before it kept metadata (schema 4) left it,
    then `tag` again without --force: the EXIF is read back into it, equal
    to what tagging stored, and no photo is tagged again."""
    db = sqlite3.connect(cat)
    meta_sql = "SELECT f.path, m.* FROM photo_meta m JOIN files f ON f.id = m.file_id ORDER BY f.path"
    before = db.execute(meta_sql).fetchall()
    tagged = db.execute("SELECT path, tagged_at FROM files ORDER BY path").fetchall()
    with db:
        db.execute("DELETE FROM photo_meta")
        db.execute("INSERT INTO meta_pending (file_id) SELECT id FROM files WHERE status = 'ok'")
    db.close()
    r = subprocess.run([tandem, "tag", lib, "--catalog", cat, "--device", "cpu", "--faces", "off"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return ["tandem tag (the metadata backfill) failed:\n" + r.stderr[-3000:]]
    problems = []
    n = len(os.listdir(lib))
    if "read the EXIF metadata of %d photos" % n not in r.stderr:
        problems.append("backfill: tag did not say it read %d photos' EXIF: %s" % (n, r.stderr[-2000:]))
    db = sqlite3.connect(cat)
    if db.execute(meta_sql).fetchall() != before:
        problems.append("backfill: photo_meta differs from what tagging stored")
    if db.execute("SELECT path, tagged_at FROM files ORDER BY path").fetchall() != tagged:
        problems.append("backfill: photos were tagged again")
    if db.execute("SELECT count(*) FROM meta_pending").fetchone()[0] != 0:
        problems.append("backfill: photos are still pending")
    db.close()
    print("backfill: %d photos' metadata read again, equal, none tagged again" % n)
    return problems


def main():
    tandem = sys.argv[1]
    if not shutil.which("exiv2"):
        print("SKIP: the exiv2 tool is missing (Debian's exiv2)")
        return 77
    models = os.environ.get("TANDEM_MODELS") or os.path.join(os.path.expanduser("~"), ".cache", "tandem", "models")
    if not os.path.isdir(models) or not any(n.startswith("centernet") for n in os.listdir(models)):
        print("SKIP: the detector is not installed (scripts/install-models)")
        return 77
    problems = []
    with tempfile.TemporaryDirectory(prefix="exif_") as tmp:
        lib = os.path.join(tmp, "photos")
        os.makedirs(lib)
        make_photos(lib)
        cat, jsonl = os.path.join(tmp, "c.sqlite"), os.path.join(tmp, "t.jsonl")
        r = subprocess.run([tandem, "tag", lib, "--catalog", cat, "--jsonl", jsonl, "--device", "cpu",
                            "--faces", "off"], capture_output=True, text=True)
        if r.returncode != 0:
            print("FAILED: tandem tag\n" + r.stderr[-3000:])
            return 1
        rows = {os.path.basename(j["path"]): j for j in map(json.loads, open(jsonl))}
        for name in sorted(os.listdir(lib)):
            got = rows[name]["meta"]
            want = expected(exiv2_values(os.path.join(lib, name)))
            if name == "absurd.jpg":
                want.update(ABSURD)
                # Each non-ASCII byte becomes '?' (Pillow may write é in one byte or two).
                if not re.fullmatch(r"Caf\?{1,2} Cam", got["make"] or ""):
                    problems.append("absurd.jpg: make %r, expected 'Caf? Cam'" % got["make"])
                del want["make"]
            if name == "zerodate.jpg":
                want["taken_at"] = None
            for key, value in want.items():
                if not same(got.get(key), value):
                    problems.append("%s: %s is %r, exiv2 reads %r" % (name, key, got.get(key), value))
            print(name, json.dumps(got))
        if rows["noexif.jpg"]["meta"] != {k: None for k in rows["noexif.jpg"]["meta"]}:
            problems.append("noexif.jpg has metadata: %s" % rows["noexif.jpg"]["meta"])
        problems += check_backfill(tandem, lib, cat)
    for p in problems:
        print("PROBLEM " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
