// layer_norm on the CPU table: fp32 forward against a float64 loop of the
// textbook definition (each vector of the normalized extents: (x - mean) /
// sqrt(biased var + eps) * gamma + beta), gradients of x, gamma and beta
// against its central finite differences (tolerances in
// tests/train/grad_check.h); over the last axis (nn.LayerNorm), over
// trailing axes, and over the channels of [N, C, H, W] (LayerNorm2d).
// The saved statistics and accumulating gradients are checked too.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/train_table.h"
#include "tests/train/grad_check.h"
#include "train/functional.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

constexpr double kEps = 1e-5;

// x viewed as [rows, cols, inner]: rows = prod(s[:axis]), cols =
// prod(s[axis:end]), inner = prod(s[end:]).
struct View {
  int64_t rows, cols, inner;
};

View view_of(const Shape& s, int64_t axis, int64_t end) {
  return {shape_numel(Shape(s.begin(), s.begin() + axis)),
          shape_numel(Shape(s.begin() + axis, s.begin() + end)),
          shape_numel(Shape(s.begin() + end, s.end()))};
}

// in: x, gamma and (when present) beta.
Doubles reference_layer_norm(const View& v, const std::vector<Doubles>& in) {
  const Doubles& x = in[0];
  Doubles y(x.size());
  for (int64_t r = 0; r < v.rows; ++r)
    for (int64_t i = 0; i < v.inner; ++i) {
      auto at = [&](int64_t j) { return size_t((r * v.cols + j) * v.inner + i); };
      double mean = 0, var = 0;
      for (int64_t j = 0; j < v.cols; ++j) mean += x[at(j)];
      mean /= double(v.cols);
      for (int64_t j = 0; j < v.cols; ++j) var += (x[at(j)] - mean) * (x[at(j)] - mean);
      var /= double(v.cols);
      for (int64_t j = 0; j < v.cols; ++j)
        y[at(j)] = (x[at(j)] - mean) / std::sqrt(var + kEps) * in[1][size_t(j)] +
                   (in.size() > 2 ? in[2][size_t(j)] : 0.0);
    }
  return y;
}

void run(const Shape& s, int64_t axis, int64_t end, bool with_beta) {
  const View v = view_of(s, axis, end);
  GradCase g;
  g.what = shape_str(s) + " axes [" + std::to_string(axis) + ", " + std::to_string(end) + ")" +
           (with_beta ? "" : " without beta");
  // An offset mean (|mean| > std) as real activations have.
  g.inputs = {random_tensor(s, 1, -1, 3), random_tensor({v.cols}, 2, 0.5, 1.5)};
  if (with_beta) g.inputs.push_back(random_tensor({v.cols}, 3));
  g.op = [&](const std::vector<train::Var>& in) {
    return train::layer_norm(in[0], in[1], with_beta ? in[2] : train::Var(), axis, end,
                             float(kEps));
  };
  g.reference = [&](const std::vector<Doubles>& in) { return reference_layer_norm(v, in); };
  check_gradients(g);
}

}  // namespace

TEST(GradLayerNorm, LastAxis) { run({6, 10}, 1, 2, true); }
TEST(GradLayerNorm, LastAxisOfRank3) { run({2, 3, 16}, 2, 3, true); }
TEST(GradLayerNorm, TrailingAxes) { run({3, 4, 5}, 1, 3, true); }
TEST(GradLayerNorm, Channels2d) { run({2, 5, 3, 4}, 1, 2, true); }
TEST(GradLayerNorm, Channels2dWithoutBeta) { run({2, 4, 3, 3}, 1, 2, false); }
TEST(GradLayerNorm, OneRowOfOneValue) { run({1, 1}, 1, 2, true); }

TEST(GradLayerNorm, SavedStatisticsAreMeanAndInverseStd) {
  const TrainBackend& cpu = cpu::cpu_train_backend();
  Shape s{2, 3, 2, 2};
  const ops::LayerNormParams p = ops::layernorm_params(s, 1, 2, 1e-5f);
  ASSERT_EQ(p.rows, 2);
  ASSERT_EQ(p.cols, 3);
  ASSERT_EQ(p.inner, 4);
  Tensor x = random_tensor(s, 4, -2, 2), y = Tensor::empty(DType::f32, s), saved;
  Tensor gamma = random_tensor({3}, 5), beta = random_tensor({3}, 6);
  cpu.layer_norm_forward(cpu.ctx, p, x, gamma, beta, y, &saved);
  ASSERT_EQ(saved.shape(), (Shape{2, 8}));
  const Doubles xd = to_doubles(x);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < 4; ++i) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < 3; ++j) mean += xd[size_t((r * 3 + j) * 4 + i)] / 3;
      for (int64_t j = 0; j < 3; ++j)
        var += std::pow(xd[size_t((r * 3 + j) * 4 + i)] - mean, 2) / 3;
      EXPECT_NEAR(saved.scalar_at(r * 4 + i), mean, 1e-6);
      EXPECT_NEAR(saved.scalar_at(8 + r * 4 + i), 1 / std::sqrt(var + 1e-5),
                  1e-5 / std::sqrt(var + 1e-5));
    }
}

TEST(GradLayerNorm, AccumulatingAddsToTheGradients) {
  const TrainBackend& cpu = cpu::cpu_train_backend();
  Shape s{4, 6};
  const ops::LayerNormParams p = ops::layernorm_params(s, 1, 2, 1e-5f);
  Tensor x = random_tensor(s, 7, -1, 2), y = Tensor::empty(DType::f32, s), saved;
  Tensor gamma = random_tensor({6}, 8), beta = random_tensor({6}, 9), dy = random_tensor(s, 10);
  cpu.layer_norm_forward(cpu.ctx, p, x, gamma, beta, y, &saved);
  Tensor dx = Tensor::empty(DType::f32, s), dg = Tensor::empty(DType::f32, {6}),
         db = Tensor::empty(DType::f32, {6});
  cpu.layer_norm_backward(cpu.ctx, p, x, gamma, saved, dy, {dx}, {dg}, {db});
  Tensor dx2 = random_tensor(s, 11), dg2 = random_tensor({6}, 12), db2 = random_tensor({6}, 13);
  const Doubles before[3] = {to_doubles(dx2), to_doubles(dg2), to_doubles(db2)};
  cpu.layer_norm_backward(cpu.ctx, p, x, gamma, saved, dy, {dx2, GradMode::accumulate},
                          {dg2, GradMode::accumulate}, {db2, GradMode::accumulate});
  const Tensor* sums[3] = {&dx2, &dg2, &db2};
  const Tensor* once[3] = {&dx, &dg, &db};
  for (int k = 0; k < 3; ++k)
    for (int64_t i = 0; i < sums[k]->numel(); ++i)
      EXPECT_NEAR(sums[k]->scalar_at(i), before[k][size_t(i)] + once[k]->scalar_at(i), 1e-6)
          << k << " " << i;
}

TEST(GradLayerNorm, WrongShapesAreErrors) {
  train::Var x(random_tensor({2, 3, 4}, 1)), g4(random_tensor({4}, 2)), g3(random_tensor({3}, 3));
  EXPECT_THROW(train::layer_norm(x, g3, train::Var(), 2, 3), Error);  // gamma must be [4]
  EXPECT_THROW(train::layer_norm(x, g4, train::Var(), 2, 2), Error);  // empty axis run
  EXPECT_THROW(train::layer_norm(x, g4, train::Var(), 2, 4), Error);  // past the rank
}
