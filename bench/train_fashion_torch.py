#!/usr/bin/python3
"""PyTorch's side of docs/BENCHMARKS.md "Training": the small
CNN (tests/train/torch_models.py: the twin of `tandem train --arch cnn`) on
Debian's Fashion-MNIST, Adam 1e-3, batch 128, shuffled every epoch, the
same normalization as tandem ((x/255 - 0.2860) / 0.3530), the whole data
set in memory as tensors. Prints one JSON line per epoch (the fields of
`tandem train --log`) and the time to 90% test accuracy; with --tandem-log
FILE also tandem's figures from its log, side by side.

  /usr/bin/python3 bench/train_fashion_torch.py --epochs 10 [--threads 2] [--cosine] [--tandem-log log.jsonl]

On a GPU (--device cuda; TF32 off, the data set moved to the GPU before the
clock starts, as the issue's first reading), optionally with AMP (--amp:
fp16 autocast and GradScaler). $TANDEM_FASHION_MNIST_DIR overrides Debian's
data directory.
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "train"))
import torch_models  # noqa: E402

DATA = os.environ.get("TANDEM_FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist"


def idx(name):
    with gzip.open(os.path.join(DATA, name)) as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * dims).reshape(shape)


def split(prefix):
    x = (idx(prefix + "-images-idx3-ubyte.gz").astype(np.float32) / np.float32(255) - np.float32(0.2860))
    x = x / np.float32(0.3530)
    y = idx(prefix + "-labels-idx1-ubyte.gz").astype(np.int64)
    return torch.from_numpy(x[:, None]), torch.from_numpy(y)


def evaluate(net, x, y, batch, amp=False):
    net.eval()
    loss, correct = 0.0, 0
    with torch.no_grad(), torch.autocast(x.device.type, dtype=torch.float16, enabled=amp):
        for i in range(0, len(x), batch):
            logits = net(x[i:i + batch]).float()
            loss += torch.nn.functional.cross_entropy(logits, y[i:i + batch], reduction="sum").item()
            correct += (logits.argmax(1) == y[i:i + batch]).sum().item()
    net.train()
    return loss / len(x), correct / len(x)


def train_epoch(net, opt, x, y, batch, generator, scaler=None, schedule=None):
    order = torch.randperm(len(x), generator=generator).to(x.device)
    loss_sum, correct = 0.0, 0
    for i in range(0, len(x), batch):
        idx_ = order[i:i + batch]
        opt.zero_grad()
        with torch.autocast(x.device.type, dtype=torch.float16, enabled=scaler is not None):
            logits = net(x[idx_])
            loss = torch.nn.functional.cross_entropy(logits, y[idx_])
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        if schedule is not None:
            schedule.step()
        loss_sum += loss.item() * len(idx_)
        correct += (logits.argmax(1) == y[idx_]).sum().item()
    return loss_sum / len(x), correct / len(x)


def time_to(entries, accuracy):
    """Training seconds (and with evaluation) up to the first epoch at `accuracy`."""
    train = wall = 0.0
    for e in entries:
        train += e["train_seconds"]
        wall += e["train_seconds"] + e["eval_seconds"]
        if e["test_accuracy"] >= accuracy:
            return e["epoch"], train, wall
    return None


def report(name, entries):
    hit = time_to(entries, 0.90)
    best = max(e["test_accuracy"] for e in entries)
    reach = "not reached" if hit is None else "epoch %d, %.1f s training (%.1f s with evaluation)" % hit
    print("%s: final test accuracy %.2f%% (best %.2f%%), %.1f s/epoch; 90%%: %s" % (
        name, 100 * entries[-1]["test_accuracy"], 100 * best,
        sum(e["train_seconds"] for e in entries) / len(entries), reach))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: PyTorch's default)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tandem-log", help="a `tandem train --log` file to compare with")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--amp", action="store_true", help="cuda: fp16 autocast with GradScaler")
    ap.add_argument("--cosine", action="store_true",
                    help="cosine learning-rate decay to 0 over the run, stepped per batch (tandem's --schedule cosine)")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.device == "cuda":
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(a.seed)
    x, y = (t.to(a.device) for t in split("train"))
    tx, ty = (t.to(a.device) for t in split("t10k"))
    net = torch_models.cnn().to(a.device)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda") if a.amp else None
    steps = a.epochs * ((len(x) + a.batch - 1) // a.batch)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=0) if a.cosine else None
    generator = torch.Generator().manual_seed(a.seed)
    entries = []
    for epoch in range(1, a.epochs + 1):
        t0 = time.perf_counter()
        train_loss, train_acc = train_epoch(net, opt, x, y, a.batch, generator, scaler, schedule)
        t1 = time.perf_counter()
        test_loss, test_acc = evaluate(net, tx, ty, a.batch, a.amp)
        entries.append({"epoch": epoch, "train_loss": train_loss, "train_accuracy": train_acc,
                        "test_loss": test_loss, "test_accuracy": test_acc, "train_seconds": t1 - t0,
                        "eval_seconds": time.perf_counter() - t1, "images_per_second": len(x) / (t1 - t0)})
        print(json.dumps(entries[-1]), flush=True)
    print("torch %s, %d threads, %s%s%s" % (torch.__version__, torch.get_num_threads(), a.device, " AMP" if a.amp else "",
                                        ", cosine schedule" if a.cosine else ""))
    report("pytorch", entries)
    if a.tandem_log:
        with open(a.tandem_log) as f:
            report("tandem", [json.loads(line) for line in f if line.strip()])


if __name__ == "__main__":
    main()
