#!/usr/bin/env python3
"""ResNet-50 in int8 on the GPU against tandem's own fp16, in one run on the
GPU machine (its python3 has torch + torchvision + onnx to export the model).

  scripts/gpu-test 'python3 bench/int8_gpu.py --tandem tandem --calibrate DIR'

The model is torchvision's ResNet-50 with seeded random weights (a stand-in:
no trained weights can be fetched there), exported to ONNX, then quantized
by `tandem quantize --activations s8` (symmetric s8 activations: cuDNN's
integer convolutions take no u8) on the photos in DIR. Rows, each `tandem
bench` in its own process:
  fp16            the float model, --precision fp16 --low-precision-input
  int8 (fp16)     the QDQ model, its float parts (stem, pooling, head) in fp16
  int8 (fp32)     the QDQ model, its float parts in fp32
The ratio is int8 (fp16) against fp16. `tandem bench`'s notes on stderr
(quantized convolutions left in float, ops on the CPU) are printed with each
row. Prints a markdown table and one JSON line.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resnet50_gpu import export  # noqa: E402


def bench(tandem, model, batch, precision, low_input, iters, warmup):
    cmd = [tandem, "bench", model, "--device", "cuda", "--precision", precision, "--batch", str(batch),
           "--iterations", str(iters), "--warmup", str(warmup)]
    if low_input:
        cmd.append("--low-precision-input")
    r = subprocess.run(cmd, capture_output=True, text=True)
    notes = [line for line in r.stderr.splitlines() if line.startswith("tandem:")]
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip().splitlines()[-1][:300], "notes": notes}
    j = json.loads(r.stdout.strip().splitlines()[-1])
    return {"img_per_s": j["img_per_s"], "p50_ms": j["latency_ms"]["p50"], "notes": notes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tandem", required=True)
    ap.add_argument("--calibrate", required=True, help="folder of photos to calibrate on")
    ap.add_argument("--batches", default="64,256")
    ap.add_argument("--samples", type=int, default=16)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    fp32 = os.path.join(tmp, "resnet50.onnx")
    int8 = os.path.join(tmp, "resnet50.s8.onnx")
    export("resnet50", fp32)
    q = subprocess.run([a.tandem, "quantize", fp32, "--calibrate", a.calibrate, "--activations", "s8",
                        "--samples", str(a.samples), "--batch", "8", "--method", "minmax", "--float-layers", "0",
                        "--out", int8], capture_output=True, text=True)
    print(q.stdout + q.stderr, flush=True)
    if q.returncode != 0:
        sys.exit(1)
    rows = []
    for b in (int(v) for v in a.batches.split(",")):
        for label, model, precision, low in (("fp16", fp32, "fp16", True), ("int8 (fp16)", int8, "fp16", True),
                                             ("int8 (fp32)", int8, "fp32", False)):
            r = bench(a.tandem, model, b, precision, low, 50, 10)
            rows.append({"batch": b, "engine": label, **r})
            print(json.dumps(rows[-1]), flush=True)
    print("\n| batch | engine | img/s | p50 ms | x fp16 |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for r in rows:
        base = next((x for x in rows if x["batch"] == r["batch"] and x["engine"] == "fp16"), None)
        if "error" in r:
            print(f"| {r['batch']} | {r['engine']} | error: {r['error']} | | |")
            continue
        ratio = r["img_per_s"] / base["img_per_s"] if base and "img_per_s" in base else float("nan")
        print(f"| {r['batch']} | {r['engine']} | {r['img_per_s']:.0f} | {r['p50_ms']:.2f} | {ratio:.2f} |")
    print(json.dumps({"rows": rows}))


if __name__ == "__main__":
    main()
