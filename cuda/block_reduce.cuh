#pragma once
// Sum and max over a thread block: warp shuffles, then one value per warp
// through shared memory. Every thread of the block must call, and gets the
// result. blockDim.x is a multiple of 32, at most 1024. Sums take float or
// double (the training kernels accumulate losses and norms in double).
#include <cuda_runtime.h>

namespace tandem::cuda {

struct SumOp {
  template <typename V>
  __device__ V operator()(V a, V b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <typename V, typename Op>
__device__ __forceinline__ V warp_reduce(V v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <typename V, typename Op>
__device__ V block_reduce(V v, Op op, V identity) {
  __shared__ V partial[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_reduce(v, op);
  __syncthreads();  // `partial` may still be read from a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : identity;
  return warp_reduce(v, op);
}

}  // namespace tandem::cuda
