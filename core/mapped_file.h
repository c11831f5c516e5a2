#pragma once
// A file's bytes mapped read-only into memory (POSIX mmap): for large files
// read once, such as a 100 MB model to parse or hash, where reading into a
// buffer would zero it, copy every byte and fault in fresh pages first.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tandem {

class MappedFile {
 public:
  // Throws tandem::Error naming `path` when it cannot be opened, is not a
  // regular file or is larger than `max_bytes`. An empty file maps to no bytes.
  explicit MappedFile(const std::string& path, uint64_t max_bytes = UINT64_MAX);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tandem
