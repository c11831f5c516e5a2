#pragma once
// Softmax over the last axis of attention's dense scores [batch * rows,
// len], in place, after adding an optional bias [period, rows, len] whose
// item b % period goes with batch item b. f32, f16, bf16 (bias of the
// scores' dtype).
#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"
#include "cuda/context.h"

namespace tandem::cuda {

struct ScoresBias {
  const void* data = nullptr;  // none when null
  int64_t rows = 1, period = 1;
};
void launch_scores_softmax(Context& c, DType t, void* scores, int64_t rows, int64_t len,
                           const ScoresBias& bias, const ErrorContext& where);

}  // namespace tandem::cuda
