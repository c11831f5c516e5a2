"""PyTorch side of tests/train/test_torch_cnn.cpp.

Usage: tiny_cnn_torch.py DIR. DIR holds the C++ model's state_dict as
<key>.npy, x.npy (f32 [N,1,12,12]) and labels.npy (i64 [N]). Builds the same
network in PyTorch, loads the state dict (strict: the names must match), runs
one training-mode forward and backward of cross-entropy with label smoothing
0.1, and writes loss.npy, grad.<name>.npy per parameter and after.<key>.npy
per buffer (running statistics after the forward). Exits 77 without torch.
"""
import os
import sys

try:
    import numpy as np
    import torch
    from torch import nn
except ImportError:
    sys.exit(77)


class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock, written out (torchvision may be absent)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.downsample(x) if self.downsample is not None else x))


def model():
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        BasicBlock(4, 8, 2),
        nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=8), nn.Hardswish(),
        nn.AvgPool2d(3, 1, 1),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(8, 16), nn.SiLU(), nn.Dropout(0.0), nn.Linear(16, 10))


def main(d):
    torch.set_num_threads(1)
    net = model()
    state = {k: torch.from_numpy(np.load(os.path.join(d, k + ".npy"))) for k in net.state_dict()}
    net.load_state_dict(state, strict=True)
    net.train()
    x = torch.from_numpy(np.load(os.path.join(d, "x.npy")))
    labels = torch.from_numpy(np.load(os.path.join(d, "labels.npy")))
    loss = nn.functional.cross_entropy(net(x), labels, label_smoothing=0.1)
    loss.backward()
    np.save(os.path.join(d, "loss.npy"), loss.detach().numpy().reshape(1))
    for name, p in net.named_parameters():
        np.save(os.path.join(d, "grad." + name + ".npy"), p.grad.numpy())
    for name, b in net.named_buffers():
        np.save(os.path.join(d, "after." + name + ".npy"), b.numpy())


if __name__ == "__main__":
    main(sys.argv[1])
