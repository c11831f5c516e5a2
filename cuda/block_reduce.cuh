#pragma once
// Sum and max over a thread block: warp shuffles, then one value per warp
// through shared memory. Every thread of the block must call, and gets the
// result. blockDim.x is a multiple of 32, at most 1024.
#include <cuda_runtime.h>

namespace tandem::cuda {

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <typename Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <typename Op>
__device__ float block_reduce(float v, Op op, float identity) {
  __shared__ float partial[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_reduce(v, op);
  __syncthreads();  // `partial` may still be read from a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : identity;
  return warp_reduce(v, op);
}

}  // namespace tandem::cuda
