#!/ usr / bin / python3
"""int8 accuracy on a trained network: the Fashion-MNIST CNN `tandem train`
makes, post-training quantized and quantization-aware trained, its test
accuracy against the float model's, all in one run.

Usage (Debian's python, which has numpy):
  /usr/bin/python3 bench/int8_fashion.py [--build build] [--epochs 5]
      [--calibration 512] [--threads T] [--no-qat]

Steps:
  1. `tandem train --arch cnn --data fashion-mnist --epochs E --out
     BUILD/cache/bench/fashion_cnn.onnx` (seed 0; once), and with
     `--precision int8-qat` into fashion_cnn_qat.onnx (a QDQ model).
  2. The first N training images (normalized as training does:
     (x / 255 - 0.2860) / 0.3530) as calibration.npy, the 10,000 test
     images as test.npy, from Debian's dataset-fashion-mnist.
  3. `tandem quantize fashion_cnn.onnx --calibrate calibration.npy`.
  4. `tandem run` of each model on the test set on the CPU (the QDQ ones
     on integers), argmax against the labels: accuracy (%) and the loss in
     points against the fp32 model (targets: PTQ <= 0.5, QAT <= 0.3).
"""

import argparse
import gzip
import json
import os
import subprocess

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530


def idx(name):
    with gzip.open(os.path.join(DATA, name)) as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def images(name, n=None):
    x = idx(name)[:n].astype(np.float32)
    return ((x / 255.0 - MEAN) / STD)[:, None, :, :].astype(np.float32)


def tandem(a, *args):
    subprocess.run([os.path.join(a.build, "cli", "tandem"), *args], check=True)


def accuracy(a, model, test, labels, folder, tag):
    out = os.path.join(folder, "out_" + tag)
    tandem(a, "run", model, "-i", test, "--save-outputs", out, "--device", "cpu", "--threads", str(a.threads))
    logits = np.load(os.path.join(out, os.listdir(out)[0]))
    return 100.0 * float((logits.argmax(1) == labels).mean())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--calibration", type=int, default=512)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--no-qat", action="store_true")
    a = ap.parse_args()
    folder = os.path.join(a.build, "cache", "bench", "fashion")
    os.makedirs(folder, exist_ok=True)
    fp32 = os.path.join(folder, "fashion_cnn.onnx")
    qat = os.path.join(folder, "fashion_cnn_qat.onnx")
    common = ["--arch", "cnn", "--data", "fashion-mnist", "--epochs", str(a.epochs), "--seed", "0",
              "--threads", str(a.threads)]
    if not os.path.exists(fp32):
        tandem(a, "train", *common, "--out", fp32)
    if not a.no_qat and not os.path.exists(qat):
        tandem(a, "train", *common, "--precision", "int8-qat", "--out", qat)
    calib = os.path.join(folder, "calibration.npy")
    test = os.path.join(folder, "test.npy")
    np.save(calib, images("train-images-idx3-ubyte.gz", a.calibration))
    np.save(test, images("t10k-images-idx3-ubyte.gz"))
    labels = idx("t10k-labels-idx1-ubyte.gz")
    ptq = os.path.join(folder, "fashion_cnn.int8.onnx")
    tandem(a, "quantize", fp32, "--calibrate", calib, "--out", ptq, "--threads", str(a.threads))
    r = {"fp32": accuracy(a, fp32, test, labels, folder, "fp32"),
         "ptq_int8": accuracy(a, ptq, test, labels, folder, "ptq")}
    if not a.no_qat:
        r["qat_int8"] = accuracy(a, qat, test, labels, folder, "qat")
    print(f"Fashion-MNIST test accuracy (%), CNN after {a.epochs} epochs:")
    print(f"  fp32 {r['fp32']:.2f}   int8 PTQ {r['ptq_int8']:.2f} (loss {r['fp32'] - r['ptq_int8']:.2f} points)")
    if "qat_int8" in r:
        print(f"  int8-QAT model on integers {r['qat_int8']:.2f} (loss {r['fp32'] - r['qat_int8']:.2f} points)")
    print(json.dumps(r))


if __name__ == "__main__":
    main()
