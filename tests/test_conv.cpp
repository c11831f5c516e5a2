// Conv and tandem.FusedConv on the CPU backend vs a naive float64 loop written
// here (direct definition of ONNX Conv with explicit pads), over 1-D/2-D/3-D
// shapes, groups, depthwise, dilation, asymmetric pads, strides, auto_pad,
// in plain and nChw16c input layouts. Tolerance: 1e-4 * max|ref| (inputs in
// [-1, 1]); Winograd (F(4x4,3x3) transforms lose a few bits): 5e-4 * max|ref|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "core/half.h"
#include "tests/cpu_features.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

struct ConvSpec {
  Shape x = {}, w = {};  // X [N, C, D...], W [M, C/group, K...]
  int64_t group = 1;
  Shape strides = {}, dilations = {}, pads = {};  // empty = ONNX defaults; pads = begins then ends
  bool bias = true;
};


// y[n, m, o...] = b[m] + sum_{c, k...} x[n, g*Cg + c, o*s - pb + k*d] * w[m, c, k...]
Tensor reference_conv(const Tensor& x, const Tensor& w, const Tensor* b, const ConvSpec& s) {
  size_t k = x.shape().size() - 2;
  auto at = [](const Shape& v, size_t i, int64_t def) { return v.empty() ? def : v[i]; };
  // Spatial dims padded to 3 with extent 1 in front.
  int64_t in[3] = {1, 1, 1}, ker[3] = {1, 1, 1}, st[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, out[3] = {1, 1, 1};
  for (size_t i = 0; i < k; ++i) {
    size_t j = 3 - k + i;
    in[j] = x.shape()[2 + i];
    ker[j] = w.shape()[2 + i];
    st[j] = at(s.strides, i, 1);
    dl[j] = at(s.dilations, i, 1);
    pb[j] = at(s.pads, i, 0);
    int64_t pe = at(s.pads, k + i, 0);
    out[j] = (in[j] + pb[j] + pe - (ker[j] - 1) * dl[j] - 1) / st[j] + 1;
  }
  int64_t n = x.shape()[0], c = x.shape()[1], m = w.shape()[0], cg = c / s.group, mg = m / s.group;
  Shape ys{n, m};
  for (size_t i = 0; i < k; ++i) ys.push_back(out[3 - k + i]);
  Tensor y = Tensor::empty(DType::f32, ys);
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  float* yp = y.data<float>();
  int64_t ksz = ker[0] * ker[1] * ker[2], osz = out[0] * out[1] * out[2];
  for (int64_t in_ = 0; in_ < n; ++in_)
    for (int64_t im = 0; im < m; ++im)
      for (int64_t o = 0; o < osz; ++o) {
        int64_t od[3] = {o / (out[1] * out[2]), (o / out[2]) % out[1], o % out[2]};
        double acc = b ? b->scalar_at(im) : 0.0;
        int64_t g = im / mg;
        for (int64_t ic = 0; ic < cg; ++ic)
          for (int64_t kk = 0; kk < ksz; ++kk) {
            int64_t kd[3] = {kk / (ker[1] * ker[2]), (kk / ker[2]) % ker[1], kk % ker[2]}, p[3];
            bool inside = true;
            for (int i = 0; i < 3; ++i) {
              p[i] = od[i] * st[i] - pb[i] + kd[i] * dl[i];
              inside &= p[i] >= 0 && p[i] < in[i];
            }
            if (!inside) continue;
            double xv = xp[((in_ * c + g * cg + ic) * in[0] + p[0]) * in[1] * in[2] + p[1] * in[2] + p[2]];
            acc += xv * double(wp[(im * cg + ic) * ksz + kk]);
          }
        yp[(in_ * m + im) * osz + o] = float(acc);
      }
  return y;
}

Attributes conv_attrs(const ConvSpec& s) {
  Attributes a;
  if (s.group != 1) a.set("group", s.group);
  if (!s.strides.empty()) a.set("strides", s.strides);
  if (!s.dilations.empty()) a.set("dilations", s.dilations);
  if (!s.pads.empty()) a.set("pads", s.pads);
  return a;
}

void expect_close(const Tensor& got, const Tensor& ref, double rel, const std::string& what) {
  ASSERT_EQ(got.shape(), ref.shape()) << what;
  double tol = rel * std::max(max_abs(ref), 1e-6);
  EXPECT_LE(max_abs_diff(got, ref), tol) << what;
}

std::string describe(const ConvSpec& s, Layout l) {
  return "x" + shape_str(s.x) + " w" + shape_str(s.w) + " group " + std::to_string(s.group) + " strides" +
         shape_str(s.strides) + " dil" + shape_str(s.dilations) + " pads" + shape_str(s.pads) + " layout " +
         std::string(layout_name(l));
}

void check_conv(const ConvSpec& s, uint64_t seed, double rel = 1e-4) {
  Tensor x = random_tensor(s.x, seed), w = random_tensor(s.w, seed + 1), b = random_tensor({s.w[0]}, seed + 2);
  Tensor ref = reference_conv(x, w, s.bias ? &b : nullptr, s);
  std::vector<Layout> layouts{Layout::plain};
  if (s.x.size() == 4) layouts.push_back(Layout::blocked16);
  for (Layout l : layouts) {
    OpCall c = make_call("Conv", conv_attrs(s), {x, w}, {false, true, true});
    if (s.bias) c.inputs.push_back(b);
    c.input_layout = l;
    expect_close(run_op_cpu(c)[0], ref, rel, describe(s, l));
  }
}

}  // namespace

TEST(CpuConv, MatchesNaiveLoopOverShapes) {
  std::vector<ConvSpec> specs = {
      {{2, 5, 9, 9}, {7, 5, 3, 3}, 1, {}, {}, {1, 1, 1, 1}},
      {{1, 3, 23, 23}, {16, 3, 7, 7}, 1, {2, 2}, {}, {3, 3, 3, 3}},     // ResNet stem
      {{2, 32, 8, 8}, {24, 32, 1, 1}},                                  // 1x1
      {{1, 64, 14, 14}, {128, 64, 1, 1}, 1, {2, 2}},                    // 1x1 stride 2 projection
      {{2, 8, 10, 10}, {12, 4, 3, 3}, 2, {}, {}, {1, 1, 1, 1}},         // groups
      {{1, 24, 11, 11}, {24, 1, 3, 3}, 24, {2, 2}, {}, {1, 1, 1, 1}},   // depthwise stride 2
      {{1, 20, 12, 12}, {20, 1, 5, 5}, 20, {}, {}, {2, 2, 2, 2}},       // depthwise 5x5, C not a multiple of 16
      {{1, 6, 13, 13}, {10, 6, 3, 3}, 1, {}, {2, 2}, {2, 2, 2, 2}},     // dilation
      {{2, 5, 9, 10}, {6, 5, 3, 3}, 1, {1, 2}, {}, {0, 1, 2, 1}},       // asymmetric pads, mixed strides
      {{1, 16, 9, 9}, {16, 16, 1, 7}, 1, {}, {}, {0, 3, 0, 3}},         // 1x7
      {{1, 16, 9, 9}, {16, 16, 7, 1}, 1, {}, {}, {3, 0, 3, 0}},         // 7x1
      {{1, 48, 10, 10}, {40, 48, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, false},  // no bias
      {{2, 4, 17}, {6, 4, 5}, 1, {2}, {}, {2, 1}},                      // 1-D
      {{2, 4, 17}, {8, 2, 3}, 2, {}, {3}, {}},                          // 1-D grouped, dilated
      {{1, 3, 6, 7, 5}, {4, 3, 3, 3, 3}, 1, {}, {}, {1, 1, 1, 1, 1, 1}},  // 3-D
  };
  uint64_t seed = 100;
  for (const ConvSpec& s : specs) check_conv(s, seed += 10);
}

TEST(CpuConv, AutoPadMatchesExplicitPads) {
  Tensor x = random_tensor({1, 4, 10, 11}, 5), w = random_tensor({6, 4, 3, 3}, 6);
  // Output ceil(in/2) = [5, 6]; total pad (o-1)*2 + 3 - in = [1, 2].
  struct Case { const char* mode; Shape pads; Shape out; };
  for (const Case& k : {Case{"SAME_UPPER", {0, 1, 1, 1}, {1, 6, 5, 6}}, Case{"SAME_LOWER", {1, 1, 0, 1}, {1, 6, 5, 6}},
                        Case{"VALID", {0, 0, 0, 0}, {1, 6, 4, 5}}}) {
    ConvSpec s{{1, 4, 10, 11}, {6, 4, 3, 3}, 1, {2, 2}, {}, k.pads, false};
    Tensor ref = reference_conv(x, w, nullptr, s);
    ASSERT_EQ(ref.shape(), k.out);
    Attributes a;
    a.set("auto_pad", std::string(k.mode));
    a.set("strides", Shape{2, 2});
    OpCall c = make_call("Conv", a, {x, w}, {false, true});
    expect_close(run_op_cpu(c)[0], ref, 1e-4, k.mode);
  }
}

namespace {

double activate(const std::string& act, double v, const std::vector<float>& p) {
  if (act == "Relu") return std::max(v, 0.0);
  if (act == "LeakyRelu") return v > 0 ? v : v * (p.empty() ? 0.01 : p[0]);
  if (act == "Clip") return std::clamp(v, double(p[0]), double(p[1]));
  if (act == "HardSwish") return v * std::clamp(v / 6 + 0.5, 0.0, 1.0);
  if (act == "HardSigmoid") return std::clamp(double(p[0]) * v + double(p[1]), 0.0, 1.0);
  if (act == "Sigmoid") return 1 / (1 + std::exp(-v));
  if (act == "Tanh") return std::tanh(v);
  if (act == "SiLU") return v / (1 + std::exp(-v));
  return v;
}

}  // namespace

// tandem.FusedConv vs reference conv, then + R, then the activation.
// FusedConv of each activation, with and without a residual, in plain and
// blocked layouts, against the float64 loop.
void check_fused_convs() {
  struct Act { std::string name; std::vector<float> params; };
  std::vector<Act> acts = {{"", {}}, {"Relu", {}}, {"LeakyRelu", {0.2f}}, {"Clip", {0.f, 0.5f}},
                           {"HardSwish", {}}, {"HardSigmoid", {0.3f, 0.4f}}, {"Sigmoid", {}}, {"Tanh", {}},
                           {"SiLU", {}}};
  std::vector<ConvSpec> specs = {{{2, 16, 7, 7}, {32, 16, 3, 3}, 1, {}, {}, {1, 1, 1, 1}},
                                 {{1, 24, 9, 9}, {24, 1, 3, 3}, 24, {2, 2}, {}, {1, 1, 1, 1}},
                                 {{1, 20, 6, 6}, {36, 20, 1, 1}}};
  uint64_t seed = 900;
  for (const ConvSpec& s : specs)
    for (const Act& act : acts)
      for (int residual = 0; residual < 2; ++residual) {
        seed += 7;
        Tensor x = random_tensor(s.x, seed), w = random_tensor(s.w, seed + 1), b = random_tensor({s.w[0]}, seed + 2);
        Tensor ref = reference_conv(x, w, &b, s);
        Tensor r = random_tensor(ref.shape(), seed + 3);
        for (int64_t i = 0; i < ref.numel(); ++i) {
          double v = ref.scalar_at(i) + (residual ? r.scalar_at(i) : 0.0);
          ref.data<float>()[i] = float(activate(act.name, v, act.params));
        }
        for (Layout l : {Layout::plain, Layout::blocked16}) {
          Attributes a = conv_attrs(s);
          a.set("activation", act.name);
          if (!act.params.empty()) a.set("activation_params", act.params);
          a.set("has_residual", int64_t(residual));
          OpCall c = make_call("tandem.FusedConv", a, {x, w, b}, {false, true, true, false});
          if (residual) c.inputs.push_back(r);
          c.input_layout = l;
          expect_close(run_op_cpu(c)[0], ref, 1e-4,
                       act.name + " residual " + std::to_string(residual) + " " + describe(s, l));
        }
      }
}

TEST(CpuConv, FusedConvMatchesConvAddActivation) { check_fused_convs(); }

namespace {
// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};
}  // namespace

// Where a fused activation cannot be trusted (SVE JIT kernels of oneDNN
// before 3.0) it runs after the convolution, in place: the same results.
TEST(CpuConv, ActivationApartFromTheConvMatchesToo) {
  ScopedEnv env("TANDEM_CPU_UNFUSED_ACTIVATIONS", "1");
  check_fused_convs();
}

// TANDEM_CONV_ALGO=winograd makes prepare fail loudly if Winograd cannot be
// built, so passing here means the Winograd kernel computed the result.
TEST(CpuConv, WinogradMatchesNaiveLoop) {
  ScopedEnv env("TANDEM_CONV_ALGO", "winograd");
  std::vector<ConvSpec> specs = {{{1, 32, 20, 20}, {48, 32, 3, 3}, 1, {}, {}, {1, 1, 1, 1}},
                                 {{2, 64, 14, 13}, {64, 64, 3, 3}, 1, {}, {}, {1, 1, 1, 1}},
                                 {{1, 16, 9, 9}, {32, 16, 3, 3}, 1, {}, {}, {}, false}};
  try {
    check_conv(specs[0], 77, 5e-4);
  } catch (const Error& e) {
    // oneDNN's Winograd is an x86 AVX-512 kernel.
    if (std::string(e.what()).find("has no Winograd") != std::string::npos)
      GTEST_SKIP() << e.what();
    throw;
  }
  for (const ConvSpec& s : specs) check_conv(s, 77, 5e-4);
}

// The timed choice between Winograd and direct is correct whichever wins.
TEST(CpuConv, TunedThreeByThreeMatchesNaiveLoop) {
  check_conv({{1, 32, 28, 28}, {32, 32, 3, 3}, 1, {}, {}, {1, 1, 1, 1}}, 55, 5e-4);
  ScopedEnv off("TANDEM_CONV_TUNE", "0");
  check_conv({{1, 32, 28, 28}, {32, 32, 3, 3}, 1, {}, {}, {1, 1, 1, 1}}, 56);
}

// Weights fed at run time (ONNX allows a computed W) give what constant,
// pre-reordered weights give — which the tests above hold to float64 loops.
TEST(CpuConv, RuntimeWeightsMatchConstantWeights) {
  Tensor x = random_tensor({2, 4, 9, 7}, 1), w = random_tensor({6, 2, 3, 3}, 2), b = random_tensor({6}, 4);
  Attributes g;
  g.set("group", int64_t(2));
  g.set("pads", Shape{1, 0, 1, 2});
  Tensor want = run_op_cpu(make_call("Conv", g, {x, w, b}, {false, true, true}))[0];
  Tensor got = run_op_cpu(make_call("Conv", g, {x, w, b}, {false, false, false}))[0];
  EXPECT_LE(max_abs_diff(got, want), 1e-5 * max_abs(want));
}

TEST(CpuConv, RejectsBadGroupsAndTooSmallInputs) {
  Tensor x = random_tensor({1, 4, 5, 5}, 1), w = random_tensor({4, 4, 3, 3}, 2);
  Attributes g;
  g.set("group", int64_t(3));
  OpCall bad_group = make_call("Conv", g, {x, w}, {false, true});
  EXPECT_THROW(run_op_cpu(bad_group), Error);
  Attributes big;
  big.set("pads", Shape{0, 0, 0, 0});
  OpCall too_small = make_call("Conv", big, {random_tensor({1, 4, 2, 2}, 3), w}, {false, true});
  EXPECT_THROW(run_op_cpu(too_small), Error);
}

namespace {
Tensor to_bf16(const Tensor& f) {
  Tensor t = Tensor::empty(DType::bf16, f.shape());
  auto* p = static_cast<uint16_t*>(t.raw());
  for (int64_t i = 0; i < f.numel(); ++i) p[i] = float_to_bf16(float(f.scalar_at(i)));
  return t;
}
Tensor to_f32(const Tensor& t) {
  Tensor f = Tensor::empty(DType::f32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = float(t.scalar_at(i));
  return f;
}
}  // namespace

// bf16 X/W/B: the reference runs on the bf16-rounded values in float64; the
// kernel accumulates in f32 and rounds Y to bf16 (8 bits): 1e-2 * max|ref|.
TEST(CpuConv, Bf16MatchesNaiveLoopOnRoundedInputs) {
  TANDEM_SKIP_WITHOUT_CPU_BF16();
  ConvSpec s{{1, 32, 9, 9}, {48, 32, 3, 3}, 1, {}, {}, {1, 1, 1, 1}};
  Tensor x = to_bf16(random_tensor(s.x, 1)), w = to_bf16(random_tensor(s.w, 2)), b = to_bf16(random_tensor({48}, 3));
  Tensor bf = to_f32(b);
  Tensor ref = reference_conv(to_f32(x), to_f32(w), &bf, s);
  for (Layout l : {Layout::plain, Layout::blocked16}) {
    OpCall c = make_call("Conv", conv_attrs(s), {x, w, b}, {false, true, true});
    c.input_layout = l;
    Tensor y = run_op_cpu(c)[0];
    ASSERT_EQ(y.dtype(), DType::bf16);
    expect_close(to_f32(y), ref, 1e-2, "bf16 " + describe(s, l));
  }
}
