// pool2d_backward on cuda:0 refuses a max pool's missing workspace. The
// pooling geometries themselves, forward and backward against finite
// differences and the CPU table, are cases of tests/backend_ops.
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

}  // namespace
}  // namespace tandem::testing
