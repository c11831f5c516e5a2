#!/usr/bin/env python3
"""Whole torchvision models on the GPU against PyTorch fp32 (run on the GPU
machine, whose python3 has torch): the model exported to ONNX from seeded
random weights, a seeded random batch, PyTorch fp32 logits as reference.
  fp32/tf32: max |tandem - ref| / max |ref| (fp32 <= 1e-4 as on the CPU, tf32 <= 1e-2)
  fp16/bf16: share of rows whose top-5 class indices equal PyTorch fp32's (>= 99%)
usage: model_check.py TANDEM [--models resnet50] [--batch 256] [--precisions fp32,tf32,fp16,bf16]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision


def same_set(a, b):
    return float(np.mean([set(x) == set(y) for x, y in zip(a, b)]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tandem")
    ap.add_argument("--models", default="resnet50")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--precisions", default="fp32,tf32,fp16,bf16")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    failed = False
    for name in a.models.split(","):
        torch.manual_seed(0)
        m = getattr(torchvision.models, name)(weights=None).eval()
        path = os.path.join(tmp, name + ".onnx")
        torch.onnx.export(m, torch.randn(1, 3, 224, 224), path, opset_version=17, input_names=["input"],
                          output_names=["logits"], dynamic_axes={"input": {0: "b"}, "logits": {0: "b"}}, dynamo=False)
        x = torch.from_numpy(np.random.default_rng(1).standard_normal((a.batch, 3, 224, 224)).astype(np.float32))
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        with torch.inference_mode():
            ref = m.cuda()(x.cuda()).float().cpu().numpy().astype(np.float64)
        xin = os.path.join(tmp, "x.npy")
        np.save(xin, x.numpy())
        top_ref = np.argsort(-ref, axis=1)[:, :5]
        # PyTorch's own fp16/bf16 (channels-last) against its fp32: how far a
        # random-weight model's top-5 moves in half precision at all.
        for p, dt in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
            if p not in a.precisions.split(","):
                continue
            with torch.inference_mode():
                mh = m.to(dtype=dt, memory_format=torch.channels_last)
                half = mh(x.cuda().to(dtype=dt, memory_format=torch.channels_last)).float().cpu().numpy()
                m.float()
            th = np.argsort(-half, axis=1)[:, :5]
            print(f"{name} PyTorch {p} vs fp32: top-5 identical in {100 * np.mean(np.all(th == top_ref, axis=1)):.1f}%, "
                  f"same top-5 set in {100 * same_set(th, top_ref):.1f}%, "
                  f"top-1 in {100 * np.mean(th[:, 0] == top_ref[:, 0]):.1f}%")
        for p in a.precisions.split(","):
            out = os.path.join(tmp, f"{name}_{p}")
            r = subprocess.run([a.tandem, "run", path, "--device", "cuda", "--precision", p, "-i", xin,
                                "--save-outputs", out], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{name} {p}: tandem failed: {r.stderr.strip()[-300:]}")
                failed = True
                continue
            got = np.load(os.path.join(out, "logits.npy")).astype(np.float64)
            err = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
            top = np.argsort(-got, axis=1)[:, :5]
            agree = float(np.mean(np.all(top == top_ref, axis=1)))
            limit = {"fp32": 1e-4, "tf32": 1e-2}.get(p)
            ok = err <= limit if limit else agree >= 0.99
            failed |= not ok
            print(f"{name} {p} batch {a.batch}: max err / max|ref| {err:.2e}, top-5 identical in {100 * agree:.1f}% "
                  f"of rows (same set {100 * same_set(top, top_ref):.1f}%, top-1 {100 * np.mean(top[:, 0] == top_ref[:, 0]):.1f}%)"
                  f" -> {'ok' if ok else 'FAIL'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
