#include "train/data/fashion_mnist.h"

#include <cstdlib>

#include "formats/idx.h"

namespace tandem::train {

std::string fashion_mnist_dir() {
  const char* dir = std::getenv("TANDEM_FASHION_MNIST_DIR");
  return dir && *dir ? dir : kFashionMnistDir;
}

namespace {

ErrorContext file_context(const std::string& path, const Tensor& t) {
  return ErrorContext{path, {}, {}, t.desc().str()};
}

void check_labels(const Tensor& labels, const std::string& path) {
  const uint8_t* l = labels.data<uint8_t>();
  for (int64_t i = 0; i < labels.numel(); ++i)
    check(l[i] < FashionMnist::kClasses,
          "label " + std::to_string(l[i]) + " of sample " + std::to_string(i) + " is outside [0, " +
              std::to_string(FashionMnist::kClasses) + ")",
          ErrorContext{path, {}, {}, {}});
}

}  // namespace

FashionMnist::FashionMnist(const std::string& images_path, const std::string& labels_path)
    : images_(read_idx(images_path)), labels_(read_idx(labels_path)) {
  check(images_.dtype() == DType::u8 && images_.rank() == 3 && images_.dim(1) > 0 && images_.dim(2) > 0,
        "expected u8 images [N,H,W]", file_context(images_path, images_));
  check(labels_.dtype() == DType::u8 && labels_.rank() == 1, "expected u8 labels [N]",
        file_context(labels_path, labels_));
  check(labels_.dim(0) == images_.dim(0),
        std::to_string(labels_.dim(0)) + " labels for " + std::to_string(images_.dim(0)) + " images in " + images_path,
        file_context(labels_path, labels_));
  check_labels(labels_, labels_path);
}

FashionMnist FashionMnist::load(Split split, const std::string& dir) {
  std::string prefix = dir + (split == Split::train ? "/train" : "/t10k");
  return FashionMnist(prefix + "-images-idx3-ubyte.gz", prefix + "-labels-idx1-ubyte.gz");
}

Sample FashionMnist::get(int64_t i) const {
  Sample s{Tensor::empty(DType::f32, image_shape()), 0};
  s.label = read_into(i, s.image.data<float>());
  return s;
}

int64_t FashionMnist::read_into(int64_t i, float* image) const {
  check(i >= 0 && i < size(), "sample " + std::to_string(i) + " is outside a dataset of " + std::to_string(size()));
  const int64_t pixels = images_.dim(1) * images_.dim(2);
  const uint8_t* src = images_.data<uint8_t>() + i * pixels;
  for (int64_t k = 0; k < pixels; ++k) image[k] = (float(src[k]) / 255.0f - kMean) / kStd;
  return labels_.data<uint8_t>()[i];
}

}  // namespace tandem::train
