#pragma once
// ONNX TypeProto / value_info -> Value dtype, shape and dim names, and ONNX's
// own shape inference for intermediate values.
#include <onnx/onnx_pb.h>

#include "graph/graph.h"

namespace tandem {

// Copies a tensor TypeProto into `v`. With `required` (graph inputs) a
// non-tensor type, an unsupported element type or a negative extent is an
// Error naming the value; otherwise such types are left out and `v` keeps what
// it had.
void apply_type(const onnx::TypeProto& type, Value& v, bool required);

// Runs onnx::shape_inference::InferShapes on `model` (whose graph `g` was
// built from) and copies every inferred tensor type onto g's non-constant
// values that are produced by nodes or are graph outputs. Inference failures
// are swallowed: they must not stop an import. Returns false if it failed.
bool infer_value_types(onnx::ModelProto& model, Graph& g);

}  // namespace tandem
