#!/usr/bin/python3
"""The thumbnails `tandem tag --catalog` writes, as the freedesktop
Thumbnail Managing Standard lays them out, so that file managers reuse them:

  * each photo has $XDG_CACHE_HOME/thumbnails/{large,normal}/MD5(URI).png,
    the URI as GLib makes it (the `gio` tool: file names with spaces, '#',
    '%', ';', UTF-8 and a byte that is not UTF-8);
  * each PNG (read with Pillow) fits in 256 / 128 pixels with the upright
    photo's aspect (an EXIF-rotated portrait stays a portrait), looks like
    Pillow's own thumbnail of the photo, and carries Thumb::URI and
    Thumb::MTime (the file's mtime in seconds); folders 0700, files 0600;
  * a photo that changed gets its thumbnail made again (new Thumb::MTime);
  * when the cache cannot be written, the thumbnails go beside the catalog;
  * --thumbnails off writes none.

With --device cuda the GPU's JPEG engines decode the baseline photos and
fit their thumbnails from the same decode; the same checks hold, and the
summary must say the GPU decoded them.

Exit 77 (skipped) without darknet's photos or the detector model, or with
--device cuda where there is no GPU.
usage: check_thumbnails.py TANDEM_BIN [--device cpu|cuda]
"""
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import urllib.parse

from PIL import Image, ImageChops, ImageOps, ImageStat

DARKNET = os.environ.get("TANDEM_DARKNET_DATA", "/usr/share/darknet/data")
DEVICE = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"
COPIES = 30 if DEVICE == "cuda" else 0


def models_ok():
    models = os.environ.get("TANDEM_MODELS") or os.path.join(os.path.expanduser("~"), ".cache", "tandem", "models")
    return os.path.isdir(models) and any(n.startswith("centernet") for n in os.listdir(models))


def tag(tandem, lib, cat, cache, *extra):
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    # On cuda one CPU decoder, so that the GPU decoders (which take a moment
    # to open) get most of the photos.
    gpu = ["--decoders", "1", "--nvjpeg", "on"] if DEVICE == "cuda" else []
    r = subprocess.run([tandem, "tag", lib, "--catalog", cat, "--device", DEVICE, "--faces", "off", *gpu, *extra],
                       capture_output=True, env=env)
    if r.returncode != 0:
        sys.exit("FAILED: tandem tag\n" + r.stderr.decode(errors="replace")[-3000:])
    return r.stderr.decode(errors="replace")


def gio_uri(path):
    """GLib's URI of path (bytes); without the gio tool (a GPU host without
    GLib's tools), GLib's rule restated: bytes outside its unreserved set
    percent-encoded, upper-case hex."""
    if not shutil.which("gio"):
        return "file://" + urllib.parse.quote(os.path.abspath(path), safe="!$&'()*+,-./:=@_~")
    r = subprocess.run([b"gio", b"info", b"-a", b"standard::name", path], capture_output=True)
    for line in r.stdout.decode(errors="replace").splitlines():
        if line.startswith("uri: "):
            return line[5:].strip()
    return None


def turned_copy(src, dst, orientation):
    im = Image.open(src)
    stored = {6: im.transpose(Image.ROTATE_90), 8: im.transpose(Image.ROTATE_270)}[orientation]
    exif = Image.Exif()
    exif[0x0112] = orientation
    stored.save(dst, quality=92, exif=exif.tobytes())


def check_photo(path, root, problems):
    """Checks the two thumbnails of path (bytes) under root; returns Thumb::MTime."""
    uri = gio_uri(path)
    if uri is None:
        problems.append("gio gave no URI for %r" % path)
        return None
    name = hashlib.md5(uri.encode()).hexdigest() + ".png"
    upright = ImageOps.exif_transpose(Image.open(path)).convert("RGB")
    mtime = None
    for flavor, side in (("large", 256), ("normal", 128)):
        thumb_path = os.path.join(root, flavor, name)
        if not os.path.exists(thumb_path):
            problems.append("%r: no %s thumbnail %s" % (path, flavor, thumb_path))
            continue
        th = Image.open(thumb_path)
        w, h = th.size
        if max(w, h) != min(side, max(upright.size)):
            problems.append("%s: %dx%d, the longer side should be %d" % (thumb_path, w, h, side))
        if abs(w / h - upright.width / upright.height) > 0.02 * upright.width / upright.height + 1.0 / h:
            problems.append("%s: %dx%d, not the upright photo's aspect %dx%d" % (thumb_path, w, h, *upright.size))
        if th.text.get("Thumb::URI") != uri:
            problems.append("%s: Thumb::URI %r, GLib's URI %r" % (thumb_path, th.text.get("Thumb::URI"), uri))
        mtime = th.text.get("Thumb::MTime")
        if mtime != str(int(os.stat(path).st_mtime)):
            problems.append("%s: Thumb::MTime %r, the file's %d" % (thumb_path, mtime, int(os.stat(path).st_mtime)))
        if stat.S_IMODE(os.stat(thumb_path).st_mode) != 0o600:
            problems.append("%s: mode %o, not 0600" % (thumb_path, stat.S_IMODE(os.stat(thumb_path).st_mode)))
        reference = upright.resize((w, h), Image.BICUBIC)
        diff = ImageStat.Stat(ImageChops.difference(th.convert("RGB"), reference)).mean
        if max(diff) > 6:
            problems.append("%s: mean difference %s from Pillow's thumbnail" % (thumb_path, diff))
    for flavor in ("large", "normal"):
        d = os.path.join(root, flavor)
        if os.path.isdir(d) and stat.S_IMODE(os.stat(d).st_mode) != 0o700:
            problems.append("%s: mode %o, not 0700" % (d, stat.S_IMODE(os.stat(d).st_mode)))
    return mtime


def main():
    tandem = sys.argv[1]
    if not os.path.exists(os.path.join(DARKNET, "dog.jpg")) or not models_ok():
        print("SKIP: darknet's photos or the detector (scripts/install-models) missing")
        return 77
    if not shutil.which("gio") and DEVICE == "cpu":
        print("SKIP: the gio tool (Debian's libglib2.0-bin) is missing: no reference for the URIs")
        return 77
    if DEVICE == "cuda" and not shutil.which("nvidia-smi"):
        print("SKIP: no NVIDIA GPU here")
        return 77
    problems = []
    with tempfile.TemporaryDirectory(prefix="thumbs_") as tmp:
        lib = os.path.join(tmp, "photos")
        os.makedirs(lib)
        names = [b"a b#c%d \xc3\xa9;x.jpg", b"latin1 \xe9.jpg", b"kite.jpg"]
        shutil.copy(os.path.join(DARKNET, "dog.jpg"), os.path.join(os.fsencode(lib), names[0]))
        shutil.copy(os.path.join(DARKNET, "horses.jpg"), os.path.join(os.fsencode(lib), names[1]))
        shutil.copy(os.path.join(DARKNET, "kite.jpg"), os.path.join(os.fsencode(lib), names[2]))
        turned_copy(os.path.join(DARKNET, "person.jpg"), os.path.join(lib, "portrait.jpg"), 6)
        names.append(b"portrait.jpg")
        # On cuda, copies in folders of their own, enough for the GPU's share.
        copies = [os.path.join(b"copies", b"%d" % k, n) for k in range(COPIES) for n in names]
        for c in copies:
            os.makedirs(os.path.dirname(os.path.join(os.fsencode(lib), c)), exist_ok=True)
            shutil.copy(os.path.join(os.fsencode(lib), os.path.basename(c)), os.path.join(os.fsencode(lib), c))
        cache, cat = os.path.join(tmp, "cache"), os.path.join(tmp, "c.sqlite")
        root = os.path.join(cache, "thumbnails")
        out = tag(tandem, lib, cat, cache)
        if "thumbnails: %d written" % (len(names) + len(copies)) not in out:
            problems.append("summary: %s" % out[-400:])
        if DEVICE == "cuda" and "fitted on the GPU" not in out:
            problems.append("--device cuda: the GPU decoded no photo: %s" % out[-600:])
        paths = [os.path.join(os.fsencode(lib), n) for n in names]
        for c in copies:
            check_photo(os.path.join(os.fsencode(lib), c), root, problems)
        before = {p: check_photo(p, root, problems) for p in paths}

        # A changed photo: new content and mtime, its thumbnail made again.
        changed = paths[2]
        Image.open(os.path.join(DARKNET, "eagle.jpg")).save(changed, "JPEG", quality=90)
        os.utime(changed, (os.stat(changed).st_atime, os.stat(changed).st_mtime + 100))
        tag(tandem, lib, cat, cache)
        after = check_photo(changed, root, problems)
        if after == before[changed]:
            problems.append("the changed photo's thumbnail kept Thumb::MTime %s" % after)

        # The cache not writable (XDG_CACHE_HOME is a file): beside the catalog.
        blocked = os.path.join(tmp, "not-a-folder")
        open(blocked, "w").close()
        cat2 = os.path.join(tmp, "c2.sqlite")
        out = tag(tandem, lib, cat2, blocked)
        if "thumbnails went to" not in out:
            problems.append("no word of the fallback folder: %s" % out[-300:])
        for p in paths:
            check_photo(p, cat2 + ".thumbnails", problems)

        cat3 = os.path.join(tmp, "c3.sqlite")
        off_cache = os.path.join(tmp, "cache-off")
        tag(tandem, lib, cat3, off_cache, "--thumbnails", "off")
        if os.path.exists(os.path.join(off_cache, "thumbnails")):
            problems.append("--thumbnails off wrote %s/thumbnails" % off_cache)
    for p in problems:
        print("PROBLEM " + p)
    print("%d problems" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
