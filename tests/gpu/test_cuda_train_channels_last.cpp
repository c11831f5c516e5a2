// Channels last on the CUDA training table: the tiny CNN (tests/train/
// tiny_cnn.h: strided and dilated depthwise convs with and without bias,
// batch norm, a residual block with a downsample, max/avg/global pooling,
// flatten, dropout after a linear) fed an nhwc batch keeps nhwc through
// every conv, batch norm (cuDNN's persistent NHWC kernels in training, our
// own walk in eval) and pool, and gives the plain-layout run's loss,
// parameter gradients and running statistics: in f32 within the conv
// tolerance (1e-4, the two runs pick different cuDNN algorithms), and
// in f16 within 16-bit activations' rounding of the f32 plain run (8e-2:
// the plain f16 run holds 2e-2, but in nhwc batch norm's statistics and
// dgamma/dbeta come from cuDNN's persistent kernels, which reduce the f16
// values in another order and round their saved mean/inverse variance
// differently; the bias gradients, sums whose terms nearly cancel, take it
// to 0.055 measured on the H200. A layout mix-up is off by O(1)).
#include "tests/train/tiny_cnn.h"
#include "train/autocast.h"
#include "train/device_tensor.h"
#include "train/functional.h"
#include "train_test_util.h"

namespace tandem::testing {
namespace {

using namespace tandem::train;

struct Run {
  Tensor loss, eval_logits;
  std::vector<Tensor> grads, buffers;
};

// One training forward and backward, then an eval-mode forward, of `net`
// on x (converted to `layout` and, under autocast, `dtype` first, as the
// Trainer does with channels_last).
Run run(Sequential& net, const Tensor& x, const Tensor& labels, DType dtype, Layout layout) {
  for (Parameter* p : net.parameters()) zero_tensor(p->grad);
  Run r;
  {
    AutocastGuard guard(dtype);
    Var in = convert(Var(x), dtype, layout);
    Var h = net(in);
    Var loss = cross_entropy(h, labels, 0.1f);
    backward(loss);
    r.loss = to_host(loss.value());
  }
  for (Parameter* p : net.parameters()) r.grads.push_back(to_host(p->grad));
  for (Buffer* b : net.buffers())
    if (b->value.dtype() == DType::f32) r.buffers.push_back(to_host(b->value));
  {
    NoGradGuard no_grad;
    AutocastGuard guard(dtype);
    net.eval();
    r.eval_logits = to_host(to_f32(net(convert(Var(x), dtype, layout))).value());
    net.train();
  }
  return r;
}

void expect_channels_last_matches_plain(DType dtype, double tol) {
  Sequential plain, nhwc;
  build_tiny_cnn_twins(plain, nhwc, 5, 0.25f, Device::cuda(0));
  Tensor x = up(random_f32({16, 1, 12, 12}, 41));
  Tensor labels = up(tiny_cnn_labels(16, 3));
  Run ref = run(plain, x, labels, DType::f32, Layout::plain);
  Run got = run(nhwc, x, labels, dtype, Layout::nhwc);
  const std::string what = std::string(dtype_name(dtype)) + " nhwc";
  EXPECT_LE(relative_error(got.loss, ref.loss), tol) << what << " loss";
  ParameterList ps = nhwc.parameters();
  for (size_t i = 0; i < ps.size(); ++i)
    EXPECT_LE(relative_error(got.grads[i], ref.grads[i]), tol)
        << what << " gradient of " << ps[i]->name;
  ASSERT_EQ(got.buffers.size(), ref.buffers.size());
  for (size_t i = 0; i < ref.buffers.size(); ++i)
    EXPECT_LE(relative_error(got.buffers[i], ref.buffers[i]), tol)
        << what << " running statistic " << i;
  EXPECT_LE(relative_error(got.eval_logits, ref.eval_logits), tol) << what << " eval-mode logits";
}

TEST(CudaTrainChannelsLast, ActivationsStayNhwcUntilTheFlatten) {
  TANDEM_REQUIRE_GPU();
  Var x = convert(Var(up(random_f32({2, 3, 8, 8}, 1))), DType::f16, Layout::nhwc);
  ASSERT_EQ(x.value().layout(), Layout::nhwc);
  AutocastGuard guard(DType::f16);
  Var w(up(random_f32({4, 3, 3, 3}, 2)), true);
  Var g(up(random_f32({4}, 3, 0.5f, 1.5f)), true), b(up(random_f32({4}, 4)), true);
  Tensor mean = up(Tensor::zeros(DType::f32, {4})), var = up(random_f32({4}, 5, 1.f, 2.f));
  Var y = conv2d(x, w, Var(), ops::Conv2dParams{.padding = {1, 1}});
  EXPECT_EQ(y.value().layout(), Layout::nhwc);
  Var z = relu(batch_norm(y, g, b, mean, var, ops::BatchNormParams{.training = true}));
  EXPECT_EQ(z.value().layout(), Layout::nhwc);
  Var p = global_avg_pool2d(pool2d(add(z, z), max_pool_params(2, 2)));
  EXPECT_EQ(p.value().layout(), Layout::nhwc);
  Var f = flatten(p);
  EXPECT_EQ(f.value().layout(), Layout::plain);
  EXPECT_EQ(f.value().raw(), p.value().raw()) << "[N, C, 1, 1] is relabelled, not copied";
  Var loss = cross_entropy(f, up(Tensor::from_vector(std::vector<int64_t>{0, 2}, {2})));
  backward(loss);
  EXPECT_EQ(w.grad().layout(), Layout::plain) << "parameters and their gradients stay plain f32";
  EXPECT_EQ(w.grad().dtype(), DType::f32);
}

TEST(CudaTrainChannelsLast, F32TinyCnnMatchesPlain) {
  TANDEM_REQUIRE_GPU();
  expect_channels_last_matches_plain(DType::f32, kConvTolerance);
}

TEST(CudaTrainChannelsLast, Fp16TinyCnnMatchesF32Plain) {
  TANDEM_REQUIRE_GPU();
  expect_channels_last_matches_plain(DType::f16, 8e-2);
}

// The cast entry's layout change against the host's (cpu/cast.cpp,
// checked there against direct indexing), with a dtype change and
// accumulating.
TEST(CudaTrainChannelsLast, CastEntryChangesLayoutAsTheHost) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend& g = gpu_table();
  const TrainBackend& c = cpu_table();
  Tensor x = random_f32({3, 5, 4, 7}, 9);
  Pair nhwc = empty_pair({3, 5, 4, 7}, DType::bf16);
  nhwc.cpu = nhwc.cpu.with_layout(Layout::nhwc);
  nhwc.gpu = nhwc.gpu.with_layout(Layout::nhwc);
  c.cast(c.ctx, x, {nhwc.cpu, GradMode::overwrite});
  g.cast(g.ctx, up(x), {nhwc.gpu, GradMode::overwrite});
  expect_same_bits(nhwc.gpu, nhwc.cpu, "f32 plain -> bf16 nhwc");
  Pair back = random_pair({3, 5, 4, 7}, 10);
  c.cast(c.ctx, nhwc.cpu, {back.cpu, GradMode::accumulate});
  g.cast(g.ctx, nhwc.gpu, {back.gpu, GradMode::accumulate});
  expect_same_bits(back.gpu, back.cpu, "bf16 nhwc += into f32 plain");
}

}  // namespace
}  // namespace tandem::testing
