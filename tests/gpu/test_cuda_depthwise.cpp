// CUDA depthwise convolution (cuda/depthwise_conv.cu: group == C == M, NHWC,
// its own kernel instead of cuDNN) vs the CPU backend (oneDNN) in f32.
// fp32: relative error <= 1e-5 of the reference norm; fp16 and bf16 (the GPU
// graph lowered to f16/bf16, the CPU one in f32 on the same rounded values):
// <= 1e-2. The GPU sessions are strict (strict_device), so a conv the CUDA
// backend refused fails the test instead of running on the CPU fallback.
// The cases cover both kernels: the tiled one (square 3/5/7 kernels, column
// stride 1 or 2, C a multiple of 16 bytes) and the direct one (anything
// else, 16-byte, 2-element or scalar channel vectors).
#include <string>
#include <vector>

#include "../graph_builder.h"
#include "cuda/depthwise_conv.h"
#include "gpu_test_util.h"
#include "ops/conv.h"

namespace tandem::testing {
namespace {

Attributes dw_attrs(Shape strides, Shape pads, Shape dilations = {1, 1}) {
  Attributes a;
  a.set("strides", strides);
  a.set("pads", pads);
  a.set("dilations", dilations);
  return a;
}

Attributes dw_same_upper(Shape strides) {
  Attributes a;
  a.set("strides", strides);
  a.set("auto_pad", std::string("SAME_UPPER"));
  return a;
}

// x is [N, C, H, W]; the weights [C, 1, kernel...], group = C.
struct DwCase {
  std::string name;
  Shape x, kernel;
  Attributes attrs;
  bool bias = true;
  Shape w() const { return {x[1], 1, kernel[0], kernel[1]}; }
};

std::vector<Tensor> run_strict(const Graph& g, const std::vector<Tensor>& in, Precision p, std::vector<Tensor>& cpu) {
  SessionOptions gpu;
  gpu.device = Device::cuda(0);
  gpu.precision = p;
  gpu.strict_device = true;
  cpu = Session(g).run(in);
  return Session(g, gpu).run(in);
}

// One depthwise Conv node, or a FusedConv node when the epilogue has an
// activation or a residual, over input x, constant weights and bias, and an
// optional residual graph input; the relative error of the GPU result at
// precision p against the CPU's in f32.
double depthwise_error(const DwCase& c, uint32_t seed, Precision p, const FusedEpilogue& e = {}) {
  GraphBuilder b;
  Attributes a = c.attrs;
  a.set("group", c.x[1]);
  const bool fused = !e.activation.empty() || e.residual;
  if (fused) set_fused_epilogue(a, e);
  std::vector<ValueId> in{b.input("x", c.x), b.constant("w", random_for(p, c.w(), seed + 1, -0.5f, 0.5f))};
  if (c.bias || fused) in.push_back(b.constant("b", random_for(p, {c.x[1]}, seed + 2)));
  std::vector<Tensor> feeds{random_for(p, c.x, seed)};
  if (e.residual) {
    Shape y = ops::conv_geometry(a, c.x, c.w()).output_shape();
    in.push_back(b.input("r", y));
    feeds.push_back(random_for(p, y, seed + 3));
  }
  b.output(b.node(fused ? ops::kFusedConvOp : "Conv", in, a));
  std::vector<Tensor> cpu;
  std::vector<Tensor> gpu = run_strict(b.g, feeds, p, cpu);
  return relative_error(gpu.at(0), cpu.at(0));
}

std::vector<DwCase> shape_cases() {
  return {
      // The tiled kernel.
      {"3x3 s1 p1 C=128", {1, 128, 16, 16}, {3, 3}, dw_attrs({1, 1}, {1, 1, 1, 1})},
      {"3x3 s2 p1 C=128 batch 4", {4, 128, 16, 16}, {3, 3}, dw_attrs({2, 2}, {1, 1, 1, 1})},
      {"3x3 s2 SAME_UPPER (pads 0,0,1,1) C=72", {4, 72, 16, 16}, {3, 3}, dw_same_upper({2, 2})},
      {"5x5 s1 p2 C=480", {1, 480, 9, 9}, {5, 5}, dw_attrs({1, 1}, {2, 2, 2, 2})},
      {"5x5 s2 SAME_UPPER (pads 1,1,2,2) C=72 batch 4", {4, 72, 20, 20}, {5, 5}, dw_same_upper({2, 2})},
      {"5x5 s1 pads 2,1,2,3 C=40", {1, 40, 12, 12}, {5, 5}, dw_attrs({1, 1}, {2, 1, 2, 3})},
      {"7x7 s1 p3 C=32", {1, 32, 14, 14}, {7, 7}, dw_attrs({1, 1}, {3, 3, 3, 3})},
      {"7x7 s2 p3 C=32", {2, 32, 15, 15}, {7, 7}, dw_attrs({2, 2}, {3, 3, 3, 3})},
      {"3x3 s1 p1 on [2,64,37,41]", {2, 64, 37, 41}, {3, 3}, dw_attrs({1, 1}, {1, 1, 1, 1})},
      {"3x3 s2 SAME_UPPER on [2,64,37,41]", {2, 64, 37, 41}, {3, 3}, dw_same_upper({2, 2})},
      {"3x3 p1 on 1x1 C=72", {1, 72, 1, 1}, {3, 3}, dw_attrs({1, 1}, {1, 1, 1, 1})},
      {"3x3 s2 p1 on 2x3 C=24 batch 4", {4, 24, 2, 3}, {3, 3}, dw_attrs({2, 2}, {1, 1, 1, 1})},
      {"3x3 strides 2,1", {1, 32, 10, 10}, {3, 3}, dw_attrs({2, 1}, {1, 1, 1, 1})},
      {"3x3 dilations 2,1", {1, 32, 12, 12}, {3, 3}, dw_attrs({1, 1}, {2, 1, 2, 1}, {2, 1})},
      {"3x3 s1 p0 no bias C=48", {2, 48, 9, 9}, {3, 3}, dw_attrs({1, 1}, {0, 0, 0, 0}), false},
      // The direct kernel: C not a multiple of the vector, or a window the
      // tiled kernel's templates do not cover.
      {"3x3 s2 pads 0,0,1,1 C=18 batch 4", {4, 18, 16, 16}, {3, 3}, dw_attrs({2, 2}, {0, 0, 1, 1})},
      {"5x5 s2 SAME_UPPER C=18", {1, 18, 20, 20}, {5, 5}, dw_same_upper({2, 2})},
      {"3x3 s1 p1 C=3 batch 4", {4, 3, 10, 10}, {3, 3}, dw_attrs({1, 1}, {1, 1, 1, 1})},
      {"3x3 p1 on 1x1 C=3", {1, 3, 1, 1}, {3, 3}, dw_attrs({1, 1}, {1, 1, 1, 1})},
      {"3x5 pads 1,2,1,2 C=32", {1, 32, 11, 13}, {3, 5}, dw_attrs({1, 1}, {1, 2, 1, 2})},
      {"3x3 dilation 2 p2 C=40", {1, 40, 12, 12}, {3, 3}, dw_attrs({1, 1}, {2, 2, 2, 2}, {2, 2})},
      {"3x3 stride 3 p1 C=24", {1, 24, 14, 14}, {3, 3}, dw_attrs({3, 3}, {1, 1, 1, 1})},
      {"1x1 C=16", {1, 16, 5, 5}, {1, 1}, dw_attrs({1, 1}, {0, 0, 0, 0})},
      {"9x9 p4 C=16", {1, 16, 12, 12}, {9, 9}, dw_attrs({1, 1}, {4, 4, 4, 4})},
  };
}

TEST(CudaDepthwise, ShapesMatchTheCpu) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 100;
  for (const DwCase& c : shape_cases()) EXPECT_LE(depthwise_error(c, seed += 10, Precision::fp32), 1e-5) << c.name;
}

TEST(CudaDepthwise, ShapesInHalfPrecisionMatchTheCpuToOnePercent) {
  TANDEM_REQUIRE_GPU();
  for (Precision p : {Precision::fp16, Precision::bf16}) {
    uint32_t seed = 100;
    for (const DwCase& c : shape_cases())
      EXPECT_LE(depthwise_error(c, seed += 10, p), tolerance(p)) << c.name << " " << precision_name(p);
  }
}

// FusedConv's every activation, with and without a residual, on a tiled
// case and two direct ones (2-element and 16-byte vectors).
void expect_fused_depthwise_matches(Precision p) {
  const std::vector<DwCase> shapes = {
      {"tiled 3x3 s1 p1 [2,64,13,11]", {2, 64, 13, 11}, {3, 3}, dw_attrs({1, 1}, {1, 1, 1, 1})},
      {"direct 5x5 s2 SAME_UPPER C=18", {1, 18, 9, 9}, {5, 5}, dw_same_upper({2, 2})},
      {"direct 3x3 dilation 2 C=40", {4, 40, 10, 10}, {3, 3}, dw_attrs({1, 1}, {2, 2, 2, 2}, {2, 2})},
  };
  uint32_t seed = 500;
  for (const DwCase& c : shapes)
    for (const FusedEpilogue& e : fused_conv_epilogues())
      EXPECT_LE(depthwise_error(c, seed += 10, p, e), tolerance(p))
          << c.name << " '" << e.activation << "' residual " << e.residual << " " << precision_name(p);
}

TEST(CudaDepthwise, FusedActivationsAndResidualMatchTheCpu) {
  TANDEM_REQUIRE_GPU();
  expect_fused_depthwise_matches(Precision::fp32);
}

TEST(CudaDepthwise, FusedInHalfPrecisionMatchesTheCpuToOnePercent) {
  TANDEM_REQUIRE_GPU();
  expect_fused_depthwise_matches(Precision::fp16);
  expect_fused_depthwise_matches(Precision::bf16);
}

// Depthwise Conv -> BatchNormalization -> activation as an exporter writes
// it: BN folds into the conv and the activation (and the residual Add) fuse
// into a FusedConv on both backends. x [2, 24, 16, 16]:
//   y = Relu(BN(dwconv3x3(x)) + x)          (a residual depthwise FusedConv)
//   z = HardSwish(BN(dwconv5x5 s2 SAME(y)))  -> [2, 24, 8, 8]
//   out = Relu(BN(dwconv3x3(z)))
Graph depthwise_bn_graph(Precision p) {
  const int64_t c = 24;
  GraphBuilder b;
  uint32_t seed = 40;
  auto dw_bn = [&](ValueId x, int64_t k, Attributes a) {
    a.set("group", c);
    const uint32_t s = seed += 5;
    const std::string at = std::to_string(s);
    ValueId w = b.constant("w" + at, random_for(p, {c, 1, k, k}, s, -0.5f, 0.5f));
    std::vector<ValueId> bn{b.node("Conv", {x, w}, a)};
    bn.push_back(b.constant("scale" + at, random_for(p, {c}, s + 1, 0.5f, 1.5f)));
    bn.push_back(b.constant("shift" + at, random_for(p, {c}, s + 2)));
    bn.push_back(b.constant("mean" + at, random_for(p, {c}, s + 3)));
    bn.push_back(b.constant("var" + at, random_for(p, {c}, s + 4, 0.5f, 2.f)));
    Attributes eps;
    eps.set("epsilon", 1e-3f);
    return b.node("BatchNormalization", bn, eps);
  };
  ValueId x = b.input("x", {2, c, 16, 16});
  ValueId y = b.node("Relu", {b.node("Add", {dw_bn(x, 3, dw_attrs({1, 1}, {1, 1, 1, 1})), x})});
  ValueId z = b.node("HardSwish", {dw_bn(y, 5, dw_same_upper({2, 2}))});
  b.output(b.node("Relu", {dw_bn(z, 3, dw_attrs({1, 1}, {1, 1, 1, 1}))}));
  return b.g;
}

TEST(CudaDepthwise, ConvBatchNormActivationGraphMatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  for (Precision p : {Precision::fp32, Precision::fp16, Precision::bf16}) {
    std::vector<Tensor> cpu;
    std::vector<Tensor> gpu = run_strict(depthwise_bn_graph(p), {random_for(p, {2, 24, 16, 16}, 7)}, p, cpu);
    EXPECT_LE(relative_error(gpu.at(0), cpu.at(0)), tolerance(p)) << precision_name(p);
  }
}

// Which convs the CUDA backend sends to the depthwise kernel (no GPU
// needed): group == C == M with constant float weights; grouped, dense and
// run-time-weight convs stay on cuDNN.
struct DescFor {
  Attributes attrs;
  Tensor w;
  OpDesc op;
  DescFor(const Shape& x, const Shape& ws, int64_t group, DType t = DType::f32, bool constant = true) {
    attrs = dw_attrs({1, 1}, {1, 1, 1, 1});
    attrs.set("group", group);
    w = t == DType::f32 ? random_f32(ws, 1) : to_low(random_f32(ws, 1), t);
    op.op_type = "Conv";
    op.attrs = &attrs;
    op.inputs = {TensorDesc{t, x}, w.desc()};
    op.inputs[0].layout = Layout::nhwc;
    op.present = {true, true};
    op.constants = {nullptr, constant ? &w : nullptr};
    op.outputs = {TensorDesc{t, ops::conv_geometry(attrs, x, ws).output_shape()}};
  }
};

TEST(CudaDepthwise, DispatchTakesDepthwiseConvsOnly) {
  EXPECT_TRUE(cuda::is_depthwise_conv(DescFor({1, 32, 8, 8}, {32, 1, 3, 3}, 32).op));
  EXPECT_TRUE(cuda::is_depthwise_conv(DescFor({1, 32, 8, 8}, {32, 1, 5, 5}, 32, DType::f16).op));
  EXPECT_TRUE(cuda::is_depthwise_conv(DescFor({1, 3, 8, 8}, {3, 1, 3, 3}, 3, DType::bf16).op));
  EXPECT_FALSE(cuda::is_depthwise_conv(DescFor({1, 32, 8, 8}, {64, 1, 3, 3}, 32).op)) << "channel multiplier 2";
  EXPECT_FALSE(cuda::is_depthwise_conv(DescFor({1, 32, 8, 8}, {32, 8, 3, 3}, 4).op)) << "grouped";
  EXPECT_FALSE(cuda::is_depthwise_conv(DescFor({1, 32, 8, 8}, {32, 32, 3, 3}, 1).op)) << "dense";
  EXPECT_FALSE(cuda::is_depthwise_conv(DescFor({1, 32, 8, 8}, {32, 1, 3, 3}, 32, DType::f32, false).op))
      << "weights fed at run time";
}

}  // namespace
}  // namespace tandem::testing
