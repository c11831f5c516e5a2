#!/usr/bin/python3
"""The detector's class names come from the list installed beside the model
(scripts/install-models writes centernet.labels): the shipped detector is
copied to a fresh $TANDEM_MODELS whose list renames class 0, and `tandem
detect` and `tandem tag` must print that name for the person in darknet's
person.jpg. Then coco.names beside the model stands in for a missing
centernet.labels, and a broken list is one error line naming it.
Exit 77 (skipped) when the photo or the installed detector is missing.

usage: model_labels.py TANDEM_BIN
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

PHOTO = "/usr/share/darknet/data/person.jpg"
failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    failures += 0 if ok else 1


def models_dir():
    return os.environ.get("TANDEM_MODELS") or os.path.expanduser("~/.cache/tandem/models")


def run(tandem, models, *args):
    env = dict(os.environ, TANDEM_MODELS=models)
    return subprocess.run([tandem, *args, "--device", "cpu"], capture_output=True, text=True, env=env)


def detect_labels(tandem, models):
    r = run(tandem, models, "detect", "--json", PHOTO)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        return set()
    return {t["label"] for t in json.loads(r.stdout.splitlines()[0])["tags"]}


def tag_labels(tandem, models, folder):
    r = run(tandem, models, "tag", "--json", "--top", "10", folder)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        return set()
    return {t["label"] for line in r.stdout.splitlines() for t in json.loads(line)["tags"]}


def write_names(path, first):
    with open(os.path.join(models_dir(), "centernet.labels")) as f:
        names = f.read().splitlines()
    names[0] = first
    with open(path, "w") as f:
        f.write("\n".join(names) + "\n")


def main():
    tandem = sys.argv[1]
    src = models_dir()
    needed = ["centernet.json", "centernet.bin", "centernet.labels"]
    if not os.path.isfile(PHOTO):
        print(f"SKIP: {PHOTO} is missing (apt-get install darknet)")
        sys.exit(77)
    if not all(os.path.isfile(os.path.join(src, f)) for f in needed):
        print(f"SKIP: {', '.join(needed)} not all in {src} (scripts/install-models)")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp:
        models = os.path.join(tmp, "models")
        os.mkdir(models)
        for f in needed[:2]:
            shutil.copy(os.path.join(src, f), models)
        folder = os.path.join(tmp, "photos")
        os.mkdir(folder)
        shutil.copy(PHOTO, folder)
        own = os.path.join(models, "centernet.labels")

        write_names(own, "human being")
        got = detect_labels(tandem, models)
        check("human being" in got and "person" not in got, f"detect names from centernet.labels: {sorted(got)}")
        got = tag_labels(tandem, models, folder)
        check("human being" in got and "person" not in got, f"tag names from centernet.labels: {sorted(got)}")

        os.remove(own)
        write_names(os.path.join(models, "coco.names"), "somebody")
        got = detect_labels(tandem, models)
        check("somebody" in got, f"detect names from coco.names without centernet.labels: {sorted(got)}")

        with open(own, "w") as f:
            f.write("person\nbicycle\n")
        r = run(tandem, models, "detect", PHOTO)
        lines = [l for l in r.stderr.splitlines() if l.startswith("tandem: ")]
        check(0 < r.returncode < 128 and len(lines) == 1 and own in lines[0]
              and "scripts/install-models" in lines[0], f"a broken centernet.labels: rc={r.returncode} {lines}")
    print(f"model labels: {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
