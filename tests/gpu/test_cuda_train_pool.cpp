// pool2d on cuda:0: a max pool's missing workspace is an error, and NaN wins
// a max window in both layouts (as on the CPU and in PyTorch). The pooling
// geometries themselves, forward and backward against finite differences
// and the CPU table, are cases of tests/backend_ops.
#include <cmath>
#include <limits>
#include <string>

#include "train_test_util.h"

namespace tandem::testing {
namespace {

TEST(CudaTrainPool, MaxBackwardWithoutItsWorkspaceIsAnError) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend& g = gpu_table();
  ops::Pool2dParams p{ops::PoolKind::max, {2, 2}, {2, 2}};
  Tensor dy = up(random_f32({1, 1, 2, 2}, 1)), dx = g.empty(g.ctx, DType::f32, {1, 1, 4, 4});
  EXPECT_THROW(g.pool2d_backward(g.ctx, p, Tensor(), dy, {dx, GradMode::overwrite}), Error);
}

// 3 channels take the channels-last kernel's one-channel-per-thread path, 4
// its 16-byte one.
TEST(CudaTrainPool, MaxPropagatesNanInEveryLayout) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend& g = gpu_table();
  const ops::Pool2dParams p{ops::PoolKind::max, {2, 2}, {2, 2}};
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
