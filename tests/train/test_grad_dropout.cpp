// dropout: the gradient against central finite differences of the float64
// y = x * keep / (1 - p), with the keep mask read off the op's own output
// (a fixed seed gives the same mask on every call); the mask's statistics
// (kept fraction within 4 standard deviations of 1 - p), determinism per
// seed, and eval mode as the identity.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/train/grad_check.h"
#include "train/functional.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

Doubles keep_mask(const Tensor& y) {
  Doubles keep(size_t(y.numel()));
  for (int64_t i = 0; i < y.numel(); ++i) keep[size_t(i)] = y.scalar_at(i) != 0;
  return keep;
}

}  // namespace

TEST(GradDropout, GradientMatchesMaskedScaling) {
  const float p = 0.4f;
  Tensor x = distinct_tensor({3, 4, 5}, 2, 0.05);  // no zeros: a zero output means dropped
  Doubles keep = keep_mask(train::dropout(train::Var(x), p, 77, true).value());
  GradCase g;
  g.what = "dropout p=0.4";
  g.inputs = {x};
  g.op = [&](const std::vector<train::Var>& v) { return train::dropout(v[0], p, 77, true); };
  g.reference = [&](const std::vector<Doubles>& in) {
    Doubles y(in[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = in[0][i] * keep[i] / (1 - double(p));
    return y;
  };
  check_gradients(g);
}

TEST(GradDropout, KeptFractionIsOneMinusP) {
  const int64_t n = 200000;
  for (float p : {0.1f, 0.5f, 0.8f}) {
    Tensor y = train::dropout(train::Var(Tensor::from_vector(std::vector<float>(n, 1.f), {n})), p, 5, true).value();
    double kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      float v = y.data<float>()[i];
      ASSERT_TRUE(v == 0 || std::fabs(v - 1 / (1 - p)) < 1e-6) << "element " << i << " = " << v;
      kept += v != 0;
    }
    double sigma = std::sqrt(p * (1 - p) / double(n));
    EXPECT_NEAR(kept / double(n), 1 - p, 4 * sigma) << "p = " << p;
  }
}

TEST(GradDropout, MaskIsAFunctionOfTheSeed) {
  train::Var x(random_tensor({1000}, 1));
  Doubles a = keep_mask(train::dropout(x, 0.5f, 11, true).value());
  Doubles b = keep_mask(train::dropout(x, 0.5f, 11, true).value());
  Doubles c = keep_mask(train::dropout(x, 0.5f, 12, true).value());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(GradDropout, EvalAndZeroPAreIdentity) {
  train::Var x(random_tensor({10}, 1), true);
  EXPECT_TRUE(train::dropout(x, 0.5f, 1, false).same(x));
  EXPECT_TRUE(train::dropout(x, 0.f, 1, true).same(x));
}

TEST(GradDropout, ProbabilityOutOfRangeIsAnError) {
  train::Var x(random_tensor({10}, 1));
  EXPECT_THROW(train::dropout(x, 1.f, 1, true), Error);
  EXPECT_THROW(train::dropout(x, -0.1f, 1, true), Error);
}
