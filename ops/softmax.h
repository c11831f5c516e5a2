#pragma once
// Softmax and LogSoftmax (ONNX opsets 11-17). Both views reduce X to
// [outer, len, inner] and normalize over `len`:
//   opset < 13: X is coerced to 2-D at `axis` (default 1): outer = prod(d < axis),
//               len = prod(d >= axis), inner = 1
//   opset >= 13: one axis (default -1): len = X[axis], inner = prod(d > axis)
#include "core/attributes.h"
#include "core/shape.h"

namespace tandem::ops {

struct SoftmaxSplit {
  int64_t outer = 1, len = 1, inner = 1;
};

SoftmaxSplit softmax_split(const Attributes& attrs, int opset, const Shape& x);

}  // namespace tandem::ops
