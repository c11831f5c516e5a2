#!/usr/bin/python3
"""`tandem tag` and `tandem detect` on the CPU with the default detector,
given photos whose shape makes the stretch to its square input degenerate:
1-pixel strips up to the 1,000,000 rows libpng reads, a 50,000-pixel side,
the same turned by EXIF orientation 6 (written here with PIL), a strip of
1,000,001 rows and a PNG header claiming 60000x60000. Every photo is tagged
or reported failed naming the file; no crash, no hang.

Then a model with an op no backend has: `tandem tag --model bad.onnx DIR`
must fail before reading any photo, with one line naming the op and node.

  tag_odd_photos.py TANDEM_BINARY     exit 0: passed, 1: failures, 77: skipped
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    failures += 0 if ok else 1
    return ok


def png_header_only(width, height):
    """A PNG signature and IHDR (8-bit RGB) claiming width x height, no pixels."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return b"\x89PNG\r\n\x1a\n" + chunk


def make_photos(folder):
    """name -> True when it must be tagged, False when it must fail."""
    from PIL import Image

    def stripes(w, h):
        im = Image.new("RGB", (w, h))
        im.putdata([((x * 7) % 256, (y * 11) % 256, (x + y) % 256) for y in range(h) for x in range(w)])
        return im

    def save(im, name, orientation=1):
        ex = Image.Exif()
        if orientation != 1:
            ex[0x0112] = orientation
        im.save(folder / name, exif=ex.tobytes(), quality=90)

    folder.mkdir()
    save(stripes(1, 4000), "strip_1x4000.jpg")
    save(stripes(4000, 1), "strip_4000x1.jpg")
    save(stripes(50000, 2), "side_50000x2.jpg")
    stripes(2, 50000).save(folder / "side_2x50000.png")
    save(stripes(4000, 1), "rot6_4000x1.jpg", 6)
    save(stripes(50000, 2), "rot6_50000x2.jpg", 6)
    save(stripes(1, 1), "pixel_1x1.jpg")
    Image.new("L", (1, 1_000_000), 90).save(folder / "strip_1x1000000.png")  # libpng's most rows
    Image.new("L", (1, 1_000_001), 90).save(folder / "strip_1x1000001.png")  # over libpng's limit
    (folder / "claims_60000x60000.png").write_bytes(png_header_only(60000, 60000))  # over the pixel limit
    return {p.name: p.name not in ("strip_1x1000001.png", "claims_60000x60000.png") for p in folder.iterdir()}


def run(tandem, args, timeout=300):
    return subprocess.run([tandem, *args, "--device", "cpu"], capture_output=True, text=True, timeout=timeout)


def test_tag(tandem, folder, expected):
    r = run(tandem, ["tag", "--json", str(folder)])
    check(r.returncode == 1, f"tag exits 1 (some photos failed, no crash): {r.returncode}")
    records = {Path(j["path"]).name: j for j in map(json.loads, r.stdout.splitlines())}
    check(sorted(records) == sorted(expected), f"one record per photo: {sorted(records)}")
    for name, good in sorted(expected.items()):
        j = records.get(name, {"ok": None})
        if good:
            check(j["ok"] is True, f"tag {name}: tagged {j.get('tags', j.get('error'))}")
        else:
            check(j["ok"] is False and j.get("error"), f"tag {name}: failed: {j.get('error')}")
    summary = [line for line in r.stderr.splitlines() if line.startswith("tagged ")]
    bad = sum(not g for g in expected.values())
    check(bool(summary) and summary[0].startswith(f"tagged {len(expected) - bad} images, {bad} failed"),
          f"tag summary: {summary}")


def test_detect(tandem, folder, expected):
    files = [str(folder / n) for n in sorted(expected)]
    r = run(tandem, ["detect", *files])
    check(r.returncode == 1, f"detect exits 1 (some photos failed, no crash): {r.returncode}")
    errors = [line for line in r.stderr.splitlines() if line.startswith("tandem: ")]
    for name, good in sorted(expected.items()):
        named = [e for e in errors if name in e]
        printed = [line for line in r.stdout.splitlines() if line.startswith(str(folder / name) + ":")]
        if good:
            check(len(printed) == 1 and not named, f"detect {name}: {printed}")
        else:
            check(len(named) == 1 and not printed, f"detect {name}: an error naming it: {named}")


def make_unknown_op_model(path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.normal(0, 0.5, (8, 3, 3, 3)).astype(np.float32), "w")
    g = numpy_helper.from_array(rng.normal(0, 1, (1000, 8)).astype(np.float32), "g")
    nodes = [
        helper.make_node("Conv", ["input", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Frobnicate", ["c"], ["f"], name="mystery_node", domain="com.example"),
        helper.make_node("GlobalAveragePool", ["f"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "g"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "unknown_op",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 1000])], [w, g])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.example", 1)])
    onnx.save(model, str(path))


def test_unknown_op(tandem, work, folder):
    model = work / "bad.onnx"
    make_unknown_op_model(model)
    trace = work / "trace.json"
    r = run(tandem, ["tag", "--model", str(model), str(folder), "--trace", str(trace)])
    lines = r.stderr.splitlines()
    check(0 < r.returncode < 128, f"unknown op: exit {r.returncode}, not a signal")
    check(len(lines) == 1 and lines[0].startswith("tandem: ") and "Frobnicate" in lines[0]
          and "mystery_node" in lines[0], f"unknown op: one line naming op and node: {lines}")
    check(r.stdout == "", f"unknown op: nothing tagged: {r.stdout[:200]!r}")
    # The trace's zones show what ran: the model's loading, no photo's reading.
    events = json.loads(trace.read_text()) if trace.exists() else {}
    events = events.get("traceEvents", []) if isinstance(events, dict) else events
    zones = {e.get("name") for e in events}
    check("load model" in zones and not zones & {"read", "decode", "resize"},
          f"unknown op: failed before any photo was read (zones: {sorted(z for z in zones if z)})")


def main():
    tandem = sys.argv[1]
    models = subprocess.run([tandem, "models"], capture_output=True, text=True)
    if "centernet" not in models.stdout:
        print("SKIP: the detector is not installed (scripts/install-models)")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        folder = work / "photos"
        expected = make_photos(folder)
        test_tag(tandem, folder, expected)
        test_detect(tandem, folder, expected)
        test_unknown_op(tandem, work, folder)
    print(f"odd photos: {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
