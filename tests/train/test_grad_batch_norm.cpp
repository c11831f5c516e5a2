// batch_norm: fp32 forward and gradients (x, gamma, beta) against a float64
// textbook batch norm and its central finite differences (tolerances in
// tests/train/grad_check.h), in training mode (batch mean, biased variance)
// and eval mode (running statistics); the running-statistics update against
// PyTorch's rule: r = (1 - m) r + m * batch, variance unbiased (n / (n - 1)).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/train/grad_check.h"
#include "train/functional.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

constexpr double kEps = 1e-5;

struct Stats {
  Doubles mean, var;  // var biased
};

Stats batch_stats(const Shape& s, const Doubles& x) {
  int64_t N = s[0], C = s[1], S = shape_numel(s) / (N * C);
  Stats st{Doubles(size_t(C)), Doubles(size_t(C))};
  for (int64_t c = 0; c < C; ++c) {
    double sum = 0, sq = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) sum += x[size_t((n * C + c) * S + i)];
    double mean = sum / double(N * S);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) sq += std::pow(x[size_t((n * C + c) * S + i)] - mean, 2);
    st.mean[size_t(c)] = mean;
    st.var[size_t(c)] = sq / double(N * S);
  }
  return st;
}

// y = (x - mean_c) / sqrt(var_c + eps) * gamma_c + beta_c.
Doubles reference_bn(const Shape& s, const std::vector<Doubles>& in, const Stats& st) {
  int64_t N = s[0], C = s[1], S = shape_numel(s) / (N * C);
  Doubles y(in[0].size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < S; ++i) {
        size_t k = size_t((n * C + c) * S + i);
        y[k] = (in[0][k] - st.mean[size_t(c)]) / std::sqrt(st.var[size_t(c)] + kEps) * in[1][size_t(c)] +
               in[2][size_t(c)];
      }
  return y;
}

void run(const Shape& s, bool training) {
  int64_t C = s[1];
  Tensor rm = random_tensor({C}, 7, -0.5, 0.5), rv = random_tensor({C}, 8, 0.5, 1.5);
  GradCase g;
  g.what = shape_str(s) + (training ? " training" : " eval");
  g.inputs = {random_tensor(s, 1, -2, 3), random_tensor({C}, 2, 0.5, 1.5), random_tensor({C}, 3)};
  g.op = [&](const std::vector<train::Var>& v) {
    // Running statistics are copies: the check's forward must not feed the next.
    return train::batch_norm(v[0], v[1], v[2], rm.clone(), rv.clone(), {training, 0.1f, float(kEps)});
  };
  g.reference = [&](const std::vector<Doubles>& in) {
    return reference_bn(s, in, training ? batch_stats(s, in[0]) : Stats{to_doubles(rm), to_doubles(rv)});
  };
  check_gradients(g);
}

}  // namespace

TEST(GradBatchNorm, Training4d) { run({3, 4, 3, 5}, true); }
TEST(GradBatchNorm, TrainingOnePixel) { run({6, 3, 1, 1}, true); }
TEST(GradBatchNorm, Training2d) { run({5, 3}, true); }
TEST(GradBatchNorm, Eval4d) { run({2, 3, 4, 4}, false); }

TEST(GradBatchNorm, RunningStatisticsUpdate) {
  Shape s{4, 3, 2, 5};
  Tensor x = random_tensor(s, 11, -1, 4);
  Tensor rm = random_tensor({3}, 12), rv = random_tensor({3}, 13, 0.5, 2);
  Doubles rm0 = to_doubles(rm), rv0 = to_doubles(rv);
  train::Var g(Tensor::from_vector(std::vector<float>{1, 1, 1}, {3})), b(Tensor::zeros(DType::f32, {3}));
  train::batch_norm(train::Var(x), g, b, rm, rv, {true, 0.25f, 1e-5f});
  Stats st = batch_stats(s, to_doubles(x));
  double n = double(shape_numel(s) / 3);
  Doubles want_m(3), want_v(3);
  for (size_t c = 0; c < 3; ++c) {
    want_m[c] = 0.75 * rm0[c] + 0.25 * st.mean[c];
    want_v[c] = 0.75 * rv0[c] + 0.25 * st.var[c] * n / (n - 1);
  }
  expect_near_scaled(rm, want_m, 1e-5, 1e-6, "running mean");
  expect_near_scaled(rv, want_v, 1e-5, 1e-6, "running var");
}

TEST(GradBatchNorm, EvalLeavesRunningStatistics) {
  Tensor rm = random_tensor({3}, 12), rv = random_tensor({3}, 13, 0.5, 2);
  Tensor rm0 = rm.clone(), rv0 = rv.clone();
  train::Var g(random_tensor({3}, 1)), b(random_tensor({3}, 2));
  train::batch_norm(train::Var(random_tensor({2, 3, 4, 4}, 3)), g, b, rm, rv, {false});
  EXPECT_EQ(to_doubles(rm), to_doubles(rm0));
  EXPECT_EQ(to_doubles(rv), to_doubles(rv0));
}

TEST(GradBatchNorm, OneValuePerChannelIsAnError) {
  train::Var g(random_tensor({3}, 1)), b(random_tensor({3}, 2));
  Tensor rm = Tensor::zeros(DType::f32, {3}), rv = Tensor::zeros(DType::f32, {3});
  EXPECT_THROW(train::batch_norm(train::Var(random_tensor({1, 3, 1, 1}, 3)), g, b, rm, rv, {true}), Error);
}
