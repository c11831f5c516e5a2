#!/usr/bin/python3
"""Why tandem keeps a classifier's output Gemm in float32 under fp16/bf16
(graph/precision.cpp): PyTorch's own ResNet-50 (seeded random weights) in
bf16 on the CPU, top-5 agreement with its fp32 logits, with every layer in
bf16 and with only the final fc in fp32. Debian's torch 1.13 (no fp16 conv
on the CPU, so bf16 only). /usr/bin/python3 bench/head_precision_check.py
"""
import torch, torchvision, numpy as np, copy
torch.manual_seed(0)
m = torchvision.models.resnet50().eval()
x = torch.from_numpy(np.random.default_rng(1).standard_normal((64, 3, 224, 224)).astype(np.float32))
torch.set_num_threads(2)
with torch.no_grad():
    ref = m(x)
    top = lambda t: torch.topk(t.float(), 5, dim=1).indices
    r5 = top(ref)
    for dt in (torch.bfloat16, torch.float16):
        if dt == torch.float16:
            continue  # fp16 conv on CPU is not supported in torch 1.13
        mb = copy.deepcopy(m).to(dt)
        full = mb(x.to(dt))
        # head in fp32: everything up to avgpool/flatten in low precision, fc in fp32
        feats = torch.flatten(mb.avgpool(mb.layer4(mb.layer3(mb.layer2(mb.layer1(mb.maxpool(mb.relu(mb.bn1(mb.conv1(x.to(dt)))))))))), 1)
        head = m.fc(feats.float())
        for name, out in (("all " + str(dt), full), ("fp32 head " + str(dt), head)):
            same = (top(out) == r5).all(dim=1).float().mean().item()
            print(name, "top-5 identical %.1f%%" % (100 * same), "top-1 %.1f%%" % (100 * (top(out)[:, 0] == r5[:, 0]).float().mean().item()))
