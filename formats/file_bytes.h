#pragma once
// Whole-file reads and writes for the format readers. Every error names the
// file; sizes are checked before anything is allocated.
#include <cstdint>
#include <cstring>
#include <string>

#include "core/file_write.h"  // write_file_atomically, for the writers that include this

namespace tandem {

// Largest single tensor a file may declare (16 GiB); bigger sizes in a header
// are treated as corruption rather than attempted.
constexpr uint64_t kMaxTensorFileBytes = uint64_t(16) << 30;

// Reads all of `path`; throws Error naming the file when it is missing, not a
// regular file, or larger than `max_bytes`.
std::string read_file_bytes(const std::string& path, uint64_t max_bytes);
// Reads `length` bytes at `offset`; throws Error if the file is shorter.
std::string read_file_range(const std::string& path, uint64_t offset, uint64_t length);
// Writes `bytes` to `path`, replacing it; throws Error on any I/O failure.
void write_file_bytes(const std::string& path, const std::string& bytes);

// Converts n packed little-endian Src values at `src` (any alignment) to Dst:
// file formats store 16-bit ints and uint32 that tandem widens to i32 / i64.
template <typename Src, typename Dst>
void widen(const char* src, Dst* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    Src v;
    std::memcpy(&v, src + size_t(i) * sizeof(Src), sizeof(Src));
    dst[i] = Dst(v);
  }
}

}  // namespace tandem
