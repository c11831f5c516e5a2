// eltwise_forward / eltwise_backward on cuda:0 against the CPU table (oneDNN)
// for every activation, over ranges that cross each kink and saturate the
// curved ones; gradients overwritten and accumulated; relative error <= 1e-5
// (train_test_util.h).
#include "train_test_util.h"

namespace tandem::testing {
namespace {

struct ActCase {
  const char* name;
  ops::Activation p;
  float lo, hi;
};

std::vector<ActCase> cases() {
  return {{"relu", {ops::ActivationKind::relu}, -3, 3},       {"leaky_relu", {ops::ActivationKind::leaky_relu, 0.1f}, -3, 3},
          {"silu", {ops::ActivationKind::silu}, -8, 8},       {"hardswish", {ops::ActivationKind::hard_swish}, -5, 5},
          {"sigmoid", {ops::ActivationKind::sigmoid}, -8, 8}, {"tanh", {ops::ActivationKind::tanh}, -4, 4},
          {"gelu", {ops::ActivationKind::gelu}, -6, 6},       {"gelu_tanh", {ops::ActivationKind::gelu_tanh}, -6, 6}};
}

void run(const ActCase& c, GradMode mode, uint32_t seed) {
  SCOPED_TRACE(std::string(c.name) + ", " + mode_name(mode));
  Shape s{4, 8, 13, 17};
  Pair x = random_pair(s, seed, c.lo, c.hi), y = empty_pair(s);
  cpu_table().eltwise_forward(cpu_table().ctx, c.p, x.cpu, y.cpu);
  gpu_table().eltwise_forward(gpu_table().ctx, c.p, x.gpu, y.gpu);
  expect_close(y, kTolerance, "y");
  Pair dy = random_pair(s, seed + 1);
  GradPair dx = grad_pair(s, mode, seed + 2);
  cpu_table().eltwise_backward(cpu_table().ctx, c.p, x.cpu, dy.cpu, dx.cpu());
  gpu_table().eltwise_backward(gpu_table().ctx, c.p, x.gpu, dy.gpu, dx.gpu());
  expect_close(dx.t, kTolerance, "dx");
}

TEST(CudaTrainEltwise, EveryActivationMatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 1;
  for (const ActCase& c : cases()) {
    run(c, GradMode::overwrite, seed += 10);
    run(c, GradMode::accumulate, seed += 10);
  }
}

TEST(CudaTrainEltwise, FillSetsEveryElement) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend& g = gpu_table();
  Tensor t = g.empty(g.ctx, DType::f32, {3, 1000});
  g.fill(g.ctx, t, 0.375f);
  Tensor h = down(t);
  for (int64_t i = 0; i < h.numel(); ++i) ASSERT_EQ(h.data<float>()[i], 0.375f) << "element " << i;
}

}  // namespace
}  // namespace tandem::testing
