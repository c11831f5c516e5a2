#!/usr/bin/python3
"""`tandem detect` on the real photos of Debian's darknet package must find
what is in them (a list made by looking at each photo). Extra objects are printed, not failed.
Exit 77 (skipped) when darknet's photos or the detector are not installed.

usage: darknet_photos.py TANDEM_BIN
"""
import json
import os
import subprocess
import sys

DATA = "/usr/share/darknet/data"
# photo -> labels that must all be found; a tuple means any one of them.
EXPECTED = {
    "dog.jpg": ["dog", "bicycle", ("car", "truck")],
    "horses.jpg": ["horse"],
    "giraffe.jpg": ["giraffe", "zebra"],
    "person.jpg": ["person", "dog", "horse"],
    "kite.jpg": ["person", "kite"],
    "eagle.jpg": ["bird"],
}


def main():
    tandem = sys.argv[1]
    photos = [os.path.join(DATA, p) for p in EXPECTED]
    if not all(os.path.isfile(p) for p in photos):
        print(f"SKIP: darknet's photos are not in {DATA} (apt-get install darknet)")
        sys.exit(77)
    models = subprocess.run([tandem, "models"], capture_output=True, text=True)
    if "centernet" not in models.stdout:
        print("SKIP: the detector is not installed (scripts/install-models)")
        sys.exit(77)
    r = subprocess.run([tandem, "detect", "--json", *photos], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        sys.exit(1)
    failed = False
    for line in r.stdout.splitlines():
        res = json.loads(line)
        name = os.path.basename(res["path"])
        found = {t["label"]: t for t in res["tags"]}
        missing = []
        for want in EXPECTED[name]:
            options = want if isinstance(want, tuple) else (want,)
            if not any(o in found for o in options):
                missing.append(" or ".join(options))
        wanted = {o for w in EXPECTED[name] for o in (w if isinstance(w, tuple) else (w,))}
        extra = sorted(set(found) - wanted)
        tags = ", ".join(f"{t['label']} x{t['count']} {t['score']:.2f}" for t in res["tags"])
        print(f"{name}: {tags}" + (f"   MISSING {missing}" if missing else "") +
              (f"   (also: {extra})" if extra else ""))
        failed |= bool(missing)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
