#pragma once
// tandem::Graph -> ONNX model file, through libonnx's generated protobuf
// classes: the reverse of onnx_importer.h, for graphs tandem builds itself
// (a trained model, train/export.h).
//
// What the file holds:
// - every constant value a live node reads (or a graph output is) as an
//   initializer named like the value;
// - graph inputs with their dtype and shape, a -1 extent written as its
//   dim_names entry ("batch") or left without a value;
// - graph outputs with their dtype and shape (ONNX's checker wants one on
//   every graph output: the caller sets it, -1 for extents known only at
//   run time; an empty shape is written as a scalar's);
// - live nodes in the graph's order with their attributes; an omitted
//   optional input (kNoValue) as "".
// The opset is the graph's, for the default domain; nodes of another domain
// import that domain at version 1. Internal ops ("tandem.FusedConv") have no
// ONNX meaning and are refused, as are nameless or twice-named values.
#include <string>

#include <onnx/onnx_pb.h>

#include "graph/graph.h"

namespace tandem {

struct OnnxExportOptions {
  std::string producer_name = "tandem";
  std::string graph_name = "tandem";
  std::string doc_string;
};

onnx::ModelProto to_onnx_model(const Graph& g, const OnnxExportOptions& options = {});

// Writes the model atomically (a reader sees the old file or the new one);
// errors name `path`.
void save_onnx(const Graph& g, const std::string& path, const OnnxExportOptions& options = {});

}  // namespace tandem
