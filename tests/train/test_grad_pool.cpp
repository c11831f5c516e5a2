// Pooling: fp32 forward and gradient against float64 textbook pooling and
// its central finite differences (tolerances in tests/train/grad_check.h).
//   max: the largest tap inside the input (distinct inputs: no ties);
//   avg: the sum of taps inside the input over the full window size
//   (count_include_pad) or over the taps inside the input;
//   global average: the mean of each plane.
// Strides, paddings, dilations (max), overlapping and non-square windows.
#include <gtest/gtest.h>

#include <limits>

#include "tests/train/grad_check.h"
#include "train/functional.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

Doubles reference_pool(const ops::Pool2dParams& p, const Shape& s, const Doubles& x) {
  int64_t NC = s[0] * s[1], H = s[2], W = s[3];
  int64_t OH = (H + 2 * p.padding[0] - p.dilation[0] * (p.kernel[0] - 1) - 1) / p.stride[0] + 1;
  int64_t OW = (W + 2 * p.padding[1] - p.dilation[1] * (p.kernel[1] - 1) - 1) / p.stride[1] + 1;
  Doubles y;
  for (int64_t c = 0; c < NC; ++c)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t inside = 0;
        for (int64_t a = 0; a < p.kernel[0]; ++a)
          for (int64_t b = 0; b < p.kernel[1]; ++b) {
            int64_t h = i * p.stride[0] - p.padding[0] + a * p.dilation[0];
            int64_t w = j * p.stride[1] - p.padding[1] + b * p.dilation[1];
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            double v = x[size_t((c * H + h) * W + w)];
            best = std::max(best, v);
            sum += v;
            ++inside;
          }
        double window = p.count_include_pad ? double(p.kernel[0] * p.kernel[1]) : double(inside);
        y.push_back(p.kind == ops::PoolKind::max ? best : sum / window);
      }
  return y;
}

void run(const std::string& what, const Shape& s, const ops::Pool2dParams& p) {
  GradCase g;
  g.what = what;
  g.inputs = {distinct_tensor(s, 9, 0.01)};
  g.op = [&](const std::vector<train::Var>& v) { return train::pool2d(v[0], p); };
  g.reference = [&](const std::vector<Doubles>& in) { return reference_pool(p, s, in[0]); };
  check_gradients(g);
}

ops::Pool2dParams pool(ops::PoolKind k, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                  int64_t dh = 1, int64_t dw = 1, bool include_pad = true) {
  return {k, {kh, kw}, {sh, sw}, {ph, pw}, {dh, dw}, include_pad};
}

}  // namespace

TEST(GradPool, Max2x2) { run("max 2x2/2", {2, 3, 6, 6}, train::max_pool_params(2, 2)); }
TEST(GradPool, Max3x3Stride2Pad1) { run("max 3x3/2 pad 1", {2, 2, 7, 8}, train::max_pool_params(3, 2, 1)); }
TEST(GradPool, MaxOverlapping) { run("max 3x3/1", {1, 2, 6, 5}, train::max_pool_params(3, 1)); }
TEST(GradPool, MaxDilation2) { run("max 2x2/1 dilation 2", {1, 3, 7, 7}, train::max_pool_params(2, 1, 0, 2)); }
TEST(GradPool, MaxAsymmetric) {
  run("max 3x2, stride (2,1), pad (1,0), dilation (1,2)", {2, 2, 7, 7},
      pool(ops::PoolKind::max, 3, 2, 2, 1, 1, 0, 1, 2));
}
TEST(GradPool, Avg2x2) { run("avg 2x2/2", {2, 3, 6, 6}, train::avg_pool_params(2, 2)); }
TEST(GradPool, AvgIncludePad) { run("avg 3x3/2 pad 1 include pad", {2, 2, 7, 6}, train::avg_pool_params(3, 2, 1, true)); }
TEST(GradPool, AvgExcludePad) { run("avg 3x3/2 pad 1 exclude pad", {2, 2, 7, 6}, train::avg_pool_params(3, 2, 1, false)); }
TEST(GradPool, AvgOverlappingAsymmetric) {
  run("avg 3x2, stride (1,2), pad (1,1)", {1, 3, 5, 6}, pool(ops::PoolKind::average, 3, 2, 1, 2, 1, 1));
}

TEST(GradPool, GlobalAverage) {
  GradCase g;
  g.what = "global average";
  Shape s{2, 3, 5, 4};
  g.inputs = {random_tensor(s, 4)};
  g.op = [](const std::vector<train::Var>& v) { return train::global_avg_pool2d(v[0]); };
  g.reference = [&](const std::vector<Doubles>& in) {
    Doubles y(6, 0.0);
    for (size_t i = 0; i < in[0].size(); ++i) y[i / 20] += in[0][i] / 20;
    return y;
  };
  check_gradients(g);
}

TEST(GradPool, BadParametersAreErrors) {
  train::Var x(random_tensor({1, 1, 4, 4}, 1));
  EXPECT_THROW(train::pool2d(x, train::max_pool_params(2, 2, 2)), Error);  // padding over half the kernel
  EXPECT_THROW(train::pool2d(x, train::max_pool_params(5, 1)), Error);     // window larger than input
  EXPECT_THROW(train::pool2d(x, pool(ops::PoolKind::average, 2, 2, 1, 1, 0, 0, 2, 2)), Error);  // avg with dilation
}
