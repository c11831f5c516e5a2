// QDQ models run on integers: DequantizeLinear -> Conv [-> Add] [-> Relu]
// [-> QuantizeLinear] becomes one tandem.QConv on the CPU. The reference is
// the same model run unoptimized, as ONNX defines it: every
// Quantize/DequantizeLinear a float op and the convolution oneDNN's float
// one. The integer result may differ from it where a value sits on a
// rounding boundary, so each output is allowed one quantization step and
// nearly all must agree exactly.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/cpu_backend.h"
#include "graph/passes.h"
#include "graph/session.h"
#include "tests/cpu_features.h"
#include "tests/graph_builder.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

Tensor scalar(float v) { return Tensor::from_vector<float>({v}, {}); }

template <class T>
Tensor zero_point(T v) {
  return Tensor::from_vector<T>({v}, {});
}

// x -> QuantizeLinear -> DequantizeLinear with scale s and zero point z.
template <class T>
ValueId fake_quantized(GraphBuilder& b, ValueId x, float s, T z, const std::string& name) {
  ValueId sv = b.constant(name + "_s", scalar(s)), zv = b.constant(name + "_z", zero_point<T>(z));
  return b.node("DequantizeLinear", {b.node("QuantizeLinear", {x, sv, zv}), sv, zv});
}

// Integer weights [M, C/group, k, k] with one scale per output channel (or
// one for all), dequantized.
ValueId dequantized_weights(GraphBuilder& b, Shape shape, bool per_channel, uint64_t seed) {
  const int64_t m = shape[0];
  Tensor w = Tensor::empty(DType::i8, shape);
  Tensor r = random_tensor(shape, seed);
  for (int64_t i = 0; i < w.numel(); ++i)
    w.data<int8_t>()[i] = int8_t(std::lround(r.data<float>()[i] * 127.f));
  std::vector<float> scales(per_channel ? size_t(m) : 1);
  for (size_t i = 0; i < scales.size(); ++i) scales[i] = 0.004f + 0.001f * float(i % 5);
  Attributes a;
  a.set("axis", int64_t(0));
  const int64_t n = int64_t(scales.size());
  ValueId s =
      b.constant("w_scale", Tensor::from_vector<float>(scales, per_channel ? Shape{n} : Shape{}));
  return b.node("DequantizeLinear", {b.constant("w_q", std::move(w)), s}, a);
}

Attributes conv_attrs(int64_t group = 1) {
  Attributes a;
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.set("group", group);
  return a;
}

struct Built {
  Graph g;
  float step;  // the output's quantization step (0: a float output)
};

// x -> q/dq -> Conv(dq(w), b) [+ q/dq(r)] -> Relu -> [q/dq] -> output.
Built conv_model(bool per_channel, bool residual, bool requantize, int64_t group = 1,
                 bool real_residual = false) {
  GraphBuilder b;
  const int64_t c = 8, m = group > 1 ? c : 16;
  ValueId x = b.input("x", {2, c, 9, 9});
  ValueId xq = fake_quantized<uint8_t>(b, x, 0.02f, 100, "x");
  ValueId w = dequantized_weights(b, {m, c / group, 3, 3}, per_channel, 7);
  ValueId bias = b.constant("b", random_tensor({m}, 11));
  ValueId y = b.node("Conv", {xq, w, bias}, conv_attrs(group));
  if (residual) {
    ValueId r = b.input("r", {2, m, 9, 9});
    y = b.node("Add", {y, real_residual ? r : fake_quantized<uint8_t>(b, r, 0.03f, 90, "r")});
  }
  y = b.node("Relu", {y});
  const float step = requantize ? 0.05f : 0.f;
  if (requantize) y = fake_quantized<uint8_t>(b, y, step, 3, "y");
  b.output(y);
  return {std::move(b.g), step};
}

std::vector<Tensor> run(const Graph& g, bool optimize, const std::vector<Tensor>& in,
                        int* quantized = nullptr) {
  SessionOptions o;
  o.optimize = optimize;
  Session s(g, o);
  std::vector<Tensor> out = s.run(in);
  if (quantized) *quantized = s.last_compile().convs_quantized;
  return out;
}

// Every element within one step of the reference, and at least 98% equal
// (to float rounding where the output is float).
void expect_integer_close(const Tensor& got, const Tensor& want, float step) {
  ASSERT_EQ(got.shape(), want.shape());
  int64_t equal = 0;
  float worst = 0;
  const float tol = step > 0 ? step * 1.001f : 0.f;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const float d = std::fabs(got.data<float>()[i] - want.data<float>()[i]);
    worst = std::max(worst, d);
    equal += d <= (step > 0 ? 1e-6f : 1e-4f * (1.f + std::fabs(want.data<float>()[i])));
    if (step > 0) EXPECT_LE(d, tol) << "at " << i;
  }
  EXPECT_GE(double(equal), 0.98 * double(got.numel())) << "worst difference " << worst;
}

// `g` run optimized makes `convs` convolutions integer and stays close to
// `g` run as written.
void expect_integer_run(const Graph& g, const std::vector<Tensor>& in, int convs, float step) {
  int quantized = -1;
  std::vector<Tensor> got = run(g, true, in, &quantized), want = run(g, false, in);
  EXPECT_EQ(quantized, convs);
  expect_integer_close(got[0], want[0], step);
}

void check(const Built& m, bool residual, int convs = 1) {
  std::vector<Tensor> in{random_tensor({2, 8, 9, 9}, 3)};
  if (residual) in.push_back(random_tensor(m.g.value(m.g.inputs[1]).shape, 5));
  expect_integer_run(m.g, in, convs, m.step);
}

// A float residual joins an integer convolution only where the CPU's
// integer convolution adds it right (graph/fuse_qdq.cpp); elsewhere the
// convolution stays float, and the results must hold either way.
int with_real_residual() { return cpu_integer_conv_form().real_residual ? 1 : 0; }

Attributes max_pool_2x2() {
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{2, 2});
  a.set("strides", std::vector<int64_t>{2, 2});
  return a;
}

}  // namespace

TEST(FuseQdq, ConvPerChannelRequantized) { check(conv_model(true, false, true), false); }

TEST(FuseQdq, ConvPerTensorFloatOutput) { check(conv_model(false, false, false), false); }

TEST(FuseQdq, ConvWithQuantizedResidual) { check(conv_model(true, true, true), true); }

TEST(FuseQdq, ConvWithResidualFloatOutput) {
  check(conv_model(true, true, false), true, with_real_residual());
}

// A residual that is no dequantized tensor (a downsampling branch's float
// output) joins in f32 before the output is quantized.
TEST(FuseQdq, ConvWithFloatResidualRequantized) {
  check(conv_model(true, true, true, 1, true), true, with_real_residual());
}

TEST(FuseQdq, DepthwiseConv) { check(conv_model(true, false, true, 8), false); }

// Conv -> Relu -> MaxPool -> q/dq -> Conv: the quantize moves above the
// pooling, both convolutions run on integers and the pooling on u8.
TEST(FuseQdq, QuantizeMovesAboveMaxPool) {
  GraphBuilder b;
  ValueId x = b.input("x", {1, 8, 12, 12});
  ValueId y = b.node(
      "Conv",
      {fake_quantized<uint8_t>(b, x, 0.02f, 128, "x"),
       dequantized_weights(b, {8, 8, 3, 3}, true, 1), b.constant("b1", random_tensor({8}, 2))},
      conv_attrs());
  y = b.node("Relu", {y});
  y = b.node("MaxPool", {y}, max_pool_2x2());
  y = b.node(
      "Conv",
      {fake_quantized<uint8_t>(b, y, 0.04f, 0, "p"), dequantized_weights(b, {4, 8, 3, 3}, true, 3),
       b.constant("b2", random_tensor({4}, 4))},
      conv_attrs());
  b.output(y);
  expect_integer_run(b.g, {random_tensor({1, 8, 12, 12}, 9)}, 2, 0.f);
}

// Weights quantized to u8 (with a zero point) are not what the integer
// convolution takes: the model runs in float, as before.
TEST(FuseQdq, UnsignedWeightsStayFloat) {
  GraphBuilder b;
  ValueId x = b.input("x", {1, 4, 6, 6});
  Tensor w = Tensor::empty(DType::u8, {4, 4, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<uint8_t>()[i] = uint8_t((i * 37) % 256);
  ValueId wd =
      b.node("DequantizeLinear", {b.constant("w", std::move(w)), b.constant("ws", scalar(0.01f)),
                                  b.constant("wz", zero_point<uint8_t>(128))});
  b.output(b.node("Conv", {fake_quantized<uint8_t>(b, x, 0.02f, 128, "x"), wd}, conv_attrs()));
  expect_integer_run(b.g, {random_tensor({1, 4, 6, 6}, 1)}, 0, 0.f);
}

// The form tandem's (and PyTorch's) QAT export writes: Conv -> BatchNorm ->
// Relu -> q/dq -> MaxPool -> Conv, the batch norm not folded by the
// exporter. The batch norm folds into the integer weights' scales (a
// negative factor negates the channel's integers), the dequantize moves
// below the pooling, and both convolutions run on integers.
TEST(FuseQdq, QatExportWithBatchNormAndPoolingRunsOnIntegers) {
  GraphBuilder b;
  ValueId x = b.input("x", {2, 4, 12, 12});
  ValueId y = b.node("Conv",
                     {fake_quantized<uint8_t>(b, x, 0.02f, 128, "x"),
                      dequantized_weights(b, {8, 4, 3, 3}, true, 1)},
                     conv_attrs());
  Tensor gamma = random_tensor({8}, 30, 0.5f, 1.5f);
  gamma.data<float>()[3] = -0.7f;  // a negative factor
  y = b.node("BatchNormalization",
             {y, b.constant("gamma", gamma), b.constant("beta", random_tensor({8}, 31)),
              b.constant("mean", random_tensor({8}, 32)),
              b.constant("var", random_tensor({8}, 33, 0.5f, 2.f))});
  y = fake_quantized<uint8_t>(b, b.node("Relu", {y}), 0.03f, 0, "r");
  y = b.node("MaxPool", {y}, max_pool_2x2());
  b.output(b.node("Conv", {y, dequantized_weights(b, {6, 8, 3, 3}, true, 2)}, conv_attrs()));
  expect_integer_run(b.g, {random_tensor({2, 4, 12, 12}, 34)}, 2, 0.f);
}

namespace {

// x -> q/dq (s8, zero point 0) -> Conv(dq(w), b) [+ q/dq(r) s8] -> Relu
// -> q/dq (s8): the form the GPU's integer convolution takes when c and m
// are multiples of 16 and group is 1.
Graph s8_conv_model(int64_t c, int64_t m, int64_t group, bool residual) {
  GraphBuilder b;
  ValueId x = b.input("x", {2, c, 9, 9});
  ValueId xq = fake_quantized<int8_t>(b, x, 0.02f, 0, "x");
  ValueId w = dequantized_weights(b, {m, c / group, 3, 3}, true, 7);
  ValueId y = b.node("Conv", {xq, w, b.constant("b", random_tensor({m}, 11))}, conv_attrs(group));
  if (residual) y = b.node("Add", {y, fake_quantized<int8_t>(b, b.input("r", {2, m, 9, 9}), 0.03f, 0, "r")});
  y = fake_quantized<int8_t>(b, b.node("Relu", {y}), 0.05f, 0, "y");
  b.output(y);
  return std::move(b.g);
}

// The passes a session runs before fuse_qdq, then fuse_qdq in the GPU's
// form; the convolutions made integer, and those left in float.
std::pair<int, int> gpu_form_fusions(Graph g) {
  infer_and_fold(g, cpu::cpu_backend(), true);
  g.compact();
  fuse_conv_epilogues(g);
  int left = -1;
  const int fused = fuse_qdq(g, gpu_integer_conv_form(), &left);
  return {fused, left};
}

}  // namespace

// Symmetric s8 activations run on integers on the CPU too, residual and
// all (the models `tandem quantize --activations s8` writes for GPUs).
TEST(FuseQdq, SymmetricS8ConvWithResidual) {
  const Graph g = s8_conv_model(16, 32, 1, true);
  expect_integer_run(g, {random_tensor({2, 16, 9, 9}, 3), random_tensor({2, 32, 9, 9}, 5)}, 1,
                     0.05f);
}

TEST(FuseQdqGpuForm, SymmetricS8ConvolutionsFuse) {
  EXPECT_EQ(gpu_form_fusions(s8_conv_model(16, 32, 1, true)), std::make_pair(1, 0));
  EXPECT_EQ(gpu_form_fusions(s8_conv_model(32, 16, 1, false)), std::make_pair(1, 0));
}

// What cuDNN's integer convolutions do not take stays a float convolution,
// counted so the session can say so: u8 activations with a zero point,
// channels not in multiples of 16, grouped convolutions.
TEST(FuseQdqGpuForm, OtherFormsStayFloatAndAreCounted) {
  EXPECT_EQ(gpu_form_fusions(conv_model(true, false, true).g), std::make_pair(0, 1));
  EXPECT_EQ(gpu_form_fusions(s8_conv_model(8, 16, 1, false)), std::make_pair(0, 1));
  EXPECT_EQ(gpu_form_fusions(s8_conv_model(16, 16, 16, false)), std::make_pair(0, 1));
}

// In a bf16 session the integer ops keep their real parts in f32 (scales,
// bias, the residual and real outputs through casts), so a QDQ model still
// runs its convolutions on integers and stays near the f32 session's run.
TEST(FuseQdq, LowPrecisionSessionKeepsIntegerOps) {
  TANDEM_SKIP_WITHOUT_CPU_BF16();
  const Built m = conv_model(true, true, false, 1, true);
  const std::vector<Tensor> in{random_tensor({2, 8, 9, 9}, 3), random_tensor({2, 16, 9, 9}, 5)};
  SessionOptions o;
  o.precision = Precision::bf16;
  Session low(m.g, o);
  const Tensor got = low.run(in)[0];
  EXPECT_EQ(low.last_compile().convs_quantized, 1);
  const Tensor want = run(m.g, true, in)[0];
  ASSERT_EQ(got.shape(), want.shape());
  // The input rounded to bf16 before it is quantized moves a few integers
  // by one step: a percent or so, not more.
  double num = 0, den = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double d = double(got.data<float>()[i]) - double(want.data<float>()[i]);
    num += d * d;
    den += double(want.data<float>()[i]) * double(want.data<float>()[i]);
  }
  EXPECT_LT(std::sqrt(num / den), 0.02);
}

// A real value one integer op hands another (a convolution's output the
// next one adds as its residual, as in a ResNet stage's first block) stays
// f32 in a 16-bit session: no cast down and back up between them.
TEST(FuseQdq, LowPrecisionPassesRealValuesBetweenIntegerOpsAsTheyAre) {
  TANDEM_SKIP_WITHOUT_CPU_BF16();
  GraphBuilder b;
  ValueId x = fake_quantized<int8_t>(b, b.input("x", {1, 16, 8, 8}), 0.02f, 0, "x");
  ValueId a = b.node("Conv",
                     {x, dequantized_weights(b, {16, 16, 3, 3}, true, 1),
                      b.constant("ba", random_tensor({16}, 2))},
                     conv_attrs());
  ValueId y = b.node("Conv",
                     {x, dequantized_weights(b, {16, 16, 3, 3}, true, 3),
                      b.constant("bb", random_tensor({16}, 4))},
                     conv_attrs());
  y = fake_quantized<int8_t>(b, b.node("Relu", {b.node("Add", {y, a})}), 0.05f, 0, "y");
  b.output(y);
  Graph g = std::move(b.g);
  infer_and_fold(g, cpu::cpu_backend(), true);
  g.compact();
  fuse_conv_epilogues(g);
  ASSERT_EQ(fuse_qdq(g), 2);
  infer_and_fold(g, cpu::cpu_backend());
  lower_precision(g, DType::bf16, false);
  infer_and_fold(g, cpu::cpu_backend());
  int casts = 0, real_residuals = 0;
  for (const Node& n : g.nodes) {
    if (n.dead) continue;
    casts += n.op_type == "Cast";
    if (n.op_type != "tandem.QConv" || n.inputs.size() < 4) continue;
    ++real_residuals;
    const NodeId p = g.value(n.inputs[3]).producer;
    ASSERT_GE(p, 0);
    EXPECT_EQ(g.nodes[size_t(p)].op_type, "tandem.QConv");
    EXPECT_EQ(g.value(n.inputs[3]).dtype, DType::f32);
  }
  EXPECT_EQ(real_residuals, 1);
  // The input's cast down and back up for its quantization, and the
  // output's: nothing between the two convolutions.
  EXPECT_LE(casts, 3);
}
