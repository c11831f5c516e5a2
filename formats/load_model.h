#pragma once
// One entry point for every model format tandem reads: a .json path is a
// TF.js graph model, anything else ONNX.
#include <string>

#include "formats/tfjs/tfjs_importer.h"
#include "graph/graph.h"

namespace tandem {

struct ModelLoadOptions {
  TfjsImportOptions tfjs;
};

Graph load_model(const std::string& path, const ModelLoadOptions& options = {});

}  // namespace tandem
