#include "formats/idx.h"

#include <zlib.h>

#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/error.h"

namespace tandem {

namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

// Reads exactly n bytes; a short read is a truncated (or corrupt) file.
void read_exactly(gzFile f, void* out, size_t n, const std::string& path) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    unsigned chunk = unsigned(std::min<size_t>(n, size_t(1) << 30));
    int got = gzread(f, p, chunk);
    if (got <= 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      throw Error(std::string("IDX file is truncated or corrupt") + (err != Z_OK && msg ? std::string(": ") + msg : ""),
                  ErrorContext{path, {}, {}, {}});
    }
    p += got;
    n -= size_t(got);
  }
}

// Reads the `n` bytes of data the header promises, growing the buffer as
// they arrive: a 25-byte file claiming 2^31 elements is found short after
// reading what it has, instead of first allocating (and zeroing) 2 GB.
std::vector<uint8_t> read_data(gzFile f, size_t n, const std::string& path) {
  constexpr size_t kChunk = size_t(16) << 20;
  std::vector<uint8_t> raw;
  while (raw.size() < n) {
    const size_t have = raw.size();
    raw.resize(have + std::min(kChunk, n - have));
    read_exactly(f, raw.data() + have, raw.size() - have, path);
  }
  return raw;
}

uint32_t big_endian_u32(const uint8_t* b) {
  return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | uint32_t(b[3]);
}

// The element type a type code names, and its size in the file.
std::pair<DType, size_t> idx_type(uint8_t code, const std::string& path) {
  switch (code) {
    case 0x08: return {DType::u8, 1};
    case 0x09: return {DType::i8, 1};
    case 0x0B: return {DType::i32, 2};
    case 0x0C: return {DType::i32, 4};
    case 0x0D: return {DType::f32, 4};
    case 0x0E: return {DType::f64, 8};
    default: throw Error("unknown IDX element type " + std::to_string(code), ErrorContext{path, {}, {}, {}});
  }
}

// Big-endian elements of `size` bytes into host order (i16 widened to i32);
// the hosts tandem runs on (x86-64, aarch64) are little-endian.
void to_host_order(const std::vector<uint8_t>& raw, size_t size, DType t, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;  // an empty tensor's storage may be null: nothing to copy
  auto* dst = static_cast<uint8_t*>(out.raw());
  if (size == 1) {
    std::memcpy(dst, raw.data(), size_t(n));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* s = raw.data() + size_t(i) * size;
    if (size == 2) {
      int32_t v = int16_t(uint16_t(s[0]) << 8 | s[1]);
      std::memcpy(dst + size_t(i) * 4, &v, 4);
      continue;
    }
    uint8_t* d = dst + size_t(i) * dtype_size(t);
    for (size_t k = 0; k < size; ++k) d[k] = s[size - 1 - k];
  }
}

}  // namespace

Tensor read_idx(const std::string& path) {
  GzFile f(gzopen(path.c_str(), "rb"));
  check(f != nullptr, "cannot open IDX file", ErrorContext{path, {}, {}, {}});
  std::array<uint8_t, 4> magic{};
  read_exactly(f.get(), magic.data(), magic.size(), path);
  check(magic[0] == 0 && magic[1] == 0, "not an IDX file (bad magic)", ErrorContext{path, {}, {}, {}});
  auto [dtype, size] = idx_type(magic[2], path);
  const int dims = magic[3];
  check(dims >= 1, "IDX file with no dimensions", ErrorContext{path, {}, {}, {}});
  std::vector<uint8_t> extents(size_t(dims) * 4);
  read_exactly(f.get(), extents.data(), extents.size(), path);
  Shape shape;
  uint64_t count = 1;
  for (int d = 0; d < dims; ++d) {
    uint32_t e = big_endian_u32(&extents[size_t(d) * 4]);
    check(e == 0 || count <= uint64_t(std::numeric_limits<int64_t>::max()) / 8 / e,
          "IDX extents overflow", ErrorContext{path, {}, {}, {}});
    count *= e;
    shape.push_back(int64_t(e));
  }
  const std::vector<uint8_t> raw = read_data(f.get(), size_t(count) * size, path);
  uint8_t extra = 0;
  check(gzread(f.get(), &extra, 1) == 0, "IDX file has data past its extents", ErrorContext{path, {}, {}, {}});
  Tensor t = Tensor::empty(dtype, shape);
  to_host_order(raw, size, dtype, t);
  return t;
}

}  // namespace tandem
