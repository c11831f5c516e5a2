// cross_entropy: fp32 loss and logits gradient against the float64
// definition and its central finite differences (tolerances in
// tests/train/grad_check.h):
//   loss = mean_n -sum_k t_nk log softmax(z_n)_k,  t = (1 - s) onehot + s / K.
// Labels outside [0, K) are errors naming the label and the sample.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/train/grad_check.h"
#include "train/functional.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

Doubles reference_ce(int64_t N, int64_t K, const std::vector<int64_t>& labels, double s, const Doubles& z) {
  double total = 0;
  for (int64_t n = 0; n < N; ++n) {
    double mx = z[size_t(n * K)], sum = 0;
    for (int64_t k = 0; k < K; ++k) mx = std::max(mx, z[size_t(n * K + k)]);
    for (int64_t k = 0; k < K; ++k) sum += std::exp(z[size_t(n * K + k)] - mx);
    for (int64_t k = 0; k < K; ++k) {
      double logp = z[size_t(n * K + k)] - mx - std::log(sum);
      double t = (k == labels[size_t(n)] ? 1 - s : 0) + s / double(K);
      total -= t * logp;
    }
  }
  return {total / double(N)};
}

void run(int64_t N, int64_t K, float smoothing) {
  std::vector<int64_t> labels;
  for (int64_t n = 0; n < N; ++n) labels.push_back((n * 7 + 3) % K);
  Tensor l = Tensor::from_vector(labels, {N});
  GradCase g;
  g.what = "N=" + std::to_string(N) + " K=" + std::to_string(K) + " smoothing " + std::to_string(smoothing);
  g.inputs = {random_tensor({N, K}, 3, -4, 4)};
  g.op = [&](const std::vector<train::Var>& v) { return train::cross_entropy(v[0], l, smoothing); };
  g.reference = [&](const std::vector<Doubles>& in) { return reference_ce(N, K, labels, smoothing, in[0]); };
  check_gradients(g);
}

}  // namespace

TEST(GradCrossEntropy, NoSmoothing) { run(5, 7, 0.f); }
TEST(GradCrossEntropy, Smoothing) { run(6, 10, 0.1f); }
TEST(GradCrossEntropy, FullSmoothing) { run(3, 4, 1.f); }
TEST(GradCrossEntropy, SingleSample) { run(1, 3, 0.2f); }

TEST(GradCrossEntropy, LossIsAScalarAndBackwardNeedsNoSeed) {
  train::Var z(random_tensor({4, 3}, 1), true);
  train::Var loss = train::cross_entropy(z, Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 1}, {4}));
  EXPECT_EQ(loss.value().numel(), 1);
  train::backward(loss);
  // Each row of the gradient of a mean cross-entropy sums to zero.
  for (int64_t n = 0; n < 4; ++n) {
    double row = 0;
    for (int64_t k = 0; k < 3; ++k) row += z.grad().scalar_at(n * 3 + k);
    EXPECT_NEAR(row, 0, 1e-6);
  }
}

TEST(GradCrossEntropy, LabelOutOfRangeIsAnError) {
  train::Var z(random_tensor({3, 4}, 1), true);
  for (int64_t bad : {4, -1, 1000}) {
    Tensor l = Tensor::from_vector(std::vector<int64_t>{0, bad, 2}, {3});
    try {
      train::cross_entropy(z, l);
      ADD_FAILURE() << "label " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("label " + std::to_string(bad) + " of sample 1"), std::string::npos)
          << e.what();
      EXPECT_EQ(e.context().op, "cross_entropy_forward");
    }
  }
  EXPECT_THROW(train::cross_entropy(z, Tensor::from_vector(std::vector<int32_t>{0, 1, 2}, {3})), Error);
}
