#include "ops/resize_taps.h"

#include <algorithm>
#include <cmath>

namespace tandem::ops {

namespace {

int64_t nearest_index(double x, NearestMode mode, double scale) {
  double f = std::floor(x), r = x - f;
  switch (mode) {
    case NearestMode::round_prefer_floor:
      return int64_t(f) + (r > 0.5 ? 1 : 0);
    case NearestMode::round_prefer_ceil:
      return int64_t(f) + (r >= 0.5 ? 1 : 0);
    case NearestMode::floor:
      return int64_t(f);
    case NearestMode::ceil:
      return int64_t(std::ceil(x));
    case NearestMode::simple:
      return int64_t(scale < 1 ? std::ceil(x) : f);
  }
  return int64_t(f);
}

// Keys' cubic convolution kernel with parameter a, at distance |t| < 2.
double cubic_weight(double t, double a) {
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

// Taps of one output index at source coordinate x: floor(x) - 1 + t for
// cubic, floor(x) + t for linear. Indices past the edges read the edge
// element (ONNX's reference pads with edge values), or are dropped with
// exclude_outside and the remaining weights renormalized.
void interpolation_taps(const ResizeSpec& s, double x, int64_t in_len, int64_t* index,
                        float* weight) {
  double f = std::floor(x), r = x - f;
  int n = s.mode == ResizeMode::cubic ? 4 : 2;
  int64_t first = int64_t(f) - (n == 4 ? 1 : 0);
  double w[4] = {1 - r, r, 0, 0};
  if (n == 4)
    for (int t = 0; t < 4; ++t) w[t] = cubic_weight(r + 1 - t, s.cubic_a);
  double sum = 0;
  for (int t = 0; t < n; ++t) {
    int64_t i = first + t;
    if (s.exclude_outside && (i < 0 || i >= in_len)) w[t] = 0;
    sum += w[t];
  }
  for (int t = 0; t < n; ++t) {
    index[t] = std::clamp<int64_t>(first + t, 0, in_len - 1);
    weight[t] = float(s.exclude_outside && sum != 0 ? w[t] / sum : w[t]);
  }
}

}  // namespace

bool AxisTaps::identity(int64_t in_len) const {
  if (int64_t(outside.size()) != in_len) return false;
  for (int64_t j = 0; j < in_len; ++j) {
    if (outside[size_t(j)]) return false;
    for (int t = 0; t < taps; ++t) {
      size_t k = size_t(j * taps + t);
      if (index[k] != j && weight[k] != 0) return false;
    }
  }
  return true;
}

int resize_taps_per_output(const ResizeSpec& s) {
  return s.mode == ResizeMode::nearest ? 1 : s.mode == ResizeMode::linear ? 2 : 4;
}

AxisTaps resize_axis_taps(const ResizeSpec& s, size_t d, int64_t in_len, int64_t out_len) {
  AxisTaps a;
  a.taps = resize_taps_per_output(s);
  a.index.assign(size_t(out_len * a.taps), 0);
  a.weight.assign(size_t(out_len * a.taps), 0.f);
  a.outside.assign(size_t(out_len), 0);
  if (in_len == 0) return a;  // then out_len is 0 too
  for (int64_t j = 0; j < out_len; ++j) {
    bool outside = false;
    double x = resize_source_coordinate(s, d, in_len, out_len, j, &outside);
    // Far outside, every mode reads the edge; bounding x keeps the integer
    // conversions defined.
    x = std::clamp(x, -2.0, double(in_len) + 1);
    size_t k = size_t(j * a.taps);
    if (outside) {
      a.outside[size_t(j)] = 1;
    } else if (a.taps == 1) {
      a.index[k] = std::clamp<int64_t>(nearest_index(x, s.nearest, s.scales[d]), 0, in_len - 1);
      a.weight[k] = 1.f;
    } else {
      interpolation_taps(s, x, in_len, &a.index[k], &a.weight[k]);
    }
  }
  return a;
}

std::vector<AxisTaps> resize_taps(const ResizeSpec& s, const Shape& in, const Shape& out) {
  std::vector<AxisTaps> taps;
  for (size_t d = 0; d < in.size(); ++d) taps.push_back(resize_axis_taps(s, d, in[d], out[d]));
  return taps;
}

bool resizes_nothing(const std::vector<AxisTaps>& taps, const Shape& in) {
  for (size_t d = 0; d < in.size(); ++d)
    if (!taps[d].identity(in[d])) return false;
  return true;
}

}  // namespace tandem::ops
