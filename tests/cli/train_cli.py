#!/usr/bin/env python3
"""`tandem train` end to end through the command line, checked with tools
nobody here wrote: python3-onnx's checker, numpy, PyTorch 1.13 running the
exported weights in the twin of the architecture (tests/train/torch_models.py).

  - a short run (cnn, 2048 training and 512 test images of Debian's
    Fashion-MNIST, 1 epoch) prints its epoch line, writes the JSON log,
    the checkpoint and an ONNX file the checker accepts;
  - `tandem run` on that file gives PyTorch's logits for the same weights;
  - `--resume` continues the checkpointed run at epoch 2;
  - `--precision bf16` and `--precision int8-qat` runs (2000 images, 1
    epoch) complete, say their precision in the epoch line and the log, and
    export a model the checker accepts and `tandem run` runs (QDQ for int8);
  - `--arch convnext` trains (1024 images; on a GPU also a few steps in
    fp32 and fp16) and exports a model `tandem run` and PyTorch agree on;
    int8-qat is refused for it;
  - an image folder (DIR/train/<class>/ and DIR/val/<class>/ made of
    darknet's sample photos) trains a lenet5 at 32x32 for one epoch with a
    test pass, random crop and flip on; a file that is not an image fails
    the run naming the file;
  - what this machine or path cannot do (--device cuda/hetero without a
    GPU, --precision fp16 on the cpu, a folder without class folders,
    --split without hetero) fails with a clear message, exit status 1.

  train_cli.py TANDEM_BINARY      exit 0: all passed, 1: failures, 77: skipped
"""
import json
import os
import subprocess
import sys
import tempfile

FASHION = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tag_cli  # noqa: E402  (its check() and failure count)

check = tag_cli.check


def tandem(*args):
    return subprocess.run([TANDEM, *args], capture_output=True, text=True)


def short_run(d):
    model, ckpt, log = (os.path.join(d, n) for n in ("m.onnx", "c.ckpt", "log.jsonl"))
    r = tandem("train", "--arch", "cnn", "--data", "fashion-mnist", "--epochs", "1", "--limit-train", "2048",
               "--limit-test", "512", "--out", model, "--checkpoint", ckpt, "--log", log, "--seed", "3")
    if not check(r.returncode == 0, "train exits 0: " + r.stderr[-500:]):
        return None
    check("epoch 1/1: train loss" in r.stdout and "| test loss" in r.stdout, "epoch line printed")
    entry = json.loads(open(log).read().splitlines()[-1])
    check(entry["epoch"] == 1 and 0.5 < entry["test_accuracy"] <= 1, "log: %s" % entry)
    check(os.path.getsize(ckpt) > 0, "checkpoint written")
    return model, ckpt


def exported_model_runs(d, model, arch="cnn"):
    import numpy as np
    import onnx
    onnx.checker.check_model(onnx.load(model), full_check=True)
    check(True, "onnx.checker accepts the exported model")
    x = np.random.default_rng(1).normal(size=(4, 1, 28, 28)).astype(np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    out = os.path.join(d, "out")
    r = tandem("run", model, "--input", "input=" + os.path.join(d, "x.npy"), "--save-outputs", out)
    if not check(r.returncode == 0 and "logits: f32[4,10]" in r.stdout, "tandem run: " + r.stdout + r.stderr):
        return
    got = np.load(os.path.join(out, "logits.npy"))
    try:
        import torch
        from onnx import numpy_helper
    except ImportError:
        print("skip PyTorch comparison: no torch")
        return
    sys.path.insert(0, os.path.join(HERE, "..", "train"))
    import torch_models
    weights = {t.name: numpy_helper.to_array(t) for t in onnx.load(model).graph.initializer}
    net = torch_models.load_named(torch_models.MODELS[arch](), weights).eval()
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    err = float(abs(got - want).max() / abs(want).max())
    check(err < 1e-5, "tandem run matches PyTorch on the exported weights (max error %.2g of the largest)" % err)


def convnext_runs(d):
    """The ConvNeXt-style model trains on the CPU (and, where there is a GPU,
    a few steps on it in fp32 and fp16), exports a model the checker, `tandem
    run` and PyTorch agree on, and refuses int8-qat."""
    model = os.path.join(d, "convnext.onnx")
    r = tandem("train", "--arch", "convnext", "--epochs", "1", "--limit-train", "1024", "--limit-test", "256",
               "--out", model, "--seed", "3")
    if check(r.returncode == 0 and "epoch 1/1: train loss" in r.stdout, "convnext trains: " + r.stderr[-500:]):
        exported_model_runs(d, model, "convnext")
    r = tandem("train", "--arch", "convnext", "--epochs", "1", "--limit-train", "256", "--precision", "int8-qat")
    check(r.returncode == 1 and "int8-qat" in r.stderr, "convnext int8-qat refused: " + r.stderr.strip()[-300:])
    if not have_gpu():
        return
    for precision in ("fp32", "fp16"):
        r = tandem("train", "--arch", "convnext", "--device", "cuda", "--precision", precision, "--epochs", "1",
                   "--limit-train", "512", "--limit-test", "256", "--batch", "64", "--seed", "3")
        check(r.returncode == 0 and "epoch 1/1" in r.stdout,
              "convnext trains on the GPU in %s: %s" % (precision, r.stderr[-500:]))


def resume(ckpt):
    r = tandem("train", "--arch", "cnn", "--epochs", "2", "--limit-train", "2048", "--limit-test", "512",
               "--checkpoint", ckpt, "--resume", "--seed", "3")
    check(r.returncode == 0 and "resumed from" in r.stdout and "epoch 2/2:" in r.stdout
          and "epoch 1/2:" not in r.stdout, "--resume runs epoch 2 only: " + r.stdout + r.stderr[-300:])


def low_precision_run(d, precision):
    model, log = os.path.join(d, precision + ".onnx"), os.path.join(d, precision + ".jsonl")
    r = tandem("train", "--arch", "cnn", "--epochs", "1", "--limit-train", "2000", "--limit-test", "500",
               "--precision", precision, "--out", model, "--log", log, "--seed", "3")
    if not check(r.returncode == 0, precision + ": train exits 0: " + r.stderr[-500:]):
        return
    check("epoch 1/1 [%s]: train loss" % precision in r.stdout, precision + ": epoch line shows it: " + r.stdout)
    entry = json.loads(open(log).read().splitlines()[-1])
    check(entry["precision"] == precision and 0.5 < entry["test_accuracy"] <= 1, precision + ": log: %s" % entry)
    import numpy as np
    import onnx
    m = onnx.load(model)
    onnx.checker.check_model(m, full_check=True)
    ops = {n.op_type for n in m.graph.node}
    check(("QuantizeLinear" in ops) == (precision == "int8-qat"), precision + ": QDQ nodes iff int8: %s" % ops)
    np.save(os.path.join(d, "x.npy"), np.zeros((2, 1, 28, 28), np.float32))
    r = tandem("run", model, "--input", "input=" + os.path.join(d, "x.npy"))
    check(r.returncode == 0 and "logits: f32[2,10]" in r.stdout, precision + ": tandem run: " + r.stdout + r.stderr)


def refusals(d):
    cases = [(["--precision", "fp16"], "fp16 trains on the GPU"),
             (["--data", d], "no class folders"), (["--split", "0.5"], "--split"),
             (["--device", "hetero", "--split", "2"], "the share of each layer's channels on the CPU"),
             (["--resume"], "--checkpoint")]
    for args, words in cases:
        r = tandem("train", "--epochs", "1", *args)
        check(r.returncode == 1 and words in r.stderr, "%s refused: %s" % (" ".join(args), r.stderr.strip()))
    if not have_gpu():
        for device in ("cuda", "hetero"):
            r = tandem("train", "--epochs", "1", "--device", device)
            check(r.returncode == 1 and ("no CUDA GPU" in r.stderr or "no CUDA backend" in r.stderr),
                  "--device %s without a GPU refused: %s" % (device, r.stderr.strip()))


DARKNET = "/usr/share/darknet/data"


def image_folder_run(d):
    import shutil
    photos = sorted(f for f in os.listdir(DARKNET) if f.endswith(".jpg"))[:6] if os.path.isdir(DARKNET) else []
    if len(photos) < 4:
        print("skip image folder: darknet's sample photos are not installed")
        return
    root = os.path.join(d, "folder")
    for split in ("train", "val"):
        for k, cls in enumerate(("a", "b")):
            os.makedirs(os.path.join(root, split, cls))
            for p in photos[k::2]:
                shutil.copy(os.path.join(DARKNET, p), os.path.join(root, split, cls, p))
    log = os.path.join(d, "folder.jsonl")
    args = ["train", "--arch", "lenet5", "--data", root, "--image-size", "32", "--epochs", "1", "--batch", "2",
            "--random-crop", "2", "--flip", "--log", log]
    r = tandem(*args)
    check(r.returncode == 0 and "2 classes" in r.stdout and "| test loss" in r.stdout,
          "image folder trains: " + r.stdout[-300:] + r.stderr[-500:])
    if r.returncode == 0:
        entry = json.loads(open(log).read().splitlines()[-1])
        check(entry["epoch"] == 1 and 0 <= entry["test_accuracy"] <= 1, "image folder log: %s" % entry)
    bad = os.path.join(root, "train", "a", "broken.jpg")
    with open(bad, "wb") as f:
        f.write(b"not a jpeg at all")
    r = tandem(*args)
    check(r.returncode == 1 and "broken.jpg" in r.stderr, "a broken image is named: " + r.stderr.strip()[-300:])


def have_gpu():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    except OSError:
        return False


def main():
    if not os.path.exists(FASHION):
        print("skip: Debian's dataset-fashion-mnist is not installed")
        return 77
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
    except ImportError:
        print("skip: numpy or onnx missing")
        return 77
    with tempfile.TemporaryDirectory() as d:
        refusals(d)
        made = short_run(d)
        if made:
            exported_model_runs(d, made[0])
            resume(made[1])
        convnext_runs(d)
        for precision in ("bf16", "int8-qat"):
            low_precision_run(d, precision)
        image_folder_run(d)
    return 1 if tag_cli.failures else 0


if __name__ == "__main__":
    TANDEM = sys.argv[1]
    sys.exit(main())
