#include "formats/file_bytes.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace tandem {

namespace fs = std::filesystem;

namespace {

// Size of a regular file, or an Error naming it.
uint64_t regular_file_size(const std::string& path) {
  ErrorContext ctx{path, "", "", ""};
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw Error("file not found", ctx);
  if (!fs::is_regular_file(st)) throw Error("not a regular file", ctx);
  uint64_t size = fs::file_size(path, ec);
  if (ec) throw Error("cannot read file size: " + ec.message(), ctx);
  return size;
}

}  // namespace

std::string read_file_bytes(const std::string& path, uint64_t max_bytes) {
  uint64_t size = regular_file_size(path);
  ErrorContext ctx{path, "", "", ""};
  check(size <= max_bytes, "file is " + std::to_string(size) + " bytes, more than the " +
                               std::to_string(max_bytes) + " this reader accepts", ctx);
  return read_file_range(path, 0, size);
}

std::string read_file_range(const std::string& path, uint64_t offset, uint64_t length) {
  ErrorContext ctx{path, "", "", ""};
  uint64_t size = regular_file_size(path);
  check(offset <= size && length <= size - offset,
        "wanted bytes [" + std::to_string(offset) + ", +" + std::to_string(length) +
            ") but the file has " + std::to_string(size),
        ctx);
  std::ifstream in(path, std::ios::binary);
  check(bool(in), "cannot open file", ctx);
  std::string bytes(size_t(length), '\0');
  in.seekg(std::streamoff(offset));
  if (length) in.read(bytes.data(), std::streamsize(length));
  check(bool(in) && uint64_t(in.gcount()) == length, "read failed", ctx);
  return bytes;
}

void write_file_bytes(const std::string& path, const std::string& bytes) {
  ErrorContext ctx{path, "", "", ""};
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  check(bool(out), "cannot open file for writing", ctx);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  check(!out.fail(), "write failed", ctx);
}

}  // namespace tandem
