// Activations: fp32 forward and gradient against float64 textbook
// definitions and their central finite differences (tolerances in
// tests/train/grad_check.h). Inputs are distinct values kept away from the
// kinks (relu's 0; hardswish's -3 and 3 lie outside their range) so a
// finite-difference step never crosses one.
//   relu max(x, 0); leaky_relu x or a x; silu x / (1 + e^-x);
//   hardswish x * min(max(x + 3, 0), 6) / 6; sigmoid 1 / (1 + e^-x); tanh;
//   gelu x/2 (1 + erf(x / sqrt 2)); gelu_tanh x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/train/grad_check.h"
#include "train/functional.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

double textbook(const ops::Activation& p, double x) {
  switch (p.kind) {
    case ops::ActivationKind::relu: return std::max(x, 0.0);
    case ops::ActivationKind::leaky_relu: return x > 0 ? x : p.alpha * x;
    case ops::ActivationKind::silu: return x / (1 + std::exp(-x));
    case ops::ActivationKind::hard_swish: return x * std::min(std::max(x + 3, 0.0), 6.0) / 6;
    case ops::ActivationKind::sigmoid: return 1 / (1 + std::exp(-x));
    case ops::ActivationKind::tanh: return std::tanh(x);
    case ops::ActivationKind::gelu: return x / 2 * (1 + std::erf(x / std::sqrt(2.0)));
    case ops::ActivationKind::gelu_tanh:
      return x / 2 * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    default: return NAN;
  }
}

// `gap`: spacing of the distinct inputs (range about +-numel * gap / 2).
void run(const std::string& what, const ops::Activation& p, double gap) {
  GradCase g;
  g.what = what;
  g.inputs = {distinct_tensor({2, 3, 4, 5}, 5, gap)};
  g.op = [&](const std::vector<train::Var>& v) { return train::activation(v[0], p); };
  g.reference = [&](const std::vector<Doubles>& in) {
    Doubles y(in[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = textbook(p, in[0][i]);
    return y;
  };
  check_gradients(g);
}

}  // namespace

// 120 values 0.05 apart span [-3, 3]; 0.07 apart, [-4.2, 4.2] (past hardswish's
// kinks, which land between grid points).
TEST(GradActivation, Relu) { run("relu", {ops::ActivationKind::relu}, 0.05); }
TEST(GradActivation, LeakyRelu) { run("leaky_relu 0.1", {ops::ActivationKind::leaky_relu, 0.1f}, 0.05); }
TEST(GradActivation, Silu) { run("silu", {ops::ActivationKind::silu}, 0.07); }
TEST(GradActivation, Hardswish) { run("hardswish", {ops::ActivationKind::hard_swish}, 0.07); }
TEST(GradActivation, Sigmoid) { run("sigmoid", {ops::ActivationKind::sigmoid}, 0.07); }
TEST(GradActivation, Tanh) { run("tanh", {ops::ActivationKind::tanh}, 0.05); }
TEST(GradActivation, Gelu) { run("gelu", {ops::ActivationKind::gelu}, 0.07); }
TEST(GradActivation, GeluTanh) { run("gelu_tanh", {ops::ActivationKind::gelu_tanh}, 0.07); }

TEST(GradActivation, NamedShortcuts) {
  train::Var x(distinct_tensor({7}, 3, 0.5));
  Doubles v = to_doubles(x.value());
  auto check_one = [&](const train::Var& y, ops::Activation p) {
    for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(y.value().scalar_at(int64_t(i)), textbook(p, v[i]), 1e-6);
  };
  check_one(train::relu(x), {ops::ActivationKind::relu});
  check_one(train::leaky_relu(x), {ops::ActivationKind::leaky_relu, 0.01f});
  check_one(train::silu(x), {ops::ActivationKind::silu});
  check_one(train::hardswish(x), {ops::ActivationKind::hard_swish});
  check_one(train::sigmoid(x), {ops::ActivationKind::sigmoid});
  check_one(train::tanh(x), {ops::ActivationKind::tanh});
  check_one(train::gelu(x), {ops::ActivationKind::gelu});
  check_one(train::gelu(x, true), {ops::ActivationKind::gelu_tanh});
}
