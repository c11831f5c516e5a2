#!/usr/bin/python3
"""ResNet-50 int8 on the CPU: tandem's integer path against its own fp32 and
against ONNX Runtime on the same QDQ file, measured in one run.

Usage (Debian's python, which has numpy):
  /usr/bin/python3 bench/int8_cpu.py [--build build] [--threads T]
      [--batches 1,32] [--calibrate DIR] [--samples N] [--model FILE.onnx]

Steps, in this order:
  1. The float model: BUILD/cache/models/resnet50.op17/model.onnx (seeded
     random weights, exported by tests/models/export_torchvision.py; the
     model tests make it), or --model.
  2. `tandem quantize MODEL --calibrate DIR --out BUILD/cache/bench/
     resnet50.int8.onnx` once (DIR: mate-backgrounds' wallpapers, through
     the classifier's own preprocessing), the calibration method and the
     layers kept in float chosen by tandem's measurement.
  3. For each batch: `tandem bench` on the fp32 and the int8 file, then
     ONNX Runtime (npm onnxruntime-node, CPU EP, bench/ort_bench.js) on the
     same two files, each in its own process, T intra-op threads.
  4. Top-5 agreement on photos the calibration never saw (darknet's, and
     one picture of each plasma-workspace-wallpapers folder): `tandem
     classify --json -k 5` with each file; the share of photos whose fp32
     top-1 class is in the int8 top 5, and whose top-5 sets are equal.
  5. A table and the ratios the targets name: tandem int8 / tandem fp32
     and tandem int8 / ORT int8 per batch, then one JSON line.
"""

import argparse
import glob
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from resnet50_cpu import ensure_ort  # noqa: E402


def tandem_bench(a, model, batch):
    iters = max(4, 64 // batch)
    cmd = [os.path.join(a.build, "cli", "tandem"), "bench", model, "--device", "cpu", "--batch", str(batch),
           "--iterations", str(iters), "--warmup", "2", "--threads", str(a.threads)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"tandem bench failed: {p.stderr[-400:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])["img_per_s"]


def ort_bench(a, node_path, model, batch):
    iters = max(4, 64 // batch)
    folder = os.path.join(a.build, "cache", "bench")
    inp = os.path.join(folder, f"int8_in.b{batch}.f32")
    np.random.default_rng(0).standard_normal((batch, 3, 224, 224)).astype(np.float32).tofile(inp)
    env = dict(os.environ, NODE_PATH=node_path, OMP_NUM_THREADS=str(a.threads))
    p = subprocess.run(["node", os.path.join(ROOT, "bench", "ort_bench.js"), model, inp, str(batch), str(iters), "2",
                        str(a.threads), os.path.join(folder, "int8_ort_out.f32")],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])["img_per_s"]


def eval_photos():
    photos = sorted(glob.glob("/usr/share/darknet/data/*.jpg"))
    for folder in sorted(glob.glob("/usr/share/wallpapers/*/contents/images")):
        pictures = sorted(glob.glob(os.path.join(folder, "*.jpg")) + glob.glob(os.path.join(folder, "*.png")))
        if pictures:
            photos.append(pictures[0])
    return photos


def top5(a, model, photos, labels):
    cmd = [os.path.join(a.build, "cli", "tandem"), "classify", "-m", model, "--json", "-k", "5", "--labels", labels,
           "--device", "cpu", "--threads", str(a.threads), *photos]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    return {r["path"]: [t["index"] for t in r["top"]] for r in rows}


def agreement(a, fp32, int8, folder):
    labels = os.path.join(folder, "class_numbers.txt")
    with open(labels, "w") as f:
        f.write("".join(f"class{i}\n" for i in range(1000)))
    photos = eval_photos()
    want, got = top5(a, fp32, photos, labels), top5(a, int8, photos, labels)
    n = len(want)
    top1_in_top5 = sum(want[p][0] in got.get(p, []) for p in want) / n
    same_top1 = sum(want[p][0] == got.get(p, [-1])[0] for p in want) / n
    same_sets = sum(set(want[p]) == set(got.get(p, [])) for p in want) / n
    return {"photos": n, "top1_in_int8_top5": top1_in_top5, "same_top1": same_top1, "same_top5": same_sets}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--calibrate", default="/usr/share/backgrounds/mate")
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--model")
    ap.add_argument("--no-npm", action="store_true")
    a = ap.parse_args()
    fp32 = a.model or os.path.join(a.build, "cache", "models", "resnet50.op17", "model.onnx")
    if not os.path.exists(fp32):
        raise SystemExit(f"{fp32} missing: run the model tests (ctest -L models) or pass --model")
    folder = os.path.join(a.build, "cache", "bench")
    os.makedirs(folder, exist_ok=True)
    int8 = os.path.join(folder, "resnet50.int8.onnx")
    if not os.path.exists(int8):
        subprocess.run([os.path.join(a.build, "cli", "tandem"), "quantize", fp32, "--calibrate", a.calibrate,
                        "--samples", str(a.samples), "--threads", str(a.threads), "--out", int8], check=True)
    node_path, err = ensure_ort(a)
    if err:
        print(f"bench: ONNX Runtime left out: {err}")
    rows = []
    for batch in [int(b) for b in a.batches.split(",")]:
        r = {"batch": batch, "tandem_fp32": tandem_bench(a, fp32, batch), "tandem_int8": tandem_bench(a, int8, batch)}
        if node_path:
            r["ort_fp32"] = ort_bench(a, node_path, fp32, batch)
            r["ort_int8"] = ort_bench(a, node_path, int8, batch)
        rows.append(r)
    print(f"ResNet-50, {a.threads} threads, img/s (int8: {int8})")
    print("| batch | tandem fp32 | tandem int8 | ORT fp32 | ORT int8 | int8/fp32 | int8 / ORT int8 |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        ort8 = r.get("ort_int8")
        print(f"| {r['batch']} | {r['tandem_fp32']:.1f} | {r['tandem_int8']:.1f} | {r.get('ort_fp32') or 0:.1f} | "
              f"{ort8 or 0:.1f} | {r['tandem_int8'] / r['tandem_fp32']:.2f} | "
              f"{(r['tandem_int8'] / ort8) if ort8 else float('nan'):.2f} |")
    agree = agreement(a, fp32, int8, folder)
    print(f"top-5 agreement over {agree['photos']} photos: fp32 top-1 in the int8 top 5 "
          f"{100 * agree['top1_in_int8_top5']:.1f}%, the same top-1 {100 * agree['same_top1']:.1f}%, "
          f"the same five classes {100 * agree['same_top5']:.1f}%")
    print(json.dumps({"threads": a.threads, "rows": rows, "agreement": agree}))


if __name__ == "__main__":
    main()
