#include "formats/load_model.h"

#include "formats/onnx/onnx_importer.h"

namespace tandem {

Graph load_model(const std::string& path, const ModelLoadOptions& options) {
  if (is_tfjs_model_path(path)) return load_tfjs(path, options.tfjs);
  return load_onnx(path);
}

}  // namespace tandem
