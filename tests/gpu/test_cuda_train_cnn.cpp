// The tiny CNN (tests/train/tiny_cnn.h) built twice with the same seed, one copy moved
// to cuda:0 (Module::to): the same batch gives the same loss, parameter
// gradients and running statistics on both devices (relative error <= 1e-4:
// convolutions sum in different orders), and after each of three SGD steps
// the same weights. Covers conv (plain, strided, dilated depthwise), batch norm,
// relu, hardswish, silu, max / average / global pooling, the BasicBlock's
// residual add, flatten, dropout, linear and cross-entropy with label
// smoothing through the autograd tape. (SGD with momentum rather than Adam
// for the steps: its update is linear in the gradient, so the comparison
// stays one of rounding, where Adam's g / sqrt(v) would magnify it for a
// gradient near zero.)
#include "tests/train/tiny_cnn.h"
#include "train/device_tensor.h"
#include "train/functional.h"
#include "train/optim/sgd.h"
#include "train_test_util.h"

namespace tandem::testing {
namespace {

using namespace tandem::train;

// One forward and backward of `net` on (x, labels), which live on its device.
Tensor step(Sequential& net, const Tensor& x, const Tensor& labels) {
  Var loss = cross_entropy(net(Var(x)), labels, 0.1f);
  backward(loss);
  return to_host(loss.value());
}

TEST(CudaTrainCnn, ForwardBackwardAndSgdStepsMatchTheCpu) {
  TANDEM_REQUIRE_GPU();
  Rng rng_cpu(2024), rng_gpu(2024);
  Sequential cpu_net, gpu_net;
  build_tiny_cnn(cpu_net, rng_cpu, 0.25f);
  build_tiny_cnn(gpu_net, rng_gpu, 0.25f);
  gpu_net.to(Device::cuda(0));
  SgdOptions o{0.1, 0.9, 0, 1e-4, false};
  Sgd cpu_opt(cpu_net.parameters(), o), gpu_opt(gpu_net.parameters(), o);

  ParameterList pc = cpu_net.parameters(), pg = gpu_net.parameters();
  ASSERT_EQ(pc.size(), pg.size());
  for (int it = 0; it < 3; ++it) {
    SCOPED_TRACE("step " + std::to_string(it));
    Tensor x = random_f32({8, 1, 12, 12}, 100 + uint32_t(it));
    std::vector<int64_t> l;
    for (int64_t n = 0; n < 8; ++n) l.push_back((n * 3 + it) % 10);
    Tensor labels = Tensor::from_vector(l, {8});
    cpu_opt.zero_grad();
    gpu_opt.zero_grad();
    Tensor loss_cpu = step(cpu_net, x, labels);
    Tensor loss_gpu = step(gpu_net, up(x), up(labels));
    EXPECT_LE(relative_error(loss_gpu, loss_cpu), kConvTolerance) << "loss";
    for (size_t i = 0; i < pc.size(); ++i) {
      ASSERT_EQ(pg[i]->grad.device(), Device::cuda(0)) << pg[i]->name;
      expect_close(pg[i]->grad, pc[i]->grad, kConvTolerance, "gradient of " + pc[i]->name);
    }
    std::vector<Buffer*> bc = cpu_net.buffers(), bg = gpu_net.buffers();
    for (size_t i = 0; i < bc.size(); ++i) {
      if (bc[i]->value.dtype() != DType::f32) {
        EXPECT_EQ(bg[i]->value.device(), Device::cpu()) << bc[i]->name << " (an integer count stays on the host)";
        continue;
      }
      expect_close(bg[i]->value, bc[i]->value, kConvTolerance, bc[i]->name);
    }
    cpu_opt.step();
    gpu_opt.step();
    for (size_t i = 0; i < pc.size(); ++i)
      expect_close(pg[i]->value, pc[i]->value, kConvTolerance, "updated " + pc[i]->name);
  }
}

}  // namespace
}  // namespace tandem::testing
