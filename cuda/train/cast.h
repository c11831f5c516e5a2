#pragma once
// Autocast's precision changes on the GPU (cuda/train/cast.cu).
#include "cuda/train/common.h"

namespace tandem::cuda::train {

// A new device tensor of dtype `to` holding x rounded to it (nearest even).
Tensor rounded_copy(TrainContext& c, const Tensor& x, DType to, const ErrorContext& where);
// dst = src (or dst += src, accumulating), converted to dst's dtype; same numel.
void widen_into(TrainContext& c, const Tensor& src, const Tensor& dst, bool accumulate, const ErrorContext& where);

}  // namespace tandem::cuda::train
