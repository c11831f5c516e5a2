#pragma once
// Resize, one axis at a time: which input indices each output index reads
// and with what weights (1 tap for nearest, 2 for linear, 4 for cubic).
// Every separable mode is a product of these per-axis taps, so each
// backend's kernels (cpu/resize.cpp, cuda/resize.cu) build them once at
// prepare time from this one definition of the op's sampling.
#include <cstdint>
#include <vector>

#include "ops/resize.h"

namespace tandem::ops {

struct AxisTaps {
  int taps = 1;
  std::vector<int64_t> index;    // out_len * taps indices in [0, in_len)
  std::vector<float> weight;     // out_len * taps, summing to 1 per output
  std::vector<uint8_t> outside;  // per output: takes the extrapolation value

  // Output index j reads input index j alone (nothing to do on this axis).
  bool identity(int64_t in_len) const;
};

// Taps per output index: 1 (nearest), 2 (linear) or 4 (cubic).
int resize_taps_per_output(const ResizeSpec& s);

AxisTaps resize_axis_taps(const ResizeSpec& s, size_t d, int64_t in_len, int64_t out_len);

// Every dim's taps of a resize of `in` to `out`.
std::vector<AxisTaps> resize_taps(const ResizeSpec& s, const Shape& in, const Shape& out);

// No dim changes: the output is the input.
bool resizes_nothing(const std::vector<AxisTaps>& taps, const Shape& in);

}  // namespace tandem::ops
