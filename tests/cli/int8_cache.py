#!/usr/bin/env python3
"""`--precision int8` keeps what it calibrated: the second run with the same
model, calibration data and options reads the quantized graph from tandem's
cache directory and gives the first run's outputs bit for bit; other data or
options, or a damaged cache file, quantize afresh.

The model is a small ONNX CNN written here with onnx.helper (two
convolutions with seeded random weights), run with `tandem run` on the CPU
on .npy inputs; numpy compares the outputs.

  int8_cache.py TANDEM_BINARY   exit 0: all passed, 1: failures, 77: skipped
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


def write_model(path):
    rng = np.random.default_rng(7)
    w1 = numpy_helper.from_array(rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.normal(0, 0.1, 8).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.normal(0, 0.3, (4, 8, 1, 1)).astype(np.float32), "w2")
    b2 = numpy_helper.from_array(rng.normal(0, 0.1, 4).astype(np.float32), "b2")
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["y"], name="conv2"),
    ]
    graph = helper.make_graph(nodes, "int8_cache",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 16, 16])],
                              [w1, b1, w2, b2])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    tandem = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = tmp / "net.onnx"
        write_model(str(model))
        rng = np.random.default_rng(1)
        np.save(tmp / "x.npy", rng.normal(0, 1, (1, 3, 16, 16)).astype(np.float32))
        np.save(tmp / "cal.npy", rng.normal(0, 1, (16, 3, 16, 16)).astype(np.float32))
        np.save(tmp / "cal2.npy", rng.normal(0, 2, (16, 3, 16, 16)).astype(np.float32))
        cache = tmp / "cache"
        env = dict(os.environ, TANDEM_CACHE_DIR=str(cache))

        def run(out, *extra, cal="cal.npy"):
            r = subprocess.run([tandem, "run", str(model), "-i", f"x={tmp / 'x.npy'}", "--device", "cpu",
                                "--precision", "int8", "--calibrate", str(tmp / cal), "--save-outputs",
                                str(tmp / out), *extra], env=env, capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                print(r.stdout + r.stderr)
            y = np.load(tmp / out / "y.npy") if r.returncode == 0 else None
            return r.returncode, r.stderr, y

        def files():
            return sorted((cache / "int8").glob("*.onnx")) if (cache / "int8").exists() else []

        rc, err, first = run("o1")
        check(rc == 0 and "convolutions quantized" in err, "the first run calibrates and quantizes")
        check(len(files()) == 1, f"it leaves one cache file ({len(files())})")
        rc, err, again = run("o2")
        check(rc == 0 and "quantized before" in err and "convolutions quantized" not in err,
              "the same run again reads the cache")
        check(first is not None and again is not None and np.array_equal(first, again),
              "and gives the first run's outputs bit for bit")
        rc, err, fp = run("o3", "--float-layers", "1")
        check(rc == 0 and "convolutions quantized" in err and len(files()) == 2,
              "other options (--float-layers 1) quantize afresh, into a file of their own")
        rc, err, _ = run("o4", cal="cal2.npy")
        check(rc == 0 and "convolutions quantized" in err and len(files()) == 3,
              "other calibration data quantizes afresh")
        # A damaged file: said, quantized again, and replaced by a good one.
        cached = [f for f in files() if f.stat().st_mtime == min(g.stat().st_mtime for g in files())][0]
        cached.write_bytes(b"not an onnx file")
        rc, err, damaged = run("o5")
        check(rc == 0 and "int8 cache" in err and "convolutions quantized" in err,
              "a damaged cache file is named and the model quantized afresh")
        check(damaged is not None and np.array_equal(first, damaged), "with the same outputs")
        rc, err, _ = run("o6")
        check(rc == 0 and "quantized before" in err, "and the file is good again afterwards")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
