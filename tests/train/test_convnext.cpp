// The ConvNeXt block (train/layers/convnext_block.h) on the CPU table:
//  - forward and the gradients of x and of every parameter against a
//    float64 loop of the paper's block (7x7 depthwise conv, LayerNorm over
//    the channels, Linear to 4C, exact GELU, Linear back, layer scale,
//    residual) and its central finite differences (grad_check.h tolerances);
//  - forward and gradients against PyTorch's own nn.Conv2d / nn.LayerNorm /
//    nn.Linear / nn.GELU block on the channels-last permutation
//    (tests/train/convnext_block_torch.py), within 1e-5 of the largest value
//    plus 1e-5 relative; skipped without torch;
//  - the convnext model's shapes, its state_dict keys, and a training step;
//  - its exported graph's GELUs (Div/Erf/Add/Mul at opset 17) fuse back into
//    one Gelu node each when a Session compiles it, and the Session gives
//    the eval-mode logits (1e-5 of the largest plus 1e-5 relative).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "graph/session.h"
#include "tests/numpy_ref.h"
#include "tests/train/grad_check.h"
#include "train/export.h"
#include "train/functional.h"
#include "train/models/models.h"

using namespace tandem;
using namespace tandem::testing;
using namespace tandem::train;

namespace {

using Params = std::map<std::string, Doubles>;

constexpr int64_t kN = 2, kC = 4, kH = 5, kW = 6;

// y = x + gamma * pw2(gelu(pw1(layer_norm_c(dwconv(x))))) on [N, C, H, W].
Doubles reference_block(const Doubles& x, const Params& p) {
  const int64_t C = kC, HW = kH * kW, M = 4 * kC;
  const Doubles &dw = p.at("dwconv.weight"), &dwb = p.at("dwconv.bias"), &nw = p.at("norm.weight"),
                &nb = p.at("norm.bias"), &w1 = p.at("pwconv1.weight"), &b1 = p.at("pwconv1.bias"),
                &w2 = p.at("pwconv2.weight"), &b2 = p.at("pwconv2.bias"),
                &gamma = p.at("layer_scale.gamma");
  Doubles y(x.size());
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t h = 0; h < kH; ++h)
      for (int64_t w = 0; w < kW; ++w) {
        Doubles t(static_cast<size_t>(C));  // this pixel's channels after the depthwise conv
        for (int64_t c = 0; c < C; ++c) {
          double s = dwb[size_t(c)];
          for (int64_t i = 0; i < 7; ++i)
            for (int64_t j = 0; j < 7; ++j) {
              const int64_t hh = h + i - 3, ww = w + j - 3;
              if (hh >= 0 && hh < kH && ww >= 0 && ww < kW)
                s += dw[size_t(c * 49 + i * 7 + j)] * x[size_t(((n * C + c) * kH + hh) * kW + ww)];
            }
          t[size_t(c)] = s;
        }
        double mean = 0, var = 0;
        for (double v : t) mean += v / double(C);
        for (double v : t) var += (v - mean) * (v - mean) / double(C);
        for (int64_t c = 0; c < C; ++c)
          t[size_t(c)] =
              (t[size_t(c)] - mean) / std::sqrt(var + 1e-6) * nw[size_t(c)] + nb[size_t(c)];
        Doubles u(static_cast<size_t>(M));
        for (int64_t m = 0; m < M; ++m) {
          double s = b1[size_t(m)];
          for (int64_t c = 0; c < C; ++c) s += w1[size_t(m * C + c)] * t[size_t(c)];
          u[size_t(m)] = s / 2 * (1 + std::erf(s / std::sqrt(2.0)));
        }
        for (int64_t c = 0; c < C; ++c) {
          double s = b2[size_t(c)];
          for (int64_t m = 0; m < M; ++m) s += w2[size_t(c * M + m)] * u[size_t(m)];
          const size_t k = size_t((n * C + c) * HW + h * kW + w);
          y[k] = x[k] + gamma[size_t(c)] * s;
        }
      }
  return y;
}

// A block whose norm and layer scale are off their initial 1, 0 and 1e-6,
// so every part of it moves the output.
std::unique_ptr<ConvNeXtBlock> test_block() {
  Rng rng(21);
  auto b = std::make_unique<ConvNeXtBlock>(kC, rng, 0.5f);
  for (Parameter* p : b->parameters()) {
    if (p->name == "norm.weight" || p->name == "layer_scale.gamma")
      uniform_fill(p->value, 0.5, 1.5, rng);
    if (p->name == "norm.bias") uniform_fill(p->value, -0.5, 0.5, rng);
  }
  return b;
}

Params params_of(Module& m) {
  Params p;
  for (Parameter* q : m.parameters()) p[q->name] = to_doubles(q->value);
  return p;
}

double loss(const Doubles& r, const Doubles& x, const Params& p) {
  return weighted_sum(r, reference_block(x, p));
}

}  // namespace

TEST(ConvNeXtBlock, GradientsMatchFiniteDifferences) {
  auto block = test_block();
  Tensor x = random_tensor({kN, kC, kH, kW}, 31, -1, 2);
  Var xv(x, true);
  Var y = (*block)(xv);
  const Doubles xd = to_doubles(x);
  Params p = params_of(*block);
  expect_near_scaled(y.value(), reference_block(xd, p), 1e-5, 1e-5, "forward");
  Tensor r = random_tensor(y.shape(), 1234);
  backward(y, r);
  const Doubles rd = to_doubles(r);
  const double h = 1e-4;
  Doubles fd(xd.size());
  for (size_t j = 0; j < xd.size(); ++j) {
    Doubles xp = xd, xm = xd;
    xp[j] += h;
    xm[j] -= h;
    fd[j] = (loss(rd, xp, p) - loss(rd, xm, p)) / (2 * h);
  }
  expect_near_scaled(xv.grad(), fd, 1e-3, 1e-5, "dx");
  for (Parameter* q : block->parameters()) {
    Doubles g(size_t(q->value.numel()));
    for (size_t j = 0; j < g.size(); ++j) {
      Params pp = p, pm = p;
      pp[q->name][j] += h;
      pm[q->name][j] -= h;
      g[j] = (loss(rd, xd, pp) - loss(rd, xd, pm)) / (2 * h);
    }
    expect_near_scaled(q->grad, g, 1e-3, 1e-5, "d " + q->name);
  }
}

TEST(ConvNeXtBlock, MatchesPyTorch) {
  if (!have_torch()) GTEST_SKIP() << "torch missing";
  auto block = test_block();
  Tensor x = random_tensor({kN, kC, kH, kW}, 41, -1, 2);
  Var xv(x, true);
  Var y = (*block)(xv);
  Tensor r = random_tensor(y.shape(), 42);
  backward(y, r);
  const std::string dir = make_temp_dir();
  write_npy(dir + "/x.npy", x);
  write_npy(dir + "/dy.npy", r);
  std::string names;
  for (Parameter* q : block->parameters()) {
    write_npy(dir + "/" + q->name + ".npy", q->value);
    names += " " + q->name;
  }
  ASSERT_TRUE(run_reference_script("train/convnext_block_torch.py",
                                   dir + " " + std::to_string(kC) + names));
  expect_near_scaled(y.value(), to_doubles(read_npy(dir + "/y.torch.npy", DType::f32)), 1e-5, 1e-5,
                     "y");
  expect_near_scaled(xv.grad(), to_doubles(read_npy(dir + "/x.grad.npy", DType::f32)), 1e-5, 1e-5,
                     "dx");
  for (Parameter* q : block->parameters())
    expect_near_scaled(q->grad, to_doubles(read_npy(dir + "/" + q->name + ".grad.npy", DType::f32)),
                       1e-5, 1e-5, "d " + q->name);
  (void)std::system(("rm -rf " + dir).c_str());
}

TEST(ConvNeXtModel, ShapesKeysAndATrainingStep) {
  Rng rng(3);
  auto model = make_model("convnext", ModelConfig{}, rng);
  std::vector<std::string> keys;
  for (Parameter* p : model->parameters()) keys.push_back(p->name);
  const std::vector<std::string> want_some{"stem.0.weight",
                                           "stem.1.weight",
                                           "stage1.0.dwconv.weight",
                                           "stage1.0.norm.bias",
                                           "stage1.0.pwconv1.weight",
                                           "stage1.0.layer_scale.gamma",
                                           "downsample1.0.weight",
                                           "downsample1.1.weight",
                                           "stage2.0.pwconv2.bias",
                                           "norm.weight",
                                           "head.weight"};
  for (const std::string& k : want_some)
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  Var y = (*model)(Var(random_tensor({3, 1, 28, 28}, 5)));
  ASSERT_EQ(y.shape(), (Shape{3, 10}));
  Tensor labels = Tensor::from_vector<int64_t>({1, 7, 3}, {3});
  backward(cross_entropy(y, labels));
  for (Parameter* p : model->parameters()) {
    double norm = 0;
    for (int64_t i = 0; i < p->grad.numel(); ++i) norm += std::fabs(p->grad.scalar_at(i));
    EXPECT_GT(norm, 0) << p->name << " got no gradient";
    EXPECT_TRUE(std::isfinite(norm)) << p->name;
  }
  EXPECT_THROW(make_model("convnext", ModelConfig{1, 30, 28, 10}, rng),
               Error);  // not a multiple of 4
}

TEST(ConvNeXtModel, ExportedGelusFuseBackIntoGelu) {
  Rng rng(4);
  auto model = make_model("convnext", ModelConfig{}, rng);
  model->eval();
  Session s(model_to_graph(*model, {1, 28, 28}));
  Tensor x = random_tensor({2, 1, 28, 28}, 6);
  Tensor y = s.run({x})[0];
  EXPECT_EQ(s.last_compile().gelus_fused, 2);  // one per block
  expect_near_scaled(y, to_doubles((*model)(Var(x)).value()), 1e-5, 1e-5, "session logits");
}

// From opset 20 on, export writes one Gelu node per block (ONNX's own op,
// approximate "none"), which a Session runs as it is.
TEST(ConvNeXtModel, Opset20ExportsGeluNodes) {
  Rng rng(4);
  auto model = make_model("convnext", ModelConfig{}, rng);
  model->eval();
  ExportOptions o;
  o.opset = 20;
  Graph g = model_to_graph(*model, {1, 28, 28}, o);
  int gelus = 0;
  for (const tandem::Node& n : g.nodes) {
    EXPECT_NE(n.op_type, "Erf");
    if (n.op_type == "Gelu") {
      ++gelus;
      EXPECT_EQ(n.attrs.get_string("approximate", ""), "none");
    }
  }
  EXPECT_EQ(gelus, 2);
  Session s(std::move(g));
  Tensor x = random_tensor({2, 1, 28, 28}, 8);
  expect_near_scaled(s.run({x})[0], to_doubles((*model)(Var(x)).value()), 1e-5, 1e-5, "opset 20 logits");
}
