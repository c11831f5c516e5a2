// Quantization-aware training of layers split between devices, both sides
// on the CPU here (tests/gpu runs the GPU as home). The host side's forward
// on integers (TrainBackend::qconv2d_forward) is held against a float64
// convolution of the same grid values; a QAT network split in half against
// the same network whole: the same losses and weights over training steps,
// with every conv's host side on integers; an input off the grid it was
// told of falls back to float and still gives the whole layer's result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/train/split_test_util.h"
#include "train/backend.h"
#include "train/functional.h"
#include "train/layers.h"
#include "train/models/models.h"
#include "train/optim/adamw.h"
#include "train/precision.h"
#include "train/split/place.h"

namespace tandem::train {
namespace {

using testing::random_host;
using testing::relative_error;

struct Geometry {
  Shape x, w;
  int64_t stride, pad, dilation, groups;
  int64_t zero_point;
};

// Integers drawn in [lo, hi], as floats on the grid of (scale, zero_point).
Tensor grid_values(const Shape& s, uint64_t seed, float scale, int64_t zero_point, int64_t lo,
                   int64_t hi) {
  Tensor t = random_host(s, seed);
  float* v = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t q =
        lo + std::clamp<int64_t>(int64_t((v[i] + 1) * 0.5f * float(hi - lo + 1)), 0, hi - lo);
    v[i] = float(q - zero_point) * scale;
  }
  return t;
}

// conv(x, w) + b in float64, directly from the definition.
std::vector<double> conv_f64(const Tensor& x, const Tensor& w, const Tensor& b,
                             const ops::Conv2dParams& p, const Shape& ys) {
  const int64_t cg = w.dim(1), mg = w.dim(0) / p.groups;
  std::vector<double> y(size_t(ys[0] * ys[1] * ys[2] * ys[3]));
  size_t at = 0;
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t m = 0; m < ys[1]; ++m)
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          double acc = b.data<float>()[m];
          const int64_t g = m / mg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t kh = 0; kh < w.dim(2); ++kh)
              for (int64_t kw = 0; kw < w.dim(3); ++kw) {
                const int64_t ih = oh * p.stride[0] - p.padding[0] + kh * p.dilation[0];
                const int64_t iw = ow * p.stride[1] - p.padding[1] + kw * p.dilation[1];
                if (ih < 0 || iw < 0 || ih >= x.dim(2) || iw >= x.dim(3)) continue;
                const double xv =
                    x.data<float>()[((n * x.dim(1) + g * cg + c) * x.dim(2) + ih) * x.dim(3) + iw];
                acc += xv * double(w.data<float>()[((m * cg + c) * w.dim(2) + kh) * w.dim(3) + kw]);
              }
          y[at++] = acc;
        }
  return y;
}

TEST(QatSplit, CpuIntegerConvMatchesFloat64OnTheGrid) {
  const TrainBackend& cpu = train_backend(Device::cpu());
  ASSERT_NE(cpu.qconv2d_forward, nullptr);
  const std::vector<Geometry> cases = {
      {{2, 16, 9, 9}, {32, 16, 3, 3}, 1, 1, 1, 1, 0},    // after a ReLU: zero point 0
      {{2, 3, 11, 10}, {8, 3, 3, 3}, 2, 1, 1, 1, 117},   // a network's input: an affine grid
      {{1, 8, 8, 8}, {16, 8, 3, 3}, 1, 2, 2, 1, 9},      // dilated
      {{2, 8, 7, 7}, {8, 4, 3, 3}, 1, 1, 1, 2, 0},       // grouped
      {{3, 24, 5, 6}, {24, 24, 1, 1}, 1, 0, 1, 1, 255},  // 1x1, the zero point at the top
  };
  uint64_t seed = 300;
  for (const Geometry& g : cases) {
    ops::Conv2dParams p;
    p.stride[0] = p.stride[1] = g.stride;
    p.padding[0] = p.padding[1] = g.pad;
    p.dilation[0] = p.dilation[1] = g.dilation;
    p.groups = g.groups;
    ops::QConvParams q;
    q.x_scale = 0.013f;
    q.x_zero_point = g.zero_point;
    Tensor x = grid_values(g.x, seed++, q.x_scale, g.zero_point, 0, 255);
    // Each output channel its own scale, and its integers -128..127.
    Tensor w = random_host(g.w, seed++);
    const int64_t per = w.numel() / g.w[0];
    for (int64_t m = 0; m < g.w[0]; ++m) {
      q.w_scales.push_back(0.001f * float(m + 1));
      Tensor row = grid_values({per}, seed++, q.w_scales.back(), 0, -128, 127);
      std::copy(row.data<float>(), row.data<float>() + per, w.data<float>() + m * per);
    }
    Tensor b = random_host({g.w[0]}, seed++);
    const Shape ys = ops::conv2d_output_shape(p, g.x, g.w);
    Tensor y = Tensor::empty(DType::f32, ys);
    ASSERT_TRUE(cpu.qconv2d_forward(cpu.ctx, p, q, x, w, b, y)) << shape_str(g.x);
    const std::vector<double> want = conv_f64(x, w, b, p, ys);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::abs(double(y.data<float>()[i]) - want[i]));
      scale = std::max(scale, std::abs(want[i]));
    }
    // Exact integer sums, then one scale and one bias add in f32.
    EXPECT_LE(worst, 2e-7 * scale) << shape_str(g.x) << " -> " << shape_str(ys);
  }
}

TEST(QatSplit, CpuIntegerConvDeclinesValuesOffTheGrid) {
  const TrainBackend& cpu = train_backend(Device::cpu());
  ops::Conv2dParams p;
  ops::QConvParams q;
  q.x_scale = 0.02f;
  q.x_zero_point = 3;
  q.w_scales.assign(4, 0.01f);
  Tensor x = grid_values({1, 2, 4, 4}, 7, q.x_scale, 3, 0, 255);
  Tensor w = grid_values({4, 2, 1, 1}, 8, 0.01f, 0, -128, 127);
  Tensor y = Tensor::empty(DType::f32, {1, 4, 4, 4});
  ASSERT_TRUE(cpu.qconv2d_forward(cpu.ctx, p, q, x, w, Tensor(), y));
  Tensor x_off = x.clone();
  x_off.data<float>()[5] = std::nextafter(x_off.data<float>()[5], 1e9f);
  EXPECT_FALSE(cpu.qconv2d_forward(cpu.ctx, p, q, x_off, w, Tensor(), y));
  Tensor x_out = x.clone();
  x_out.data<float>()[0] = float(256 - 3) * q.x_scale;  // one step past u8
  EXPECT_FALSE(cpu.qconv2d_forward(cpu.ctx, p, q, x_out, w, Tensor(), y));
  Tensor w_off = w.clone();
  w_off.data<float>()[1] *= 1.5f;
  EXPECT_FALSE(cpu.qconv2d_forward(cpu.ctx, p, q, x, w_off, Tensor(), y));
  q.x_scale = 0;
  EXPECT_THROW(cpu.qconv2d_forward(cpu.ctx, p, q, x, w, Tensor(), y), Error);
}

std::unique_ptr<Sequential> qat_cnn(uint64_t seed) {
  Rng rng(seed);
  auto net = make_model("cnn", ModelConfig{.dropout = 0}, rng);
  apply_precision(*net, "int8-qat");
  return net;
}

std::vector<double> train_losses(Module& net, int steps) {
  return testing::adamw_losses(net, steps, 70);
}

std::vector<ChannelSplit*> conv_splits(Module& net) {
  std::vector<ChannelSplit*> r;
  net.visit([&](Module& m) {
    if (auto* c = dynamic_cast<Conv2d*>(&m); c && c->channel_split())
      r.push_back(c->channel_split());
  });
  return r;
}

TEST(QatSplit, SplitQatNetworkTrainsAsTheWholeOneWithItsHostConvsOnIntegers) {
  auto whole = qat_cnn(21), split = qat_cnn(21);
  EXPECT_EQ(place_hetero(*split, Device::cpu(), SplitSetting{false, 0.5}), 4);
  const std::vector<double> a = train_losses(*whole, 4), b = train_losses(*split, 4);
  // Not closer: the integer sums are exact where float ones round, so now
  // and then a value downstream lands on the other side of a fake
  // quantizer's rounding midpoint and moves by a whole step (the layer
  // itself agrees to 1e-7: the test above).
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(b[i], a[i], 1e-3 * std::abs(a[i])) << "step " << i;
  const std::vector<ChannelSplit*> convs = conv_splits(*split);
  ASSERT_EQ(convs.size(), 2u);
  for (ChannelSplit* s : convs) EXPECT_TRUE(s->timing.host_int8) << s->name();
  // The observers saw the same weights, per side, as the whole layer's did.
  NamedTensors wa = whole->state_dict(), wb = split->state_dict();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    if (!wa[i].first.ends_with(".weight") &&
        wa[i].first.find("weight_fake_quant") == std::string::npos)
      continue;
    EXPECT_LE(relative_error(wb[i].second, wa[i].second), 1e-2) << wa[i].first;
  }
  // And in float, the host sides give the same again.
  auto floats = qat_cnn(21);
  place_hetero(*floats, Device::cpu(), SplitSetting{false, 0.5});
  for (ChannelSplit* s : conv_splits(*floats)) s->set_host_integers(false);
  const std::vector<double> c = train_losses(*floats, 4);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(c[i], a[i], 1e-4 * std::abs(a[i])) << "step " << i;
  for (ChannelSplit* s : conv_splits(*floats)) EXPECT_FALSE(s->timing.host_int8) << s->name();
}

TEST(QatSplit, AnInputOffItsGridRunsTheHostSideInFloat) {
  Rng a(5), b(5);
  Conv2d whole(4, 8, 3, Conv2dOptions{.padding = 1}, a),
      split(4, 8, 3, Conv2dOptions{.padding = 1}, b);
  whole.enable_qat();
  split.enable_qat();
  place_hetero(split, Device::cpu(), SplitSetting{false, 0.5});
  // Told of a quantizer that never touched x: x is not on its grid.
  FakeQuantize stranger;
  stranger(Var(random_host({2, 4, 6, 6}, 9)));
  split.wire_input_grids(&stranger);
  Tensor x = random_host({2, 4, 6, 6}, 10), dy = random_host({2, 8, 6, 6}, 11);
  testing::expect_same_layer_run(testing::run_layer(split, x, dy, Device::cpu()),
                                 testing::run_layer(whole, x, dy, Device::cpu()), "off the grid",
                                 1e-5);
  EXPECT_FALSE(split.channel_split()->timing.host_int8);
}

// The tuner's eval-mode forward comes before any training step: the fake
// quantizers use the batch's ranges for it and keep nothing.
TEST(QatSplit, AutoSplitTunesBeforeTheObserversHaveSeenData) {
  auto net = qat_cnn(31);
  place_hetero(*net, Device::cpu(), SplitSetting{true, 1});
  prepare_split(*net, random_host({8, 1, 28, 28}, 32));
  for (const SplitRow& r : split_summary(*net)) EXPECT_TRUE(r.tuned) << r.layer;
  for (const auto& [name, t] : net->state_dict())
    if (name.ends_with("min_val")) EXPECT_TRUE(std::isinf(t.data<float>()[0])) << name;
  const std::vector<double> losses = train_losses(*net, 2);
  for (double l : losses) EXPECT_TRUE(std::isfinite(l));
}

// A layer cut at a fixed share: prepare_split times its CPU side both ways
// and the training forward runs the form it kept.
TEST(QatSplit, FixedSplitKeepsTheFasterCpuForm) {
  auto net = qat_cnn(41);
  place_hetero(*net, Device::cpu(), SplitSetting{false, 0.5});
  prepare_split(*net, random_host({8, 1, 28, 28}, 42));
  train_losses(*net, 1);
  for (ChannelSplit* s : conv_splits(*net))
    EXPECT_EQ(s->timing.host_int8, s->host_integers()) << s->name();
  for (const auto& [name, t] : net->state_dict())
    if (name.ends_with("min_val")) EXPECT_TRUE(std::isfinite(t.data<float>()[0])) << name;
}

}  // namespace
}  // namespace tandem::train
