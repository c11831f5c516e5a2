#pragma once
// Whole-file reads and writes for the format readers. Every error names the
// file; sizes are checked before anything is allocated.
#include <cstdint>
#include <string>

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

}  // namespace tandem
