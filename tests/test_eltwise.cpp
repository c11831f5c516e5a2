// Activations on the CPU backend vs float64 formulas from the ONNX spec,
// in plain and blocked layouts. Tolerance: 1e-5 absolute (|x| <= 4).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {
void expect_unary(const std::string& op, double (*ref)(double), Layout layout, Attributes attrs = {}) {
  Tensor x = random_tensor({2, 19, 5, 3}, 42, -4.f, 4.f);
  OpCall c{op, std::move(attrs), {x}};
  c.input_layout = layout;
  Tensor y = run_op_cpu(c)[0];
  for (int64_t i = 0; i < x.numel(); ++i)
    ASSERT_NEAR(y.scalar_at(i), ref(x.scalar_at(i)), 1e-5) << op << " at " << i;
}
}  // namespace

TEST(CpuEltwise, MatchesOnnxFormulas) {
  for (Layout l : {Layout::plain, Layout::blocked16, Layout::nhwc}) {
    expect_unary("Relu", [](double v) { return v > 0 ? v : 0.0; }, l);
    expect_unary("Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }, l);
    expect_unary("HardSwish", [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); }, l);
    expect_unary("HardSigmoid", [](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); }, l);
    expect_unary("Tanh", [](double v) { return std::tanh(v); }, l);
  }
}

// Erf and Gelu (opset 20): approximate "none" is x/2 * (1 + erf(x/sqrt 2)),
// "tanh" x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
TEST(CpuEltwise, ErfAndGeluMatchOnnxFormulas) {
  Attributes none, tanh_form;
  none.set("approximate", std::string("none"));
  tanh_form.set("approximate", std::string("tanh"));
  for (Layout l : {Layout::plain, Layout::blocked16, Layout::nhwc}) {
    expect_unary("Erf", [](double v) { return std::erf(v); }, l);
    expect_unary("Gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, l);
    expect_unary("Gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, l, none);
    expect_unary("Gelu",
                 [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); },
                 l, tanh_form);
  }
  Attributes bad;
  bad.set("approximate", std::string("sigmoid"));
  EXPECT_THROW(run_op_cpu(OpCall{"Gelu", bad, {random_tensor({4}, 1)}}), Error);
}

TEST(CpuEltwise, ClipTakesBoundsFromInputs) {
  Tensor x = random_tensor({4, 8}, 7, -10.f, 10.f);
  OpCall c{"Clip", {}, {x, Tensor::from_vector<float>({0.f}, {}), Tensor::from_vector<float>({6.f}, {})}};
  c.constant = {false, true, true};
  Tensor y = run_op_cpu(c)[0];
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_FLOAT_EQ(float(y.scalar_at(i)), std::clamp(float(x.scalar_at(i)), 0.f, 6.f));
}

// oneDNN 2.6's reference eltwise with a post-op wrote nothing for 1-D
// tensors; HardSigmoid (linear + clip post-op) on [n] must still be right.
TEST(CpuEltwise, HardSigmoidOnOneDimensionalInput) {
  Attributes a;
  a.set("alpha", 0.5f);
  a.set("beta", 0.6f);
  for (int64_t n : {3, 17}) {
    Tensor x = random_tensor({n}, 3, -2.f, 2.f);
    Tensor y = run_op_cpu(OpCall{"HardSigmoid", a, {x}})[0];
    for (int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(y.scalar_at(i), std::clamp(0.5 * x.scalar_at(i) + 0.6, 0.0, 1.0), 1e-6);
  }
}

// Integer Neg (shape arithmetic; ONNX's expanded LayerNormalization negates
// an axis count): exact, INT64_MIN wraps to itself as in two's complement.
TEST(CpuEltwise, IntegerNeg) {
  Tensor x = Tensor::from_vector<int64_t>({3, -7, 0, INT64_MIN, INT64_MAX}, {5});
  Tensor y = run_op_cpu(OpCall{"Neg", {}, {x}})[0];
  ASSERT_EQ(y.dtype(), DType::i64);
  const int64_t want[] = {-3, 7, 0, INT64_MIN, -INT64_MAX};
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(y.data<int64_t>()[i], want[i]) << i;
  Tensor y32 = run_op_cpu(OpCall{"Neg", {}, {Tensor::from_vector<int32_t>({5, -2}, {2})}})[0];
  EXPECT_EQ(y32.data<int32_t>()[0], -5);
  EXPECT_EQ(y32.data<int32_t>()[1], 2);
}
