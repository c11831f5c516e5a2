#!/usr/bin/env python3
"""ViT-B/16 and Swin-T (any classifier of tests/models/export_torchvision.py)
on the GPU: tandem against PyTorch eager, fp16, measured in one run on the
GPU machine (its python3 has torch + torchvision + onnx).

  scripts/gpu-test 'python3 bench/transformers_gpu.py --tandem .deps/gpu-bundle/bin/tandem'
  ... --tandem NEW --before OLD      (a second build, for a before/after)

Per model: the recipe's model (seeded random weights, as the model tests
build it), exported at opset 17 with a dynamic batch (the legacy exporter,
as tests/gpu/model_check.py), PyTorch eager fp16 on the same weights
(inference_mode, 5 warm-up batches, 30 timed), then each tandem build's
`bench MODEL --device cuda --precision fp16 -b B --low-precision-input
--min-seconds 3 --per-op 10` (where its time goes, per op type). Prints
img/s per engine and tandem / PyTorch.
"""
import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
import export_torchvision as recipe  # noqa: E402


def torch_eager(model, batch):
    import torch
    m = model.cuda().half()
    x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.half)
    with torch.inference_mode():
        for _ in range(5):
            m(x)
        torch.cuda.synchronize()
        start, n = time.perf_counter(), 30
        for _ in range(n):
            m(x)
        torch.cuda.synchronize()
    return n * batch / (time.perf_counter() - start)


def tandem_bench(exe, path, batch):
    out = subprocess.run([exe, "bench", path, "--device", "cuda", "--precision", "fp16", "-b", str(batch),
                          "--low-precision-input", "--min-seconds", "3", "--per-op", "10"],
                         capture_output=True, text=True)
    print(out.stderr, end="")
    print("\n".join(l for l in out.stdout.splitlines() if not l.startswith("{")))
    last = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if out.returncode != 0 or not last:
        raise SystemExit(f"{exe} bench {path} failed ({out.returncode})")
    return json.loads(last[-1])["img_per_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tandem", required=True)
    ap.add_argument("--before", help="another tandem build to time in the same run")
    ap.add_argument("--models", default="vit_b_16,swin_t")
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    import torch
    recipe.import_torch(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            model = recipe.build_model(name, 0)
            path = os.path.join(tmp, name + ".onnx")
            kw = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
            torch.onnx.export(model, torch.randn(1, 3, 224, 224), path, opset_version=17, input_names=["input"],
                              output_names=["out"], dynamic_axes={"input": {0: "b"}, "out": {0: "b"}}, **kw)
            peer = torch_eager(model, args.batch)
            builds = ([("before", args.before)] if args.before else []) + [("tandem", args.tandem)]
            got = {label: tandem_bench(exe, path, args.batch) for label, exe in builds}
            rows.append((name, peer, got))
            del model
            torch.cuda.empty_cache()
    print(f"\n| model, fp16, batch {args.batch} | PyTorch eager img/s | " +
          " | ".join(f"{k} img/s | {k} / PyTorch" for k in rows[0][2]) + " |")
    print("| --- | ---: |" + " ---: | ---: |" * len(rows[0][2]))
    for name, peer, got in rows:
        print(f"| {name} | {peer:,.0f} | " + " | ".join(f"{v:,.0f} | {v / peer:.2f}" for v in got.values()) + " |")


if __name__ == "__main__":
    main()
