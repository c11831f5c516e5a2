#pragma once
// torch.nn.utils.clip_grad_norm_ (L2): the global norm of all gradients;
// if it exceeds max_norm every gradient is scaled by max_norm / (norm + 1e-6).
// A non-finite norm (an inf or nan gradient) leaves the gradients untouched
// and is reported, so the caller skips the step instead of writing nan into
// the weights (torch would multiply by nan).
#include <cstdint>

#include "train/parameter.h"

namespace tandem::train {

enum class NonFinite { report, error };

struct ClipResult {
  double total_norm = 0;  // before clipping; inf or nan when not finite
  bool finite = true;
  bool clipped = false;   // gradients were scaled down
};

// on_nonfinite == error: throws Error naming the first parameter whose
// gradient holds an inf or nan.
ClipResult clip_grad_norm(const ParameterList& params, double max_norm, NonFinite on_nonfinite = NonFinite::report);

// Sum of squares of n contiguous values, accumulated in double.
double sum_of_squares(const float* x, int64_t n);

}  // namespace tandem::train
