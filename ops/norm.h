#pragma once
// BatchNormalization over channel axis 1:
//   X [N, C, D1..Dk] (k >= 0), scale/B/mean/var [C]
//   Y = (X - mean) / sqrt(var + epsilon) * scale + B
// Imported models run it in inference form (ONNX opsets 11-17; training_mode=1
// and the optional running-statistics outputs are rejected); training
// normalizes with the batch statistics and updates the running ones.
#include <cmath>

#include "core/attributes.h"
#include "core/host_device.h"
#include "core/shape.h"

namespace tandem::ops {

struct BatchNormParams {
  // Batch statistics (and the running-statistics update) or the running ones.
  bool training = false;
  float momentum = 0.1f;  // running = (1 - momentum) * running + momentum * batch
  float epsilon = 1e-5f;
  int64_t channels = 0;   // C, where known from a model's shapes
};

BatchNormParams batchnorm_params(const Attributes& attrs, const Shape& x);

// One channel's normalization as y = x * scale + shift, the form every
// batch norm kernel applies (one fused multiply-add where the device has
// it): scale = gamma / sqrt(var + epsilon), shift = beta - mean * scale, in
// double and rounded once, so an imported model's batch norm and a trained
// one in eval mode compute the same values from the same statistics.
struct BatchNormAffine {
  float scale, shift;
};
TANDEM_HOST_DEVICE inline BatchNormAffine batch_norm_affine(double gamma, double beta, double mean, double var,
                                                            double epsilon) {
  const double s = gamma / sqrt(var + epsilon);
  return {float(s), float(beta - mean * s)};
}

}  // namespace tandem::ops
