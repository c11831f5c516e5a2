// conv2d: fp32 forward and gradients (x, w, b) against a float64 textbook
// convolution and its central finite differences (tests/train/grad_check.h
// states the tolerances), over strides, paddings, dilations, groups
// (depthwise included), non-square kernels and no-bias.
#include <gtest/gtest.h>

#include "tests/train/conv_cases.h"
#include "tests/train/grad_check.h"
#include "train/functional.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

// y[n,m,i,j] = b[m] + sum over c in m's group, kh, kw of
//   x[n, c, i*sh - ph + kh*dh, j*sw - pw + kw*dw] * w[m, c - group start, kh, kw]
Doubles reference_conv(const ConvCase& c, const std::vector<Doubles>& in) {
  const Doubles &x = in[0], &w = in[1];
  int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], M = c.w[0], Cg = c.w[1], KH = c.w[2], KW = c.w[3];
  const ops::Conv2dParams& p = c.p;
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

}  // namespace

// One test per case of tests/train/conv_cases.h, named after it.
class GradConv2d : public ::testing::TestWithParam<ConvCase> {};

TEST_P(GradConv2d, MatchesFiniteDifferences) { run(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cases, GradConv2d, ::testing::ValuesIn(conv_grad_cases()),
                         [](const ::testing::TestParamInfo<ConvCase>& i) { return i.param.test_name; });

TEST(GradConv2dShapes, BadShapesAreErrors) {
  train::Var x(random_tensor({1, 4, 5, 5}, 1)), w(random_tensor({3, 3, 3, 3}, 2));
  EXPECT_THROW(train::conv2d(x, w, train::Var()), Error);  // 4 channels vs weight's 3
  train::Var w2(random_tensor({3, 2, 3, 3}, 2));
  EXPECT_THROW(train::conv2d(x, w2, train::Var(), conv_params(1, 1, 1, 1, 1, 1, 2)), Error);  // 3 outputs, 2 groups
  train::Var w3(random_tensor({4, 4, 7, 7}, 2));
  EXPECT_THROW(train::conv2d(x, w3, train::Var()), Error);  // kernel larger than input
}
