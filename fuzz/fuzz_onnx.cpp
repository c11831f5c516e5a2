// ONNX import from arbitrary bytes: protobuf parsing (libonnx's generated
// classes), tandem's translation of nodes, attributes, initializers and
// external data, then shape inference and constant folding.
#include "fuzz/onnx_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::fuzz::import_onnx_bytes({data, size});
  return 0;
}
