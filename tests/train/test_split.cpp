// The heterogeneous split (train/split) with both sides on the CPU: the
// split mechanics (slicing, concat, the partial input gradients summed once,
// parameters per side) without a GPU. A split layer must give what the same
// layer unsplit gives (itself checked against finite differences and
// PyTorch), at every r including 0 and 1; state_dict, load and checkpoints
// see whole tensors; a short cnn run matches the unsplit run's losses.
#include <gtest/gtest.h>

#include "tests/cpu_features.h"
#include "tests/temp_dir.h"
#include "tests/train/split_test_util.h"
#include "train/autocast.h"
#include "train/checkpoint.h"
#include "train/functional.h"
#include "train/layers.h"
#include "train/models/models.h"
#include "train/optim/adamw.h"
#include "train/split/place.h"

namespace tandem::train {
namespace {

using testing::LayerRun;
using testing::random_host;
using testing::relative_error;
using testing::run_layer;

constexpr double kTol = 1e-5;

void expect_same_run(const LayerRun& split, const LayerRun& whole, const std::string& what) {
  testing::expect_same_layer_run(split, whole, what, kTol);
}

struct ConvCase {
  int64_t in, out, kernel;
  Conv2dOptions o;
  Shape x;
};

TEST(Split, ConvMatchesTheUnsplitLayerAtEveryShare) {
  const std::vector<ConvCase> cases = {
      {3, 8, 3, {.padding = 1}, {2, 3, 7, 7}},
      {4, 6, 3, {.stride = 2, .bias = false}, {3, 4, 9, 8}},
      {4, 8, 3, {.padding = 2, .dilation = 2}, {2, 4, 6, 6}},
      {4, 8, 3, {.padding = 1, .groups = 2}, {2, 4, 5, 5}},  // splits whole only
  };
  uint64_t seed = 1;
  for (const ConvCase& c : cases) {
    for (double r : {0.0, 0.25, 0.5, 0.75, 1.0}) {
      Rng a(seed), b(seed);
      Conv2d whole(c.in, c.out, c.kernel, c.o, a), split(c.in, c.out, c.kernel, c.o, b);
      place_hetero(split, Device::cpu(), SplitSetting{false, r});
      if (c.o.groups > 1) EXPECT_TRUE(split.channel_split()->r() == 0 || split.channel_split()->r() == 1);
      else EXPECT_EQ(split.channel_split()->home_rows(), home_rows_for(r, c.out, 1));
      Shape ys = ops::conv2d_output_shape(ops::Conv2dParams{{c.o.stride, c.o.stride}, {c.o.padding, c.o.padding},
                                                  {c.o.dilation, c.o.dilation}, c.o.groups},
                                     c.x, {c.out, c.in / c.o.groups, c.kernel, c.kernel});
      Tensor x = random_host(c.x, seed + 10), dy = random_host(ys, seed + 11);
      expect_same_run(run_layer(split, x, dy, Device::cpu()), run_layer(whole, x, dy, Device::cpu()),
                      "conv case " + std::to_string(seed) + " r=" + std::to_string(r));
      ++seed;
    }
  }
}

// The CPU side of a split computes in bf16 through oneDNN under autocast,
// as the unsplit layer does: y and the weight gradient are per output
// channel, the same sums in the same precision; dx is two partial sums, each
// produced in bf16 (oneDNN's bf16 backward-data), against one: bf16 rounding
// (2^-8) apart, not more.
TEST(Split, ConvUnderBf16AutocastMatchesTheUnsplitBf16Layer) {
  TANDEM_SKIP_WITHOUT_CPU_BF16();
  const ConvCase c{8, 16, 3, {.padding = 1}, {2, 8, 6, 6}};
  const Shape ys{2, 16, 6, 6};
  Tensor x = random_host(c.x, 41), dy = random_host(ys, 42);
  for (double r : {0.25, 0.5}) {
    Rng a(40), b(40);
    Conv2d whole(c.in, c.out, c.kernel, c.o, a), split(c.in, c.out, c.kernel, c.o, b);
    place_hetero(split, Device::cpu(), SplitSetting{false, r});
    AutocastGuard bf16(DType::bf16);
    LayerRun s = run_layer(split, x, dy, Device::cpu()), w = run_layer(whole, x, dy, Device::cpu());
    const std::string what = "bf16 r=" + std::to_string(r);
    EXPECT_LE(relative_error(s.y, w.y), kTol) << what;
    EXPECT_LE(relative_error(s.dx, w.dx), 1e-2) << what;
    for (const auto& [name, g] : w.grads) EXPECT_LE(relative_error(s.grads.at(name), g), kTol) << what << " d" << name;
    // and it is bf16: the f32 layer differs by more than f32 rounding
    AutocastGuard f32(DType::f32);
    Rng f(40);
    Conv2d exact(c.in, c.out, c.kernel, c.o, f);
    EXPECT_GT(relative_error(run_layer(exact, x, dy, Device::cpu()).y, w.y), 1e-4);
  }
}

TEST(Split, LinearMatchesTheUnsplitLayerAtEveryShare) {
  uint64_t seed = 100;
  for (bool bias : {true, false}) {
    for (double r : {0.0, 0.3, 0.5, 0.9, 1.0}) {
      Rng a(seed), b(seed);
      Linear whole(12, 10, bias, a), split(12, 10, bias, b);
      place_hetero(split, Device::cpu(), SplitSetting{false, r});
      Tensor x = random_host({5, 12}, seed + 1), dy = random_host({5, 10}, seed + 2);
      expect_same_run(run_layer(split, x, dy, Device::cpu()), run_layer(whole, x, dy, Device::cpu()),
                      "linear r=" + std::to_string(r));
      ++seed;
    }
  }
}

TEST(Split, ParametersAreSlicesOnEachSide) {
  Rng rng(3);
  Linear l(4, 10, true, rng);
  place_hetero(l, Device::cpu(), SplitSetting{false, 0.3});
  std::vector<std::string> names;
  for (Parameter* p : l.parameters()) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"weight[0:3/10]", "weight[3:10/10]", "bias[0:3/10]", "bias[3:10/10]"}));
  // Whole on one side: the plain names, the unsplit layer's parameters.
  place_hetero(l, Device::cpu(), SplitSetting{false, 1});
  names.clear();
  for (Parameter* p : l.parameters()) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "bias"}));
}

std::unique_ptr<Sequential> cnn(uint64_t seed) {
  Rng rng(seed);
  return make_model("cnn", ModelConfig{.dropout = 0}, rng);
}

void expect_equal_dicts(const NamedTensors& a, const NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    ASSERT_EQ(a[i].second.shape(), b[i].second.shape()) << a[i].first;
    EXPECT_EQ(std::memcmp(a[i].second.raw(), b[i].second.raw(), a[i].second.bytes()), 0) << a[i].first;
  }
}

TEST(Split, StateDictHoldsWholeTensorsAndLoadCutsThem) {
  auto whole = cnn(5), split = cnn(5);
  EXPECT_EQ(place_hetero(*split, Device::cpu(), SplitSetting{false, 0.5}), 4);
  expect_equal_dicts(split->state_dict(), whole->state_dict());
  auto other = cnn(6);
  split->load_state_dict(other->state_dict());
  expect_equal_dicts(split->state_dict(), other->state_dict());
  NamedTensors bad = other->state_dict();
  bad.pop_back();
  EXPECT_THROW(split->load_state_dict(bad), Error);
}

std::vector<double> train_losses(Module& net, int steps) {
  return testing::adamw_losses(net, steps, 50);
}

TEST(Split, CnnTrainingMatchesTheUnsplitRun) {
  auto whole = cnn(9), split = cnn(9);
  place_hetero(*split, Device::cpu(), SplitSetting{false, 0.5});
  std::vector<double> a = train_losses(*whole, 5), b = train_losses(*split, 5);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-5 * std::abs(a[i])) << "step " << i;
  // The weights too. (Not the conv biases: BN right after them cancels their
  // gradient to rounding noise, which Adam's normalized steps amplify, and
  // the running means follow those biases.)
  NamedTensors wa = whole->state_dict(), wb = split->state_dict();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    if (!wa[i].first.ends_with(".weight")) continue;
    EXPECT_LE(relative_error(wb[i].second, wa[i].second), 1e-5) << wa[i].first;
  }
}

// The parameters (slices gathered), without the buffers.
NamedTensors parameter_dict(Module& m) {
  NamedTensors r;
  for (Parameter* p : m.parameters()) r.emplace_back(p->name, p->value);
  return gather_slices(r);
}

TEST(Split, CheckpointsHoldWholeTensorsAndResumeUnderAnotherSplit) {
  testing::TempDir dir("split_ckpt");
  const std::string path = (dir.path() / "run.ckpt").string();
  auto a = cnn(11);
  place_hetero(*a, Device::cpu(), SplitSetting{false, 0.25});
  AdamW opt_a(a->parameters(), AdamWOptions{});
  {
    // One step so the optimizer's moments are not zero.
    Var loss = cross_entropy((*a)(Var(random_host({4, 1, 28, 28}, 1))), testing::class_labels(4));
    backward(loss);
    opt_a.step();
  }
  TrainingState sa{a->parameters(), &opt_a};
  save_checkpoint(path, sa);
  for (double r : {1.0, 0.5}) {
    auto b = cnn(12);
    place_hetero(*b, Device::cpu(), SplitSetting{false, r});
    AdamW opt_b(b->parameters(), AdamWOptions{});
    TrainingState sb{b->parameters(), &opt_b};
    load_checkpoint(path, sb);
    expect_equal_dicts(parameter_dict(*b), parameter_dict(*a));
    OptimizerState oa = opt_a.state(), ob = opt_b.state();
    EXPECT_EQ(ob.steps, 1);
    // Whole moments on both sides once gathered.
    expect_equal_dicts(gather_slices(ob.slots), gather_slices(oa.slots));
  }
}

TEST(Split, AutoTunesAtPrepareAndReportsEachLayer) {
  auto net = cnn(13);
  place_hetero(*net, Device::cpu(), SplitSetting{true, 1});
  Tensor batch = random_host({4, 1, 28, 28}, 2);
  EXPECT_THROW((*net)(Var(batch)), Error);  // auto, not tuned yet
  prepare_split(*net, batch);
  EXPECT_TRUE(net->training());
  std::vector<SplitRow> rows = split_summary(*net);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].layer, "features.0");
  EXPECT_EQ(rows[0].input_shape, "[4,1,28,28]");
  for (const SplitRow& r : rows) {
    EXPECT_TRUE(r.tuned) << r.layer;
    EXPECT_GT(r.t_gpu, 0) << r.layer;
    EXPECT_GE(r.r, 0) << r.layer;
    EXPECT_LE(r.r, 1) << r.layer;
  }
  EXPECT_NE(format_split_summary(rows).find("classifier.4"), std::string::npos);
  EXPECT_NO_THROW((*net)(Var(batch)));
}

// The tuner's decision, from times alone.
SplitMeasurement linear_home(double t_home, double t_host, double copy_fixed = 0, double copy_all = 0) {
  SplitMeasurement m;
  for (double r : {1.0, 0.75, 0.5, 0.25}) m.home.emplace_back(r, r * t_home);
  m.host_all = t_host, m.copy_fixed = copy_fixed, m.copy_all = copy_all;
  return m;
}

TEST(SplitTuner, KeepsTheLayerOnTheGpuWhenTheCpuIsMuchSlower) {
  SplitChoice c = choose_split(linear_home(1e-3, 100e-3), 64, 1);
  EXPECT_EQ(c.r, 1);
  EXPECT_EQ(c.home_rows, 64);
  EXPECT_DOUBLE_EQ(c.t_split, 1e-3);
}

TEST(SplitTuner, SplitsEvenlyBetweenEqualDevices) {
  SplitChoice c = choose_split(linear_home(1e-3, 1e-3), 64, 1);
  EXPECT_EQ(c.home_rows, 32);
  EXPECT_NEAR(c.t_split, 0.5e-3, 1e-12);
  EXPECT_DOUBLE_EQ(c.t_single, 1e-3);
}

TEST(SplitTuner, CountsTheCopiesOnTheCpuSide) {
  // Copies as slow as the whole layer on the GPU: nothing to gain.
  EXPECT_EQ(choose_split(linear_home(1e-3, 1e-3, 1e-3), 64, 1).r, 1);
  // Copies that scale with the CPU's share shift the split towards the GPU.
  SplitChoice c = choose_split(linear_home(1e-3, 1e-3, 0, 1e-3), 90, 1);
  EXPECT_EQ(c.home_rows, 60);  // r = 2/3: r * 1 = (1 - r) * 2
}

TEST(SplitTuner, AGainUnderThreePercentIsNotWorthASplit) {
  // Best split r = 40/41: 2.4% faster than the GPU alone.
  EXPECT_EQ(choose_split(linear_home(1e-3, 40e-3), 1000, 1).r, 1);
  // r = 30/31: 3.2% faster.
  EXPECT_LT(choose_split(linear_home(1e-3, 30e-3), 1000, 1).r, 1);
}

TEST(SplitTuner, TheGpuTimeOfASmallSliceIsNotZero) {
  SplitMeasurement m;
  m.home = {{1.0, 1e-3}, {0.25, 0.9e-3}};  // launch-bound: a quarter costs 90%
  m.host_all = 1e-3;
  SplitChoice c = choose_split(m, 100, 1);
  EXPECT_GE(c.t_home, 0.9e-3);
  EXPECT_GE(c.t_split, 0.9e-3 - 1e-12);
  EXPECT_DOUBLE_EQ(predicted_home(m, 0.1), 0.9e-3);
  EXPECT_DOUBLE_EQ(predicted_home(m, 0), 0);
}

TEST(SplitTuner, CanPutAWholeLayerOnTheCpu) {
  SplitChoice c = choose_split(linear_home(100e-3, 1e-3), 8, 8);  // a grouped conv: 0 or all
  EXPECT_EQ(c.r, 0);
}

TEST(SplitSetting, ParsesAutoOrAShare) {
  EXPECT_TRUE(parse_split_setting("auto").automatic);
  SplitSetting s = parse_split_setting("0.25");  // the CPU's share
  EXPECT_FALSE(s.automatic);
  EXPECT_DOUBLE_EQ(s.ratio, 0.75);  // home's
  EXPECT_DOUBLE_EQ(parse_split_setting("0").ratio, 1.0);
  for (const char* bad : {"", "1.5", "-0.1", "half", "0.5x", "nan"}) EXPECT_THROW(parse_split_setting(bad), Error) << bad;
  EXPECT_EQ(home_rows_for(0.5, 10, 1), 5);
  EXPECT_EQ(home_rows_for(0.33, 64, 1), 21);
  EXPECT_EQ(home_rows_for(0.6, 8, 8), 8);
  EXPECT_EQ(home_rows_for(0.4, 8, 8), 0);
}

}  // namespace
}  // namespace tandem::train
