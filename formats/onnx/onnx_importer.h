#pragma once
// ONNX model file -> tandem::Graph, through libonnx's generated protobuf
// classes (no hand parsing).
//
// What the graph holds:
// - initializers (and graph inputs that are also initializers) as constant
//   values; `Constant` nodes with value/value_float(s)/value_int(s) likewise;
// - graph inputs: dtype, shape with -1 for unknown or symbolic extents, and
//   dim_names (empty, or one name per extent with "" for named-less ones);
// - nodes with ONNX op_type/domain/attributes; an empty node name becomes
//   "<op_type>_<index>"; an empty input name becomes kNoValue;
// - value dtypes/shapes from the file's graph outputs and from ONNX's own
//   shape inference where it succeeds (advisory: the executor re-infers);
//   see formats/onnx/shape_inference.h for why that runs in a child process.
// Unknown op types import fine (the executor reports them); subgraph ops
// (If, Loop, Scan) are refused here. Every failure is a tandem::Error naming
// the file and, where one is involved, the node and op.
#include <string>

#include "graph/graph.h"

namespace tandem {

struct OnnxImportOptions {
  bool onnx_shape_inference = true;  // fill intermediate value types
  int shape_inference_timeout_ms = 20000;
};

Graph load_onnx(const std::string& path, const OnnxImportOptions& options = {});

}  // namespace tandem
