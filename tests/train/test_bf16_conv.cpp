// conv2d computing in bf16 (autocast) against Debian's PyTorch 1.13 in
// float64 on the bf16-rounded operands (skipped without torch):
//   y  = conv(bf16(x), bf16(w)) + b          within 1e-5 (f32 accumulation)
//   dx = conv_bwd_data(bf16(dy), bf16(w))     within 2^-8 relative (dx comes
//   dw = conv_bwd_weights(bf16(x), bf16(dy))  out of a bf16 kernel: rounded)
// for a plain, a strided and a grouped case; and the guard's scope.
#include <gtest/gtest.h>

#include "tests/cpu_features.h"
#include "tests/numpy_ref.h"
#include "tests/train/grad_check.h"
#include "train/autocast.h"
#include "train/functional.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

struct Case {
  const char* what;
  Shape x, w;
  int64_t stride, padding, groups;
};

void run(NumpyChecks& checks, const Case& c) {
  Tensor x = random_tensor(c.x, 11), w = random_tensor(c.w, 12), b = random_tensor({c.w[0]}, 13);
  ops::Conv2dParams p;
  p.stride[0] = p.stride[1] = c.stride;
  p.padding[0] = p.padding[1] = c.padding;
  p.groups = c.groups;
  train::Var xv(x, true), wv(w, true), bv(b, true);
  train::Var y;
  {
    train::AutocastGuard bf16(DType::bf16);
    y = train::conv2d(xv, wv, bv, p);
  }
  Tensor dy = random_tensor(y.shape(), 14);
  train::backward(y, dy);  // outside the guard: the recorded precision holds
  const std::string torch =
      "import torch\nimport torch.nn.functional as F\n"
      "r16 = lambda a: torch.from_numpy(a).bfloat16().double()\n"
      "x = r16(x0).requires_grad_(); w = r16(x1).requires_grad_()\n"
      "y = F.conv2d(x, w, torch.from_numpy(x2).double(), stride=" + std::to_string(c.stride) +
      ", padding=" + std::to_string(c.padding) + ", groups=" + std::to_string(c.groups) + ")\n"
      "y.backward(r16(x3))\n";
  const std::vector<Tensor> in = {x, w, b, dy};
  checks.add(y.value(), torch + "r = y.detach().float().numpy()", in, std::string(c.what) + " y", 1e-5);
  checks.add(xv.grad(), torch + "r = x.grad.float().numpy()", in, std::string(c.what) + " dx", 1.0 / 256);
  checks.add(wv.grad(), torch + "r = w.grad.float().numpy()", in, std::string(c.what) + " dw", 1.0 / 256);
}

}  // namespace

TEST(Bf16Conv, MatchesTorchOnRoundedOperands) {
  TANDEM_SKIP_WITHOUT_CPU_BF16();
  TANDEM_REQUIRE_TORCH();
  NumpyChecks checks;
  run(checks, {"3x3 pad 1", {2, 16, 9, 9}, {32, 16, 3, 3}, 1, 1, 1});
  run(checks, {"3x3 stride 2", {2, 8, 10, 10}, {16, 8, 3, 3}, 2, 1, 1});
  run(checks, {"groups 4", {2, 16, 7, 7}, {16, 4, 3, 3}, 1, 1, 4});
  checks.check();
}

// The same conv in f32 differs from the bf16 one (the guard reached the
// kernel) and the guard ends with its scope.
TEST(Bf16Conv, GuardScopesThePrecision) {
  TANDEM_SKIP_WITHOUT_CPU_BF16();
  Tensor x = random_tensor({1, 8, 6, 6}, 1), w = random_tensor({8, 8, 3, 3}, 2);
  Tensor f32 = train::conv2d(train::Var(x), train::Var(w), train::Var()).value();
  Tensor bf16;
  {
    train::AutocastGuard g(DType::bf16);
    EXPECT_EQ(train::autocast_dtype(), DType::bf16);
    bf16 = train::conv2d(train::Var(x), train::Var(w), train::Var()).value();
  }
  EXPECT_EQ(train::autocast_dtype(), DType::f32);
  double diff = 0;
  for (int64_t i = 0; i < f32.numel(); ++i) diff = std::max(diff, std::fabs(f32.scalar_at(i) - bf16.scalar_at(i)));
  EXPECT_GT(diff, 0.0);
  EXPECT_LT(diff, 0.1);
  // f16 is the GPU's: the guard takes it, the CPU conv refuses it by name.
  train::AutocastGuard f16(DType::f16);
  EXPECT_THROW(train::conv2d(train::Var(x), train::Var(w), train::Var()), Error);
  EXPECT_THROW(train::AutocastGuard(DType::i8), Error);
}
