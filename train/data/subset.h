#pragma once
// Views of another Dataset: its first n samples (`--limit-train N`), and an
// in-memory dataset of tensors (torch.utils.data.TensorDataset) for tests
// and small experiments.
#include "train/data/dataset.h"

namespace tandem::train {

// Samples [0, n) of `data`, which must outlive the view; n <= data.size().
class Prefix : public Dataset {
 public:
  Prefix(const Dataset& data, int64_t n);
  int64_t size() const override { return n_; }
  Sample get(int64_t i) const override;
  Shape image_shape() const override { return data_.image_shape(); }
  int64_t num_classes() const override { return data_.num_classes(); }
  int64_t read_into(int64_t i, float* image) const override;

 private:
  void check_index(int64_t i) const;
  const Dataset& data_;
  int64_t n_;
};

// images f32 [N, C, H, W], labels i64 [N] in [0, classes).
class TensorDataset : public Dataset {
 public:
  TensorDataset(Tensor images, Tensor labels, int64_t classes);
  int64_t size() const override { return images_.dim(0); }
  Sample get(int64_t i) const override;
  Shape image_shape() const override { return {images_.dim(1), images_.dim(2), images_.dim(3)}; }
  int64_t num_classes() const override { return classes_; }

 private:
  Tensor images_, labels_;
  int64_t classes_;
};

}  // namespace tandem::train
