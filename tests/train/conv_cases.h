#pragma once
// The conv2d cases the gradient checks cover (tests/train/test_grad_conv.cpp)
// and the CUDA table is compared on (tests/gpu/test_cuda_train_conv.cpp):
// strides, paddings, dilations, groups (depthwise included), non-square
// kernels and no-bias.
#include <ostream>
#include <string>
#include <vector>

#include "ops/train_backend.h"

namespace tandem::testing {

struct ConvCase {
  std::string test_name;  // a gtest name
  std::string name;
  Shape x, w;  // x [N, C, H, W], w [M, C/groups, KH, KW]
  ops::Conv2dParams p;
  bool bias = true;
};

// How gtest prints a case (its description, not its bytes).
inline void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

inline ops::Conv2dParams conv_params(int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
                                int64_t groups) {
  return {{sh, sw}, {ph, pw}, {dh, dw}, groups};
}

inline std::vector<ConvCase> conv_grad_cases() {
  auto p = conv_params;
  return {
      {"Plain3x3", "3x3 pad 1", {2, 3, 7, 6}, {4, 3, 3, 3}, p(1, 1, 1, 1, 1, 1, 1)},
      {"NoPadding", "3x3 pad 0", {2, 3, 6, 7}, {4, 3, 3, 3}, p(1, 1, 0, 0, 1, 1, 1)},
      {"Stride2", "3x3 stride 2", {2, 3, 8, 7}, {4, 3, 3, 3}, p(2, 2, 1, 1, 1, 1, 1)},
      {"Stride3Kernel5", "5x5 stride 3 pad 2", {1, 2, 11, 10}, {3, 2, 5, 5}, p(3, 3, 2, 2, 1, 1, 1)},
      {"Dilation2", "3x3 dilation 2", {2, 3, 9, 8}, {4, 3, 3, 3}, p(1, 1, 2, 2, 2, 2, 1)},
      {"DilationStride", "dilation 2 stride 2", {1, 2, 11, 9}, {3, 2, 3, 3}, p(2, 2, 1, 1, 2, 2, 1)},
      {"Groups2", "groups 2", {2, 4, 6, 6}, {6, 2, 3, 3}, p(1, 1, 1, 1, 1, 1, 2)},
      {"Depthwise", "depthwise", {2, 4, 7, 7}, {4, 1, 3, 3}, p(1, 1, 1, 1, 1, 1, 4)},
      {"DepthwiseStride2", "depthwise stride 2", {2, 4, 8, 8}, {4, 1, 3, 3}, p(2, 2, 1, 1, 1, 1, 4)},
      {"DepthwiseMultiplier2", "depthwise x2", {1, 3, 6, 6}, {6, 1, 3, 3}, p(1, 1, 1, 1, 1, 1, 3)},
      {"GroupsDilationStride", "groups 2 dilation 2 stride 2", {1, 4, 10, 10}, {4, 2, 3, 3},
       p(2, 2, 2, 2, 2, 2, 2)},
      {"Pointwise", "1x1", {2, 5, 5, 4}, {3, 5, 1, 1}, p(1, 1, 0, 0, 1, 1, 1)},
      {"PointwiseStride2NoBias", "1x1 stride 2 no bias", {2, 4, 6, 6}, {6, 4, 1, 1}, p(2, 2, 0, 0, 1, 1, 1), false},
      {"NoBias", "3x3 no bias", {2, 3, 5, 5}, {4, 3, 3, 3}, p(1, 1, 1, 1, 1, 1, 1), false},
      {"Asymmetric", "3x2 kernel, stride (2,1), pad (0,1), dilation (1,2)", {2, 3, 7, 8}, {2, 3, 3, 2},
       p(2, 1, 0, 1, 1, 2, 1)},
      {"WidePadding", "3x3 pad 2", {1, 2, 5, 5}, {3, 2, 3, 3}, p(1, 1, 2, 2, 1, 1, 1)},
      {"Kernel7Stride2", "7x7 stride 2 pad 3", {1, 3, 12, 12}, {4, 3, 7, 7}, p(2, 2, 3, 3, 1, 1, 1)},
  };
}

}  // namespace tandem::testing
