// conv2d: fp32 forward and gradients (x, w, b) against a float64 textbook
// convolution and its central finite differences (tests/train/grad_check.h
// states the tolerances), over strides, paddings, dilations, groups
// (depthwise included), non-square kernels and no-bias.
#include <gtest/gtest.h>

#include "tests/train/grad_check.h"
#include "train/functional.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

struct ConvCase {
  std::string name;
  Shape x, w;  // x [N, C, H, W], w [M, C/groups, KH, KW]
  Conv2dParams p;
  bool bias = true;
};

// y[n,m,i,j] = b[m] + sum over c in m's group, kh, kw of
//   x[n, c, i*sh - ph + kh*dh, j*sw - pw + kw*dw] * w[m, c - group start, kh, kw]
Doubles reference_conv(const ConvCase& c, const std::vector<Doubles>& in) {
  const Doubles &x = in[0], &w = in[1];
  int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], M = c.w[0], Cg = c.w[1], KH = c.w[2], KW = c.w[3];
  const Conv2dParams& p = c.p;
  int64_t OH = (H + 2 * p.padding[0] - p.dilation[0] * (KH - 1) - 1) / p.stride[0] + 1;
  int64_t OW = (W + 2 * p.padding[1] - p.dilation[1] * (KW - 1) - 1) / p.stride[1] + 1;
  int64_t Mg = M / p.groups;
  Doubles y(size_t(N * M * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double s = c.bias ? in[2][size_t(m)] : 0;
          for (int64_t cg = 0; cg < Cg; ++cg)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t h = i * p.stride[0] - p.padding[0] + kh * p.dilation[0];
                int64_t v = j * p.stride[1] - p.padding[1] + kw * p.dilation[1];
                if (h < 0 || h >= H || v < 0 || v >= W) continue;
                int64_t ch = (m / Mg) * Cg + cg;
                s += x[size_t(((n * C + ch) * H + h) * W + v)] * w[size_t(((m * Cg + cg) * KH + kh) * KW + kw)];
              }
          y[size_t(((n * M + m) * OH + i) * OW + j)] = s;
        }
  return y;
}

void run(const ConvCase& c) {
  GradCase g;
  g.what = c.name;
  g.inputs = {random_tensor(c.x, 1), random_tensor(c.w, 2)};
  if (c.bias) g.inputs.push_back(random_tensor({c.w[0]}, 3));
  g.op = [&](const std::vector<train::Var>& v) {
    return train::conv2d(v[0], v[1], c.bias ? v[2] : train::Var(), c.p);
  };
  g.reference = [&](const std::vector<Doubles>& in) { return reference_conv(c, in); };
  check_gradients(g);
}

Conv2dParams params(int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t groups) {
  return {{sh, sw}, {ph, pw}, {dh, dw}, groups};
}

}  // namespace

TEST(GradConv2d, Plain3x3) { run({"3x3 pad 1", {2, 3, 7, 6}, {4, 3, 3, 3}, params(1, 1, 1, 1, 1, 1, 1)}); }
TEST(GradConv2d, NoPadding) { run({"3x3 pad 0", {2, 3, 6, 7}, {4, 3, 3, 3}, params(1, 1, 0, 0, 1, 1, 1)}); }
TEST(GradConv2d, Stride2) { run({"3x3 stride 2", {2, 3, 8, 7}, {4, 3, 3, 3}, params(2, 2, 1, 1, 1, 1, 1)}); }
TEST(GradConv2d, Stride3Kernel5) { run({"5x5 stride 3 pad 2", {1, 2, 11, 10}, {3, 2, 5, 5}, params(3, 3, 2, 2, 1, 1, 1)}); }
TEST(GradConv2d, Dilation2) { run({"3x3 dilation 2", {2, 3, 9, 8}, {4, 3, 3, 3}, params(1, 1, 2, 2, 2, 2, 1)}); }
TEST(GradConv2d, DilationStride) { run({"dilation 2 stride 2", {1, 2, 11, 9}, {3, 2, 3, 3}, params(2, 2, 1, 1, 2, 2, 1)}); }
TEST(GradConv2d, Groups2) { run({"groups 2", {2, 4, 6, 6}, {6, 2, 3, 3}, params(1, 1, 1, 1, 1, 1, 2)}); }
TEST(GradConv2d, Depthwise) { run({"depthwise", {2, 4, 7, 7}, {4, 1, 3, 3}, params(1, 1, 1, 1, 1, 1, 4)}); }
TEST(GradConv2d, DepthwiseStride2) { run({"depthwise stride 2", {2, 4, 8, 8}, {4, 1, 3, 3}, params(2, 2, 1, 1, 1, 1, 4)}); }
TEST(GradConv2d, DepthwiseMultiplier2) { run({"depthwise x2", {1, 3, 6, 6}, {6, 1, 3, 3}, params(1, 1, 1, 1, 1, 1, 3)}); }
TEST(GradConv2d, GroupsDilationStride) {
  run({"groups 2 dilation 2 stride 2", {1, 4, 10, 10}, {4, 2, 3, 3}, params(2, 2, 2, 2, 2, 2, 2)});
}
TEST(GradConv2d, Pointwise) { run({"1x1", {2, 5, 5, 4}, {3, 5, 1, 1}, params(1, 1, 0, 0, 1, 1, 1)}); }
TEST(GradConv2d, PointwiseStride2NoBias) {
  ConvCase c{"1x1 stride 2 no bias", {2, 4, 6, 6}, {6, 4, 1, 1}, params(2, 2, 0, 0, 1, 1, 1)};
  c.bias = false;
  run(c);
}
TEST(GradConv2d, NoBias) {
  ConvCase c{"3x3 no bias", {2, 3, 5, 5}, {4, 3, 3, 3}, params(1, 1, 1, 1, 1, 1, 1)};
  c.bias = false;
  run(c);
}
TEST(GradConv2d, Asymmetric) {
  run({"3x2 kernel, stride (2,1), pad (0,1), dilation (1,2)", {2, 3, 7, 8}, {2, 3, 3, 2}, params(2, 1, 0, 1, 1, 2, 1)});
}
TEST(GradConv2d, WidePadding) { run({"3x3 pad 2", {1, 2, 5, 5}, {3, 2, 3, 3}, params(1, 1, 2, 2, 1, 1, 1)}); }
TEST(GradConv2d, Kernel7Stride2) { run({"7x7 stride 2 pad 3", {1, 3, 12, 12}, {4, 3, 7, 7}, params(2, 2, 3, 3, 1, 1, 1)}); }

TEST(GradConv2d, BadShapesAreErrors) {
  train::Var x(random_tensor({1, 4, 5, 5}, 1)), w(random_tensor({3, 3, 3, 3}, 2));
  EXPECT_THROW(train::conv2d(x, w, train::Var()), Error);  // 4 channels vs weight's 3
  train::Var w2(random_tensor({3, 2, 3, 3}, 2));
  EXPECT_THROW(train::conv2d(x, w2, train::Var(), params(1, 1, 1, 1, 1, 1, 2)), Error);  // 3 outputs, 2 groups
  train::Var w3(random_tensor({4, 4, 7, 7}, 2));
  EXPECT_THROW(train::conv2d(x, w3, train::Var()), Error);  // kernel larger than input
}
