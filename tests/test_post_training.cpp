// Post-training quantization: the calibration rules on distributions whose
// right answer is known, and a float network quantized, written as QDQ
// ONNX, read back and run on integers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "formats/load_model.h"
#include "formats/onnx/onnx_exporter.h"
#include "graph/passes.h"
#include "graph/post_training.h"
#include "graph/session.h"
#include "tests/graph_builder.h"
#include "tests/op_harness.h"
#include "tests/temp_dir.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

RangeCollector collected(const Tensor& t) {
  RangeCollector c;
  c.add_span(t);
  c.add_histogram(t);
  return c;
}

Tensor from(const std::vector<float>& v) {
  return Tensor::from_vector<float>(v, {int64_t(v.size())});
}

// |N(0, 1)| samples.
std::vector<float> half_normal(int n) {
  std::mt19937 rng(5);
  std::normal_distribution<float> d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = std::fabs(d(rng));
  return v;
}

}  // namespace

TEST(Calibration, MinmaxIsTheSpanSeen) {
  RangeCollector c = collected(from({-0.5f, 3.f, 0.f, 1.25f}));
  ActivationRange r = c.range(CalibrationMethod::minmax);
  EXPECT_EQ(r.lo, -0.5f);
  EXPECT_EQ(r.hi, 3.f);
}

// The percentile of the magnitudes, to one histogram bin, against a sort.
TEST(Calibration, PercentileMatchesSortedValues) {
  std::vector<float> v = half_normal(200000);
  RangeCollector c = collected(from(v));
  std::sort(v.begin(), v.end());
  const float want = v[size_t(0.999 * double(v.size()))];
  const float bin = v.back() / RangeCollector::kBins;
  EXPECT_NEAR(c.range(CalibrationMethod::percentile, 99.9).hi, want, 2 * bin);
}

// Entropy keeps a uniform distribution whole (clipping only loses) and
// clips the sparse tail of an exponential one, whose far values would
// otherwise coarsen every step, but not into its body.
TEST(Calibration, EntropyClipsSparseTailsNotTheBody) {
  std::vector<float> u(100000);
  for (size_t i = 0; i < u.size(); ++i) u[i] = float(i + 1) / float(u.size());
  EXPECT_GT(collected(from(u)).range(CalibrationMethod::entropy).hi, 0.9f);
  std::mt19937 rng(7);
  std::exponential_distribution<float> d;
  std::vector<float> e(200000);
  for (float& x : e) x = d(rng);
  const float t = collected(from(e)).range(CalibrationMethod::entropy).hi;
  std::sort(e.begin(), e.end());
  EXPECT_LT(t, 0.8f * e.back());
  EXPECT_GT(t, e[size_t(0.99 * double(e.size()))]);  // ln(100) = 4.6: the body stays
}

// What quantizing `v` to 8 bits over the range really costs: u8 over
// u8_params(range), each value rounded to its level and clipped to the
// range, the squared errors summed in float64.
double quantized_squared_error(const std::vector<float>& v, ActivationRange r) {
  const QuantizationParams q = u8_params(r);
  double e = 0;
  for (float x : v) {
    const double level = std::clamp(std::nearbyint(double(x) / q.scale) + q.zero_point, 0.0, 255.0);
    const double back = (level - q.zero_point) * double(q.scale);
    e += (back - double(x)) * (back - double(x));
  }
  return e;
}

// mse's range against the error of quantizing the values themselves, over
// a grid of clipping thresholds: within a few percent of the grid's best on
// one-sided, two-sided and heavy-tailed (Student's t, two degrees of
// freedom: clipping its far values costs more than their coarse steps)
// distributions, and clearly better than the whole span on the normal one.
TEST(Calibration, MseRangeIsNearTheSimulatedBest) {
  std::mt19937 rng(11);
  std::exponential_distribution<float> ex;
  std::normal_distribution<float> nd;
  std::vector<float> one_sided(200000), two_sided(200000);
  for (float& x : one_sided) x = ex(rng);
  for (float& x : two_sided) x = nd(rng);
  std::student_t_distribution<float> td(2.f);
  std::vector<float> heavy(200000);
  for (float& x : heavy) x = td(rng);
  for (const std::vector<float>* v : {&one_sided, &two_sided, &heavy}) {
    const RangeCollector c = collected(from(*v));
    const ActivationRange span = c.range(CalibrationMethod::minmax),
                          got = c.range(CalibrationMethod::mse);
    const float peak = std::max(std::fabs(span.lo), span.hi);
    double best = std::numeric_limits<double>::infinity();
    for (int i = 1; i <= 400; ++i) {
      const float t = peak * float(i) / 400.f;
      best = std::min(best,
                      quantized_squared_error(*v, {std::max(span.lo, -t), std::min(span.hi, t)}));
    }
    EXPECT_LT(quantized_squared_error(*v, got), 1.03 * best) << "threshold " << got.hi;
  }
  const RangeCollector c = collected(from(two_sided));
  EXPECT_LT(quantized_squared_error(two_sided, c.range(CalibrationMethod::mse)),
            0.9 * quantized_squared_error(two_sided, c.range(CalibrationMethod::minmax)));
}

TEST(Calibration, U8ParamsPutZeroOnAnInteger) {
  QuantizationParams relu = u8_params({0.f, 2.55f});
  EXPECT_FLOAT_EQ(relu.scale, 0.01f);
  EXPECT_EQ(relu.zero_point, 0);
  QuantizationParams both = u8_params({-1.f, 1.f});
  EXPECT_NEAR(both.zero_point, 127.5, 0.5);
  EXPECT_NEAR(-1.f + float(both.zero_point) * both.scale, 0.f, both.scale / 2);
  QuantizationParams positive = u8_params({0.5f, 2.f});  // widened to hold 0
  EXPECT_EQ(positive.zero_point, 0);
  EXPECT_FLOAT_EQ(positive.scale, 2.f / 255.f);
}

namespace {

Attributes padded() {
  Attributes a;
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  return a;
}

// x -> Conv -> Relu -> Conv -> Add(x') -> Relu, x' = Conv 1x1 of x.
Graph float_net() {
  GraphBuilder b;
  ValueId x = b.input("x", {-1, 4, 10, 10});
  ValueId y = b.node("Conv",
                     {x, b.constant("w1", random_tensor({8, 4, 3, 3}, 1, -0.3f, 0.3f)),
                      b.constant("b1", random_tensor({8}, 2))},
                     padded());
  y = b.node("Relu", {y});
  y = b.node("Conv",
             {y, b.constant("w2", random_tensor({8, 8, 3, 3}, 3, -0.2f, 0.2f)),
              b.constant("b2", random_tensor({8}, 4))},
             padded());
  ValueId s = b.node("Conv", {x, b.constant("w3", random_tensor({8, 4, 1, 1}, 5)),
                              b.constant("b3", random_tensor({8}, 6))});
  b.output(b.node("Relu", {b.node("Add", {y, s})}));
  b.g.value(b.g.outputs[0]).shape = {-1, 8, 10, 10};
  return b.g;
}

// All three, but where the CPU's integer convolution cannot add a float
// residual (graph/fuse_qdq.cpp) the one with the other branch's sum.
int convs_on_integers() { return cpu_integer_conv_form().real_residual ? 3 : 2; }

double relative_error(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = double(a.data<float>()[i]) - double(b.data<float>()[i]);
    num += d * d;
    den += double(b.data<float>()[i]) * double(b.data<float>()[i]);
  }
  return std::sqrt(num / den);
}

}  // namespace

// The QDQ model written and read back runs every convolution on integers
// and stays within a few percent of the float network on unseen inputs.
TEST(PostTraining, QdqModelRoundTripsAndRunsOnIntegers) {
  std::vector<Tensor> batches{random_tensor({4, 4, 10, 10}, 10), random_tensor({4, 4, 10, 10}, 11)};
  PtqOptions o;
  o.float_layers = 0;
  PtqReport r;
  Graph q = quantize_post_training(float_net(), batches, o, &r);
  EXPECT_EQ(r.quantized, 3);
  EXPECT_EQ(r.method_errors.size(), 4u);
  TempDir dir("ptq");
  const std::string path = dir.file("net.int8.onnx");
  save_onnx(q, path);
  Session s(load_model(path));
  const Tensor x = random_tensor({2, 4, 10, 10}, 12);
  const Tensor got = s.run({x})[0];
  EXPECT_EQ(s.last_compile().convs_quantized, convs_on_integers());
  const Tensor want = Session(float_net()).run({x})[0];
  EXPECT_LT(relative_error(got, want), 0.05);
}

// Asked to keep one layer in float, it keeps the one that alone moves the
// outputs most.
TEST(PostTraining, KeepsTheMostSensitiveLayerInFloat) {
  std::vector<Tensor> batches{random_tensor({2, 4, 10, 10}, 20)};
  PtqOptions o;
  o.float_layers = 1;
  o.method = CalibrationMethod::minmax;
  PtqReport r;
  quantize_post_training(float_net(), batches, o, &r);
  ASSERT_EQ(r.layers.size(), 3u);
  EXPECT_EQ(r.quantized, 2);
  const auto worst =
      std::max_element(r.layers.begin(), r.layers.end(),
                       [](const PtqLayer& a, const PtqLayer& b) { return a.error < b.error; });
  EXPECT_TRUE(worst->kept_float);
  for (const PtqLayer& l : r.layers) EXPECT_GT(l.error, 0.0) << l.node;
}

TEST(PostTraining, NoSampleIsAnError) {
  EXPECT_THROW(quantize_post_training(float_net(), {}, PtqOptions{}), Error);
}

// A weight that is NaN has no integer: one error naming the convolution,
// not an arbitrary int8 in its place.
TEST(PostTraining, NonFiniteWeightsAreAnErrorNamingTheNode) {
  Graph g = float_net();
  for (Value& v : g.values)
    if (v.name == "w2") v.constant->data<float>()[5] = std::nanf("");
  try {
    quantize_post_training(g, {random_tensor({2, 4, 10, 10}, 20)}, PtqOptions{});
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("NaN"), std::string::npos) << what;
    EXPECT_NE(what.find("Conv"), std::string::npos) << what;
  }
}

// Symmetric s8 activations (for GPUs): every activation quantized to i8
// with zero point 0, and the model still runs every convolution on
// integers on the CPU, close to the float network.
TEST(PostTraining, SymmetricS8Activations) {
  std::vector<Tensor> batches{random_tensor({4, 4, 10, 10}, 10)};
  PtqOptions o;
  o.float_layers = 0;
  o.method = CalibrationMethod::minmax;
  o.activations = DType::i8;
  Graph q = quantize_post_training(float_net(), batches, o);
  int quantizers = 0;
  for (const Node& n : q.nodes) {
    if (n.dead || n.op_type != "QuantizeLinear") continue;
    ++quantizers;
    EXPECT_EQ(q.value(n.outputs[0]).dtype, DType::i8) << n.name;
    const Tensor& z = *q.value(n.inputs[2]).constant;
    EXPECT_EQ(z.scalar_at(0), 0.0) << n.name;
  }
  EXPECT_GT(quantizers, 0);
  Session s(q);
  const Tensor x = random_tensor({2, 4, 10, 10}, 12);
  const Tensor got = s.run({x})[0];
  EXPECT_EQ(s.last_compile().convs_quantized, convs_on_integers());
  EXPECT_LT(relative_error(got, Session(float_net()).run({x})[0]), 0.05);
}

TEST(Calibration, S8ParamsAreSymmetric) {
  const QuantizationParams q = s8_params({-0.5f, 2.54f});
  EXPECT_EQ(q.dtype, DType::i8);
  EXPECT_EQ(q.zero_point, 0);
  EXPECT_FLOAT_EQ(q.scale, 2.54f / 127.f);
}
