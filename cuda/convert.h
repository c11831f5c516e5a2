#pragma once
// Autocast's precision changes and channels-last's layout changes on the GPU
// (cuda/convert.cu).
#include "cuda/train_context.h"

namespace tandem::cuda::train {

// A new device tensor of dtype `to` and layout `layout` (plain or, 4-D,
// nhwc) holding x's values, rounded to `to` (nearest even).
Tensor converted_copy(TrainContext& c, const Tensor& x, DType to, Layout layout,
                      const ErrorContext& where);
// dst = src (or dst += src, accumulating), converted to dst's dtype and
// layout; same shape.
void convert_into(TrainContext& c, const Tensor& src, const Tensor& dst, bool accumulate,
                  const ErrorContext& where);

// An nhwc x [N, C, H, W] with `channels` channels instead of C: its own
// followed by zeros, or its first `channels` (same dtype).
Tensor with_channels(TrainContext& c, const Tensor& x, int64_t channels, const ErrorContext& where);

}  // namespace tandem::cuda::train
