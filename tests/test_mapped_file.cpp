// core/mapped_file.h against the bytes written with std::ofstream, and its
// refusals (each names the file).
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/mapped_file.h"
#include "temp_dir.h"

using namespace tandem;

namespace {

std::string write(const std::filesystem::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return p.string();
}

std::string error_of(const std::string& path, uint64_t max_bytes = UINT64_MAX) {
  try {
    MappedFile f(path, max_bytes);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(MappedFile, BytesAreTheFilesBytes) {
  tandem::testing::TempDir dir("mapped");
  std::vector<uint8_t> bytes(3 * 4096 + 17);
  std::mt19937 rng(5);
  for (uint8_t& b : bytes) b = uint8_t(rng());
  const std::string path = write(dir.path() / "data.bin", bytes);
  const MappedFile f(path);
  ASSERT_EQ(f.bytes().size(), bytes.size());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), f.bytes().begin()));
  EXPECT_TRUE(MappedFile(write(dir.path() / "empty.bin", {})).bytes().empty());
}

TEST(MappedFile, RefusalsNameTheFile) {
  tandem::testing::TempDir dir("mapped");
  const std::string missing = (dir.path() / "missing.bin").string();
  EXPECT_NE(error_of(missing).find("file not found"), std::string::npos) << error_of(missing);
  EXPECT_NE(error_of(missing).find(missing), std::string::npos);
  EXPECT_NE(error_of(dir.path().string()).find("not a regular file"), std::string::npos);
  const std::string big = write(dir.path() / "big.bin", std::vector<uint8_t>(100));
  EXPECT_NE(error_of(big, 99).find("more than the 99"), std::string::npos) << error_of(big, 99);
  EXPECT_EQ(error_of(big, 100), "");
}
