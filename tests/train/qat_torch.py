"""PyTorch side of tests/train/test_qat.cpp.

Usage:
  qat_torch.py placement OUT.txt
      Writes the observer (min_val) buffer names PyTorch's eager QAT gives the
      cnn twin (tests/train/torch_models.py): conv-bn-relu and linear-relu
      fused (torch.ao.quantization.fuse_modules_qat), QuantWrapper, the
      default 'fbgemm' QAT qconfig, prepare_qat. A fused module holds the
      output observer of its group; tandem keeps the layers unfused and puts
      it on the group's last layer, so the names are written with the
      group's last index ("features.0.activation_post_process" ->
      "features.2.activation_post_process") and without QuantWrapper's
      "module." prefix.
  qat_torch.py qdq DIR NAME:ARCH:C:H:W:K ...
      Checks DIR/NAME.onnx with onnx.checker (full check) and its QDQ form
      (int8 weights with per-channel zero points of 0 along axis 0, every
      QuantizeLinear followed by a DequantizeLinear of the same qparams);
      then runs the twin of ARCH with the dequantized weights and, through
      forward hooks, torch.fake_quantize_per_tensor_affine at the input and
      on the output of every module the file has "<module>.activation_post_process"
      qparams for; writes DIR/NAME.torch.npy.
Exits 77 without torch or onnx.
"""
import os
import sys

try:
    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper
    from torch.ao import quantization as tq
except ImportError:
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402

CNN_GROUPS = [["features.0", "features.1", "features.2"], ["features.4", "features.5", "features.6"],
              ["classifier.1", "classifier.2"]]


def placement(out):
    m = torch_models.cnn()
    m.train()
    tq.fuse_modules_qat(m, CNN_GROUPS, inplace=True)
    m = tq.QuantWrapper(m)
    m.qconfig = tq.get_default_qat_qconfig("fbgemm")
    tq.prepare_qat(m, inplace=True)
    tail = {g[0]: g[-1] for g in CNN_GROUPS}
    names = []
    for key in m.state_dict():
        if not key.endswith("min_val"):
            continue
        key = key[len("module."):] if key.startswith("module.") else key
        if ".activation_post_process.activation_post_process." in key:
            module = key.split(".activation_post_process.")[0]
            key = key.replace(module + ".", tail.get(module, module) + ".", 1)
        names.append(key)
    with open(out, "w") as f:
        f.write("\n".join(sorted(names)) + "\n")


def check_qdq(model):
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    producer = {o: n for n in model.graph.node for o in n.output}
    weights = {}
    for n in model.graph.node:
        if n.op_type == "DequantizeLinear" and n.input[0] in init:
            q, scale, zp = init[n.input[0]], init[n.input[1]], init[n.input[2]]
            axis = [a.i for a in n.attribute if a.name == "axis"]
            assert q.dtype == np.int8 and zp.dtype == np.int8 and not zp.any(), n.name
            assert axis == [0] and scale.shape == (q.shape[0],), n.name
            shape = (-1,) + (1,) * (q.ndim - 1)
            weights[n.input[0]] = q.astype(np.float32) * scale.reshape(shape)
        elif n.op_type == "DequantizeLinear":
            src = producer[n.input[0]]
            assert src.op_type == "QuantizeLinear" and list(src.input[1:]) == list(n.input[1:]), n.name
            assert init[n.input[1]].shape == () and init[n.input[2]].dtype == np.uint8, n.name
    return init, weights


def qdq(d, specs):
    torch.set_num_threads(1)
    for spec in specs:
        name, arch, c, h, w, k = spec.split(":")
        model = onnx.load(os.path.join(d, name + ".onnx"))
        onnx.checker.check_model(model, full_check=True)
        init, weights = check_qdq(model)
        tensors = {n: v for n, v in init.items() if n in weights or not n.endswith(("scale", "zero_point"))}
        tensors.update(weights)
        net = torch_models.MODELS[arch](int(c), int(h), int(w), int(k))
        torch_models.load_named(net, tensors).eval()

        def fake_quant(prefix):
            s, z = float(init[prefix + "scale"]), int(init[prefix + "zero_point"])
            return lambda t: torch.fake_quantize_per_tensor_affine(t, s, z, 0, 255)

        hooked = 0
        for module_name, module in net.named_modules():
            prefix = module_name + ".activation_post_process."
            if prefix + "scale" in init:
                fq = fake_quant(prefix)
                module.register_forward_hook(lambda mod, inp, out, fq=fq: fq(out))
                hooked += 1
        stub = fake_quant("quant.activation_post_process.")
        assert hooked == sum(n.op_type == "QuantizeLinear" for n in model.graph.node) - 1, "unplaced observers"
        x = torch.from_numpy(np.load(os.path.join(d, name + ".x.npy")))
        with torch.no_grad():
            np.save(os.path.join(d, name + ".torch.npy"), net(stub(x)).numpy())


if __name__ == "__main__":
    if sys.argv[1] == "placement":
        placement(sys.argv[2])
    else:
        qdq(sys.argv[2], sys.argv[3:])
