#!/usr/bin/env python3
"""A short real training run reaches a fixed accuracy: `tandem train --arch
cnn` for one epoch over Debian's whole Fashion-MNIST training set (60,000
images, batch 128, Adam 1e-3) scores at least 80% on its 10,000 test
images (PyTorch's same net: 88.0% after one epoch on this machine; tandem
88.1%). About 20 s on two idle cores.

  train_accuracy.py TANDEM_BINARY    exit 0: passed, 1: failed, 77: skipped
"""
import json
import os
import subprocess
import sys
import tempfile

FASHION = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"


def main(tandem):
    if not os.path.exists(FASHION):
        print("skip: Debian's dataset-fashion-mnist is not installed")
        return 77
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "log.jsonl")
        r = subprocess.run([tandem, "train", "--arch", "cnn", "--epochs", "1", "--batch", "128", "--log", log],
                           capture_output=True, text=True)
        print(r.stdout + r.stderr[-2000:])
        if r.returncode != 0:
            return 1
        entry = json.loads(open(log).read().splitlines()[-1])
    ok = entry["test_accuracy"] >= 0.80
    print(("ok   " if ok else "FAIL ") + "test accuracy %.4f after 1 epoch (want >= 0.80)" % entry["test_accuracy"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
