#!/usr/bin/env python3
"""ResNet-18 training throughput on the GPU, tandem against PyTorch
in one run: torchvision's resnet18 (1000 classes), batch 256, synthetic
224x224 data already on the GPU, SGD momentum 0.9, whole steps (forward,
cross-entropy, backward, optimizer); PyTorch with AMP fp16 (autocast +
GradScaler) and channels-last, and in fp32 (TF32 off); tandem from
build/bench/bench_train_gpu (Trainer::train_step, the same loop as
`tandem train`), with NCHW and channels-last (nhwc) activations. Prints
img/s of each and the ratios.

  python3 bench/train_throughput.py --tandem-bench PATH/bench_train_gpu [--steps 30]
      [--baseline-bench OLD/bench_train_gpu]

--baseline-bench also times another build's bench_train_gpu (an earlier
commit's) in the same run, after tandem's, to compare two versions of tandem
on the same warm GPU.
"""
import argparse
import json
import subprocess
import time

import torch
import torchvision


def torch_rate(batch, steps, amp, channels_last):
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    net = torchvision.models.resnet18(num_classes=1000).cuda()
    x = torch.rand(batch, 3, 224, 224, device="cuda") * 2 - 1
    y = torch.arange(batch, device="cuda") % 1000
    if channels_last:
        net = net.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=amp)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = torch.nn.functional.cross_entropy(net(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return batch * steps / (time.perf_counter() - t)


def tandem_rates(binary):
    out = subprocess.run([binary, "--benchmark_filter=Resnet18", "--benchmark_format=json"], check=True,
                         capture_output=True, text=True).stdout
    rates = {}
    for b in json.loads(out)["benchmarks"]:
        if "error_message" in b:
            raise SystemExit("tandem: " + b["error_message"])
        precision = {"0": "fp32", "1": "fp16", "2": "bf16"}[b["name"].split("precision:")[1].split("/")[0]]
        layout = "nhwc" if "nhwc:1" in b["name"] else "nchw"
        rates[precision + " " + layout] = b["items_per_second"]
    return rates


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tandem-bench", required=True)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--baseline-bench")
    a = ap.parse_args()
    print("torch %s, %s" % (torch.__version__, torch.cuda.get_device_name()))
    amp = torch_rate(a.batch, a.steps, True, True)
    fp32 = torch_rate(a.batch, a.steps, False, False)
    t = tandem_rates(a.tandem_bench)
    base = tandem_rates(a.baseline_bench) if a.baseline_bench else {}
    print("pytorch AMP fp16 channels-last: %.0f img/s; fp32 NCHW: %.0f img/s" % (amp, fp32))
    for p, r in sorted(t.items()):
        print("tandem %s: %.0f img/s = %.2fx PyTorch AMP, %.2fx PyTorch fp32" % (p, r, r / amp, r / fp32))
    for p, r in sorted(base.items()):
        print("baseline %s: %.0f img/s = %.2fx PyTorch AMP; tandem / baseline %.3f" % (p, r, r / amp, t[p] / r))
    amp2 = torch_rate(a.batch, a.steps, True, True)
    print("pytorch AMP again (drift check): %.0f img/s" % amp2)


if __name__ == "__main__":
    main()
