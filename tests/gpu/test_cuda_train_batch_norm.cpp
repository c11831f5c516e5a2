// batch_norm_forward on cuda:0 refuses a training batch with one value per
// channel (no variance to normalize by). Batch norm's shapes, training and
// eval, the running statistics and the gradients, against finite
// differences and the CPU table, are cases of tests/backend_ops.
#include "train_test_util.h"

namespace tandem::testing {
namespace {

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
