// NumPy .npy: the header (a Python dict literal), dtype, shape and order.
#include "formats/npy.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::fuzz::rejecting_bad_input(
      [&] { tandem::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy"); });
  return 0;
}
