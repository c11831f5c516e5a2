#pragma once
// Softmax over the last axis of a dense [rows, len] tensor, for kernels that
// normalize their own intermediate (attention's scores). f32, f16, bf16;
// x and y may be the same buffer.
#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"
#include "cuda/context.h"

namespace tandem::cuda {

void launch_softmax_rows(Context& c, DType t, const void* x, void* y, int64_t rows, int64_t len,
                         const ErrorContext& where);

}  // namespace tandem::cuda
