#pragma once
// A labelled image dataset: sample i is an f32 [C,H,W] image and an int64
// class label. Loader workers call get() / read_into() from several threads
// at once, so both must be safe to call concurrently.
#include <cstdint>
#include <cstring>
#include <string>

#include "core/tensor.h"

namespace tandem::train {

struct Sample {
  Tensor image;  // f32 [C,H,W]
  int64_t label = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual Sample get(int64_t i) const = 0;
  // [C,H,W], the same for every sample.
  virtual Shape image_shape() const = 0;
  virtual int64_t num_classes() const = 0;
  // Writes sample i's image to `image` (C*H*W floats) and returns its label;
  // a dataset may override it to skip get()'s allocation.
  virtual int64_t read_into(int64_t i, float* image) const {
    Sample s = get(i);
    check(s.image.desc() == TensorDesc{DType::f32, image_shape()},
          "dataset sample " + std::to_string(i) + " is " + s.image.desc().str() + ", expected f32" +
              shape_str(image_shape()));
    std::memcpy(image, s.image.raw(), s.image.bytes());
    return s.label;
  }
};

}  // namespace tandem::train
