#pragma once
// Grid sizing for the elementwise-style kernels: a grid-stride loop over n
// elements, enough blocks to fill the GPU without one block per element.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace tandem::cuda {

constexpr int kThreads = 256;

inline unsigned blocks_for(int64_t n, const cudaDeviceProp& p) {
  int64_t want = (n + kThreads - 1) / kThreads;
  int64_t cap = int64_t(p.multiProcessorCount) * 8;
  return unsigned(std::max<int64_t>(1, std::min(want, cap)));
}

}  // namespace tandem::cuda
