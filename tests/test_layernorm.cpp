// LayerNormalization on the CPU backend vs the ONNX opset-17 definition in
// float64: each row of X over its extents from `axis` on normalized by its
// own mean and (biased) variance, then Y = normalized * Scale + B, with
// Mean and InvStdDev = 1 / sqrt(var + epsilon) as optional outputs.
// Tolerance 1e-5 x max|ref| (Y) and 1e-5 relative (statistics).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/half.h"
#include "tests/cpu_features.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

struct Reference {
  Tensor y;
  std::vector<double> mean, inv_std;
};

// Scale/B value for element j of a row whose shape is `row`: numpy
// broadcasting of `t` (right-aligned) against the row.
double row_value(const Tensor& t, const Shape& row, int64_t j) {
  int64_t at = 0, stride = 1;
  for (size_t d = row.size(); d-- > 0;) {
    const int64_t idx = j % row[d];
    j /= row[d];
    const size_t lead = row.size() - size_t(t.rank());
    if (d < lead) continue;
    const int64_t ext = t.dim(int64_t(d - lead));
    if (ext != 1) at += idx * stride;
    stride *= ext;
  }
  return t.scalar_at(at);
}

Reference reference_layernorm(const Tensor& x, const Tensor& scale, const Tensor* bias, int64_t axis, double eps) {
  const Shape& s = x.shape();
  if (axis < 0) axis += int64_t(s.size());
  const Shape row(s.begin() + axis, s.end());
  const int64_t cols = shape_numel(row), rows = x.numel() / cols;
  Reference r{Tensor::empty(DType::f32, s), {}, {}};
  for (int64_t i = 0; i < rows; ++i) {
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < cols; ++j) sum += x.scalar_at(i * cols + j);
    const double mean = sum / double(cols);
    for (int64_t j = 0; j < cols; ++j) sq += std::pow(x.scalar_at(i * cols + j) - mean, 2);
    const double inv = 1 / std::sqrt(sq / double(cols) + eps);
    for (int64_t j = 0; j < cols; ++j) {
      double v = (x.scalar_at(i * cols + j) - mean) * inv * row_value(scale, row, j);
      if (bias) v += row_value(*bias, row, j);
      r.y.data<float>()[i * cols + j] = float(v);
    }
    r.mean.push_back(mean);
    r.inv_std.push_back(inv);
  }
  return r;
}

OpCall layernorm_call(const Tensor& x, const Tensor& scale, const Tensor* bias, int64_t axis, float eps,
                      bool constant, int outputs) {
  OpCall c;
  c.op_type = "LayerNormalization";
  c.attrs.set("axis", axis);
  c.attrs.set("epsilon", eps);
  c.inputs = {x, scale};
  c.constant = {false, constant};
  if (bias) {
    c.inputs.push_back(*bias);
    c.constant.push_back(constant);
  }
  c.num_outputs = outputs;
  return c;
}

void expect_stats(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.numel(), int64_t(want.size())) << what;
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(got.scalar_at(i), want[size_t(i)], 1e-5 * std::fabs(want[size_t(i)]) + 1e-6) << what << " row " << i;
}

struct Case {
  Shape x;
  int64_t axis;
  Shape scale, bias;  // bias empty: no B
};

}  // namespace

TEST(CpuLayerNorm, MatchesOnnxDefinition) {
  // Transformers' [tokens, channels] rows, ConvNeXt's channels-last images,
  // several trailing axes at once, and broadcast Scale/B.
  const std::vector<Case> cases = {
      {{2, 197, 64}, -1, {64}, {64}},     {{2, 7, 7, 96}, -1, {96}, {96}},  {{3, 5, 6}, 1, {5, 6}, {5, 6}},
      {{4, 10}, 0, {4, 10}, {}},          {{2, 3, 4, 5}, -3, {3, 1, 5}, {5}}, {{6, 33}, -1, {1}, {33}},
      {{1, 1000}, 1, {1000}, {1000}},
  };
  uint64_t seed = 300;
  for (const Case& k : cases)
    for (bool constant : {true, false}) {
      const size_t axis = size_t(k.axis < 0 ? k.axis + int64_t(k.x.size()) : k.axis);
      const int64_t cols = shape_numel(Shape(k.x.begin() + int64_t(axis), k.x.end()));
      // Computed Scale/B must be whole rows (CpuLayerNorm.RefusesWhatItCannotRun).
      if (!constant && (shape_numel(k.scale) != cols || (!k.bias.empty() && shape_numel(k.bias) != cols))) continue;
      // Offset rows: a two-pass variance stays exact where E[x^2] - mean^2 would not.
      Tensor x = random_tensor(k.x, seed += 3, 5.f, 9.f);
      Tensor scale = random_tensor(k.scale, seed + 1, 0.5f, 1.5f), bias = random_tensor(k.bias, seed + 2);
      const Tensor* b = k.bias.empty() ? nullptr : &bias;
      const float eps = 1e-5f;
      Reference ref = reference_layernorm(x, scale, b, k.axis, eps);
      std::vector<Tensor> got = run_op_cpu(layernorm_call(x, scale, b, k.axis, eps, constant, 3));
      std::string what = "x" + shape_str(k.x) + " axis " + std::to_string(k.axis) + " scale" + shape_str(k.scale) +
                         (constant ? " constant" : " computed");
      ASSERT_EQ(got.size(), 3u) << what;
      ASSERT_EQ(got[0].shape(), k.x) << what;
      EXPECT_LE(max_abs_diff(got[0], ref.y), 1e-5 * max_abs(ref.y)) << what;
      Shape stat = k.x;
      for (size_t d = axis; d < stat.size(); ++d) stat[d] = 1;
      EXPECT_EQ(got[1].shape(), stat) << what;
      EXPECT_EQ(got[2].shape(), stat) << what;
      expect_stats(got[1], ref.mean, what + " Mean");
      expect_stats(got[2], ref.inv_std, what + " InvStdDev");
    }
}

// Y alone (inference), and Y with Mean but no InvStdDev.
TEST(CpuLayerNorm, FewerOutputs) {
  Tensor x = random_tensor({4, 3, 48}, 7, -2.f, 2.f), scale = random_tensor({48}, 8), bias = random_tensor({48}, 9);
  Reference ref = reference_layernorm(x, scale, &bias, -1, 1e-3);
  for (int outputs : {1, 2}) {
    std::vector<Tensor> got = run_op_cpu(layernorm_call(x, scale, &bias, -1, 1e-3f, true, outputs));
    ASSERT_EQ(got.size(), size_t(outputs));
    EXPECT_LE(max_abs_diff(got[0], ref.y), 1e-5 * max_abs(ref.y)) << outputs << " outputs";
    if (outputs == 2) expect_stats(got[1], ref.mean, "Mean");
  }
}

TEST(CpuLayerNorm, RefusesWhatItCannotRun) {
  Tensor x = random_tensor({2, 8}, 1), scale = random_tensor({8}, 2);
  OpCall stash = layernorm_call(x, scale, nullptr, -1, 1e-5f, true, 1);
  stash.attrs.set("stash_type", int64_t(11));  // double statistics
  try {
    run_op_cpu(stash);
    FAIL() << "stash_type 11 ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported) << e.what();
  }
  // Scale spanning more than the normalized extents, and an axis out of range.
  EXPECT_THROW(run_op_cpu(layernorm_call(x, random_tensor({2, 8}, 3), nullptr, -1, 1e-5f, true, 1)), Error);
  EXPECT_THROW(run_op_cpu(layernorm_call(x, scale, nullptr, 2, 1e-5f, true, 1)), Error);
  // A computed Scale that would need broadcasting.
  Tensor x3 = random_tensor({2, 4, 8}, 4);
  EXPECT_THROW(run_op_cpu(layernorm_call(x3, random_tensor({1, 8}, 5), nullptr, 1, 1e-5f, false, 1)), Error);
}

// bf16 X (the reference reads the same rounded values in float64), f32
// statistics inside, Y rounded to bf16 once: 1e-2 x max|ref|.
TEST(CpuLayerNorm, Bf16MatchesReferenceOnRoundedInput) {
  TANDEM_SKIP_WITHOUT_CPU_BF16();
  Tensor f = random_tensor({8, 96}, 11, -3.f, 3.f), scale = random_tensor({96}, 12), bias = random_tensor({96}, 13);
  Tensor x = Tensor::empty(DType::bf16, f.shape()), xf = Tensor::empty(DType::f32, f.shape());
  for (int64_t i = 0; i < f.numel(); ++i) {
    static_cast<uint16_t*>(x.raw())[i] = float_to_bf16(float(f.scalar_at(i)));
    xf.data<float>()[i] = float(x.scalar_at(i));
  }
  Reference ref = reference_layernorm(xf, scale, &bias, -1, 1e-5);
  Tensor y = run_op_cpu(layernorm_call(x, scale, &bias, -1, 1e-5f, true, 1))[0];
  ASSERT_EQ(y.dtype(), DType::bf16);
  double err = 0;
  for (int64_t i = 0; i < y.numel(); ++i) err = std::max(err, std::fabs(y.scalar_at(i) - ref.y.scalar_at(i)));
  EXPECT_LE(err, 1e-2 * max_abs(ref.y));
}

// No rows, or rows of no values: an empty Y (and statistics), no error.
TEST(CpuLayerNorm, EmptyTensors) {
  for (const Shape& s : {Shape{0, 8}, Shape{3, 0}}) {
    Tensor x = Tensor::zeros(DType::f32, s), scale = Tensor::zeros(DType::f32, {s[1]});
    std::vector<Tensor> got = run_op_cpu(layernorm_call(x, scale, nullptr, -1, 1e-5f, true, 3));
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0].shape(), s);
    EXPECT_EQ(got[1].shape(), (Shape{s[0], 1}));
  }
}
