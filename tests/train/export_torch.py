"""PyTorch side of tests/train/test_export.cpp.

Usage: export_torch.py DIR NAME:ARCH:C:H:W:K ...  For each model: checks
DIR/NAME.onnx with onnx.checker (full check, with ONNX shape inference),
builds the PyTorch twin of ARCH (tests/train/torch_models.py) for input
[C,H,W] and K classes, loads the file's initializers into it by state_dict
key, runs DIR/NAME.x.npy in eval mode and writes DIR/NAME.torch.npy.
Exits 77 without torch or onnx.
"""
import os
import sys

try:
    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper
except ImportError:
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402


def main(d, specs):
    torch.set_num_threads(1)
    for spec in specs:
        name, arch, c, h, w, k = spec.split(":")
        path = os.path.join(d, name + ".onnx")
        model = onnx.load(path)
        onnx.checker.check_model(model, full_check=True)
        weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        net = torch_models.MODELS[arch](int(c), int(h), int(w), int(k))
        torch_models.load_named(net, weights).eval()
        x = torch.from_numpy(np.load(os.path.join(d, name + ".x.npy")))
        with torch.no_grad():
            np.save(os.path.join(d, name + ".torch.npy"), net(x).numpy())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
