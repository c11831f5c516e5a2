#include "cuda/gemm_epilogue.h"

#include <cuda_fp16.h>

#include "cuda/check.h"
#include "cuda/fused_activation.cuh"
#include "cuda/launch.h"

namespace tandem::cuda {

namespace {

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_f<__half>(float v) { return __float2half(v); }

template <typename T>
__global__ void epilogue_kernel(T* y, const T* c, GemmEpilogue e) {
  int64_t n = e.rows * e.cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float v = to_f(y[i]);
    if (c) {
      int64_t r = i / e.cols, col = i - r * e.cols;
      v += e.beta * to_f(c[r * e.c_row_stride + col * e.c_col_stride]);
    }
    y[i] = from_f<T>(apply_activation(e.act, v));
  }
}

}  // namespace

void launch_gemm_epilogue(Context& ctx, DType t, void* y, const GemmEpilogue& e, const ErrorContext& where) {
  int64_t n = e.rows * e.cols;
  if (n == 0) return;
  if (t == DType::f32)
    epilogue_kernel<float><<<blocks_for(n, ctx.props), kThreads, 0, ctx.stream>>>(
        static_cast<float*>(y), static_cast<const float*>(e.c), e);
  else if (t == DType::f16)
    epilogue_kernel<__half><<<blocks_for(n, ctx.props), kThreads, 0, ctx.stream>>>(
        static_cast<__half*>(y), static_cast<const __half*>(e.c), e);
  else
    throw Error::unsupported("Gemm epilogue on " + std::string(dtype_name(t)), where);
  check_launch("gemm epilogue_kernel", where);
}

}  // namespace tandem::cuda
