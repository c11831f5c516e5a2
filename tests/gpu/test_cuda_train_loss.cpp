// dropout and cross-entropy on cuda:0 against the CPU table. Dropout's mask
// is a function of (seed, index) shared by both tables: the masks, outputs
// and gradients must be bit-identical. Cross-entropy (label smoothing 0, 0.1,
// 1; K up to 1000): the loss, the log-probabilities and dlogits within 1e-5
// relative; a label outside [0, K) is an Error naming it and its sample, in
// the forward and the backward.
#include "train_test_util.h"

namespace tandem::testing {
namespace {

TEST(CudaTrainDropout, MaskOutputAndGradientAreTheCpusBits) {
  TANDEM_REQUIRE_GPU();
  for (float p : {0.1f, 0.5f, 0.8f}) {
    for (GradMode mode : {GradMode::overwrite, GradMode::accumulate}) {
      SCOPED_TRACE("p = " + std::to_string(p) + ", " + mode_name(mode));
      ops::DropoutParams params{p, 0x5eedULL + uint64_t(p * 10)};
      Shape s{7, 33, 101};  // not a multiple of any block size
      Pair x = random_pair(s, 1), y = empty_pair(s);
      Tensor mask_cpu, mask_gpu;
      cpu_table().dropout_forward(cpu_table().ctx, params, x.cpu, y.cpu, &mask_cpu);
      gpu_table().dropout_forward(gpu_table().ctx, params, x.gpu, y.gpu, &mask_gpu);
      expect_same_bits(mask_gpu, mask_cpu, "mask");
      expect_same_bits(y.gpu, y.cpu, "y");
      Pair dy = random_pair(s, 2);
      GradPair dx = grad_pair(s, mode, 3);
      cpu_table().dropout_backward(cpu_table().ctx, params, mask_cpu, dy.cpu, dx.cpu());
      gpu_table().dropout_backward(gpu_table().ctx, params, mask_gpu, dy.gpu, dx.gpu());
      expect_same_bits(dx.t.gpu, dx.t.cpu, "dx");
    }
  }
}

TEST(CudaTrainDropout, ProbabilityOutOfRangeIsAnError) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend& g = gpu_table();
  Tensor x = up(random_f32({10}, 1)), y = g.empty(g.ctx, DType::f32, {10}), mask;
  EXPECT_THROW(g.dropout_forward(g.ctx, {1.f, 1}, x, y, &mask), Error);
  EXPECT_THROW(g.dropout_forward(g.ctx, {-0.1f, 1}, x, y, &mask), Error);
}

Tensor labels_for(int64_t n, int64_t k) {
  std::vector<int64_t> l;
  for (int64_t i = 0; i < n; ++i) l.push_back((i * 7 + 3) % k);
  return Tensor::from_vector(l, {n});
}

void run_ce(int64_t n, int64_t k, float smoothing, GradMode mode, uint32_t seed) {
  SCOPED_TRACE("N=" + std::to_string(n) + " K=" + std::to_string(k) + " smoothing " + std::to_string(smoothing) +
               ", " + mode_name(mode));
  ops::CrossEntropyParams p{smoothing};
  Pair z = random_pair({n, k}, seed, -4.f, 4.f), labels = same(labels_for(n, k)), loss = empty_pair({});
  Tensor saved_cpu, saved_gpu;
  cpu_table().cross_entropy_forward(cpu_table().ctx, p, z.cpu, labels.cpu, loss.cpu, &saved_cpu);
  gpu_table().cross_entropy_forward(gpu_table().ctx, p, z.gpu, labels.gpu, loss.gpu, &saved_gpu);
  expect_close(loss, kTolerance, "loss");
  expect_close(saved_gpu, saved_cpu, kTolerance, "log-probabilities");
  Pair dloss = same(Tensor::from_vector(std::vector<float>{0.75f}, {}));
  GradPair dz = grad_pair({n, k}, mode, seed + 1);
  cpu_table().cross_entropy_backward(cpu_table().ctx, p, saved_cpu, labels.cpu, dloss.cpu, dz.cpu());
  gpu_table().cross_entropy_backward(gpu_table().ctx, p, saved_gpu, labels.gpu, dloss.gpu, dz.gpu());
  expect_close(dz.t, kTolerance, "dlogits");
}

TEST(CudaTrainCrossEntropy, MatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  struct Case {
    int64_t n, k;
    float s;
  } cases[] = {{5, 7, 0.f}, {6, 10, 0.1f}, {3, 4, 1.f}, {1, 3, 0.2f}, {128, 10, 0.1f}, {64, 1000, 0.f}, {33, 40, 0.f}};
  uint32_t seed = 1;
  for (const Case& c : cases)
    for (GradMode mode : {GradMode::overwrite, GradMode::accumulate}) run_ce(c.n, c.k, c.s, mode, seed += 10);
}

TEST(CudaTrainCrossEntropy, LabelOutOfRangeIsAnErrorNamingIt) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend& g = gpu_table();
  Tensor z = up(random_f32({3, 4}, 1)), loss = g.empty(g.ctx, DType::f32, {});
  for (int64_t bad : {4, -1, 1000}) {
    Tensor labels = up(Tensor::from_vector(std::vector<int64_t>{0, bad, 2}, {3}));
    Tensor saved;
    try {
      g.cross_entropy_forward(g.ctx, {}, z, labels, loss, &saved);
      ADD_FAILURE() << "label " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("label " + std::to_string(bad) + " of sample 1"), std::string::npos)
          << e.what();
      EXPECT_EQ(e.context().op, "cross_entropy_forward");
    }
    // The backward checks its labels too (a saved forward from good labels).
    Tensor good = up(Tensor::from_vector(std::vector<int64_t>{0, 1, 2}, {3}));
    g.cross_entropy_forward(g.ctx, {}, z, good, loss, &saved);
    Tensor dloss = up(Tensor::from_vector(std::vector<float>{1.f}, {}));
    Tensor dz = g.empty(g.ctx, DType::f32, {3, 4});
    EXPECT_THROW(g.cross_entropy_backward(g.ctx, {}, saved, labels, dloss, {dz, GradMode::overwrite}), Error);
  }
  Tensor i32_labels = up(Tensor::from_vector(std::vector<int32_t>{0, 1, 2}, {3}));
  Tensor saved;
  EXPECT_THROW(g.cross_entropy_forward(g.ctx, {}, z, i32_labels, loss, &saved), Error);
  Tensor host_labels = Tensor::from_vector(std::vector<int64_t>{0, 1, 2}, {3});
  EXPECT_THROW(g.cross_entropy_forward(g.ctx, {}, z, host_labels, loss, &saved), Error);
}

}  // namespace
}  // namespace tandem::testing
