// The tape: gradients of composite graphs (a Var read twice, a diamond, a
// residual) against central finite differences of float64 compositions of
// the textbook ops (tolerances in tests/train/grad_check.h); accumulation
// into Parameters across backward calls; no-grad mode; errors.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/train/grad_check.h"
#include "train/functional.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

}  // namespace

TEST(Autograd, VarUsedTwiceGetsTheSum) {
  GradCase g;
  g.what = "x + x";
  g.inputs = {random_tensor({3, 4}, 1)};
  g.op = [](const std::vector<train::Var>& v) { return train::add(v[0], v[0]); };
  g.reference = [](const std::vector<Doubles>& in) {
    Doubles y = in[0];
    for (double& v : y) v *= 2;
    return y;
  };
  check_gradients(g);
}

TEST(Autograd, Diamond) {
  // y = tanh(s) + s with s = sigmoid(x): s feeds two consumers.
  GradCase g;
  g.what = "tanh(sigmoid(x)) + sigmoid(x)";
  g.inputs = {random_tensor({2, 5}, 2, -3, 3)};
  g.op = [](const std::vector<train::Var>& v) {
    train::Var s = train::sigmoid(v[0]);
    return train::add(train::tanh(s), s);
  };
  g.reference = [](const std::vector<Doubles>& in) {
    Doubles y(in[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = std::tanh(sigmoid(in[0][i])) + sigmoid(in[0][i]);
    return y;
  };
  check_gradients(g);
}

TEST(Autograd, ResidualThroughLinear) {
  // y = relu(x·w1ᵀ)·w2ᵀ + x: x is read by the linear branch and the shortcut.
  GradCase g;
  g.what = "residual MLP";
  g.inputs = {distinct_tensor({3, 4}, 3, 0.1), random_tensor({5, 4}, 4), random_tensor({4, 5}, 5)};
  g.op = [](const std::vector<train::Var>& v) {
    train::Var h = train::relu(train::linear(v[0], v[1], train::Var()));
    return train::add(train::linear(h, v[2], train::Var()), v[0]);
  };
  g.reference = [](const std::vector<Doubles>& in) {
    Doubles y = in[0];
    for (size_t n = 0; n < 3; ++n)
      for (size_t o = 0; o < 4; ++o)
        for (size_t m = 0; m < 5; ++m) {
          double h = 0;
          for (size_t k = 0; k < 4; ++k) h += in[0][n * 4 + k] * in[1][m * 4 + k];
          y[n * 4 + o] += std::max(h, 0.0) * in[2][o * 5 + m];
        }
    return y;
  };
  check_gradients(g);
}

TEST(Autograd, ParameterGradientsAccumulate) {
  train::Parameter w{"w", random_tensor({2, 3}, 1), Tensor::zeros(DType::f32, {2, 3})};
  train::Var x(random_tensor({4, 3}, 2));
  Tensor seed = random_tensor({4, 2}, 3);
  train::backward(train::linear(x, train::Var::of(w), train::Var()), seed);
  Doubles once = to_doubles(w.grad);
  train::backward(train::linear(x, train::Var::of(w), train::Var()), seed);
  for (size_t i = 0; i < once.size(); ++i) EXPECT_NEAR(w.grad.scalar_at(int64_t(i)), 2 * once[i], 1e-5);
  EXPECT_EQ(w.grad.raw(), train::Var::of(w).grad().raw());  // the same storage, not a copy
}

TEST(Autograd, LeafGradientsKeptIntermediateFreed) {
  train::Var x(random_tensor({2, 3}, 1), true);
  train::Var h = train::tanh(x);
  train::Var y = train::sigmoid(h);
  train::backward(y, random_tensor({2, 3}, 2));
  EXPECT_TRUE(x.grad().defined());
  EXPECT_FALSE(h.grad().defined());
  EXPECT_THROW(train::backward(y, random_tensor({2, 3}, 2)), Error);  // the tape is freed
}

TEST(Autograd, FrozenInputsGetNoGradient) {
  train::Var x(random_tensor({2, 3}, 1), false), w(random_tensor({4, 3}, 2), true);
  train::backward(train::linear(x, w, train::Var()), random_tensor({2, 4}, 3));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_TRUE(w.grad().defined());
}

TEST(Autograd, NoGradRecordsNothing) {
  train::Var x(random_tensor({2, 3}, 1), true);
  {
    train::NoGradGuard guard;
    EXPECT_FALSE(train::grad_enabled());
    train::Var y = train::relu(x);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_THROW(train::backward(y, random_tensor({2, 3}, 2)), Error);
  }
  EXPECT_TRUE(train::grad_enabled());
  EXPECT_TRUE(train::relu(x).requires_grad());
}

TEST(Autograd, SeedErrors) {
  train::Var x(random_tensor({2, 3}, 1), true);
  train::Var y = train::relu(x);
  EXPECT_THROW(train::backward(y), Error);                              // not one value, no seed
  EXPECT_THROW(train::backward(y, random_tensor({3, 2}, 2)), Error);    // seed of another shape
  train::Parameter p{"p", random_tensor({2}, 1), Tensor()};
  EXPECT_THROW(train::Var::of(p), Error);  // no gradient tensor
}
