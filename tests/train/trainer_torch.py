"""PyTorch side of tests/train/test_trainer_torch.cpp.

Usage: trainer_torch.py DIR STEPS BATCH [DEVICE]. DIR holds the cnn's initial
state_dict as <key>.npy (dropout 0), x.npy (f32 [STEPS*BATCH,1,28,28]) and
y.npy (i64). For each optimizer (Adam lr 1e-3; SGD lr 0.01 momentum 0.9)
trains the PyTorch twin from those weights on the batches in order and
writes the STEPS training losses to losses_<name>.npy, and those of the same
run in float64 to losses64_<name>.npy (how far PyTorch's own float32 drifts
from exact arithmetic). DEVICE: cpu (default) or cuda (TF32 off, so fp32
is fp32). Exits 77 without torch (or without CUDA, asked for cuda).
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

OPTIMIZERS = {
    "adam": lambda p: torch.optim.Adam(p, lr=1e-3),
    "sgd": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9),
}


def train(d, steps, batch, make_optimizer, dtype, device):
    net = torch_models.cnn(dropout=0.0)
    keys = net.state_dict().keys()
    torch_models.load_named(net, {k: np.load(os.path.join(d, k + ".npy")) for k in keys}).train()
    net = net.to(device=device, dtype=dtype)
    opt = make_optimizer(net.parameters())
    x = torch.from_numpy(np.load(os.path.join(d, "x.npy"))).to(device=device, dtype=dtype)
    y = torch.from_numpy(np.load(os.path.join(d, "y.npy"))).to(device)
    losses = []
    for s in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x[s * batch:(s + 1) * batch]), y[s * batch:(s + 1) * batch])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


def main(d, steps, batch, device):
    torch.set_num_threads(2)
    if device == "cuda":
        if not torch.cuda.is_available():
            sys.exit(77)
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    for name, make in OPTIMIZERS.items():
        np.save(os.path.join(d, "losses_" + name + ".npy"), train(d, steps, batch, make, torch.float32, device))
        np.save(os.path.join(d, "losses64_" + name + ".npy"), train(d, steps, batch, make, torch.float64, device))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "cpu")
