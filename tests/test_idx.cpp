#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "formats/idx.h"

namespace tandem {
namespace {

const std::string kFashion = "/usr/share/datasets/fashion-mnist/";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tandem_idx_" + name)).string();
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes, bool gz) {
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
    gzclose(f);
    return;
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  if (!bytes.empty()) ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());  // data() may be null
  std::fclose(f);
}

// Header for `type` with these extents, as the IDX description gives it.
std::vector<uint8_t> header(uint8_t type, std::vector<uint32_t> extents) {
  std::vector<uint8_t> h{0, 0, type, uint8_t(extents.size())};
  for (uint32_t e : extents)
    for (int s = 24; s >= 0; s -= 8) h.push_back(uint8_t(e >> s));
  return h;
}

TEST(Idx, FashionMnistTestSetHasItsShapesAndThousandImagesPerClass) {
  if (!std::filesystem::exists(kFashion + "t10k-labels-idx1-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  Tensor labels = read_idx(kFashion + "t10k-labels-idx1-ubyte.gz");
  Tensor images = read_idx(kFashion + "t10k-images-idx3-ubyte.gz");
  EXPECT_EQ(labels.dtype(), DType::u8);
  EXPECT_EQ(labels.shape(), (Shape{10000}));
  EXPECT_EQ(images.shape(), (Shape{10000, 28, 28}));
  // Fashion-MNIST's test set is balanced: 1,000 of each of its 10 classes.
  std::vector<int> per_class(10, 0);
  for (int64_t i = 0; i < labels.numel(); ++i) {
    uint8_t c = labels.data<uint8_t>()[i];
    ASSERT_LT(c, 10);
    ++per_class[c];
  }
  for (int c = 0; c < 10; ++c) EXPECT_EQ(per_class[size_t(c)], 1000) << "class " << c;
}

TEST(Idx, WiderTypesAreBigEndianAndI16IsWidened) {
  for (bool gz : {false, true}) {
    std::vector<uint8_t> b = header(0x0B, {3});
    for (int16_t v : {int16_t(-2), int16_t(300), int16_t(-32768)}) b.push_back(uint8_t(uint16_t(v) >> 8)), b.push_back(uint8_t(v));
    std::string p = temp_path(gz ? "i16.gz" : "i16");
    write_bytes(p, b, gz);
    Tensor t = read_idx(p);
    ASSERT_EQ(t.dtype(), DType::i32);
    EXPECT_EQ(t.data<int32_t>()[0], -2);
    EXPECT_EQ(t.data<int32_t>()[1], 300);
    EXPECT_EQ(t.data<int32_t>()[2], -32768);

    b = header(0x0D, {1, 2});
    for (uint8_t x : {0x3F, 0x80, 0x00, 0x00, 0xC0, 0x49, 0x0F, 0xDB}) b.push_back(x);  // 1.0f, -3.14159274f
    write_bytes(p, b, gz);
    t = read_idx(p);
    ASSERT_EQ(t.shape(), (Shape{1, 2}));
    EXPECT_EQ(t.data<float>()[0], 1.0f);
    EXPECT_EQ(t.data<float>()[1], -3.14159274f);
    std::filesystem::remove(p);
  }
}

TEST(Idx, BadFilesAreErrorsNamingTheFile) {
  std::string p = temp_path("bad");
  std::vector<std::vector<uint8_t>> bad = {
      {1, 0, 8, 1, 0, 0, 0, 1, 7},               // bad magic
      {0, 0, 0x42, 1, 0, 0, 0, 1, 7},            // unknown type
      {0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1},   // 4 bytes promised, 1 given
      {0, 0, 8, 1, 0, 0, 0, 1, 7, 8},            // data past the extents
      {0, 0, 8},                                 // cut inside the header
      {0, 0, 0x0E, 2, 0x7f, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 1},  // extents overflowing
      {0, 0, 8, 1, 0x80, 0, 0, 0, 7},            // 2 GB promised, 1 byte given (read as it comes, not allocated first)
      {},                                        // empty
  };
  for (const auto& b : bad) {
    write_bytes(p, b, false);
    try {
      read_idx(p);
      ADD_FAILURE() << "accepted " << b.size() << " bytes";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove(p);
  EXPECT_THROW(read_idx(temp_path("does_not_exist")), Error);
}

}  // namespace
}  // namespace tandem
