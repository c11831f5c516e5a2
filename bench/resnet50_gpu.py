#!/usr/bin/env python3
"""ResNet-50 (and MobileNetV2, EfficientNet-B0) on the GPU: tandem against
PyTorch eager and torch.compile, fp16 channels-last, measured in one run on
the GPU machine (its python3 has torch + torchvision + onnx).

  scripts/gpu-test 'python3 bench/resnet50_gpu.py --tandem .deps/gpu-bundle/bin/tandem'

Per model, always in this order, each engine in its own subprocess (so peak
GPU memory is its own): tandem (`bench MODEL.onnx --device cuda --precision
fp16 --batch B --low-precision-input`: the batch is given in fp16, as
PyTorch's side gets it), PyTorch eager, torch.compile (default mode). Weights are
torchvision's architecture with seeded random weights (no trained weights
can be fetched there); the ONNX file tandem reads is exported from that same
fp32 model. Timing: warmup, then N runs of one batch; img/s = B*N / total,
p50 latency from per-run CUDA-event times; peak memory = the engine's peak
device allocation (torch.cuda.max_memory_allocated; tandem's own count of
what it holds on the device), over the timed runs and, apart, over
everything from model load on (warmup, compilation, algorithm search). Prints a markdown table and one JSON line.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MODELS = {"resnet50": "resnet50", "mobilenet_v2": "mobilenet_v2", "efficientnet_b0": "efficientnet_b0"}


def build(name):
    import torch
    import torchvision
    torch.manual_seed(0)
    return getattr(torchvision.models, name)(weights=None).eval()


def export(name, path):
    import torch
    m = build(name)
    x = torch.randn(1, 3, 224, 224)
    torch.onnx.export(m, x, path, opset_version=17, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)


def worker_torch(name, batch, iters, warmup, compiled):
    import torch
    m = build(name).cuda().half().to(memory_format=torch.channels_last)
    x = torch.randn(batch, 3, 224, 224, device="cuda").half().to(memory_format=torch.channels_last)
    if compiled:
        m = torch.compile(m)
    torch.cuda.reset_peak_memory_stats()
    with torch.inference_mode():
        for _ in range(warmup):
            m(x)
        torch.cuda.synchronize()
        setup_peak = torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        times = []
        t0 = time.perf_counter()
        for _ in range(iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            m(x)
            e.record()
            times.append((s, e))
        torch.cuda.synchronize()
        total = time.perf_counter() - t0
    ms = sorted(s.elapsed_time(e) for s, e in times)
    return {"img_per_s": batch * iters / total, "p50_ms": ms[len(ms) // 2],
            "peak_mib": torch.cuda.max_memory_allocated() / 2**20,
            "setup_peak_mib": max(setup_peak, torch.cuda.max_memory_allocated()) / 2**20}


def run_tandem(tandem, onnx_path, batch, iters, warmup, precision):
    cmd = [tandem, "bench", onnx_path, "--device", "cuda", "--precision", precision, "--batch", str(batch),
           "--iterations", str(iters), "--warmup", str(warmup)]
    if precision in ("fp16", "bf16"):
        cmd.append("--low-precision-input")  # the batch in half, as PyTorch's side gets it
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip().splitlines()[-1][:300]}
    j = json.loads(r.stdout.strip().splitlines()[-1])
    return {"img_per_s": j["img_per_s"], "p50_ms": j["latency_ms"]["p50"],
            "peak_mib": j.get("device_peak_bytes", 0) / 2**20,
            "setup_peak_mib": j.get("device_peak_with_setup_bytes", 0) / 2**20}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tandem", required=True)
    ap.add_argument("--models", default="resnet50,mobilenet_v2,efficientnet_b0")
    ap.add_argument("--batches", default="1,64,256")
    ap.add_argument("--engines", default="tandem,eager,compile")
    ap.add_argument("--precision", default="fp16")
    # Another build of tandem (an earlier commit's) timed as engine
    # "baseline", right after tandem, to compare two versions in one run.
    ap.add_argument("--baseline")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        name, batch, iters, warmup, kind = a.worker.split(":")
        print(json.dumps(worker_torch(name, int(batch), int(iters), int(warmup), kind == "compile")))
        return
    rows = []
    tmp = tempfile.mkdtemp()
    for name in a.models.split(","):
        onnx_path = os.path.join(tmp, name + ".onnx")
        export(name, onnx_path)
        for b in (int(v) for v in a.batches.split(",")):
            iters, warmup = (200, 20) if b == 1 else (50, 10)
            engines = a.engines.split(",")
            if a.baseline:
                engines.insert(engines.index("tandem") + 1 if "tandem" in engines else 0, "baseline")
            for eng in engines:
                if eng in ("tandem", "baseline"):
                    r = run_tandem(a.tandem if eng == "tandem" else a.baseline, onnx_path, b, iters, warmup,
                                   a.precision)
                else:
                    p = subprocess.run([sys.executable, __file__, "--tandem", a.tandem,
                                        "--worker", f"{name}:{b}:{iters}:{warmup}:{eng}"],
                                       capture_output=True, text=True)
                    r = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else \
                        {"error": p.stderr.strip().splitlines()[-1][:300] if p.stderr.strip() else "failed"}
                rows.append({"model": name, "batch": b, "engine": eng, **r})
                print(json.dumps(rows[-1]), flush=True)
    print("\n| model | batch | engine | img/s | p50 ms | peak MiB (timed runs) | peak MiB (incl. warmup/setup) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | {r['batch']} | {r['engine']} | error: {r['error']} | | | |")
        else:
            print(f"| {r['model']} | {r['batch']} | {r['engine']} | {r['img_per_s']:.0f} | {r['p50_ms']:.2f} | "
                  f"{r['peak_mib']:.0f} | {r['setup_peak_mib']:.0f} |")
    print(json.dumps({"rows": rows}))


if __name__ == "__main__":
    main()
