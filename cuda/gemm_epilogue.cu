#include "cuda/gemm_epilogue.h"

#include "cuda/check.h"
#include "cuda/float_convert.cuh"
#include "cuda/fused_activation.cuh"
#include "cuda/launch.h"

namespace tandem::cuda {

namespace {

template <typename T>
__global__ void epilogue_kernel(T* y, const T* c, GemmEpilogue e) {
  int64_t n = e.rows * e.cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float v = load(y, i);
    if (c) {
      int64_t r = i / e.cols, col = i - r * e.cols;
      v += e.beta * load(c, r * e.c_row_stride + col * e.c_col_stride);
    }
    store(y, i, apply_activation(e.act, v));
  }
}

}  // namespace

void launch_gemm_epilogue(Context& ctx, DType t, void* y, const GemmEpilogue& e, const ErrorContext& where) {
  int64_t n = e.rows * e.cols;
  if (n == 0) return;
  with_float_type(t, "CUDA Gemm epilogue", where, [&](auto v) {
    using T = decltype(v);
    epilogue_kernel<T><<<blocks_for(n, ctx.props), kThreads, 0, ctx.stream>>>(static_cast<T*>(y),
                                                                              static_cast<const T*>(e.c), e);
  });
  check_launch("gemm epilogue_kernel", where);
}

}  // namespace tandem::cuda
