#!/usr/bin/env python3
"""Whole torchvision models on the GPU against PyTorch fp32 (run on the GPU
machine, whose python3 has torch): the model built and exported as the CPU
model tests do (tests/models/export_torchvision.py: seeded random weights,
perturbed BatchNorm statistics, no constant parameters), a seeded random
batch, PyTorch fp32 on the GPU as reference.
  fp32/tf32: max |tandem - ref| / max |ref| (fp32 <= 1e-4 as on the CPU, 3e-4 for
      dense scores as there too; tf32 <= 1e-2)
  fp16/bf16, classifiers: share of rows whose top-5 class indices equal
      PyTorch fp32's (>= 99%, or >= PyTorch's own fp16/bf16 share less 2
      points, measured in the same run)
  fp16/bf16, segmentation (output "out", N x 21 x H x W): share of pixels
      whose class (argmax over the 21) equals PyTorch fp32's, among pixels
      where fp32's best class leads the second by more than 2e-2 x max|ref|
      (the same bound)
usage: model_check.py TANDEM [--models resnet50,convnext_tiny,vit_b_16,swin_t,...]
                     [--batch 256] [--size 224] [--precisions fp32,tf32,fp16,bf16]
--models takes any name of export_torchvision.py --list (classifiers and
fcn_resnet50, deeplabv3_resnet50, lraspp_mobilenet_v3_large).
"""
import argparse
import inspect
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import export_torchvision as recipe  # noqa: E402  (the CPU model tests' model recipe)

LIMITS = {"fp32": 1e-4, "tf32": 1e-2}
# Dense scores (segmentation, N x 21 x H x W) in fp32: 3e-4, as the CPU model
# tests (tests/models/compare.py's DENSE_RTOL): no pooling averages their
# rounding away, and PyTorch's own fp32 is ~1e-4 x max|ref| from float64 on
# the dilated ResNet-50 heads, so two fp32 engines can be ~2e-4 apart.
DENSE_FP32_LIMIT = 3e-4


def same_set(a, b):
    return float(np.mean([set(x) == set(y) for x, y in zip(a, b)]))


def export(model, name, path, size):
    out = recipe.output_name(name)
    kw = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, torch.randn(1, 3, size, size), path, opset_version=17, input_names=["input"],
                      output_names=[out], dynamic_axes={"input": {0: "b"}, out: {0: "b"}}, **kw)
    return out


def pytorch_half_agreement(model, x, ref, name):
    """PyTorch's own fp16/bf16 (channels-last) against its fp32: how far a
    random-weight model's classes move in half precision at all. Returns
    {precision: share agreeing}."""
    shares = {}
    for p, dt in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        with torch.inference_mode():
            mh = model.to(dtype=dt, memory_format=torch.channels_last)
            half = mh(x.cuda().to(dtype=dt, memory_format=torch.channels_last)).float().cpu().numpy()
            model.float()
        shares[p], text = describe_agreement(half.astype(np.float64), ref)
        print(f"{name} PyTorch {p} vs fp32: {text}")
    return shares


def describe_agreement(got, ref):
    """(share agreeing, text): top-5 rows for logits, decidable pixels' classes for dense scores."""
    if ref.ndim == 4:
        tol = 1e-2 * np.max(np.abs(ref))
        top2 = -np.partition(-ref, 1, axis=1)[:, :2]
        decidable = top2[:, 0] - top2[:, 1] > 2 * tol
        same = got.argmax(axis=1) == ref.argmax(axis=1)
        share = float(same[decidable].mean()) if decidable.any() else 0.0
        return share, (f"class identical at {100 * share:.2f}% of the {100 * decidable.mean():.1f}% decidable "
                        f"pixels (all pixels {100 * same.mean():.2f}%)")
    top_ref, top = np.argsort(-ref, axis=1)[:, :5], np.argsort(-got, axis=1)[:, :5]
    share = float(np.mean(np.all(top == top_ref, axis=1)))
    return share, (f"top-5 identical in {100 * share:.1f}% of rows (same set {100 * same_set(top, top_ref):.1f}%, "
                   f"top-1 {100 * np.mean(top[:, 0] == top_ref[:, 0]):.1f}%)")


def check_model(name, a, tmp):
    """Runs one model at every precision; returns True when all pass."""
    m = recipe.build_model(name, 0)
    path = os.path.join(tmp, name + ".onnx")
    out_name = export(m, name, path, a.size)
    x = torch.from_numpy(np.random.default_rng(1).standard_normal((a.batch, 3, a.size, a.size)).astype(np.float32))
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.inference_mode():
        ref = m.cuda()(x.cuda()).float().cpu().numpy().astype(np.float64)
    xin = os.path.join(tmp, "x.npy")
    np.save(xin, x.numpy())
    precisions = a.precisions.split(",")
    peer = pytorch_half_agreement(m, x, ref, name) if "fp16" in precisions or "bf16" in precisions else {}
    ok_all = True
    for p in precisions:
        out = os.path.join(tmp, f"{name}_{p}")
        r = subprocess.run([a.tandem, "run", path, "--device", "cuda", "--precision", p, "-i", xin,
                            "--save-outputs", out], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{name} {p}: tandem failed: {r.stderr.strip()[-300:]}")
            ok_all = False
            continue
        got = np.load(os.path.join(out, out_name + ".npy")).astype(np.float64)
        err = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
        share, text = describe_agreement(got, ref)
        # Half precision agrees with fp32 as PyTorch's own half precision does
        # (less 2 points: both sample the same rounding noise), or in 99%:
        # a random-weight transformer's close logits reorder under fp16 in
        # PyTorch itself.
        limit = DENSE_FP32_LIMIT if p == "fp32" and ref.ndim == 4 else LIMITS.get(p)
        ok = err <= limit if limit is not None else share >= min(0.99, peer[p] - 0.02)
        ok_all &= ok
        print(f"{name} {p} batch {a.batch}: max err / max|ref| {err:.2e}, {text} -> {'ok' if ok else 'FAIL'}")
    return ok_all


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tandem")
    ap.add_argument("--models", default="resnet50")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224, help="input height and width")
    ap.add_argument("--precisions", default="fp32,tf32,fp16,bf16")
    a = ap.parse_args()
    names = a.models.split(",")
    unknown = [n for n in names if n not in recipe.MODELS]
    if unknown:
        ap.error(f"unknown model(s) {unknown}; see tests/models/export_torchvision.py --list")
    recipe.import_torch(0)
    tmp = tempfile.mkdtemp()
    failed = [n for n in names if not check_model(n, a, tmp)]
    if failed:
        print("FAILED: " + ",".join(failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
