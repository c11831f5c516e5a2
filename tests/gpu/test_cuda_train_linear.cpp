// linear_forward / linear_backward on cuda:0 (cuBLASLt) against the CPU table
// (oneDNN), the shapes of tests/train/test_grad_linear.cpp and the small
// CNN's classifier at batch 128; gradients overwritten and accumulated, some
// not wanted; relative error <= 1e-5 (train_test_util.h).
#include "train_test_util.h"

namespace tandem::testing {
namespace {

struct LinearCase {
  int64_t n, k, m;
  bool bias;
};

void run(const LinearCase& c, GradMode mode, bool want_dx, uint32_t seed) {
  SCOPED_TRACE("linear N=" + std::to_string(c.n) + " K=" + std::to_string(c.k) + " M=" + std::to_string(c.m) +
               (c.bias ? " bias, " : " no bias, ") + mode_name(mode));
  Pair x = random_pair({c.n, c.k}, seed), w = random_pair({c.m, c.k}, seed + 1);
  Pair b = c.bias ? random_pair({c.m}, seed + 2) : Pair{};
  Pair y = empty_pair({c.n, c.m});
  cpu_table().linear_forward(cpu_table().ctx, x.cpu, w.cpu, b.cpu, y.cpu);
  gpu_table().linear_forward(gpu_table().ctx, x.gpu, w.gpu, b.gpu, y.gpu);
  expect_close(y, kTolerance, "y");

  Pair dy = random_pair({c.n, c.m}, seed + 3);
  GradPair dx = grad_pair({c.n, c.k}, mode, seed + 4), dw = grad_pair({c.m, c.k}, mode, seed + 5);
  GradPair db = grad_pair({c.m}, mode, seed + 6);
  GradOut dx_cpu = want_dx ? dx.cpu() : GradOut{}, dx_gpu = want_dx ? dx.gpu() : GradOut{};
  GradOut db_cpu = c.bias ? db.cpu() : GradOut{}, db_gpu = c.bias ? db.gpu() : GradOut{};
  cpu_table().linear_backward(cpu_table().ctx, x.cpu, w.cpu, dy.cpu, dx_cpu, dw.cpu(), db_cpu);
  gpu_table().linear_backward(gpu_table().ctx, x.gpu, w.gpu, dy.gpu, dx_gpu, dw.gpu(), db_gpu);
  if (want_dx) expect_close(dx.t, kTolerance, "dx");
  expect_close(dw.t, kTolerance, "dw");
  if (c.bias) expect_close(db.t, kTolerance, "db");
}

std::vector<LinearCase> cases() {
  return {{4, 7, 5, true}, {3, 6, 4, false}, {1, 9, 3, true}, {5, 3, 17, true}, {128, 3136, 128, true},
          {128, 128, 10, true}};
}

TEST(CudaTrainLinear, MatchesTheCpuOverwritingGradients) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 1;
  for (const LinearCase& c : cases()) run(c, GradMode::overwrite, true, seed += 10);
}

TEST(CudaTrainLinear, MatchesTheCpuAccumulatingGradients) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 300;
  for (const LinearCase& c : cases()) run(c, GradMode::accumulate, true, seed += 10);
}

TEST(CudaTrainLinear, WithoutAnInputGradient) {
  TANDEM_REQUIRE_GPU();
  run({6, 5, 4, true}, GradMode::overwrite, false, 900);
}

TEST(CudaTrainLinear, BadShapesAreErrors) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend& g = gpu_table();
  Tensor x = up(random_f32({3, 4}, 1)), w = up(random_f32({2, 5}, 2)), b = up(random_f32({3}, 3));
  Tensor y = g.empty(g.ctx, DType::f32, {3, 2});
  EXPECT_THROW(g.linear_forward(g.ctx, x, w, Tensor(), y), Error);
  Tensor w2 = up(random_f32({2, 4}, 2));
  EXPECT_THROW(g.linear_forward(g.ctx, x, w2, b, y), Error);  // bias [3] for 2 outputs
}

}  // namespace
}  // namespace tandem::testing
