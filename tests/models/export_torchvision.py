#!/usr/bin/python3
"""Export torchvision models to ONNX with PyTorch reference outputs.

Usage (Debian's python: /usr/bin/python3, which has torch/torchvision/onnx):
  tests/models/export_torchvision.py --out build/cache/models [--opset 13]
      [--batch 2] [--seed 0] [--force] MODEL [MODEL ...]
  tests/models/export_torchvision.py --list

For each MODEL it writes OUT/<model>.op<opset>/:
  model.onnx        input "input" (N,3,H,W) float32, N dynamic; a classifier's
                    output "logits" (N,1000), a segmentation model's "out"
                    (N,21,H,W): the "out" entry of the dict it returns.
  input.npy         the seeded random input batch (N,3,H,W): 224x224, N =
                    --batch, else the model's own batch (2; 1 for the
                    segmentation models and ViT-B/16, whose CPU runs cost
                    most).
  ref/<output>.npy  PyTorch's eval-mode output on input.npy.
  meta.json         model, opset, seed, batch, export seconds, torch version.
A folder whose meta.json has the current EXPORT_VERSION is left alone unless
--force; meta.json is written last, so an interrupted export is redone.

Weights are random (weights=None) but deterministic: torch.manual_seed(seed)
before construction. Three things make the reference a real test:
  * BatchNorm: random init leaves mean 0 / var 1 / gamma 1 / beta 0, which
    makes a wrong BN fold invisible. We draw gamma ~ U(0.5,1.5) and
    beta ~ N(0,0.2), then set running mean/var to the statistics of a
    seeded random calibration batch of 4 (train-mode forward, momentum=None),
    so mean/var are non-trivial per channel yet keep activations O(1)
    through 50+ layers, and finally multiply running_var by U(0.7,1.4).
  * Parameters a fresh init leaves constant, which would hide a kernel that
    ignores them: LayerNorm's weight (ones) and bias (zeros) get the BN
    gamma/beta draws above; ConvNeXt's layer scale (1e-6 everywhere, which
    makes each block nearly the identity) U(0.1,0.5); every other all-zero
    tensor (biases, ViT's class token and classification head) N(0, 0.1^2).
  * BN nodes are kept in the ONNX graph (TrainingMode.PRESERVE on an eval
    model), so the engine's own BN handling/folding runs; the default EVAL
    export would have fused Conv+BN inside PyTorch.
  * Logit ties: random-init logits can be close. compare.py only checks the
    identity of a top-5 rank where the gaps to its neighbours exceed twice
    the error tolerance (see compare.py); we print how many of the 5 ranks
    are decidable per sample so a vacuous check is visible.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

# torch/torchvision are imported in main() only when something needs
# exporting: a cached run then costs a numpy import, not a torch import.
torch = torchvision = DenseOutput = None

# Bump when the recipe (weights, BN perturbation, input) changes: cached
# folders with another version are re-exported.
EXPORT_VERSION = 3
# name -> constructor kwargs beyond weights=None.
MODELS = {
    "resnet18": {},
    "resnet50": {},
    "resnext50_32x4d": {},
    "wide_resnet50_2": {},
    "mobilenet_v2": {},
    "mobilenet_v3_small": {},
    "mobilenet_v3_large": {},
    "efficientnet_b0": {},
    "squeezenet1_0": {},
    "squeezenet1_1": {},
    "shufflenet_v2_x1_0": {},
    "densenet121": {},
    "googlenet": {"aux_logits": False, "init_weights": True},
    "regnet_y_400mf": {},
    "regnet_x_400mf": {},
    "mnasnet1_0": {},
    "vgg11": {},
    "alexnet": {},
    "convnext_tiny": {},
    "vit_b_16": {},
    "swin_t": {},
    "efficientnet_v2_s": {},
    # torchvision.models.segmentation: output dict {"out": (N,21,H,W)}.
    "fcn_resnet50": {"weights_backbone": None},
    "deeplabv3_resnet50": {"weights_backbone": None},
    "lraspp_mobilenet_v3_large": {"weights_backbone": None},
}
SEGMENTATION = {"fcn_resnet50", "deeplabv3_resnet50", "lraspp_mobilenet_v3_large"}
# Batch when --batch is not given: 2, except where one image already costs
# most of a CPU test's time.
DEFAULT_BATCH = {"vit_b_16": 1, **{m: 1 for m in SEGMENTATION}}

INPUT_NAME = "input"
IMAGE_SHAPE = (3, 224, 224)


def output_name(name):
    return "out" if name in SEGMENTATION else "logits"


def build_model(name, seed):
    """Random-init model in eval mode with perturbed, calibrated BN stats and
    no constant parameters."""
    torch.manual_seed(seed)
    family = torchvision.models.segmentation if name in SEGMENTATION else torchvision.models
    model = getattr(family, name)(weights=None, **MODELS[name])
    perturb_constant_params(model, seed)
    perturb_batchnorm(model, seed)
    # The wrapper too: torch.onnx.export restores the top module's mode on
    # every submodule afterwards, so a wrapper left in training mode would put
    # BatchNorm and Dropout in training mode for whatever runs after an export.
    return (DenseOutput(model) if name in SEGMENTATION else model).eval()


def dense_output_class():
    class DenseOutput(torch.nn.Module):
        """A segmentation model's "out" (its dict also has "aux" when built
        with aux_loss; ONNX outputs are tensors)."""
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x):
            return self.model(x)["out"]
    return DenseOutput


def perturb_constant_params(model, seed):
    """Random values for parameters a fresh init leaves constant (see the
    module docstring); BatchNorm's are perturb_batchnorm's."""
    gen = torch.Generator().manual_seed(seed + 3)
    bn_params = {id(p) for m in model.modules()
                 if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for p in m.parameters()}
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm) and m.elementwise_affine:
                m.weight.copy_(0.5 + torch.rand(m.weight.shape, generator=gen))
                m.bias.copy_(0.2 * torch.randn(m.bias.shape, generator=gen))
        for name, p in model.named_parameters():
            if id(p) in bn_params or p.numel() < 2:
                continue
            if name.endswith("layer_scale"):
                p.copy_(0.1 + 0.4 * torch.rand(p.shape, generator=gen))
            elif not p.any():
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))


def perturb_batchnorm(model, seed):
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for bn in bns:
            c = bn.num_features
            if bn.affine:
                bn.weight.copy_(0.5 + torch.rand(c, generator=gen))
                bn.bias.copy_(0.2 * torch.randn(c, generator=gen))
            bn.reset_running_stats()
            bn.momentum = None  # cumulative average over calibration batches
        model.train()
        model(torch.randn(4, *IMAGE_SHAPE, generator=gen))
        for bn in bns:
            bn.running_var.mul_(0.7 + 0.7 * torch.rand(bn.num_features, generator=gen))
    model.eval()


def is_current(folder, batch, seed):
    try:
        with open(os.path.join(folder, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return False
    return (meta.get("version") == EXPORT_VERSION and meta.get("batch") == batch
            and meta.get("seed") == seed)


def export_one(name, opset, batch, seed, folder):
    os.makedirs(os.path.join(folder, "ref"), exist_ok=True)
    t0, cpu0 = time.monotonic(), time.process_time()
    model = build_model(name, seed)
    gen = torch.Generator().manual_seed(seed + 2)
    x = torch.randn(batch, *IMAGE_SHAPE, generator=gen)
    with torch.no_grad():
        ref = model(x)
    out_name = output_name(name)
    onnx_path = os.path.join(folder, "model.onnx")
    tmp_path = onnx_path + ".tmp"
    torch.onnx.export(
        model, x, tmp_path, opset_version=opset,
        input_names=[INPUT_NAME], output_names=[out_name],
        dynamic_axes={INPUT_NAME: {0: "batch"}, out_name: {0: "batch"}},
        training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=True)
    bn_nodes = check_graph(tmp_path, opset)
    np.save(os.path.join(folder, "input.npy"), x.numpy())
    np.save(os.path.join(folder, "ref", f"{out_name}.npy"), ref.numpy())
    os.replace(tmp_path, onnx_path)
    seconds, cpu = time.monotonic() - t0, time.process_time() - cpu0
    meta = {"version": EXPORT_VERSION, "model": name, "opset": opset, "seed": seed, "batch": batch,
            "input": INPUT_NAME, "outputs": [out_name], "bn_nodes": bn_nodes,
            "export_seconds": round(seconds, 2), "export_cpu_seconds": round(cpu, 2),
            "torch": torch.__version__,
            "torchvision": torchvision.__version__}
    with open(os.path.join(folder, "meta.json"), "w") as f:  # written last: marks the folder complete
        json.dump(meta, f, indent=1)
    print(f"export: {name} opset {opset} -> {folder} in {seconds:.1f} s "
          f"({cpu:.1f} s CPU), "
          f"{bn_nodes} BN nodes; "
          f"{describe_output(ref.numpy())}")


def check_graph(path, opset):
    """Checks the opset; returns the number of BatchNormalization nodes kept.
    (torch.onnx.export already ran the full ONNX checker.)"""
    import onnx
    m = onnx.load(path)
    got = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]
    if got != [opset]:
        raise SystemExit(f"export: {path} has opset {got}, wanted {opset}")
    return sum(1 for n in m.graph.node if n.op_type == "BatchNormalization")


def describe_output(ref, rel_tol=1e-4):
    """How many top-5 ranks (logits) or pixels' classes (dense scores) are
    decidable at compare.py's tolerance."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from compare import decidable_pixels, decidable_ranks
    tol = rel_tol * float(np.abs(ref).max())
    if ref.ndim == 4:
        share = float(decidable_pixels(ref.astype(np.float64), tol).mean())
        return f"max|out| {np.abs(ref).max():.3g}, argmax decidable at {100 * share:.1f}% of pixels"
    counts = [int(decidable_ranks(row, tol).sum()) for row in ref]
    return f"max|logit| {np.abs(ref).max():.3g}, decidable top-5 ranks per sample {counts}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="*")
    p.add_argument("--out", help="output root (a build/cache folder, not the source tree)")
    p.add_argument("--opset", type=int, default=13, choices=range(11, 18))
    p.add_argument("--batch", type=int, default=None, help="default: the model's own (DEFAULT_BATCH, else 2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    p.add_argument("--force", action="store_true", help="re-export even if present")
    p.add_argument("--list", action="store_true", help="print the known model names")
    a = p.parse_args()
    if a.list:
        print("\n".join(MODELS))
        return 0
    if not a.out or not a.models:
        p.error("--out and at least one MODEL are required")
    unknown = [m for m in a.models if m not in MODELS]
    if unknown:
        p.error(f"unknown model(s) {unknown}; see --list")
    todo = []
    for name in a.models:
        folder = os.path.join(a.out, f"{name}.op{a.opset}")
        batch = a.batch or DEFAULT_BATCH.get(name, 2)
        if a.force or not is_current(folder, batch, a.seed):
            todo.append((name, folder, batch))
        else:
            print(f"export: {folder} is current, skipped")
    if todo:
        import_torch(a.threads)
    for name, folder, batch in todo:
        export_one(name, a.opset, batch, a.seed, folder)
    return 0


def import_torch(threads):
    global torch, torchvision, DenseOutput
    import warnings
    import torch
    import torchvision
    DenseOutput = dense_output_class()
    # PRESERVE + constant folding warns for models in training mode; ours
    # are in eval mode, where folding is exact.
    warnings.filterwarnings("ignore", message=".*constant folding be turned off.*")
    if threads > 0:
        torch.set_num_threads(threads)


if __name__ == "__main__":
    sys.exit(main())
