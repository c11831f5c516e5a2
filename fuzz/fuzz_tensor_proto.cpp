// A serialized onnx::TensorProto (.pb), as ONNX's test data and `tandem run`
// inputs come: typed fields, raw data, dims that disagree with either.
#include "formats/tensor_file.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tandem::fuzz::write_scratch("tensor.pb", {data, size});
  tandem::fuzz::rejecting_bad_input([&] { tandem::read_tensor_file(path); });
  return 0;
}
