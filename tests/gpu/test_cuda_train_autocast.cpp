// Autocast on the CUDA training table, which keeps 16-bit activations: under
// AutocastGuard(f16 / bf16) conv2d stores y in the compute dtype and batch
// norm, the activations, pooling, the residual add and dropout keep it (the
// first linear and the loss widen to f32); gradients of activations are
// 16-bit, parameters' gradients f32. The tiny CNN (tests/train/tiny_cnn.h)
// on cuda:0 under autocast against the same net, weights and batch in f32 on
// cuda:0 (itself checked against the CPU table and PyTorch): loss and every
// parameter gradient within the rounding of 16-bit activations (relative
// error over the tensor <= 2e-2 for f16, 1e-1 for bf16: its unit roundoff is
// 2^-9, 8x f16's, and a bias gradient is a sum of dy whose terms nearly
// cancel, so its norm-relative error is the largest: 0.073 measured on the
// H200 for the last block's bn1.bias. A kernel that read 16-bit values as
// f32, or lost a gradient, is off by O(1)).
#include "tests/train/tiny_cnn.h"
#include "train/autocast.h"
#include "train/device_tensor.h"
#include "train/functional.h"
#include "train_test_util.h"

namespace tandem::testing {
namespace {

using namespace tandem::train;

struct Run {
  Tensor loss;
  std::vector<Tensor> grads;
};

Run forward_backward(Sequential& net, const Tensor& x, const Tensor& labels, DType autocast) {
  for (Parameter* p : net.parameters()) zero_tensor(p->grad);
  AutocastGuard guard(autocast);
  Var loss = cross_entropy(net(Var(x)), labels, 0.1f);
  backward(loss);
  Run r{to_host(loss.value()), {}};
  for (Parameter* p : net.parameters()) r.grads.push_back(to_host(p->grad));
  return r;
}

void expect_autocast_matches_f32(DType low, double tol) {
  Sequential net32, net16;
  build_tiny_cnn_twins(net32, net16, 7, 0.25f, Device::cuda(0));
  Tensor x = up(random_f32({16, 1, 12, 12}, 31));
  Tensor labels = up(tiny_cnn_labels(16, 7));
  Run ref = forward_backward(net32, x, labels, DType::f32);
  Run got = forward_backward(net16, x, labels, low);
  const std::string what(dtype_name(low));
  EXPECT_EQ(got.loss.dtype(), DType::f32) << what;
  EXPECT_LE(relative_error(got.loss, ref.loss), tol) << what << " loss";
  ParameterList ps = net16.parameters();
  for (size_t i = 0; i < ps.size(); ++i) {
    EXPECT_EQ(got.grads[i].dtype(), DType::f32) << ps[i]->name;
    EXPECT_LE(relative_error(got.grads[i], ref.grads[i]), tol)
        << what << " gradient of " << ps[i]->name;
  }
}

TEST(CudaTrainAutocast, ConvStoresItsOutputInTheComputeDtypeAndTheNextOpsKeepIt) {
  TANDEM_REQUIRE_GPU();
  for (DType low : {DType::f16, DType::bf16}) {
    AutocastGuard guard(low);
    Var x(up(random_f32({2, 3, 8, 8}, 1)), true);
    Var w(up(random_f32({4, 3, 3, 3}, 2)), true);
    Var g(up(random_f32({4}, 3, 0.5f, 1.5f)), true), b(up(random_f32({4}, 4)), true);
    Tensor mean = up(Tensor::zeros(DType::f32, {4})), var = up(random_f32({4}, 5, 1.f, 2.f));
    Var y = conv2d(x, w, Var(), ops::Conv2dParams{.padding = {1, 1}});
    EXPECT_EQ(y.value().dtype(), low);
    Var z = relu(batch_norm(y, g, b, mean, var, ops::BatchNormParams{.training = true}));
    Var p = pool2d(add(z, z), max_pool_params(2, 2));
    EXPECT_EQ(p.value().dtype(), low);
    Var loss = cross_entropy(linear(flatten(p), Var(up(random_f32({3, 64}, 6)), false), Var()),
                             up(Tensor::from_vector(std::vector<int64_t>{0, 2}, {2})));
    EXPECT_EQ(loss.value().dtype(), DType::f32);
    backward(loss);
    EXPECT_EQ(x.grad().dtype(), DType::f32) << "the input's gradient keeps the input's dtype";
    EXPECT_EQ(w.grad().dtype(), DType::f32);
    EXPECT_EQ(g.grad().dtype(), DType::f32);
  }
}

TEST(CudaTrainAutocast, Fp16TinyCnnMatchesF32) {
  TANDEM_REQUIRE_GPU();
  expect_autocast_matches_f32(DType::f16, 2e-2);
}

TEST(CudaTrainAutocast, Bf16TinyCnnMatchesF32) {
  TANDEM_REQUIRE_GPU();
  expect_autocast_matches_f32(DType::bf16, 1e-1);
}

// The cast entry against the host's rounding (core/half.h), both ways and
// accumulating.
TEST(CudaTrainAutocast, CastEntryRoundsAsTheHostAndAccumulates) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend& g = gpu_table();
  const TrainBackend& c = cpu_table();
  Tensor x = random_f32({1000}, 9, -70000.f, 70000.f);
  for (DType low : {DType::f16, DType::bf16}) {
    Pair lo = empty_pair({1000}, low);
    c.cast(c.ctx, x, {lo.cpu, GradMode::overwrite});
    g.cast(g.ctx, up(x), {lo.gpu, GradMode::overwrite});
    expect_same_bits(lo.gpu, lo.cpu, "f32 -> " + std::string(dtype_name(low)));
    Pair acc = random_pair({1000}, 10);
    c.cast(c.ctx, lo.cpu, {acc.cpu, GradMode::accumulate});
    g.cast(g.ctx, lo.gpu, {acc.gpu, GradMode::accumulate});
    expect_same_bits(acc.gpu, acc.cpu, std::string(dtype_name(low)) + " += into f32");
  }
}

}  // namespace
}  // namespace tandem::testing
