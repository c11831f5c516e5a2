#pragma once
// ONNX AttributeProto -> core/attributes.h AttrValue.
#include <string>

#include <onnx/onnx_pb.h>

#include "core/attributes.h"

namespace tandem {

// INT -> int64, FLOAT -> float, STRING -> string, INTS/FLOATS/STRINGS ->
// vectors, TENSOR -> Tensor (external data read relative to `base_dir`).
// Subgraphs, sparse tensors, tensor lists and type protos have no AttrValue:
// Error. Attributes from old files that lack `type` are typed by the field
// that is set. Errors name the attribute; callers add node and file.
AttrValue attribute_from_proto(const onnx::AttributeProto& a, const std::string& base_dir);

// Every attribute of `node`; a name given twice is an Error.
Attributes attributes_from_node(const onnx::NodeProto& node, const std::string& base_dir);

}  // namespace tandem
