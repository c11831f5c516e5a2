// layer_norm_forward / layer_norm_backward on cuda:0 against the CPU table
// (a float64-accumulating loop, itself checked against finite differences in
// tests/train/test_grad_layer_norm.cpp): over the last axis (one warp per
// vector, short and long rows), over the channels of [N, C, H, W] (one
// thread per strided vector) and the same in nhwc (contiguous channels);
// f32, f16 and bf16 activations (inputs exactly representable in the
// dtype, so both tables see the same values), gradients overwritten and
// accumulated. Relative error over the tensor: 1e-5 for f32 and for the
// f32 statistics and parameter gradients, 1e-2 for 16-bit y and dx (their
// rounding, gpu_test_util.h's tolerance). Then the ConvNeXt block and
// model: the GPU's forward and gradients against the CPU's in f32 within
// the conv tolerance (1e-4).
#include "train/backend.h"
#include "train/device_tensor.h"
#include "train/functional.h"
#include "train/models/models.h"
#include "train_test_util.h"

namespace tandem::testing {
namespace {

using namespace tandem::train;

struct LnCase {
  const char* name;
  Shape shape;
  int64_t axis, end;
  Layout layout;
};

std::vector<LnCase> cases() {
  return {{"last axis", {64, 96}, 1, 2, Layout::plain},
          {"long rows", {3, 5, 700}, 2, 3, Layout::plain},
          {"channels", {4, 24, 7, 9}, 1, 2, Layout::plain},
          {"channels nhwc", {4, 24, 7, 9}, 1, 2, Layout::nhwc}};
}

// Host f32 values that `dtype` holds exactly.
Tensor representable(const Tensor& t, DType dtype) {
  return dtype == DType::f32 ? t : to_f32(to_low(t, dtype));
}

// The host tensor on cuda:0 in `dtype` and `layout`.
Tensor on_gpu(const Tensor& host, DType dtype, Layout layout) {
  return convert(Var(up(host)), dtype, layout).value();
}

// A GPU tensor back on the host as plain f32.
Tensor on_host(const Tensor& gpu) {
  return down(convert(Var(gpu), DType::f32, Layout::plain).value());
}

void expect_close_host(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_LE(relative_error(got, want), tol) << what;
}

void run(const LnCase& c, DType dtype, GradMode mode, uint32_t seed) {
  SCOPED_TRACE(std::string(c.name) + ", " + std::string(dtype_name(dtype)) + ", " +
               mode_name(mode));
  const TrainBackend &cpu = cpu_table(), &gpu = gpu_table();
  const ops::LayerNormParams p = ops::layernorm_params(c.shape, c.axis, c.end, 1e-5f);
  const double tol = dtype == DType::f32 ? kTolerance : 1e-2;
  // An offset mean, as real activations have.
  Tensor x = representable(random_f32(c.shape, seed, -1.f, 3.f), dtype);
  Tensor gamma = random_f32({p.cols}, seed + 1, 0.5f, 1.5f), beta = random_f32({p.cols}, seed + 2);
  Tensor y = Tensor::empty(DType::f32, c.shape), saved;
  cpu.layer_norm_forward(cpu.ctx, p, x, gamma, beta, y, &saved);
  Tensor xg = on_gpu(x, dtype, c.layout), yg = empty_in(gpu, dtype, c.shape, c.layout), saved_g;
  gpu.layer_norm_forward(gpu.ctx, p, xg, up(gamma), up(beta), yg, &saved_g);
  expect_close_host(on_host(yg), y, tol, "y");
  if (c.layout == Layout::plain)
    expect_close(saved_g, saved, kTolerance, "saved mean and inverse std");

  Tensor dy = representable(random_f32(c.shape, seed + 3), dtype);
  Tensor dx0 = representable(random_f32(c.shape, seed + 4), dtype);
  Tensor dgamma0 = random_f32({p.cols}, seed + 5), dbeta0 = random_f32({p.cols}, seed + 6);
  const bool acc = mode == GradMode::accumulate;
  Tensor dx = acc ? dx0.clone() : Tensor::empty(DType::f32, c.shape);
  Tensor dgamma = acc ? dgamma0.clone() : Tensor::empty(DType::f32, {p.cols});
  Tensor dbeta = acc ? dbeta0.clone() : Tensor::empty(DType::f32, {p.cols});
  cpu.layer_norm_backward(cpu.ctx, p, x, gamma, saved, dy, {dx, mode}, {dgamma, mode},
                          {dbeta, mode});
  Tensor dxg = acc ? on_gpu(dx0, dtype, c.layout) : empty_in(gpu, dtype, c.shape, c.layout);
  Tensor dgg = acc ? up(dgamma0) : gpu.empty(gpu.ctx, DType::f32, {p.cols});
  Tensor dbg = acc ? up(dbeta0) : gpu.empty(gpu.ctx, DType::f32, {p.cols});
  gpu.layer_norm_backward(gpu.ctx, p, xg, up(gamma), saved_g, on_gpu(dy, dtype, c.layout),
                          {dxg, mode}, {dgg, mode}, {dbg, mode});
  expect_close_host(on_host(dxg), dx, tol, "dx");
  expect_close(dgg, dgamma, kTolerance, "dgamma");
  expect_close(dbg, dbeta, kTolerance, "dbeta");
}

void run_all(DType dtype) {
  uint32_t seed = 1;
  for (const LnCase& c : cases())
    for (GradMode mode : {GradMode::overwrite, GradMode::accumulate})
      run(c, dtype, mode, seed += 10);
}

TEST(CudaTrainLayerNorm, MatchesTheCpuInF32) {
  TANDEM_REQUIRE_GPU();
  run_all(DType::f32);
}

TEST(CudaTrainLayerNorm, MatchesTheCpuInF16) {
  TANDEM_REQUIRE_GPU();
  run_all(DType::f16);
}

TEST(CudaTrainLayerNorm, MatchesTheCpuInBf16) {
  TANDEM_REQUIRE_GPU();
  run_all(DType::bf16);
}

TEST(CudaTrainLayerNorm, WithoutBetaAndWithoutWantedGradients) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend &cpu = cpu_table(), &gpu = gpu_table();
  Shape s{8, 40};
  const ops::LayerNormParams p = ops::layernorm_params(s, 1, 2, 1e-6f);
  Tensor x = random_f32(s, 3), gamma = random_f32({40}, 4), y = Tensor::empty(DType::f32, s), saved;
  cpu.layer_norm_forward(cpu.ctx, p, x, gamma, Tensor(), y, &saved);
  Tensor yg = gpu.empty(gpu.ctx, DType::f32, s), saved_g;
  gpu.layer_norm_forward(gpu.ctx, p, up(x), up(gamma), Tensor(), yg, &saved_g);
  expect_close(yg, y, kTolerance, "y without beta");
  Tensor dy = random_f32(s, 5), dgamma = Tensor::empty(DType::f32, {40});
  cpu.layer_norm_backward(cpu.ctx, p, x, gamma, saved, dy, {}, {dgamma}, {});
  Tensor dgg = gpu.empty(gpu.ctx, DType::f32, {40});
  gpu.layer_norm_backward(gpu.ctx, p, up(x), up(gamma), saved_g, up(dy), {}, {dgg}, {});
  expect_close(dgg, dgamma, kTolerance, "dgamma alone");
}

// The convnext model's logits, loss and every parameter gradient, GPU
// against CPU (same weights), f32.
TEST(CudaTrainLayerNorm, ConvNeXtModelMatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  Rng rng_cpu(7), rng_gpu(7);
  auto on_cpu = make_model("convnext", ModelConfig{}, rng_cpu),
       on_cuda = make_model("convnext", ModelConfig{}, rng_gpu);
  on_cuda->to(Device::cuda(0));
  Tensor x = random_f32({6, 1, 28, 28}, 9);
  Tensor labels = Tensor::from_vector<int64_t>({0, 3, 9, 1, 1, 5}, {6});
  Var loss_cpu = cross_entropy((*on_cpu)(Var(x)), labels);
  Var loss_gpu = cross_entropy((*on_cuda)(Var(up(x))), up(labels));
  backward(loss_cpu);
  backward(loss_gpu);
  expect_close(loss_gpu.value(), loss_cpu.value(), kConvTolerance, "loss");
  const ParameterList pc = on_cpu->parameters(), pg = on_cuda->parameters();
  ASSERT_EQ(pc.size(), pg.size());
  for (size_t i = 0; i < pc.size(); ++i)
    expect_close(pg[i]->grad, pc[i]->grad, kConvTolerance, pc[i]->name);
}

}  // namespace
}  // namespace tandem::testing
