#pragma once
// The ONNX import target's body, shared by the byte-level target and the
// structure-aware one (which differ only in how inputs are mutated).
#include "formats/onnx/onnx_importer.h"
#include "fuzz/model_target.h"

namespace tandem::fuzz {

inline void import_onnx_bytes(std::span<const uint8_t> bytes) {
  const std::string path = write_scratch("model.onnx", bytes);
  OnnxImportOptions o;
  // ONNX's own shape inference runs in a child process (its crashes are
  // contained there); the fuzzer covers tandem's import and inference.
  o.onnx_shape_inference = false;
  import_and_prepare([&] { return load_onnx(path, o); });
}

}  // namespace tandem::fuzz
