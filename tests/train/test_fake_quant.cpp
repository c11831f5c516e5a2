// Quantization-aware training against Debian's PyTorch 1.13 (skipped without
// it): the fake-quantize op element for element against
// torch.fake_quantize_per_{tensor,channel}_affine (equal values: the same
// float rounding; a zero's sign may differ), its straight-through gradient
// against torch autograd (equal values),
// and FakeQuantizer's moving-average observer and qparams against
// torch.ao.quantization.FakeQuantize over three steps (within 1e-6: scales
// are computed in float32 on both sides). fq.scale is updated in place by
// torch, hence the clones.
#include <gtest/gtest.h>

#include <random>

#include "tests/numpy_ref.h"
#include "train/functional.h"
#include "train/layers/conv2d.h"
#include "train/quant/fake_quantizer.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

// Values around the grid's half-way points and past both ends of the range.
Tensor probe_tensor(const Shape& shape, float spread, uint32_t seed) {
  Tensor t = Tensor::empty(DType::f32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-spread, spread);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = u(rng);
  p[0] = 0.025f, p[1] = -0.075f, p[2] = 1e6f, p[3] = -1e6f;  // ties at scale 0.05, far outside
  return t;
}

Tensor concat_flat(const std::vector<Tensor>& parts) {
  int64_t n = 0;
  for (const Tensor& p : parts) n += p.numel();
  Tensor out = Tensor::empty(DType::f32, {n});
  float* o = out.data<float>();
  for (const Tensor& p : parts)
    for (int64_t i = 0; i < p.numel(); ++i) *o++ = float(p.scalar_at(i));
  return out;
}

}  // namespace

TEST(FakeQuant, OpAndGradientMatchTorch) {
  TANDEM_REQUIRE_TORCH();
  NumpyChecks checks;
  // Per tensor, uint8 affine.
  Tensor x = probe_tensor({4, 3, 5}, 10.f, 1), g = probe_tensor({4, 3, 5}, 1.f, 2);
  Tensor scale = Tensor::from_vector<float>({0.05f}, {1}), zp = Tensor::from_vector<int64_t>({128}, {1});
  train::Var xv(x, true);
  train::Var y = train::fake_quantize(xv, scale, zp, ops::FakeQuantParams{-1, 0, 255});
  train::backward(y, g);
  const std::string torch_tensor =
      "import torch\nt = torch.from_numpy(x0).requires_grad_()\n"
      "y = torch.fake_quantize_per_tensor_affine(t, 0.05, 128, 0, 255)\ny.backward(torch.from_numpy(x1))\n";
  checks.add(y.value(), torch_tensor + "r = y.detach().numpy()", {x, g}, "per-tensor forward", 0);
  checks.add(xv.grad(), torch_tensor + "r = t.grad.numpy()", {x, g}, "per-tensor STE gradient", 0);
  // Per channel along axis 1, int8 symmetric, one scale per channel.
  Tensor sc = Tensor::from_vector<float>({0.05f, 0.013f, 0.2f}, {3}), zc = Tensor::from_vector<int64_t>({0, 0, 0}, {3});
  train::Var xc(x, true);
  train::Var yc = train::fake_quantize(xc, sc, zc, ops::FakeQuantParams{1, -128, 127});
  train::backward(yc, g);
  const std::string torch_channel =
      "import torch\nt = torch.from_numpy(x0).requires_grad_()\n"
      "y = torch.fake_quantize_per_channel_affine(t, torch.tensor([0.05, 0.013, 0.2]), torch.zeros(3, dtype=torch.int32), 1, -128, 127)\n"
      "y.backward(torch.from_numpy(x1))\n";
  checks.add(yc.value(), torch_channel + "r = y.detach().numpy()", {x, g}, "per-channel forward", 0);
  checks.add(xc.grad(), torch_channel + "r = t.grad.numpy()", {x, g}, "per-channel STE gradient", 0);
  checks.check();
}

// Three training steps, inputs of different ranges: scales, zero points and
// outputs after each step, activations (per tensor) and weights (per channel).
TEST(FakeQuant, ObserverAndQparamsMatchTorchFakeQuantize) {
  TANDEM_REQUIRE_TORCH();
  std::vector<Tensor> inputs = {probe_tensor({2, 3, 4, 4}, 3.f, 5), probe_tensor({2, 3, 4, 4}, 1.f, 6),
                                probe_tensor({2, 3, 4, 4}, 6.f, 7)};
  for (Tensor& t : inputs) t.data<float>()[2] = 2.5f, t.data<float>()[3] = -1.5f;  // keep ranges finite-ish
  train::FakeQuantizer act(train::QuantSpec::activations()), wt(train::QuantSpec::weights(), 2);
  std::vector<Tensor> got_act, got_wt;
  for (const Tensor& x : inputs) {
    Tensor ya = act(train::Var(x), true).value();
    got_act.insert(got_act.end(), {ya, act.scale(), act.zero_point()});
    Tensor yw = wt(train::Var(x), true).value();
    got_wt.insert(got_wt.end(), {yw, wt.scale(), wt.zero_point()});
  }
  const std::string steps =
      "import torch\nfrom torch.ao.quantization import FakeQuantize, MovingAverageMinMaxObserver, "
      "MovingAveragePerChannelMinMaxObserver\n"
      "fq = FAKE\nout = []\n"
      "for x in (x0, x1, x2):\n"
      "    y = fq(torch.from_numpy(x))\n"
      "    out += [y.detach().flatten(), fq.scale.float().flatten().clone(), fq.zero_point.float().flatten().clone()]\n"
      "r = torch.cat(out).numpy()\n";
  auto with = [&](const std::string& fake) {
    std::string s = steps;
    return s.replace(s.find("FAKE"), 4, fake);
  };
  NumpyChecks checks;
  checks.add(concat_flat(got_act),
             with("FakeQuantize(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, "
                  "dtype=torch.quint8, qscheme=torch.per_tensor_affine)"),
             inputs, "activation fake quantizer, 3 steps", 1e-6);
  checks.add(concat_flat(got_wt),
             with("FakeQuantize(observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, "
                  "dtype=torch.qint8, qscheme=torch.per_channel_symmetric, ch_axis=0)"),
             inputs, "weight fake quantizer, 3 steps", 1e-6);
  checks.check();
}

TEST(FakeQuant, BadQparamsAreErrors) {
  Tensor x = probe_tensor({2, 3}, 1.f, 3);
  Tensor zp = Tensor::from_vector<int64_t>({0}, {1});
  EXPECT_THROW(train::fake_quantize(train::Var(x), Tensor::from_vector<float>({0.f}, {1}), zp, {}), Error);
  EXPECT_THROW(train::fake_quantize(train::Var(x), Tensor::from_vector<float>({0.1f, 0.1f}, {2}), zp, {1, -128, 127}),
               Error);
  EXPECT_THROW(train::fake_quantize(train::Var(x), Tensor::from_vector<float>({0.1f}, {1}),
                                    Tensor::from_vector<int64_t>({300}, {1}), {-1, 0, 255}),
               Error);
  train::FakeQuantizer q;
  EXPECT_THROW(q(train::Var(x), false), Error);  // eval before any observation
}

// A QAT conv: the weight is fake-quantized per output channel before the
// conv (so the conv's output equals a conv with the rounded weight), the
// observer's range is a buffer named as PyTorch's, and the gradient reaches
// the float weight through the straight-through estimator.
TEST(FakeQuant, QatConvUsesTheRoundedWeight) {
  train::Rng rng(3);
  train::Conv2d conv(2, 3, 3, {}, rng);
  conv.enable_qat();
  std::vector<std::string> names;
  for (train::Buffer* b : conv.buffers()) names.push_back(b->name);
  EXPECT_EQ(names, (std::vector<std::string>{"weight_fake_quant.activation_post_process.min_val",
                                             "weight_fake_quant.activation_post_process.max_val"}));
  Tensor x = probe_tensor({1, 2, 5, 5}, 1.f, 9);
  x.data<float>()[2] = 0.5f, x.data<float>()[3] = -0.5f;
  train::Var y = conv(train::Var(x));
  // The same conv on the fake-quantized weight, built by hand.
  train::ParameterList ps = conv.parameters();
  train::FakeQuantizer q(train::QuantSpec::weights(), 3);
  train::Var wq = q(train::Var(ps[0]->value), true);
  train::Var want = train::conv2d(train::Var(x), wq, train::Var(ps[1]->value));
  expect_same(y.value(), want.value(), "QAT conv vs conv of the fake-quantized weight");
  Tensor ones = Tensor::empty(DType::f32, y.shape());
  for (int64_t i = 0; i < ones.numel(); ++i) ones.data<float>()[i] = 1.f;
  train::backward(y, ones);
  double norm = 0;
  for (int64_t i = 0; i < ps[0]->grad.numel(); ++i) norm += std::fabs(ps[0]->grad.scalar_at(i));
  EXPECT_GT(norm, 0) << "no gradient reached the float weight";
}
