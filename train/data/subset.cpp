#include "train/data/subset.h"

namespace tandem::train {

Prefix::Prefix(const Dataset& data, int64_t n) : data_(data), n_(n) {
  check(n >= 0 && n <= data.size(), "cannot take the first " + std::to_string(n) + " samples of a dataset of " +
                                        std::to_string(data.size()));
}

void Prefix::check_index(int64_t i) const {
  check(i >= 0 && i < n_, "sample " + std::to_string(i) + " outside the first " + std::to_string(n_));
}

Sample Prefix::get(int64_t i) const {
  check_index(i);
  return data_.get(i);
}

int64_t Prefix::read_into(int64_t i, float* image) const {
  check_index(i);
  return data_.read_into(i, image);
}

TensorDataset::TensorDataset(Tensor images, Tensor labels, int64_t classes)
    : images_(std::move(images)), labels_(std::move(labels)), classes_(classes) {
  check(images_.dtype() == DType::f32 && images_.rank() == 4, "TensorDataset images must be f32 [N,C,H,W], got " +
                                                                  images_.desc().str());
  check(labels_.dtype() == DType::i64 && labels_.rank() == 1 && labels_.dim(0) == images_.dim(0),
        "TensorDataset labels must be i64 [" + std::to_string(images_.dim(0)) + "], got " + labels_.desc().str());
  check(classes > 0, "TensorDataset needs at least one class");
}

Sample TensorDataset::get(int64_t i) const {
  check(i >= 0 && i < size(), "sample " + std::to_string(i) + " outside a dataset of " + std::to_string(size()));
  const Shape s = image_shape();
  const int64_t pixels = shape_numel(s);
  Tensor image = Tensor::empty(DType::f32, s);
  std::memcpy(image.raw(), images_.data<float>() + i * pixels, size_t(pixels) * sizeof(float));
  return Sample{image, labels_.data<int64_t>()[i]};
}

}  // namespace tandem::train
