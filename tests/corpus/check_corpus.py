#!/usr/bin/python3
"""Checks scripts/make-corpus on 6 photos (argv[1] is the script).

References: the JPEG and EXIF specifications as PIL (Debian's python3-pil)
reads them back, libjpeg's quality scaling of the standard luminance table
(ITU-T T.81 Annex K) for the quality range, and the script's documented
layout (orientations 1, 6, 1, stored portrait, 8, 1; every 4th progressive).
"""
import os
import re
import subprocess
import sys
import tempfile

from PIL import Image, JpegImagePlugin

SCRIPT = sys.argv[1]
LANDSCAPE, PORTRAIT = (4032, 3024), (3024, 4032)
# (stored size, EXIF Orientation) of IMG_0001..IMG_0006.
EXPECTED_LAYOUT = [(LANDSCAPE, 1), (LANDSCAPE, 6), (LANDSCAPE, 1), (PORTRAIT, 1), (LANDSCAPE, 8),
                   (LANDSCAPE, 1)]
STD_LUMA = [16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57,
            69, 56, 14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64,
            81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99]

failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(count, directory, *extra):
    out = subprocess.run([SCRIPT, str(count), directory, *extra], check=True, capture_output=True,
                         text=True).stdout
    print(out.strip())
    m = re.search(r"(\d+) written, (\d+) unchanged", out)
    return int(m.group(1)), int(m.group(2))


def luma_table(quality):
    """libjpeg's jpeg_quality_scaling applied to the Annex K table."""
    scale = 5000 // quality if quality < 50 else 200 - 2 * quality
    return sorted(min(255, max(1, (q * scale + 50) // 100)) for q in STD_LUMA)


def files_in(directory):
    return sorted(os.path.join(directory, f) for f in os.listdir(directory))


def check_photo(path, index):
    size_bytes = os.path.getsize(path)
    expect(2.0e6 <= size_bytes <= 4.0e6, "%s is %d bytes, not camera-like" % (path, size_bytes))
    with Image.open(path) as im:
        exif = im.getexif()
        stored, orientation = EXPECTED_LAYOUT[index]
        expect(im.format == "JPEG" and im.mode == "RGB", "%s is %s %s" % (path, im.format, im.mode))
        expect(im.size == stored, "%s stored as %s, expected %s" % (path, im.size, stored))
        expect(exif.get(0x0112) == orientation,
               "%s Orientation %s, expected %d" % (path, exif.get(0x0112), orientation))
        expect(JpegImagePlugin.get_sampling(im) == 2, "%s is not 4:2:0" % path)
        expect(bool(im.info.get("progressive")) == ((index + 1) % 4 == 0), "%s progressive flag" % path)
        expect(exif.get(0x010F) and exif.get(0x0110), "%s lacks Make/Model" % path)
        expect(re.match(r"\d{4}:\d\d:\d\d \d\d:\d\d:\d\d$", exif.get_ifd(0x8769).get(0x9003, "")),
               "%s lacks DateTimeOriginal" % path)
        table = sorted(im.quantization[0])
        expect(any(table == luma_table(q) for q in range(85, 96)),
               "%s luma table is not libjpeg's at quality 85..95" % path)


def main():
    with tempfile.TemporaryDirectory(prefix="tandem_corpus_") as tmp:
        first, prefix, other_seed = (os.path.join(tmp, d) for d in ("first", "prefix", "seed2"))
        expect(run(6, first, "--jobs", "2") == (6, 0), "first run writes 6 files")
        photos = files_in(first)
        expect([os.path.basename(p) for p in photos] == ["IMG_%04d.jpg" % n for n in range(1, 7)],
               "names IMG_0001.jpg .. IMG_0006.jpg")
        for i, p in enumerate(photos):
            check_photo(p, i)
        sizes = [os.path.getsize(p) for p in photos]
        mean = sum(sizes) / len(sizes)
        expect(2.5e6 <= mean <= 3.5e6, "mean size %.0f bytes outside 2.5..3.5 MB" % mean)
        data = [open(p, "rb").read() for p in photos]
        expect(len(set(data)) == 6, "all six files differ")

        # Image n is a function of (seed, n): a 3-photo corpus on one process
        # is the first 3 of the 6, byte for byte.
        expect(run(3, prefix, "--jobs", "1") == (3, 0), "prefix run writes 3 files")
        expect([open(p, "rb").read() for p in files_in(prefix)] == data[:3],
               "same bytes for the same (seed, n)")
        run(1, other_seed, "--seed", "2")
        expect(open(files_in(other_seed)[0], "rb").read() != data[0], "another seed, another photo")

        # Rerunning leaves identical files alone (mtimes kept) and repairs a damaged one.
        mtimes = [os.stat(p).st_mtime_ns for p in photos]
        with open(photos[1], "r+b") as f:
            f.truncate(1000)
        expect(run(6, first, "--jobs", "2") == (1, 5), "rerun rewrites only the damaged file")
        expect([open(p, "rb").read() for p in photos] == data, "rerun restores the same bytes")
        after = [os.stat(p).st_mtime_ns for p in photos]
        expect([a == b for a, b in zip(mtimes, after)] == [True, False, True, True, True, True],
               "unchanged files keep their mtime")
    if failures:
        sys.exit("%d check(s) failed" % len(failures))
    print("corpus checks passed")


if __name__ == "__main__":
    main()
