"""PyTorch side of tests/train/test_convnext.cpp (ConvNeXtBlock.MatchesPyTorch).

Usage: convnext_block_torch.py DIR C NAME...  Builds the ConvNeXt block of
tests/train/torch_models.py for C channels, loads DIR/NAME.npy into each
named parameter, runs DIR/x.npy forward in float32, backpropagates
DIR/dy.npy and writes DIR/y.torch.npy, DIR/x.grad.npy and DIR/NAME.grad.npy.
Exits 77 without torch.
"""
import os
import sys

try:
    import numpy as np
    import torch
except ImportError:
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402


def main(d, channels, names):
    torch.set_num_threads(1)
    block = torch_models.ConvNeXtBlock(channels)
    params = dict(block.named_parameters())
    assert sorted(params) == sorted(names), (sorted(params), sorted(names))
    with torch.no_grad():
        for n in names:
            params[n].copy_(torch.from_numpy(np.load(os.path.join(d, n + ".npy"))))
    x = torch.from_numpy(np.load(os.path.join(d, "x.npy"))).requires_grad_(True)
    y = block(x)
    y.backward(torch.from_numpy(np.load(os.path.join(d, "dy.npy"))))
    np.save(os.path.join(d, "y.torch.npy"), y.detach().numpy())
    np.save(os.path.join(d, "x.grad.npy"), x.grad.numpy())
    for n in names:
        np.save(os.path.join(d, n + ".grad.npy"), params[n].grad.numpy())


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
