// sum_to on cuda:0 refuses a destination its source does not reduce to. The
// broadcasts of add_forward and sum_to and concatenation's axes themselves,
// forward and backward against finite differences and the CPU table, are
// cases of tests/backend_ops.
#include "train_test_util.h"

namespace tandem::testing {
namespace {

TEST(CudaTrainSumTo, ShapesThatDoNotReduceAreErrors) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend& g = gpu_table();
  Tensor src = up(random_f32({2, 3}, 1)), dst = g.empty(g.ctx, DType::f32, {2, 2});
  EXPECT_THROW(g.sum_to(g.ctx, src, {dst, GradMode::overwrite}), Error);
}

}  // namespace
}  // namespace tandem::testing
