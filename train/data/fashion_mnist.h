#pragma once
// Fashion-MNIST (and any IDX image/label pair like it) as a Dataset: u8
// [N,H,W] images kept as they are in memory, converted per sample to f32
// [1,H,W] as torchvision's ToTensor + Normalize would: (x / 255 - mean) / std,
// with Fashion-MNIST's mean 0.2860 and std 0.3530.
// Debian's dataset-fashion-mnist installs the gzip IDX files in kFashionMnistDir.
#include <string>

#include "train/data/dataset.h"

namespace tandem::train {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
// $TANDEM_FASHION_MNIST_DIR when set (a machine without the Debian package),
// else kFashionMnistDir.
std::string fashion_mnist_dir();

enum class Split { train, test };

class FashionMnist : public Dataset {
 public:
  static constexpr float kMean = 0.2860f;
  static constexpr float kStd = 0.3530f;
  static constexpr int64_t kClasses = 10;

  // Reads both files; a malformed file (formats/idx.h), images that are not
  // u8 [N,H,W], labels that are not u8 [N] for the same N, or a label
  // outside [0, 10) is an Error naming the file (and the sample).
  FashionMnist(const std::string& images_path, const std::string& labels_path);
  // The standard file names of `split` in `dir`.
  static FashionMnist load(Split split, const std::string& dir = fashion_mnist_dir());

  int64_t size() const override { return images_.dim(0); }
  Sample get(int64_t i) const override;
  Shape image_shape() const override { return {1, images_.dim(1), images_.dim(2)}; }
  int64_t num_classes() const override { return kClasses; }
  int64_t read_into(int64_t i, float* image) const override;

 private:
  Tensor images_;  // u8 [N,H,W]
  Tensor labels_;  // u8 [N]
};

}  // namespace tandem::train
