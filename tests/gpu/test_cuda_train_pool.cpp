// pool2d_forward / pool2d_backward on cuda:0 (kernels of our own) against the
// CPU table (oneDNN) over the cases of tests/train/test_grad_pool.cpp (max
// with padding, overlap, dilation; average including and excluding the
// padding; global average) and the small CNN's 2x2 max pool; gradients
// overwritten and accumulated; relative error <= 1e-5 (train_test_util.h).
// Inputs are random, so max-pool windows have no ties.
#include <cmath>
#include <limits>
#include <string>

#include "train_test_util.h"

namespace tandem::testing {
namespace {

ops::Pool2dParams pool(ops::PoolKind k, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                  int64_t dh = 1, int64_t dw = 1, bool include_pad = true) {
  return {k, {kh, kw}, {sh, sw}, {ph, pw}, {dh, dw}, include_pad};
}

struct PoolCase {
  std::string name;
  Shape x;
  ops::Pool2dParams p;
};

std::vector<PoolCase> cases() {
  return {
      {"max 2x2/2", {2, 3, 6, 6}, pool(ops::PoolKind::max, 2, 2, 2, 2, 0, 0)},
      {"max 3x3/2 pad 1", {2, 2, 7, 8}, pool(ops::PoolKind::max, 3, 3, 2, 2, 1, 1)},
      {"max 3x3/1", {1, 2, 6, 5}, pool(ops::PoolKind::max, 3, 3, 1, 1, 0, 0)},
      {"max 2x2/1 dilation 2", {1, 3, 7, 7}, pool(ops::PoolKind::max, 2, 2, 1, 1, 0, 0, 2, 2)},
      {"max 3x2, stride (2,1), pad (1,0), dilation (1,2)", {2, 2, 7, 7}, pool(ops::PoolKind::max, 3, 2, 2, 1, 1, 0, 1, 2)},
      {"avg 2x2/2", {2, 3, 6, 6}, pool(ops::PoolKind::average, 2, 2, 2, 2, 0, 0)},
      {"avg 3x3/2 pad 1 include pad", {2, 2, 7, 6}, pool(ops::PoolKind::average, 3, 3, 2, 2, 1, 1)},
      {"avg 3x3/2 pad 1 exclude pad", {2, 2, 7, 6}, pool(ops::PoolKind::average, 3, 3, 2, 2, 1, 1, 1, 1, false)},
      {"avg 3x2, stride (1,2), pad (1,1)", {1, 3, 5, 6}, pool(ops::PoolKind::average, 3, 2, 1, 2, 1, 1)},
      {"global average", {2, 3, 5, 4}, pool(ops::PoolKind::average, 5, 4, 1, 1, 0, 0)},
      {"small CNN max 2x2/2", {32, 32, 28, 28}, pool(ops::PoolKind::max, 2, 2, 2, 2, 0, 0)},
  };
}

void run(const PoolCase& c, GradMode mode, uint32_t seed) {
  SCOPED_TRACE(c.name + ", " + mode_name(mode));
  Shape ys = ops::pool2d_output_shape(c.p, c.x);
  Pair x = random_pair(c.x, seed), y = empty_pair(ys);
  Tensor saved_cpu, saved_gpu;
  cpu_table().pool2d_forward(cpu_table().ctx, c.p, x.cpu, y.cpu, &saved_cpu);
  gpu_table().pool2d_forward(gpu_table().ctx, c.p, x.gpu, y.gpu, &saved_gpu);
  expect_close(y, kTolerance, "y");
  Pair dy = random_pair(ys, seed + 1);
  GradPair dx = grad_pair(c.x, mode, seed + 2);
  cpu_table().pool2d_backward(cpu_table().ctx, c.p, saved_cpu, dy.cpu, dx.cpu());
  gpu_table().pool2d_backward(gpu_table().ctx, c.p, saved_gpu, dy.gpu, dx.gpu());
  expect_close(dx.t, kTolerance, "dx");
}

TEST(CudaTrainPool, EveryCaseMatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 1;
  for (const PoolCase& c : cases()) {
    run(c, GradMode::overwrite, seed += 10);
    run(c, GradMode::accumulate, seed += 10);
  }
}

TEST(CudaTrainPool, MaxBackwardWithoutItsWorkspaceIsAnError) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend& g = gpu_table();
  ops::Pool2dParams p = pool(ops::PoolKind::max, 2, 2, 2, 2, 0, 0);
  Tensor dy = up(random_f32({1, 1, 2, 2}, 1)), dx = g.empty(g.ctx, DType::f32, {1, 1, 4, 4});
  EXPECT_THROW(g.pool2d_backward(g.ctx, p, Tensor(), dy, {dx, GradMode::overwrite}), Error);
}

// A NaN in a max window makes that window NaN (PyTorch's rule, and the CPU
// table's), in the plain kernel and in channels last, one channel per
// thread (C = 3) or 16 bytes of channels (C = 4).
TEST(CudaTrainPool, MaxPropagatesNanInEveryLayout) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend& g = gpu_table();
  const ops::Pool2dParams p = pool(ops::PoolKind::max, 2, 2, 2, 2, 0, 0);
  for (int64_t channels : {3, 4}) {
    for (Layout layout : {Layout::plain, Layout::nhwc}) {
      SCOPED_TRACE(std::to_string(channels) + " channels, " + std::string(layout_name(layout)));
      const Shape xs = {1, channels, 4, 4}, ys = ops::pool2d_output_shape(p, xs);
      Tensor host = random_f32(xs, 7);
      host.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();  // channel 0, (1, 1): window (0, 0)
      Tensor x = g.empty(g.ctx, DType::f32, xs).with_layout(layout);
      g.cast(g.ctx, up(host), {x, GradMode::overwrite});
      Tensor y = g.empty(g.ctx, DType::f32, ys).with_layout(layout), saved;
      g.pool2d_forward(g.ctx, p, x, y, &saved);
      Tensor y_plain = g.empty(g.ctx, DType::f32, ys);
      g.cast(g.ctx, y, {y_plain, GradMode::overwrite});
      const Tensor got = down(y_plain);
      for (int64_t i = 0; i < got.numel(); ++i)
        EXPECT_EQ(std::isnan(got.data<float>()[i]), i == 0) << "y[" << i << "]";
    }
  }
}

}  // namespace
}  // namespace tandem::testing
