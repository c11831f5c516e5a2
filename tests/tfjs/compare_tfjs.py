#!/usr/bin/python3
"""tandem vs TensorFlow.js on a TF.js graph model, same input tensors.

Generates a seeded random input of the model's input shape and value range
(or, with --photo, a photo's region scaled to that shape and range), runs
it through @tensorflow/tfjs in Node (tools/node/tfjs_run.js, pure-JS CPU
backend) and through `tandem run`, and requires every output to agree:
    max |tandem - tfjs| <= rtol * max |tfjs|     (rtol 1e-4 by default)
Exit 77 (ctest: skipped) when Node, the Node tools or the model are missing.

A GPU host has no Node: there the TF.js side comes from a folder saved here
(--save-reference DIR writes the input and TF.js's outputs and stops;
--reference DIR reads them instead of running Node), and tandem runs with
--device cuda and --precision fp16 against a looser --rtol.

usage: compare_tfjs.py TANDEM_BIN MODEL_JSON|INSTALLED_NAME --shape 1,64,64,1 --range 0,1
           [--photo JPG@X,Y,W,H]
           [--device cuda] [--precision fp16] [--save-reference DIR | --reference DIR]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = 77


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(" ".join(cmd))
        print(r.stdout[-4000:], r.stderr[-4000:])
        sys.exit(1)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tandem")
    ap.add_argument("model")
    ap.add_argument("--shape", help="the random input's shape (not with --input or --reference)")
    ap.add_argument("--range", default="0,1")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--input", help="use this .npy instead of a random input")
    ap.add_argument("--photo", help="FILE@X,Y,W,H: that region of the photo (Pillow's decode and bilinear "
                                    "resize) instead of a random input; a path relative to tools/node/node_modules "
                                    "is looked up there")
    ap.add_argument("--outputs", help="comma-separated tensor names (default: the signature's)")
    ap.add_argument("--device", default="cpu", help="tandem's --device")
    ap.add_argument("--precision", default="fp32", help="tandem's --precision")
    ap.add_argument("--save-reference", help="write the input and TF.js's outputs to this folder, run no tandem")
    ap.add_argument("--reference", help="read the input and TF.js's outputs from this folder instead of running Node")
    a = ap.parse_args()
    if not (a.shape or a.input or a.reference):
        ap.error("--shape, --input or --reference is needed")

    node = shutil.which("node")
    runner = os.path.join(REPO, "tools", "node", "tfjs_run.js")
    if a.reference:
        if not os.path.isfile(os.path.join(a.reference, "outputs.json")):
            skip(f"{a.reference} holds no saved TF.js outputs (compare_tfjs.py --save-reference)")
    elif not node:
        skip("node is not installed")
    elif not os.path.isdir(os.path.join(REPO, "tools", "node", "node_modules", "@tensorflow", "tfjs")):
        skip("tools/node has no node_modules (scripts/install-node-tools installs @tensorflow/tfjs)")
    if "/" not in a.model and not a.model.endswith(".json"):  # an installed model's name
        models = os.environ.get("TANDEM_MODELS") or os.path.join(os.path.expanduser("~"), ".cache", "tandem", "models")
        a.model = os.path.join(models, a.model + ".json")
    if not os.path.isfile(a.model):
        skip(f"{a.model} is not installed (scripts/install-models)")

    with tempfile.TemporaryDirectory() as tmp:
        if a.reference:
            ref_dir = a.reference
            inp = os.path.join(ref_dir, "input.npy")
        else:
            ref_dir = a.save_reference or os.path.join(tmp, "tfjs")
            inp = a.input
            if not inp or a.save_reference:
                x = np.load(a.input) if a.input else photo_input(a) if a.photo else random_input(a)
                os.makedirs(ref_dir, exist_ok=True)
                inp = os.path.join(ref_dir if a.save_reference else tmp, "input.npy")
                np.save(inp, x)
            cmd = [node, runner, a.model, inp, ref_dir, "--backend", "cpu"]
            if a.outputs:
                cmd += ["--outputs", a.outputs]
            run(cmd)
            if a.save_reference:
                print(f"saved the input and TF.js's outputs in {ref_dir}")
                sys.exit(0)
        with open(os.path.join(ref_dir, "outputs.json")) as f:
            refs = json.load(f)
        if a.outputs:  # a saved reference may hold more outputs than this comparison asks for
            wanted = a.outputs.split(",")
            refs = {k: v for k, v in refs.items() if k in wanted or k.split(":")[0] in wanted}
            if not refs:
                sys.exit(f"none of --outputs {a.outputs} is in the reference")
        out_dir = os.path.join(tmp, "tandem")
        cmd = [a.tandem, "run", a.model, "-i", inp, "--save-outputs", out_dir,
               "--device", a.device, "--precision", a.precision]
        if a.outputs:
            cmd += ["--outputs", a.outputs]
        run(cmd)
        worst = 0.0
        failed = False
        for name, info in refs.items():
            ref = np.load(os.path.join(ref_dir, info["file"]))
            candidates = [f for f in os.listdir(out_dir) if f.startswith(sanitize(name))]
            exact = [f for f in candidates if f in (sanitize(name) + ".npy", sanitize(name + ":0") + ".npy")]
            if not exact:
                print(f"{name}: tandem wrote no output (has {sorted(os.listdir(out_dir))})")
                failed = True
                continue
            got = np.load(os.path.join(out_dir, exact[0]))
            if got.shape != ref.shape:
                print(f"{name}: shape {got.shape} vs tfjs {ref.shape}")
                failed = True
                continue
            scale = float(np.max(np.abs(ref.astype(np.float64)))) or 1.0
            err = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))) if ref.size else 0.0
            rel = err / scale
            worst = max(worst, rel)
            ok = rel <= a.rtol
            failed |= not ok
            print(f"{name}: {list(ref.shape)} max abs err {err:.3e}, max |ref| {scale:.3e}, "
                  f"ratio {rel:.2e} {'ok' if ok else 'FAIL'} (limit {a.rtol:g})")
        print(f"worst ratio {worst:.2e}")
        sys.exit(1 if failed else 0)


def random_input(a):
    lo, hi = (float(v) for v in a.range.split(","))
    shape = [int(v) for v in a.shape.split(",")]
    return np.random.default_rng(a.seed).uniform(lo, hi, shape).astype(np.float32)


def photo_input(a):
    """The photo's region, resized to the input's height and width, its 0..255 scaled to --range: what a
    network meant for photos sees (uniform noise can push a deep one where almost every output is clipped
    to zero)."""
    from PIL import Image
    path, box = a.photo.rsplit("@", 1)
    if not os.path.isabs(path) and not os.path.isfile(path):
        path = os.path.join(REPO, "tools", "node", "node_modules", path)
    if not os.path.isfile(path):
        skip(f"{path} is not there (scripts/install-node-tools)")
    x, y, w, h = (int(v) for v in box.split(","))
    n, height, width, channels = (int(v) for v in a.shape.split(","))
    img = Image.open(path).convert("RGB" if channels == 3 else "L").crop((x, y, x + w, y + h))
    pixels = np.asarray(img.resize((width, height), Image.BILINEAR), dtype=np.float32).reshape(1, height, width, channels)
    lo, hi = (float(v) for v in a.range.split(","))
    return np.repeat(lo + (hi - lo) * pixels / 255.0, n, axis=0).astype(np.float32)


def sanitize(name):
    return "".join(c if c.isalnum() or c in "_-." else "_" for c in name) or "output"


if __name__ == "__main__":
    main()
