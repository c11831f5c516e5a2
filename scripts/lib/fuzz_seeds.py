#!/usr/bin/python3
"""Seed corpora for the fuzz targets, from real files: Debian darknet's
photos (made small, in each JPEG flavour a camera or an editor writes, and
as PNG, WebP and HEIF), ONNX's node tests, the shipped TF.js models,
Fashion-MNIST, and catalogs written by tandem itself.

    fuzz_seeds.py TARGET OUT_DIR [TANDEM_BINARY]

Small inputs on purpose: a fuzzer runs thousands of them a second, and the
mutations that matter (markers, chunk sizes, header fields) do not need
12-MP bodies."""
import glob
import gzip
import io
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

DARKNET = Path("/usr/share/darknet/data")
ONNX_NODE = Path("/usr/share/libonnx-testdata/data/node")
MNIST = Path("/usr/share/datasets/fashion-mnist")
MODELS = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tandem" / "models"
HERE = Path(__file__).resolve().parent.parent.parent  # the repository


def exif_with_orientation(orientation, gps=False):
    from PIL import Image
    exif = Image.Exif()
    exif[0x0112] = orientation
    exif[0x010F], exif[0x0110] = "Canon", "EOS 5D"
    exif[0x0132] = "2021:07:04 12:00:00"
    if gps:
        exif[0x8825] = {1: "N", 2: (48.0, 8.0, 30.5), 3: "E", 4: (11.0, 34.0, 0.0), 5: b"\x00", 6: 520.0}
    return exif


def small_photos():
    from PIL import Image
    out = []
    for i, name in enumerate(["dog", "person", "eagle", "scream"]):
        im = Image.open(DARKNET / f"{name}.jpg").convert("RGB")
        side = [160, 96, 64, 48][i]
        im.thumbnail((side, side))
        out.append((name, im))
    return out


def jpeg_seeds(out):
    from PIL import Image
    photos = small_photos()
    for k, (name, im) in enumerate(photos):
        im.save(out / f"{name}_baseline.jpg", quality=90)
        im.save(out / f"{name}_progressive.jpg", quality=90, progressive=True)
        im.save(out / f"{name}_444.jpg", quality=95, subsampling=0)
        im.save(out / f"{name}_422_orient{k + 5}.jpg", quality=80, subsampling=1,
                exif=exif_with_orientation(k + 5, gps=k == 0))
        im.save(out / f"{name}_progressive_orient6.jpg", quality=85, progressive=True,
                exif=exif_with_orientation(6))
    name, im = photos[1]
    im.convert("L").save(out / f"{name}_gray.jpg", quality=90)
    im.convert("L").save(out / f"{name}_gray_progressive.jpg", quality=90, progressive=True)
    im.convert("CMYK").save(out / f"{name}_cmyk.jpg", quality=90)
    # Restart markers and optimized Huffman tables, as some cameras write;
    # arithmetic coding, which libjpeg-turbo reads and hardly anyone writes.
    for flavour, args in [("restart", ["-restart", "1", "-optimize"]), ("arithmetic", ["-arithmetic"]),
                          ("progressive_restart", ["-progressive", "-restart", "2"])]:
        subprocess.run(["cjpeg", *args, "-outfile", str(out / f"{name}_{flavour}.jpg")],
                       input=image_bytes(im, "PPM"), check=True, capture_output=True)
    shutil.copy(DARKNET / "person.jpg", out / "person_full.jpg")  # one photo as a camera writes it


def image_bytes(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def png_seeds(out):
    from PIL import Image, PngImagePlugin
    for name, im in small_photos()[:2]:
        im.save(out / f"{name}.png")
        im.convert("L").save(out / f"{name}_gray.png")
        im.convert("RGBA").save(out / f"{name}_rgba.png")
        im.convert("P").save(out / f"{name}_palette.png")
        info = PngImagePlugin.PngInfo()
        info.add_text("Thumb::URI", f"file:///photos/{name}.jpg")
        info.add_text("Thumb::MTime", "1700000000")
        im.save(out / f"{name}_thumb.png", pnginfo=info, exif=exif_with_orientation(6))
    for p in sorted(glob.glob(str(DARKNET / "labels" / "*.png")))[:8]:
        shutil.copy(p, out)


def webp_seeds(out):
    for name, im in small_photos()[:2]:
        im.save(out / f"{name}_lossy.webp", quality=80, exif=exif_with_orientation(8))
        im.save(out / f"{name}_lossless.webp", lossless=True)
        im.convert("RGBA").save(out / f"{name}_alpha.webp", quality=70)


def heif_seeds(out):
    for name, im in small_photos()[:2]:
        src = out / f"{name}.tmp.jpg"
        im.save(src, quality=90, exif=exif_with_orientation(6))
        subprocess.run(["heif-enc", "-q", "50", "-o", str(out / f"{name}.heic"), str(src)], capture_output=True)
        subprocess.run(["heif-enc", "--avif", "-q", "50", "-o", str(out / f"{name}.avif"), str(src)],
                       capture_output=True)
        src.unlink()


def image_seeds(out):
    for make in (jpeg_seeds, png_seeds, webp_seeds, heif_seeds):
        make(out)
    (out / "gif.jpg").write_bytes(b"GIF89a" + bytes(32))
    (out / "text.jpg").write_bytes(b"Dear Alice,\n")


def onnx_seeds(out):
    for model in sorted(ONNX_NODE.glob("*/model.onnx")):
        shutil.copy(model, out / f"{model.parent.name}.onnx")


def tensor_proto_seeds(out):
    for pb in sorted(ONNX_NODE.glob("*/test_data_set_0/input_0.pb"))[::3]:
        if pb.stat().st_size <= 65536:
            shutil.copy(pb, out / f"{pb.parent.parent.name}.pb")


def npy_seeds(out):
    import numpy as np
    rng = np.random.default_rng(1)
    arrays = {"f32": rng.random((2, 3), np.float32), "f64_fortran": np.asfortranarray(rng.random((3, 4))),
              "i64": np.arange(7, dtype=np.int64), "u8_3d": rng.integers(0, 255, (2, 2, 3), np.uint8),
              "bool": np.array([True, False]), "f16": np.ones(5, np.float16), "scalar": np.array(3.5),
              "big_endian": np.arange(4, dtype=">i4"), "empty": np.zeros((0, 3), np.float32)}
    for name, a in arrays.items():
        np.save(out / f"{name}.npy", a)


def idx_seeds(out):
    for name, count in [("t10k-images-idx3-ubyte", 4), ("t10k-labels-idx1-ubyte", 16)]:
        with gzip.open(MNIST / f"{name}.gz") as f:
            magic, n = struct.unpack(">II", f.read(8))
            dims = [struct.unpack(">I", f.read(4))[0] for _ in range((magic & 0xFF) - 1)]
            item = 1
            for d in dims:
                item *= d
            body = f.read(count * item)
        data = struct.pack(">II", magic, count) + b"".join(struct.pack(">I", d) for d in dims) + body
        (out / f"{name}.idx").write_bytes(data)
        (out / f"{name}.idx.gz").write_bytes(gzip.compress(data))


def tfjs_seeds(out):
    for name in ["blazeface", "emotion"]:
        if (MODELS / f"{name}.json").exists():
            (out / f"{name}.seed").write_bytes((MODELS / f"{name}.json").read_bytes() + b"\0" +
                                               (MODELS / f"{name}.bin").read_bytes())
    for name in ["centernet", "faceres"]:  # topology only: the shards are too large for a seed
        if (MODELS / f"{name}.json").exists():
            shutil.copy(MODELS / f"{name}.json", out / f"{name}.json")


def catalog_seeds(out, tandem):
    if tandem and Path(tandem).exists():
        photos = out / "photos"
        photos.mkdir()
        for name, im in small_photos():
            im.save(photos / f"{name}.jpg", exif=exif_with_orientation(1, gps=True))
        subprocess.run([tandem, "tag", str(photos), "--catalog", str(out / "tagged.sqlite"), "--thumbnails", "off"],
                       capture_output=True)
        shutil.rmtree(photos)
    subprocess.run(["sqlite3", str(out / "other_program.sqlite"),
                    "CREATE TABLE files(path TEXT, size INT); INSERT INTO files VALUES ('/a.jpg', 3);"
                    "PRAGMA user_version = 3;"], capture_output=True)
    subprocess.run(["sqlite3", str(out / "newer.sqlite"), "CREATE TABLE x(y); PRAGMA user_version = 99;"],
                   capture_output=True)
    for p in out.glob("*-wal"):
        p.unlink()


def committed_seeds(target, out):
    for p in (HERE / "fuzz" / "seeds" / target).glob("*"):
        shutil.copy(p, out)


SEEDS = {"jpeg": jpeg_seeds, "exif": jpeg_seeds, "image": image_seeds, "png": png_seeds, "webp": webp_seeds,
         "heif": heif_seeds, "onnx": onnx_seeds, "onnx_model": onnx_seeds, "tensor_proto": tensor_proto_seeds,
         "npy": npy_seeds, "idx": idx_seeds, "tfjs": tfjs_seeds}


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    target, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    if target == "catalog":
        catalog_seeds(out, sys.argv[3] if len(sys.argv) == 4 else None)
    elif target in SEEDS:
        SEEDS[target](out)
    committed_seeds(target, out)
    print(f"{target}: {len(list(out.iterdir()))} seeds in {out}")


if __name__ == "__main__":
    main()
