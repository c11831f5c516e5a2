#pragma once
// TF.js graph model (model.json + weight shards) -> tandem::Graph.
//
// Weights stored as float16 or uint8/uint16-quantized are dequantized to
// float32 at load. TF ops map onto tandem's (ONNX) ops with NHWC semantics
// kept: inputs and outputs are exactly the TF tensors, while convolutions
// run in NCHW inside (see formats/tfjs/builder.h). Graph inputs are the
// Placeholders (named as the node); outputs are the signature's outputs, or
// the nodes nobody consumes, each value named as TF names the tensor. Every
// failure is a tandem::Error naming the file and, where one is at fault,
// the node and op.
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tandem {

struct TfjsImportOptions {
  // Tensor names to output ("node" or "node:k"); empty: the signature's.
  std::vector<std::string> outputs;
  // Makes the first extent of every input unknown, so one loaded model runs
  // any batch size (the converter often fixes it to 1).
  bool dynamic_batch = false;
};

Graph load_tfjs(const std::string& model_json, const TfjsImportOptions& options = {});

// True when `path` names a TF.js model (a .json file).
bool is_tfjs_model_path(const std::string& path);

}  // namespace tandem
