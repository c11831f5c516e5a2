#pragma once
// Resize, one axis at a time: which input indices each output index reads
// and with what weights (1 tap for nearest, 2 for linear, 4 for cubic).
// Every separable mode is a product of these per-axis taps, so the kernels
// (cpu/resize.cpp) build them once at prepare time.
#include <cstdint>
#include <vector>

#include "ops/resize.h"

namespace tandem::cpu {

struct AxisTaps {
  int taps = 1;
  std::vector<int64_t> index;    // out_len * taps indices in [0, in_len)
  std::vector<float> weight;     // out_len * taps, summing to 1 per output
  std::vector<uint8_t> outside;  // per output: takes the extrapolation value

  // Output index j reads input index j alone (nothing to do on this axis).
  bool identity(int64_t in_len) const;
};

AxisTaps resize_axis_taps(const ops::ResizeSpec& s, size_t d, int64_t in_len, int64_t out_len);

}  // namespace tandem::cpu
