#pragma once
// ONNX TypeProto / value_info -> Value dtype, shape and dim names.
#include <onnx/onnx_pb.h>

#include "graph/graph.h"

namespace tandem {

// Copies a tensor TypeProto into `v`. With `required` (graph inputs) a
// non-tensor type, an unsupported element type or a negative extent is an
// Error naming the value; otherwise such types are left out and `v` keeps what
// it had.
void apply_type(const onnx::TypeProto& type, Value& v, bool required);

// Copies the tensor types in `inferred` (value_info and output, as from
// infer_onnx_shapes_isolated) onto g's values that nodes produce; constants
// and graph inputs keep what the file declared.
void apply_inferred_types(const onnx::GraphProto& inferred, Graph& g);

}  // namespace tandem
