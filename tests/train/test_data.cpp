// Fashion-MNIST through the Dataset interface: Debian's dataset-fashion-mnist
// files normalized as torchvision's ToTensor + Normalize(0.2860, 0.3530)
// (compared with numpy float32, byte-exact), and malformed IDX pairs
// (truncated, bad magic, mismatched counts, wrong types, a label out of
// range) as Errors naming the file.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>

#include "formats/idx.h"
#include "tests/numpy_ref.h"
#include "tests/temp_dir.h"
#include "train/data/fashion_mnist.h"

namespace tandem::train {
namespace {

bool have_fashion_mnist() {
  return std::filesystem::exists(std::string(kFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz");
}

TEST(FashionMnist, TestSplitIsNormalizedLikeTorchvision) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  FashionMnist test = FashionMnist::load(Split::test);
  EXPECT_EQ(test.size(), 10000);
  EXPECT_EQ(test.image_shape(), (Shape{1, 28, 28}));
  EXPECT_EQ(test.num_classes(), 10);
  Tensor raw = read_idx(std::string(kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz");
  Tensor labels = read_idx(std::string(kFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz");
  const int64_t n = 16, last = test.size() - 1;
  Tensor got = Tensor::empty(DType::f32, {n + 1, 1, 28, 28});
  Tensor first_raw = Tensor::empty(DType::u8, {n + 1, 28, 28});
  for (int64_t i = 0; i <= n; ++i) {
    int64_t src = i < n ? i : last;
    Sample s = test.get(src);
    ASSERT_EQ(s.image.shape(), (Shape{1, 28, 28}));
    EXPECT_EQ(s.label, labels.data<uint8_t>()[src]) << "sample " << src;
    std::memcpy(got.data<float>() + i * 784, s.image.data<float>(), 784 * sizeof(float));
    std::memcpy(first_raw.data<uint8_t>() + i * 784, raw.data<uint8_t>() + src * 784, 784);
  }
  testing::NumpyChecks checks;
  checks.add(got,
             "r = ((x0.astype(np.float32) / np.float32(255) - np.float32(0.2860)) / np.float32(0.3530))"
             ".reshape(-1, 1, 28, 28)",
             {first_raw}, "normalized images");
  checks.check();
  EXPECT_THROW(test.get(test.size()), Error);
}

// Writes a gzip IDX file: `type` code, extents, raw big-endian payload.
std::string write_idx(const testing::TempDir& dir, const std::string& name, uint8_t type,
                      const std::vector<uint32_t>& extents, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> bytes{0, 0, type, uint8_t(extents.size())};
  for (uint32_t e : extents)
    for (int s = 24; s >= 0; s -= 8) bytes.push_back(uint8_t(e >> s));
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  std::string path = dir.file(name);
  gzFile f = gzopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  EXPECT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
  gzclose(f);
  return path;
}

std::string images(const testing::TempDir& dir, uint32_t n) {
  return write_idx(dir, "images.gz", 0x08, {n, 3, 2}, std::vector<uint8_t>(n * 6, 128));
}

// Expects constructing the dataset to throw an Error naming `path` and
// containing `text`.
void expect_error(const std::string& images_path, const std::string& labels_path, const std::string& path,
                  const std::string& text) {
  try {
    FashionMnist d(images_path, labels_path);
    FAIL() << "accepted; expected " << text;
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find(text), std::string::npos) << m;
  }
}

TEST(FashionMnist, SmallWellFormedPairLoads) {
  testing::TempDir dir("fmnist_ok");
  FashionMnist d(images(dir, 4), write_idx(dir, "labels.gz", 0x08, {4}, {0, 9, 3, 1}));
  EXPECT_EQ(d.size(), 4);
  EXPECT_EQ(d.image_shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(d.get(1).label, 9);
  EXPECT_FLOAT_EQ(d.get(3).image.data<float>()[5], (128.0f / 255.0f - 0.2860f) / 0.3530f);
}

TEST(FashionMnist, LabelOutOfRangeNamesFileAndSample) {
  testing::TempDir dir("fmnist_label");
  std::string labels = write_idx(dir, "labels.gz", 0x08, {5}, {1, 2, 3, 10, 4});
  expect_error(images(dir, 5), labels, labels, "label 10 of sample 3 is outside [0, 10)");
}

TEST(FashionMnist, MalformedFilesNameTheFile) {
  testing::TempDir dir("fmnist_bad");
  std::string labels = write_idx(dir, "labels.gz", 0x08, {4}, {0, 1, 2, 3});
  std::string good_images = images(dir, 4);

  std::string truncated = write_idx(dir, "truncated.gz", 0x08, {4, 3, 2}, std::vector<uint8_t>(20, 1));
  expect_error(truncated, labels, truncated, "truncated");
  std::string magic = dir.write("magic.idx", std::string("\x01\x02\x08\x01\x00\x00\x00\x04", 8) + "abcd");
  expect_error(good_images, magic, magic, "bad magic");
  std::string short_labels = write_idx(dir, "three.gz", 0x08, {3}, {0, 1, 2});
  expect_error(good_images, short_labels, short_labels, "3 labels for 4 images");
  std::string wide_labels = write_idx(dir, "wide.gz", 0x0C, {4}, std::vector<uint8_t>(16, 0));
  expect_error(good_images, wide_labels, wide_labels, "expected u8 labels");
  std::string flat_images = write_idx(dir, "flat.gz", 0x08, {4, 6}, std::vector<uint8_t>(24, 0));
  expect_error(flat_images, labels, flat_images, "expected u8 images [N,H,W]");
  expect_error(dir.file("missing.gz"), labels, dir.file("missing.gz"), "cannot open");
}

}  // namespace
}  // namespace tandem::train
