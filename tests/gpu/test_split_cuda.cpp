// The heterogeneous split (train/split) with its home on cuda:0: a conv or
// linear layer whose output channels are split between the GPU and the CPU
// gives what the same layer gives all on the GPU (y, dx, dw, db), at several
// r including 0 and 1; the copies go through the copy stream and pinned
// buffers, reused across calls; a short cnn run matches the all-GPU losses,
// in float and under quantization-aware training.
// Tolerance 1e-4 relative (cuDNN and oneDNN sum in different orders).
#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "tests/train/split_test_util.h"
#include "train/export.h"
#include "train/functional.h"
#include "train/layers.h"
#include "train/models/models.h"
#include "train/optim/adamw.h"
#include "train/precision.h"
#include "train/split/place.h"

namespace tandem::train {
namespace {

using testing::LayerRun;
using testing::random_host;
using testing::relative_error;
using testing::run_layer;

constexpr double kTol = 1e-4;

void expect_close_runs(const LayerRun& split, const LayerRun& whole, const std::string& what) {
  testing::expect_same_layer_run(split, whole, what, kTol);
}

TEST(SplitCuda, ConvMatchesTheAllGpuLayer) {
  TANDEM_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  uint64_t seed = 1;
  for (double r : {0.0, 0.25, 0.5, 1.0}) {
    for (int rep = 0; rep < 2; ++rep) {  // the second call reuses the pinned buffers
      Rng a(seed), b(seed);
      Conv2d whole(16, 32, 3, {.padding = 1}, a), split(16, 32, 3, {.padding = 1}, b);
      whole.to(gpu);
      place_hetero(split, gpu, SplitSetting{false, r});
      Tensor x = random_host({4, 16, 12, 12}, seed + 10), dy = random_host({4, 32, 12, 12}, seed + 11);
      expect_close_runs(run_layer(split, x, dy, gpu), run_layer(whole, x, dy, gpu), "conv r=" + std::to_string(r));
      ++seed;
    }
  }
}

TEST(SplitCuda, LinearMatchesTheAllGpuLayer) {
  TANDEM_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  uint64_t seed = 50;
  for (double r : {0.0, 0.5, 0.9, 1.0}) {
    Rng a(seed), b(seed);
    Linear whole(64, 40, true, a), split(64, 40, true, b);
    whole.to(gpu);
    place_hetero(split, gpu, SplitSetting{false, r});
    Tensor x = random_host({8, 64}, seed + 1), dy = random_host({8, 40}, seed + 2);
    expect_close_runs(run_layer(split, x, dy, gpu), run_layer(whole, x, dy, gpu), "linear r=" + std::to_string(r));
    ++seed;
  }
}

TEST(SplitCuda, ParametersLiveWhereTheirChannelsAre) {
  TANDEM_REQUIRE_GPU();
  Rng rng(3);
  Linear l(8, 10, true, rng);
  place_hetero(l, Device::cuda(0), SplitSetting{false, 0.5});
  ParameterList ps = l.parameters();
  ASSERT_EQ(ps.size(), 4u);
  EXPECT_EQ(ps[0]->value.device(), Device::cuda(0));
  EXPECT_EQ(ps[1]->value.device(), Device::cpu());
  EXPECT_EQ(ps[2]->value.device(), Device::cuda(0));
  EXPECT_EQ(ps[3]->value.device(), Device::cpu());
}

std::vector<double> losses(Module& net, int steps) {
  AdamW opt(net.parameters(), AdamWOptions{});
  std::vector<double> r;
  std::vector<int64_t> l(8);
  for (size_t i = 0; i < l.size(); ++i) l[i] = int64_t(i * 3 % 10);
  Tensor labels = to_device(Tensor::from_vector(l, {8}), Device::cuda(0));
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Var loss = cross_entropy(net(Var(to_device(random_host({8, 1, 28, 28}, 70 + s), Device::cuda(0)))), labels);
    r.push_back(to_host(loss.value()).scalar_at(0));
    backward(loss);
    opt.step();
  }
  return r;
}

TEST(SplitCuda, CnnTrainingMatchesTheAllGpuRun) {
  TANDEM_REQUIRE_GPU();
  Rng a(9), b(9);
  auto whole = make_model("cnn", ModelConfig{.dropout = 0}, a), split = make_model("cnn", ModelConfig{.dropout = 0}, b);
  whole->to(Device::cuda(0));
  place_hetero(*split, Device::cuda(0), SplitSetting{false, 0.5});
  std::vector<double> x = losses(*whole, 5), y = losses(*split, 5);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 1e-4 * std::abs(x[i])) << "step " << i;
}

TEST(SplitCuda, AutoTunesOnTheGpu) {
  TANDEM_REQUIRE_GPU();
  Rng rng(4);
  auto net = make_model("cnn", ModelConfig{.dropout = 0}, rng);
  place_hetero(*net, Device::cuda(0), SplitSetting{true, 1});
  prepare_split(*net, random_host({32, 1, 28, 28}, 5));
  for (const SplitRow& r : split_summary(*net)) {
    EXPECT_TRUE(r.tuned) << r.layer;
    EXPECT_GT(r.t_gpu, 0) << r.layer;
    EXPECT_GT(r.t_cpu, 0) << r.layer;
  }
}

std::unique_ptr<Sequential> qat_cnn(uint64_t seed) {
  Rng rng(seed);
  auto net = make_model("cnn", ModelConfig{.dropout = 0}, rng);
  apply_precision(*net, "int8-qat");
  return net;
}

// Quantization-aware training on the GPU (its fake quantizers and
// observers) gives the CPU's losses; split between the GPU and the CPU, with
// each conv's CPU side on integers, it gives the all-GPU run's. Looser than
// the float split above: where sums round differently (cuDNN, oneDNN, the
// exact integer sums), a value now and then crosses a fake quantizer's
// rounding midpoint and moves by a whole step.
TEST(SplitCuda, QatTrainsOnTheGpuAndSplitWithTheCpuSideOnIntegers) {
  TANDEM_REQUIRE_GPU();
  auto cpu = qat_cnn(13), gpu = qat_cnn(13), split = qat_cnn(13);
  gpu->to(Device::cuda(0));
  place_hetero(*split, Device::cuda(0), SplitSetting{false, 0.5});
  const std::vector<double> on_gpu = losses(*gpu, 4), on_split = losses(*split, 4);
  AdamW opt(cpu->parameters(), AdamWOptions{});
  std::vector<int64_t> l(8);
  for (size_t i = 0; i < l.size(); ++i) l[i] = int64_t(i * 3 % 10);
  for (int s = 0; s < 4; ++s) {
    opt.zero_grad();
    Var loss = cross_entropy((*cpu)(Var(random_host({8, 1, 28, 28}, 70 + s))),
                             Tensor::from_vector(l, {8}));
    EXPECT_NEAR(on_gpu[size_t(s)], loss.value().scalar_at(0), 1e-3 * std::abs(on_gpu[size_t(s)]))
        << "step " << s;
    backward(loss);
    opt.step();
  }
  for (size_t i = 0; i < on_gpu.size(); ++i)
    EXPECT_NEAR(on_split[i], on_gpu[i], 1e-3 * std::abs(on_gpu[i])) << "step " << i;
  int convs = 0;
  split->visit([&](Module& m) {
    if (auto* c = dynamic_cast<Conv2d*>(&m); c && c->channel_split()) {
      ++convs;
      EXPECT_TRUE(c->channel_split()->timing.host_int8) << c->channel_split()->name();
    }
  });
  EXPECT_EQ(convs, 2);
  // Both export from where they trained (the QDQ graph; the output shape from
  // an eval forward on the GPU).
  for (Module* m : {static_cast<Module*>(gpu.get()), static_cast<Module*>(split.get())}) {
    const Graph g = model_to_graph(*m, {1, 28, 28});
    ASSERT_EQ(g.outputs.size(), 1u);
    EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{-1, 10}));
    EXPECT_TRUE(std::any_of(g.nodes.begin(), g.nodes.end(),
                            [](const tandem::Node& n) { return n.op_type == "QuantizeLinear"; }));
  }
}

}  // namespace
}  // namespace tandem::train
