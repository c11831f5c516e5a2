// CUDA Conv, tandem.FusedConv and pooling (cuDNN, NHWC) vs the CPU backend;
// the depthwise cases run cuda/depthwise_conv.cu (test_cuda_depthwise.cpp).
// fp32: relative error <= 1e-5 of the reference norm. The CPU reference is
// forced to oneDNN's direct convolution (TANDEM_CONV_ALGO=direct): its
// Winograd, which it may otherwise pick for 3x3 stride 1, rounds differently
// from a direct sum by more than 1e-5. fp16 and bf16 (the GPU graph in
// f16/bf16, the CPU one in f32 on the same rounded values): <= 1e-2.
#include <cstdlib>
#include <optional>
#include <string>

#include "../graph_builder.h"
#include "gpu_test_util.h"
#include "ops/conv.h"

namespace tandem::testing {
namespace {

class CudaConv : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* v = std::getenv("TANDEM_CONV_ALGO")) saved_ = v;
    setenv("TANDEM_CONV_ALGO", "direct", 1);
  }
  void TearDown() override {
    if (saved_) setenv("TANDEM_CONV_ALGO", saved_->c_str(), 1);
    else unsetenv("TANDEM_CONV_ALGO");
  }

 private:
  std::optional<std::string> saved_;
};

struct ConvCase {
  std::string name;
  Shape x, w;
  Attributes attrs;
  bool bias = true;
};

Attributes conv_attrs(Shape strides, Shape pads, Shape dilations = {1, 1}, int64_t group = 1) {
  Attributes a;
  a.set("strides", strides);
  a.set("pads", pads);
  a.set("dilations", dilations);
  a.set("group", group);
  return a;
}

Attributes same_upper(Shape strides) {
  Attributes a;
  a.set("strides", strides);
  a.set("auto_pad", std::string("SAME_UPPER"));
  return a;
}

// One Conv (or FusedConv) node over input x, constant weights and bias, and
// an optional residual graph input; returns the relative error of the GPU
// result at precision `p` against the CPU's in f32.
double conv_error(const std::string& op, const ConvCase& c, uint32_t seed, bool residual = false,
                  Precision p = Precision::fp32) {
  GraphBuilder b;
  ValueId x = b.input("x", c.x);
  std::vector<ValueId> in{x, b.constant("w", random_for(p, c.w, seed + 1, -0.5f, 0.5f))};
  if (c.bias) in.push_back(b.constant("b", random_for(p, {c.w[0]}, seed + 2)));
  std::vector<Tensor> feeds{random_for(p, c.x, seed)};
  if (residual) {
    ops::ConvGeometry g = ops::conv_geometry(c.attrs, c.x, c.w);
    in.push_back(b.input("r", g.output_shape()));
    feeds.push_back(random_for(p, g.output_shape(), seed + 3));
  }
  b.output(b.node(op, in, c.attrs));
  auto [cpu, gpu] = run_both(b.g, feeds, p);
  return relative_error(gpu[0], cpu[0]);
}

std::vector<ConvCase> conv_shape_cases() {
  return {
      {"3x3 s1 p1 64->64", {2, 64, 28, 28}, {64, 64, 3, 3}, conv_attrs({1, 1}, {1, 1, 1, 1})},
      {"1x1 256->64", {2, 256, 14, 14}, {64, 256, 1, 1}, conv_attrs({1, 1}, {0, 0, 0, 0})},
      {"ResNet stem 7x7 s2 p3", {1, 3, 224, 224}, {64, 3, 7, 7}, conv_attrs({2, 2}, {3, 3, 3, 3})},
      {"depthwise 3x3 s1", {2, 32, 28, 28}, {32, 1, 3, 3}, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 32)},
      {"depthwise 3x3 s2", {2, 32, 28, 28}, {32, 1, 3, 3}, conv_attrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 32)},
      {"depthwise 5x5", {1, 48, 20, 20}, {48, 1, 5, 5}, conv_attrs({1, 1}, {2, 2, 2, 2}, {1, 1}, 48)},
      {"grouped, group 4", {2, 32, 14, 14}, {64, 8, 3, 3}, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 4)},
      {"dilation 2", {1, 16, 20, 20}, {32, 16, 3, 3}, conv_attrs({1, 1}, {2, 2, 2, 2}, {2, 2})},
      {"no bias", {1, 16, 15, 15}, {24, 16, 3, 3}, conv_attrs({1, 1}, {1, 1, 1, 1}), false},
      // TF SAME, stride 2, 3x3 on an even input: pads 0 before, 1 after.
      {"SAME_UPPER s2 3x3 on 28x28", {1, 16, 28, 28}, {32, 16, 3, 3}, same_upper({2, 2})},
      {"SAME_UPPER s2 depthwise", {1, 24, 28, 28}, {24, 1, 3, 3}, [] {
         Attributes a = same_upper({2, 2});
         a.set("group", int64_t(24));
         return a;
       }()},
      {"explicit pads 1,0,2,1", {1, 8, 13, 17}, {16, 8, 3, 3}, conv_attrs({1, 1}, {1, 0, 2, 1})},
  };
}

TEST_F(CudaConv, ConvShapesMatchTheCpu) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 100;
  for (const ConvCase& c : conv_shape_cases()) EXPECT_LE(conv_error("Conv", c, seed += 10), 1e-5) << c.name;
}

// The same shapes with the GPU graph lowered to f16 and bf16 (tensor cores,
// the 8-channel packing of the C=3 stem).
TEST_F(CudaConv, ConvShapesInHalfPrecisionMatchTheCpuToOnePercent) {
  TANDEM_REQUIRE_GPU();
  for (Precision p : {Precision::fp16, Precision::bf16}) {
    uint32_t seed = 100;
    for (const ConvCase& c : conv_shape_cases())
      EXPECT_LE(conv_error("Conv", c, seed += 10, false, p), tolerance(p)) << c.name << " " << precision_name(p);
  }
}

// FusedConv over every activation, with and without a residual, at
// precision p: cuDNN's fused call where it accepts the case, else the
// epilogue kernel.
void expect_fused_convs_match(Precision p) {
  std::vector<ConvCase> shapes = {
      {"3x3 32->48", {2, 32, 14, 14}, {48, 32, 3, 3}, conv_attrs({1, 1}, {1, 1, 1, 1})},
      {"depthwise s1", {1, 40, 12, 12}, {40, 1, 3, 3}, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 40)},
      {"SAME_UPPER s2", {1, 16, 16, 16}, {24, 16, 3, 3}, same_upper({2, 2})},
  };
  uint32_t seed = 500;
  for (ConvCase c : shapes)
    for (const FusedEpilogue& e : fused_conv_epilogues()) {
      set_fused_epilogue(c.attrs, e);
      EXPECT_LE(conv_error(ops::kFusedConvOp, c, seed += 10, e.residual, p), tolerance(p))
          << c.name << " " << e.activation << " residual " << e.residual << " " << precision_name(p);
    }
}

TEST_F(CudaConv, FusedConvActivationsAndResidualMatchTheCpu) {
  TANDEM_REQUIRE_GPU();
  expect_fused_convs_match(Precision::fp32);
}

TEST_F(CudaConv, FusedConvInHalfPrecisionMatchesTheCpuToOnePercent) {
  TANDEM_REQUIRE_GPU();
  expect_fused_convs_match(Precision::fp16);
  expect_fused_convs_match(Precision::bf16);
}

// Conv then Relu (then Add) as an exporter writes them: the fusion pass makes
// a FusedConv on both backends.
TEST_F(CudaConv, ConvReluChainMatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {1, 16, 20, 20});
  ValueId w1 = b.constant("w1", random_f32({16, 16, 3, 3}, 2, -0.3f, 0.3f));
  ValueId b1 = b.constant("b1", random_f32({16}, 3));
  ValueId w2 = b.constant("w2", random_f32({16, 16, 1, 1}, 4, -0.3f, 0.3f));
  ValueId y = b.node("Relu", {b.node("Conv", {x, w1, b1}, conv_attrs({1, 1}, {1, 1, 1, 1}))});
  ValueId z = b.node("Conv", {y, w2}, conv_attrs({1, 1}, {0, 0, 0, 0}));
  b.output(b.node("Relu", {b.node("Add", {z, x})}));
  auto [cpu, gpu] = run_both(b.g, {random_f32({1, 16, 20, 20}, 1)});
  EXPECT_LE(relative_error(gpu[0], cpu[0]), 1e-5);
}

double pool_error(const std::string& op, const Shape& xs, const Attributes& a, uint32_t seed,
                  Precision p = Precision::fp32) {
  GraphBuilder b;
  ValueId x = b.input("x", xs);
  b.output(b.node(op, {x}, a));
  auto [cpu, gpu] = run_both(b.g, {random_for(p, xs, seed)}, p);
  return relative_error(gpu[0], cpu[0]);
}

Attributes pool_attrs(Shape kernel, Shape strides, Shape pads) {
  Attributes a;
  a.set("kernel_shape", kernel);
  a.set("strides", strides);
  a.set("pads", pads);
  return a;
}

TEST(CudaPool, PoolsMatchTheCpu) {
  TANDEM_REQUIRE_GPU();
  Attributes include_pad = pool_attrs({3, 3}, {1, 1}, {1, 1, 1, 1});
  include_pad.set("count_include_pad", int64_t(1));
  EXPECT_LE(pool_error("MaxPool", {2, 64, 56, 56}, pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}), 1), 1e-6) << "max 3x3 s2 p1";
  EXPECT_LE(pool_error("AveragePool", {2, 32, 28, 28}, pool_attrs({2, 2}, {2, 2}, {0, 0, 0, 0}), 2), 1e-5) << "avg 2x2 s2";
  EXPECT_LE(pool_error("AveragePool", {1, 16, 15, 15}, pool_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}), 3), 1e-5)
      << "avg 3x3 p1, padding excluded";
  EXPECT_LE(pool_error("AveragePool", {1, 16, 15, 15}, include_pad, 4), 1e-5) << "avg 3x3 p1, padding included";
  EXPECT_LE(pool_error("GlobalAveragePool", {2, 512, 7, 7}, {}, 5), 1e-5) << "global average";
  EXPECT_LE(pool_error("GlobalMaxPool", {2, 64, 9, 11}, {}, 6), 1e-6) << "global max";
}

// cuDNN pooling on f16 and bf16: a max of rounded values is exact, an
// average rounds once.
TEST(CudaPool, PoolsInHalfPrecisionMatchTheCpuToOnePercent) {
  TANDEM_REQUIRE_GPU();
  for (Precision p : {Precision::fp16, Precision::bf16}) {
    const std::string at = std::string(" ") + precision_name(p);
    EXPECT_EQ(pool_error("MaxPool", {2, 64, 56, 56}, pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}), 1, p), 0.0)
        << "max 3x3 s2 p1" << at;
    EXPECT_LE(pool_error("AveragePool", {1, 16, 15, 15}, pool_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}), 3, p),
              tolerance(p))
        << "avg 3x3 p1" << at;
    EXPECT_LE(pool_error("GlobalAveragePool", {2, 512, 7, 7}, {}, 5, p), tolerance(p)) << "global average" << at;
    EXPECT_EQ(pool_error("GlobalMaxPool", {2, 64, 9, 11}, {}, 6, p), 0.0) << "global max" << at;
  }
}

// cuDNN pools with symmetric padding only: with --strict-device the refusal
// names the node; otherwise the pool runs on the CPU, as the CPU alone runs it.
TEST(CudaPool, AsymmetricPadsAreRefusedNamingTheNodeOrFallBack) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {1, 4, 8, 8});
  b.output(b.node("MaxPool", {x}, pool_attrs({3, 3}, {2, 2}, {0, 0, 1, 1})));
  SessionOptions o;
  o.device = Device::cuda(0);
  o.strict_device = true;
  const Tensor in = random_f32({1, 4, 8, 8}, 1);
  try {
    Session(b.g, o).run({in});
    FAIL() << "asymmetric MaxPool ran on the GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(b.g.nodes[0].name), std::string::npos) << e.what();
  }
  o.strict_device = false;
  Session s(b.g, o);
  std::vector<Tensor> got = s.run({in});
  EXPECT_EQ(s.fallback().nodes, 1);
  std::vector<Tensor> want = Session(b.g).run({in});
  expect_identical(got.at(0), want.at(0), "asymmetric MaxPool on the CPU fallback");
}

// The same FusedConv(+residual) -> MaxPool graph in `low` (f16 or bf16) on
// the GPU, its inputs and constants of that dtype, and in f32 (t) on the CPU,
// both fed the rounded values; x is [2, C, 16, 16] for the weights' C, the
// conv's output [2, 48, 8, 8].
Graph low_precision_test_graph(DType t, DType low, const Tensor& w, const Tensor& bias, const Attributes& conv) {
  auto constant = [&](const Tensor& v) { return t == low ? to_low(v, low) : to_f32(to_low(v, low)); };
  GraphBuilder b;
  ValueId x = b.input("x", {2, w.shape()[1], 16, 16}, t);
  ValueId r = b.input("r", {2, 48, 8, 8}, t);
  ValueId y = b.node(ops::kFusedConvOp, {x, b.constant("w", constant(w)), b.constant("b", constant(bias)), r}, conv);
  b.output(b.node("MaxPool", {y}, pool_attrs({3, 3}, {1, 1}, {1, 1, 1, 1})));
  return b.g;
}

// Channels 32 (NHWC input), and 3 and 1 (NCHW input packed to 8 channels by
// the conv itself), each with cuDNN's symmetric padding and with TF's
// asymmetric SAME padding; the graph's own dtype is `low`.
void expect_low_precision_conv_and_pool_match(DType low) {
  struct Case {
    int64_t c, k;
    Attributes conv;
  };
  std::vector<Case> cases = {{32, 3, same_upper({2, 2})},
                             {3, 7, conv_attrs({2, 2}, {3, 3, 3, 3})},
                             {3, 3, same_upper({2, 2})},
                             {1, 5, conv_attrs({2, 2}, {2, 2, 2, 2})}};
  uint32_t seed = 20;
  for (Case& k : cases)
    for (const char* act : {"Relu", "HardSwish"}) {
      Attributes conv = k.conv;
      conv.set("activation", std::string(act));
      conv.set("has_residual", int64_t(1));
      Tensor w = random_f32({48, k.c, k.k, k.k}, ++seed, -0.2f, 0.2f), bias = random_f32({48}, ++seed);
      Tensor x = to_low(random_f32({2, k.c, 16, 16}, ++seed), low);
      Tensor r = to_low(random_f32({2, 48, 8, 8}, ++seed), low);
      SessionOptions gpu;
      gpu.device = Device::cuda(0);
      Tensor got = to_f32(
          Session(low_precision_test_graph(low, low, w, bias, conv), gpu).run(std::vector<Tensor>{x, r})[0]);
      Tensor want = Session(low_precision_test_graph(DType::f32, low, w, bias, conv))
                        .run(std::vector<Tensor>{to_f32(x), to_f32(r)})[0];
      EXPECT_LE(relative_error(got, want), 1e-2) << act << " C=" << k.c << " k=" << k.k << " " << dtype_name(low);
    }
}

TEST_F(CudaConv, Fp16ConvAndPoolMatchTheCpuToOnePercent) {
  TANDEM_REQUIRE_GPU();
  expect_low_precision_conv_and_pool_match(DType::f16);
}

TEST_F(CudaConv, Bf16ConvAndPoolMatchTheCpuToOnePercent) {
  TANDEM_REQUIRE_GPU();
  expect_low_precision_conv_and_pool_match(DType::bf16);
}

}  // namespace
}  // namespace tandem::testing
