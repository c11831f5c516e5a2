// linear: fp32 forward and gradients (x, w, b) against float64
// y[n,m] = b[m] + sum_k x[n,k] w[m,k] and its central finite differences
// (tolerances in tests/train/grad_check.h).
#include <gtest/gtest.h>

#include "tests/train/grad_check.h"
#include "train/functional.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

Doubles reference_linear(int64_t N, int64_t K, int64_t M, bool bias, const std::vector<Doubles>& in) {
  Doubles y(size_t(N * M));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      double s = bias ? in[2][size_t(m)] : 0;
      for (int64_t k = 0; k < K; ++k) s += in[0][size_t(n * K + k)] * in[1][size_t(m * K + k)];
      y[size_t(n * M + m)] = s;
    }
  return y;
}

void run(int64_t N, int64_t K, int64_t M, bool bias) {
  GradCase g;
  g.what = "linear N=" + std::to_string(N) + " K=" + std::to_string(K) + " M=" + std::to_string(M) +
           (bias ? " bias" : " no bias");
  g.inputs = {random_tensor({N, K}, 1), random_tensor({M, K}, 2)};
  if (bias) g.inputs.push_back(random_tensor({M}, 3));
  g.op = [&](const std::vector<train::Var>& v) { return train::linear(v[0], v[1], bias ? v[2] : train::Var()); };
  g.reference = [&](const std::vector<Doubles>& in) { return reference_linear(N, K, M, bias, in); };
  check_gradients(g);
}

}  // namespace

TEST(GradLinear, WithBias) { run(4, 7, 5, true); }
TEST(GradLinear, NoBias) { run(3, 6, 4, false); }
TEST(GradLinear, SingleSample) { run(1, 9, 3, true); }
TEST(GradLinear, WideOutput) { run(5, 3, 17, true); }

TEST(GradLinear, InputOnlyGradient) {
  // Frozen weights: only x requires a gradient, and w gets none.
  GradCase g;
  g.what = "frozen weights";
  g.inputs = {random_tensor({3, 4}, 1), random_tensor({2, 4}, 2), random_tensor({2}, 3)};
  g.differentiable = {true, false, false};
  g.op = [](const std::vector<train::Var>& v) { return train::linear(v[0], v[1], v[2]); };
  g.reference = [](const std::vector<Doubles>& in) { return reference_linear(3, 4, 2, true, in); };
  check_gradients(g);
}

TEST(GradLinear, BadShapesAreErrors) {
  train::Var x(random_tensor({3, 4}, 1)), w(random_tensor({2, 5}, 2)), b(random_tensor({3}, 3));
  EXPECT_THROW(train::linear(x, w, train::Var()), Error);
  train::Var w2(random_tensor({2, 4}, 2));
  EXPECT_THROW(train::linear(x, w2, b), Error);  // bias [3] for 2 outputs
}
