#pragma once
// The order a tensor's logical dims take in memory, outermost first, for the
// layouts the CUDA backend's data kernels address element by element.
#include <cstddef>
#include <vector>

#include "core/layout.h"
#include "core/shape.h"

namespace tandem::cuda {

// nhwc (4-D): N, H, W, C; plain: the logical order.
inline std::vector<size_t> memory_dims(size_t rank, Layout l) {
  if (l == Layout::nhwc && rank == 4) return {0, 2, 3, 1};
  std::vector<size_t> order(rank);
  for (size_t d = 0; d < rank; ++d) order[d] = d;
  return order;
}

// A shape in memory order: [N, H, W, C] for 4-D nhwc.
inline Shape memory_shape(const Shape& s, Layout l) {
  const std::vector<size_t> order = memory_dims(s.size(), l);
  Shape m(s.size());
  for (size_t i = 0; i < order.size(); ++i) m[i] = s[order[i]];
  return m;
}

// The position of logical axis `axis` (of `rank`) in memory order.
inline int64_t memory_axis(int64_t axis, size_t rank, Layout l) {
  const std::vector<size_t> order = memory_dims(rank, l);
  for (size_t i = 0; i < order.size(); ++i)
    if (int64_t(order[i]) == axis) return int64_t(i);
  return axis;
}

}  // namespace tandem::cuda
