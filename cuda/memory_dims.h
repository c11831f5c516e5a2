#pragma once
// The order a tensor's logical dims take in memory, outermost first, for the
// layouts the CUDA backend's data kernels address element by element.
#include <cstddef>
#include <vector>

#include "core/layout.h"

namespace tandem::cuda {

// nhwc (4-D): N, H, W, C; plain: the logical order.
inline std::vector<size_t> memory_dims(size_t rank, Layout l) {
  if (l == Layout::nhwc && rank == 4) return {0, 2, 3, 1};
  std::vector<size_t> order(rank);
  for (size_t d = 0; d < rank; ++d) order[d] = d;
  return order;
}

}  // namespace tandem::cuda
