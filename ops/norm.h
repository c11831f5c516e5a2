#pragma once
// Normalizations.
// BatchNormalization over channel axis 1:
//   X [N, C, D1..Dk] (k >= 0), scale/B/mean/var [C]
//   Y = (X - mean) / sqrt(var + epsilon) * scale + B
// Imported models run it in inference form (ONNX opsets 11-17; training_mode=1
// and the optional running-statistics outputs are rejected); training
// normalizes with the batch statistics and updates the running ones.
#include <cmath>
#include <vector>

#include "core/attributes.h"
#include "core/host_device.h"
#include "core/shape.h"
#include "core/tensor.h"

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

// LayerNormalization (ONNX opset 17): X is normalized over its extents from
// `axis` on (default -1; negative counts from the end), each "row" on its own:
//   Y = (X - mean) / sqrt(var + epsilon) * Scale + B
// Scale and the optional B broadcast to X.shape[axis:]. The optional outputs
// Mean and InvStdDev have X's rank with 1 from `axis` on, and are float32:
// stash_type 1 (float32), the default, is the only one taken.
struct LayerNormParams {
  int64_t axis = 0;   // normalized into [0, rank)
  int64_t rows = 0;   // product of X.shape[:axis]
  int64_t cols = 0;   // product of X.shape[axis:], the normalized extent
  float epsilon = 1e-5f;
  // Training also normalizes a run of axes that is not the last
  // (LayerNorm2d: the channels of [N, C, H, W]): X viewed as
  // [rows, cols, inner], each of the rows * inner vectors of cols values
  // (stride inner) on its own. 1 for ONNX's form.
  int64_t inner = 1;
};

LayerNormParams layernorm_params(const Attributes& attrs, const Shape& x);
// Training's form: the extents [axis, end) of x normalized (0 <= axis < end
// <= rank); LayerNorm's end is the rank, LayerNorm2d's axis 1 and end 2.
LayerNormParams layernorm_params(const Shape& x, int64_t axis, int64_t end, float epsilon);

// Scale or B (any float dtype) spread over one row of `cols` values as
// float: a tensor broadcast along some of X.shape[axis:] repeats.
std::vector<float> layernorm_row_values(const Tensor& t, const Shape& x, const LayerNormParams& p);

}  // namespace tandem::ops
