// linear_forward on cuda:0 refuses shapes that do not fit, naming them. The
// shapes of the linear entries themselves, forward and backward against
// finite differences and the CPU table, are cases of tests/backend_ops.
#include "train_test_util.h"

namespace tandem::testing {
namespace {

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
