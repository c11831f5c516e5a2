#pragma once
// What cuBLASLt's epilogues cannot do after a Gemm: add beta * C for a C
// broadcast along rows or columns only in part ([M,1], [1,1] computed, ...)
// and apply any fused activation. In place on Y [rows, cols], row-major.
#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"
#include "cuda/context.h"
#include "ops/activation.h"

namespace tandem::cuda {

struct GemmEpilogue {
  int64_t rows = 0, cols = 0;
  const void* c = nullptr;  // Y's dtype; nullptr: no C
  int64_t c_row_stride = 0, c_col_stride = 0;  // elements; 0 along broadcast dims
  float beta = 1.f;
  ops::Activation act;
};

void launch_gemm_epilogue(Context& ctx, DType t, void* y, const GemmEpilogue& e, const ErrorContext& where);

}  // namespace tandem::cuda
