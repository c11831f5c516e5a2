#!/usr/bin/python3
"""The shipped COCO detector (CenterNet, 512x512) on the CPU: tandem against
TensorFlow.js in Node on the same machine, measured in one run.

Usage: /usr/bin/python3 bench/detector_cpu.py [--build build] [--batches 1,8]
           [--iterations N] [--warmup W] [--engines tandem,tfjs_wasm,tfjs_cpu]

Each engine runs in its own subprocess, in the order tandem, tfjs-wasm,
tfjs-cpu (pure JS), on the network alone (input tensor to heads, no image
decoding): tandem `bench centernet --batch B --outputs <the two heads>`
(what `tandem detect` runs; decoding follows in C++), TF.js `tools/node/tfjs_bench.js`
(model.execute + dataSync of the whole graph, its batch-1 post-processing
included, as @vladmandic/human runs it). TF.js runs batch 1; tandem runs every batch size given. TF.js's
pure-JS backend takes ~10 s per image, so it gets 3 timed runs. Prints a
table, the ratio tandem img/s / TF.js img/s (> 1: tandem faster), one JSON line.
"""
import argparse
import json
import os
import platform
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def models_dir():
    return os.environ.get("TANDEM_MODELS") or os.path.join(os.path.expanduser("~"), ".cache", "tandem", "models")


def last_json(out):
    for line in reversed(out.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line in output:\n" + out[-2000:])


def run_tandem(build, batch, iters, warmup):
    cmd = [os.path.join(build, "cli", "tandem"), "bench", "centernet", "--batch", str(batch),
           "--outputs", "tower_0/keypoints,tower_0/wh", "--iterations", str(iters), "--warmup", str(warmup)]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    j = last_json(r.stdout)
    return {"img_per_s": j["img_per_s"], "p50_ms": j["latency_ms"]["p50"], "cmd": " ".join(cmd[1:])}


def run_tfjs(backend, iters, warmup):
    cmd = ["node", os.path.join(ROOT, "tools", "node", "tfjs_bench.js"), os.path.join(models_dir(), "centernet.json"),
           "--shape", "1,512,512,3", "--backend", backend, "--iters", str(iters), "--warmup", str(warmup)]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    j = last_json(r.stdout)
    return {"img_per_s": j["img_per_s"], "p50_ms": j["p50_ms"], "cmd": " ".join(cmd[1:])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--batches", default="1,4")
    ap.add_argument("--iterations", type=int, default=0)
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--engines", default="tandem,tfjs_wasm,tfjs_cpu")
    a = ap.parse_args()
    engines = a.engines.split(",")
    batches = [int(b) for b in a.batches.split(",")]
    if not shutil.which("node"):
        engines = [e for e in engines if not e.startswith("tfjs")]
        print("note: node missing, TF.js not measured")
    rows = []
    for b in batches:
        n = a.iterations or max(5, 40 // b)
        w = a.warmup or 2
        if "tandem" in engines:
            rows.append(("tandem", b, run_tandem(a.build, b, n, w)))
    if "tfjs_wasm" in engines:
        rows.append(("tfjs-wasm (SIMD, 1 thread)", 1, run_tfjs("wasm", a.iterations or 10, a.warmup or 2)))
    if "tfjs_cpu" in engines:
        rows.append(("tfjs-cpu (pure JS)", 1, run_tfjs("cpu", 3, 1)))
    print(f"\nCenterNet 512x512 fp32, CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores\n")
    print("| engine | batch | img/s | p50 ms/batch |")
    print("| --- | --- | --- | --- |")
    for name, b, r in rows:
        print(f"| {name} | {b} | {r['img_per_s']:.2f} | {r['p50_ms']:.1f} |")
    best_tandem = {b: r["img_per_s"] for name, b, r in rows if name == "tandem"}
    peers = {name: r["img_per_s"] for name, b, r in rows if name != "tandem"}
    print()
    for name, v in peers.items():
        for b, t in best_tandem.items():
            print(f"tandem batch {b} / {name}: {t / v:.2f}x")
    print(json.dumps({"rows": [{"engine": n, "batch": b, **r} for n, b, r in rows]}))


if __name__ == "__main__":
    main()
