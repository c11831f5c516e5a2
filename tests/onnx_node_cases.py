#!/usr/bin/python3
"""Dumps ONNX backend node tests (shipped with the onnx Python package) into a
form the C++ tests read without protobuf: one folder per case holding
manifest.txt and .npy tensors.

usage: onnx_node_cases.py OUT_DIR CASE [CASE ...]

manifest.txt, one item per line:
  op <OpType>
  opset <n>
  outputs <n>
  attr_int <name> <v> | attr_ints <name> <v...> | attr_float <name> <v>
  attr_floats <name> <v...> | attr_string <name> <s> | attr_tensor <name> <dtype> <file>
  input <dtype> <file>     (or: input - -  for an omitted optional input)
  output <dtype> <file>
dtype is tandem's name (f32, bf16, ...). bf16 tensors are stored as uint16 bits.
A case using something tandem has no dtype for gets "unsupported <why>", a case
the onnx package does not ship gets "missing <path>".
"""
import os
import sys

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, numpy_helper

NODE_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
DTYPES = {
    TensorProto.FLOAT: "f32", TensorProto.UINT8: "u8", TensorProto.INT8: "i8",
    TensorProto.INT32: "i32", TensorProto.INT64: "i64", TensorProto.BOOL: "bool",
    TensorProto.FLOAT16: "f16", TensorProto.DOUBLE: "f64", TensorProto.BFLOAT16: "bf16",
}


class Unsupported(Exception):
    pass


def tensor_array(t, declared):
    """The tensor's values; bf16 as uint16 bits (onnx stores them as UINT16)."""
    if declared == TensorProto.BFLOAT16:
        if t.raw_data:
            return np.frombuffer(t.raw_data, dtype="<u2").reshape(tuple(t.dims))
        return np.array(t.int32_data, dtype=np.uint16).reshape(tuple(t.dims))
    return numpy_helper.to_array(t).reshape(tuple(t.dims))


def save(folder, name, t, declared):
    if declared not in DTYPES:
        raise Unsupported(f"dtype {TensorProto.DataType.Name(declared)}")
    np.save(os.path.join(folder, name), tensor_array(t, declared).copy(order="C"))
    return f"{DTYPES[declared]} {name}"


def attr_line(folder, a):
    if a.type == AttributeProto.INT:
        return f"attr_int {a.name} {a.i}"
    if a.type == AttributeProto.INTS:
        return f"attr_ints {a.name} " + " ".join(str(v) for v in a.ints)
    if a.type == AttributeProto.FLOAT:
        return f"attr_float {a.name} {float(a.f)!r}"
    if a.type == AttributeProto.FLOATS:
        return f"attr_floats {a.name} " + " ".join(repr(float(v)) for v in a.floats)
    if a.type == AttributeProto.STRING:
        return f"attr_string {a.name} {a.s.decode()}"
    if a.type == AttributeProto.TENSOR:
        return f"attr_tensor {a.name} " + save(folder, f"attr_{a.name}.npy", a.t, a.t.data_type)
    raise Unsupported(f"attribute type {a.type}")


def dump(case, out_dir):
    src = os.path.join(NODE_DIR, case)
    model = onnx.load(os.path.join(src, "model.onnx"))
    g = model.graph
    if len(g.node) != 1:
        raise Unsupported("more than one node")
    node = g.node[0]
    folder = os.path.join(out_dir, case)
    os.makedirs(folder, exist_ok=True)
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    lines = [f"op {node.op_type}", f"opset {opset}", f"outputs {len(node.output)}"]
    lines += [attr_line(folder, a) for a in node.attribute]
    data = os.path.join(src, "test_data_set_0")
    declared = {v.name: v.type.tensor_type.elem_type for v in list(g.input) + list(g.output)}
    inputs = {}
    for i, v in enumerate(g.input):
        inputs[v.name] = onnx.load_tensor(os.path.join(data, f"input_{i}.pb"))
    for i, name in enumerate(node.input):
        if not name:
            lines.append("input - -")
            continue
        lines.append("input " + save(folder, f"input_{i}.npy", inputs[name], declared[name]))
    for i, v in enumerate(g.output):
        t = onnx.load_tensor(os.path.join(data, f"output_{i}.pb"))
        lines.append("output " + save(folder, f"output_{i}.npy", t, declared[v.name]))
    return lines


def main():
    out_dir = sys.argv[1]
    for case in sys.argv[2:]:
        try:
            if not os.path.isdir(os.path.join(NODE_DIR, case)):
                lines = [f"missing {os.path.join(NODE_DIR, case)}"]
            else:
                lines = dump(case, out_dir)
        except Unsupported as e:
            lines = [f"unsupported {e}"]
        os.makedirs(os.path.join(out_dir, case), exist_ok=True)
        with open(os.path.join(out_dir, case, "manifest.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
