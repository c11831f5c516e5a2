#pragma once
// BatchNormalization (ONNX opsets 11-17), inference form only:
//   X [N, C, D1..Dk] (k >= 0), scale/B/mean/var [C]
//   Y = (X - mean) / sqrt(var + epsilon) * scale + B
// training_mode=1 and the optional running-statistics outputs are rejected.
#include "core/attributes.h"
#include "core/shape.h"

namespace tandem::ops {

struct BatchNormParams {
  float epsilon = 1e-5f;
  int64_t channels = 0;
};

BatchNormParams batchnorm_params(const Attributes& attrs, const Shape& x);

}  // namespace tandem::ops
