// IDX (MNIST, Fashion-MNIST), plain or gzip: header, extents, data size.
#include "formats/idx.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tandem::fuzz::write_scratch("data.idx", {data, size});
  tandem::fuzz::rejecting_bad_input([&] { tandem::read_idx(path); });
  return 0;
}
