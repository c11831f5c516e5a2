// The optimizers on parameters that live on cuda:0 against the same
// optimizers on host copies: SGD (plain, momentum + decay, Nesterov,
// dampening) and AdamW (two settings, one parameter without decay) for 20
// steps on the same gradient sequence give the CPU's values and state to
// within 1 ulp (ops/update_rules.h's rounding-per-operation rule makes them
// equal in practice); the loss scaler's unscale and its inf/nan flag, and
// gradient clipping, likewise.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "train/optim/adamw.h"
#include "train/optim/clip_grad.h"
#include "train/optim/loss_scaler.h"
#include "train/optim/sgd.h"
#include "train_test_util.h"

namespace tandem::testing {
namespace {

using train::Parameter;
using train::ParameterList;

// Distance in units in the last place (floats ordered as integers); nan
// equals nan.
int64_t ulps(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<int64_t>::max();
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? int64_t(std::numeric_limits<int32_t>::min()) - int64_t(i) : int64_t(i);
  };
  return std::llabs(ordered(a) - ordered(b));
}

void expect_within_one_ulp(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  Tensor g = down(gpu);
  ASSERT_EQ(g.shape(), cpu.shape()) << what;
  int64_t worst = 0, exact = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    int64_t d = ulps(g.data<float>()[i], cpu.data<float>()[i]);
    worst = std::max(worst, d);
    exact += d == 0;
  }
  EXPECT_LE(worst, 1) << what << ": " << exact << " of " << cpu.numel() << " elements bit-identical";
}

// Parameters of a few shapes (one without decay) on the host and on cuda:0,
// with the same values, and a gradient sequence both sides step through.
struct Twin {
  std::vector<Parameter> host, gpu;
  ParameterList host_list() {
    ParameterList l;
    for (Parameter& p : host) l.push_back(&p);
    return l;
  }
  ParameterList gpu_list() {
    ParameterList l;
    for (Parameter& p : gpu) l.push_back(&p);
    return l;
  }

  explicit Twin(uint32_t seed, std::vector<Shape> shapes = {{4, 5}, {7}, {2, 3, 2}, {1000, 3}}) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      std::string name = "p" + std::to_string(i);
      Tensor v = random_f32(shapes[i], seed + uint32_t(i), -1.f, 1.f);
      host.push_back({name, v.clone(), Tensor::zeros(DType::f32, shapes[i]), i != 1});
      gpu.push_back({name, up(v), up(Tensor::zeros(DType::f32, shapes[i])), i != 1});
    }
  }

  // Step t's gradients, the same on both sides.
  void gradients(uint32_t t) {
    for (size_t i = 0; i < host.size(); ++i) {
      Tensor g = random_f32(host[i].value.shape(), 1000 * t + uint32_t(i), -0.5f, 0.5f);
      std::memcpy(host[i].grad.raw(), g.raw(), g.bytes());
      cuda::copy_tensor(gpu[i].grad, g);
    }
  }

  void expect_same(const std::string& what) {
    for (size_t i = 0; i < host.size(); ++i)
      expect_within_one_ulp(gpu[i].value, host[i].value, what + " " + host[i].name);
  }
};

template <typename Opt, typename Options>
void run_optimizer(const Options& o, const std::string& what, std::vector<Shape> shapes = {}) {
  SCOPED_TRACE(what);
  Twin twin = shapes.empty() ? Twin(7) : Twin(7, std::move(shapes));
  Opt cpu(twin.host_list(), o), gpu(twin.gpu_list(), o);
  for (uint32_t t = 0; t < 20; ++t) {
    twin.gradients(t);
    cpu.step();
    gpu.step();
  }
  twin.expect_same("value");
  train::OptimizerState sc = cpu.state(), sg = gpu.state();
  ASSERT_EQ(sc.slots.size(), sg.slots.size());
  for (size_t i = 0; i < sc.slots.size(); ++i)
    expect_within_one_ulp(sg.slots[i].second, sc.slots[i].second, sc.slots[i].first);
}

TEST(CudaTrainOptim, SgdMatchesTheCpuOptimizer) {
  TANDEM_REQUIRE_GPU();
  run_optimizer<train::Sgd>(train::SgdOptions{0.1, 0, 0, 0, false}, "plain");
  run_optimizer<train::Sgd>(train::SgdOptions{0.05, 0.9, 0, 1e-2, false}, "momentum + decay");
  run_optimizer<train::Sgd>(train::SgdOptions{0.05, 0.9, 0, 5e-3, true}, "nesterov + decay");
  run_optimizer<train::Sgd>(train::SgdOptions{0.1, 0.8, 0.25, 0, false}, "dampening");
}

TEST(CudaTrainOptim, AdamWMatchesTheCpuOptimizer) {
  TANDEM_REQUIRE_GPU();
  run_optimizer<train::AdamW>(train::AdamWOptions{1e-2, 0.9, 0.999, 1e-8, 1e-2}, "AdamW lr 1e-2");
  run_optimizer<train::AdamW>(train::AdamWOptions{5e-2, 0.8, 0.99, 1e-6, 0.1}, "AdamW lr 5e-2");
}

// More parameters than one multi-tensor launch takes (24), of mixed sizes,
// one without weight decay: several launches and two groups per step.
TEST(CudaTrainOptim, ManyParametersMatchTheCpuOptimizer) {
  TANDEM_REQUIRE_GPU();
  std::vector<Shape> shapes;
  for (int64_t i = 0; i < 53; ++i) shapes.push_back(i % 7 == 0 ? Shape{300, 70} : Shape{i + 1});
  run_optimizer<train::AdamW>(train::AdamWOptions{1e-2, 0.9, 0.999, 1e-8, 1e-2},
                              "AdamW, 53 parameters", shapes);
  run_optimizer<train::Sgd>(train::SgdOptions{0.05, 0.9, 0, 1e-2, true}, "SGD, 53 parameters",
                            shapes);
}

TEST(CudaTrainOptim, ZeroGradClearsGradientsOnTheGpu) {
  TANDEM_REQUIRE_GPU();
  Twin twin(3);
  twin.gradients(1);
  train::Sgd opt(twin.gpu_list(), train::SgdOptions{});
  opt.zero_grad();
  for (const Parameter& p : twin.gpu) {
    Tensor g = down(p.grad);
    for (int64_t k = 0; k < g.numel(); ++k) ASSERT_EQ(g.data<float>()[k], 0.0f) << p.name;
  }
}

TEST(CudaTrainOptim, UnscaleFlagsInfAndNanAndScalesLikeTheCpu) {
  TANDEM_REQUIRE_GPU();
  for (float bad : {0.f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    SCOPED_TRACE("planted value " + std::to_string(bad));
    Twin twin(5);
    twin.gradients(2);
    // One value planted in the last parameter, on both sides.
    Tensor g = down(twin.gpu[3].grad);
    g.data<float>()[1234] = bad;
    std::memcpy(twin.host[3].grad.raw(), g.raw(), g.bytes());
    cuda::copy_tensor(twin.gpu[3].grad, g);
    train::LossScaler cpu, gpu;
    bool cpu_inf = cpu.unscale(twin.host_list()), gpu_inf = gpu.unscale(twin.gpu_list());
    EXPECT_EQ(cpu_inf, bad != 0.f);
    EXPECT_EQ(gpu_inf, cpu_inf);
    for (size_t i = 0; i < twin.host.size(); ++i)
      expect_within_one_ulp(twin.gpu[i].grad, twin.host[i].grad, "unscaled " + twin.host[i].name);
  }
}

TEST(CudaTrainOptim, ClipGradNormMatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  Twin twin(9);
  twin.gradients(4);
  train::ClipResult c = train::clip_grad_norm(twin.host_list(), 1.0);
  train::ClipResult g = train::clip_grad_norm(twin.gpu_list(), 1.0);
  ASSERT_TRUE(c.clipped) << "the test should exercise clipping (norm " << c.total_norm << ")";
  EXPECT_EQ(g.clipped, c.clipped);
  EXPECT_NEAR(g.total_norm, c.total_norm, 1e-6 * c.total_norm);
  for (size_t i = 0; i < twin.host.size(); ++i)
    expect_within_one_ulp(twin.gpu[i].grad, twin.host[i].grad, "clipped " + twin.host[i].name);
}

}  // namespace
}  // namespace tandem::testing
