#pragma once
// MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool (ONNX opsets 11-17).
//   X [N, C, D1..Dk] -> Y [N, C, O1..Ok] (Global*: every O is 1)
// MaxPool's optional second output (Indices, int64) is described here;
// backends may reject it.
#include <string>

#include "core/attributes.h"
#include "core/shape.h"
#include "ops/spatial.h"

namespace tandem::ops {

enum class PoolKind { max, average };

struct PoolParams {
  PoolKind kind = PoolKind::max;
  bool global = false;
  bool count_include_pad = false;  // AveragePool only
  Window window;                   // for Global*: kernel = whole spatial extent
};

bool is_pool(const std::string& op_type);
PoolParams pool_params(const std::string& op_type, const Attributes& attrs, const Shape& x);

// A 2-D pooling as training describes it (PyTorch's MaxPool2d/AvgPool2d).
struct Pool2dParams {
  PoolKind kind = PoolKind::max;
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};   // on both sides, at most kernel / 2 (PyTorch's rule)
  int64_t dilation[2] = {1, 1};  // max only
  bool count_include_pad = true;  // average only: PyTorch's default divides by the full window
};

// x [N, C, H, W] -> y [N, C, OH, OW]; throws Error when they do not fit.
Shape pool2d_output_shape(const Pool2dParams& p, const Shape& x);

}  // namespace tandem::ops
