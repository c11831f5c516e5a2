// batch_norm_forward / batch_norm_backward on cuda:0 against the CPU table:
// the shapes of tests/train/test_grad_batch_norm.cpp and a small CNN layer's,
// training and eval; y, the updated running statistics, dx, dgamma and dbeta,
// overwritten and accumulated; relative error <= 1e-5 (train_test_util.h).
#include "train_test_util.h"

namespace tandem::testing {
namespace {

void run(const Shape& s, bool training, GradMode mode, uint32_t seed) {
  SCOPED_TRACE(shape_str(s) + (training ? " training, " : " eval, ") + mode_name(mode));
  int64_t c = s[1];
  ops::BatchNormParams p{training, 0.1f, 1e-5f};
  Pair x = random_pair(s, seed, -2.f, 3.f), gamma = random_pair({c}, seed + 1, 0.5f, 1.5f);
  Pair beta = random_pair({c}, seed + 2);
  Pair rm = random_pair({c}, seed + 3, -0.5f, 0.5f), rv = random_pair({c}, seed + 4, 0.5f, 1.5f);
  Pair y = empty_pair(s);
  Tensor saved_cpu, saved_gpu;
  cpu_table().batch_norm_forward(cpu_table().ctx, p, x.cpu, gamma.cpu, beta.cpu, rm.cpu, rv.cpu, y.cpu, &saved_cpu);
  gpu_table().batch_norm_forward(gpu_table().ctx, p, x.gpu, gamma.gpu, beta.gpu, rm.gpu, rv.gpu, y.gpu, &saved_gpu);
  expect_close(y, kTolerance, "y");
  expect_close(rm, kTolerance, "running mean");
  expect_close(rv, kTolerance, "running var");

  Pair dy = random_pair(s, seed + 5);
  GradPair dx = grad_pair(s, mode, seed + 6), dg = grad_pair({c}, mode, seed + 7), db = grad_pair({c}, mode, seed + 8);
  cpu_table().batch_norm_backward(cpu_table().ctx, p, x.cpu, gamma.cpu, saved_cpu, dy.cpu, dx.cpu(), dg.cpu(),
                                  db.cpu());
  gpu_table().batch_norm_backward(gpu_table().ctx, p, x.gpu, gamma.gpu, saved_gpu, dy.gpu, dx.gpu(), dg.gpu(),
                                  db.gpu());
  expect_close(dx.t, kTolerance, "dx");
  expect_close(dg.t, kTolerance, "dgamma");
  expect_close(db.t, kTolerance, "dbeta");
}

const std::vector<std::pair<Shape, bool>>& cases() {
  static const std::vector<std::pair<Shape, bool>> c{{{3, 4, 3, 5}, true},   {{6, 3, 1, 1}, true},
                                                     {{5, 3}, true},         {{2, 3, 4, 4}, false},
                                                     {{32, 32, 28, 28}, true}, {{32, 64, 14, 14}, false}};
  return c;
}

TEST(CudaTrainBatchNorm, MatchesTheCpuOverwritingGradients) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 1;
  for (const auto& [s, training] : cases()) run(s, training, GradMode::overwrite, seed += 10);
}

TEST(CudaTrainBatchNorm, MatchesTheCpuAccumulatingGradients) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 200;
  for (const auto& [s, training] : cases()) run(s, training, GradMode::accumulate, seed += 10);
}

TEST(CudaTrainBatchNorm, OnlyTheParameterGradients) {
  TANDEM_REQUIRE_GPU();
  Shape s{4, 3, 5, 5};
  ops::BatchNormParams p{.training = true};
  Pair x = random_pair(s, 1), gamma = random_pair({3}, 2), beta = random_pair({3}, 3);
  Pair rm = random_pair({3}, 4), rv = random_pair({3}, 5, 0.5f, 1.5f), y = empty_pair(s);
  Tensor saved_cpu, saved_gpu;
  cpu_table().batch_norm_forward(cpu_table().ctx, p, x.cpu, gamma.cpu, beta.cpu, rm.cpu, rv.cpu, y.cpu, &saved_cpu);
  gpu_table().batch_norm_forward(gpu_table().ctx, p, x.gpu, gamma.gpu, beta.gpu, rm.gpu, rv.gpu, y.gpu, &saved_gpu);
  Pair dy = random_pair(s, 6);
  GradPair dg = grad_pair({3}, GradMode::overwrite, 7), db = grad_pair({3}, GradMode::accumulate, 8);
  cpu_table().batch_norm_backward(cpu_table().ctx, p, x.cpu, gamma.cpu, saved_cpu, dy.cpu, {}, dg.cpu(), db.cpu());
  gpu_table().batch_norm_backward(gpu_table().ctx, p, x.gpu, gamma.gpu, saved_gpu, dy.gpu, {}, dg.gpu(), db.gpu());
  expect_close(dg.t, kTolerance, "dgamma");
  expect_close(db.t, kTolerance, "dbeta");
}

TEST(CudaTrainBatchNorm, OneValuePerChannelIsAnError) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend& g = gpu_table();
  Tensor x = up(random_f32({1, 3, 1, 1}, 1)), gamma = up(random_f32({3}, 2)), beta = up(random_f32({3}, 3));
  Tensor rm = up(random_f32({3}, 4)), rv = up(random_f32({3}, 5)), y = g.empty(g.ctx, DType::f32, {1, 3, 1, 1});
  Tensor saved;
  EXPECT_THROW(g.batch_norm_forward(g.ctx, {true}, x, gamma, beta, rm, rv, y, &saved), Error);
}

}  // namespace
}  // namespace tandem::testing
