// Add, Sub, Mul, Div, Max, Min, Pow on the CPU backend vs a float64 numpy
// broadcasting loop written here: the oneDNN path (f32, a full-shape operand,
// plain / nChw16c / nhwc, the squeeze-excite [N,C,1,1] case), the swapped
// operand paths, and the plain reference for int64/int32/f64, Pow and
// variadic Max/Min. Tolerance: f32 1e-6 * max|ref| (one rounding), integers exact.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/half.h"
#include "cpu/cpu_backend.h"
#include "cpu/dnnl_utils.h"
#include "ops/schema.h"
#include "tests/cpu_features.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

OpCall make_call(const std::string& op, std::vector<Tensor> inputs, std::vector<bool> constant = {}) {
  OpCall c;
  c.op_type = op;
  c.inputs = std::move(inputs);
  c.constant = std::move(constant);
  return c;
}

double apply(const std::string& op, double a, double b, bool integer) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return integer ? std::trunc(a / b) : a / b;
  if (op == "Max") return std::max(a, b);
  if (op == "Min") return std::min(a, b);
  return std::pow(a, b);
}

// Index of output element `i` in an operand of shape `s` broadcast to `y`.
int64_t source_index(int64_t i, const Shape& s, const Shape& y) {
  int64_t idx = 0, stride = 1;
  for (size_t d = y.size(); d-- > 0;) {
    int64_t coord = i % y[d];
    i /= y[d];
    size_t off = y.size() - s.size();
    if (d >= off) {
      int64_t e = s[d - off];
      idx += (e == 1 ? 0 : coord) * stride;
      stride *= e;
    }
  }
  return idx;
}

// Left fold of `op` over the operands, numpy broadcasting, in float64.
std::vector<double> reference(const std::string& op, const std::vector<Tensor>& in, Shape* y_shape) {
  Shape y = in[0].shape();
  for (const Tensor& t : in) y = broadcast_shapes(y, t.shape());
  bool integer = !is_floating(in[0].dtype());
  std::vector<double> out(size_t(shape_numel(y)));
  for (int64_t i = 0; i < int64_t(out.size()); ++i) {
    double acc = in[0].scalar_at(source_index(i, in[0].shape(), y));
    for (size_t k = 1; k < in.size(); ++k) acc = apply(op, acc, in[k].scalar_at(source_index(i, in[k].shape(), y)), integer);
    out[size_t(i)] = acc;
  }
  *y_shape = y;
  return out;
}

void check(const std::string& op, const std::vector<Tensor>& in, Layout layout = Layout::plain,
           std::vector<bool> constant = {}) {
  Shape ys;
  std::vector<double> ref = reference(op, in, &ys);
  OpCall c = make_call(op, in, constant);
  c.input_layout = layout;
  Tensor y = run_op_cpu(c)[0];
  std::string what = op;
  for (const Tensor& t : in) what += " " + t.desc().str();
  what += " layout " + std::string(layout_name(layout));
  ASSERT_EQ(y.shape(), ys) << what;
  ASSERT_EQ(y.dtype(), in[0].dtype()) << what;
  double scale = 0;
  for (double r : ref) scale = std::max(scale, std::fabs(r));
  double tol = is_floating(y.dtype()) ? 1e-6 * std::max(scale, 1e-6) : 0.0;
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_LE(std::fabs(y.scalar_at(i) - ref[size_t(i)]), tol) << what << " at " << i;
}

Tensor divisor(const Shape& s, uint64_t seed) {
  Tensor t = random_tensor(s, seed, 0.5f, 1.5f);
  for (int64_t i = 0; i < t.numel(); i += 2) t.data<float>()[i] *= -1.f;
  return t;
}

Layout planned_layout(const std::string& op, const std::vector<TensorDesc>& in,
                      std::vector<const Tensor*> constants = {}) {
  return planned_output_layout(op, {}, in, std::move(constants));
}

}  // namespace

TEST(CpuBinary, F32MatchesNumpyBroadcasting) {
  struct Shapes { Shape a, b; };
  std::vector<Shapes> shapes = {
      {{2, 20, 5, 6}, {2, 20, 5, 6}},  // residual add
      {{2, 20, 5, 6}, {2, 20, 1, 1}},  // squeeze-excite scale
      {{1, 40, 4, 4}, {1, 40, 1, 1}},
      {{2, 20, 5, 6}, {20, 1, 1}},     // per-channel constant
      {{2, 20, 5, 6}, {}},             // scalar
      {{2, 20, 5, 6}, {2, 1, 5, 6}},
      {{2, 20, 1, 1}, {2, 20, 5, 6}},  // broadcast first operand (swapped / reference)
      {{6}, {2, 20, 5, 6}},
      {{7, 1}, {1, 9}},                // both broadcast
      {{3, 4}, {3, 4}},
      {{5}, {}},
      {{2, 4, 3, 5, 7}, {1, 4, 1, 5, 7}},  // Swin's window mask: oneDNN's reference case, tandem's loop
      {{1, 4, 1, 5, 7}, {2, 4, 3, 5, 7}},
      {{3, 1, 1, 8}, {1, 6, 1, 1}},
      {{1, 1, 1}, {1}},
  };
  uint64_t seed = 40;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"})
    for (const Shapes& s : shapes) {
      seed += 2;
      Tensor a = random_tensor(s.a, seed), b = std::string(op) == "Div" ? divisor(s.b, seed + 1) : random_tensor(s.b, seed + 1);
      check(op, {a, b});
      if (s.a.size() == 4 || s.b.size() == 4) {
        check(op, {a, b}, Layout::blocked16);
        if (std::string(op) == "Mul") check(op, {a, b}, Layout::nhwc);
      }
    }
}

TEST(CpuBinary, ConstantOperandsAndScalarPow) {
  Tensor x = random_tensor({2, 20, 5, 6}, 1, 0.1f, 3.f);
  check("Mul", {x, random_tensor({20, 1, 1}, 2)}, Layout::blocked16, {false, true});
  check("Add", {random_tensor({20, 1, 6}, 3), x}, Layout::blocked16, {true, false});
  for (float e : {2.f, 0.5f, 3.f, -1.f}) {
    check("Pow", {x, Tensor::from_vector<float>({e}, {})}, Layout::plain, {false, true});
    check("Pow", {x, Tensor::from_vector<float>({e}, {})}, Layout::blocked16, {false, true});
  }
  check("Pow", {x, random_tensor({6}, 4, -2.f, 2.f)});                         // tensor exponent
  check("Pow", {x, Tensor::from_vector<int64_t>({2, 3, 0, 1, 2, 3}, {6})});    // mixed dtypes
}

TEST(CpuBinary, IntegerAndDoubleReference) {
  Tensor a = Tensor::from_vector<int64_t>({7, -7, 9, 100, -3, 5}, {2, 3});
  Tensor b = Tensor::from_vector<int64_t>({2, 3, -4}, {3});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    check(op, {a, b});
    check(op, {b, a});
  }
  check("Pow", {Tensor::from_vector<int64_t>({2, 3, -2}, {3}), Tensor::from_vector<int64_t>({10, 3, 3}, {3})});
  Tensor c = Tensor::from_vector<int32_t>({5, -6, 7, 8}, {4, 1}), d = Tensor::from_vector<int32_t>({3, -2}, {1, 2});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) check(op, {c, d});
  Tensor e = Tensor::from_vector<double>({0.5, -1.25, 3.0}, {3}), f = Tensor::from_vector<double>({2.0}, {1});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"}) check(op, {e, f});
  // Shape arithmetic as exporters emit it: int64 scalars and 1-element vectors.
  check("Mul", {Tensor::from_vector<int64_t>({64}, {}), Tensor::from_vector<int64_t>({7}, {1})});
  check("Add", {Tensor::from_vector<int64_t>({}, {0}), Tensor::from_vector<int64_t>({1}, {1})});
}

TEST(CpuBinary, VariadicMaxMinFoldPairwise) {
  for (const char* op : {"Max", "Min"}) {
    check(op, {random_tensor({3, 4}, 1)});
    check(op, {random_tensor({3, 4}, 1), random_tensor({4}, 2), random_tensor({3, 1}, 3)});
    check(op, {random_tensor({1, 4}, 4), random_tensor({2, 1, 4}, 5), random_tensor({}, 6), random_tensor({3, 4}, 7)});
    check(op, {Tensor::from_vector<int64_t>({1, 9}, {2}), Tensor::from_vector<int64_t>({5}, {1}),
               Tensor::from_vector<int64_t>({3, 2}, {2})});
  }
}

// Blocked activations stay blocked for same-shape and per-channel operands.
namespace {

// Where oneDNN has only its reference loop for a blocked binary op (its
// builds off x86-64), binary ops run tandem's plain loop instead.
bool blocked_binary_is_reference() {
  const dnnl::memory::desc m = cpu::md(DType::f32, {1, 64, 56, 56}, Layout::blocked16);
  dnnl::binary::primitive_desc pd(dnnl::binary::desc(dnnl::algorithm::binary_add, m, m, m),
                                  cpu::engine());
  return cpu::is_reference(pd.impl_info_str());
}

}  // namespace

TEST(CpuBinary, KeepsBlockedLayoutForResidualAndSqueezeExcite) {
  if (blocked_binary_is_reference())
    GTEST_SKIP() << "oneDNN's binary ops are reference loops on this CPU";
  auto f32 = [](Shape s, Layout l) { return TensorDesc{DType::f32, std::move(s), l}; };
  Layout b16 = Layout::blocked16;
  EXPECT_EQ(planned_layout("Add", {f32({1, 64, 56, 56}, b16), f32({1, 64, 56, 56}, b16)}), b16);
  EXPECT_EQ(planned_layout("Add", {f32({1, 64, 56, 56}, Layout::plain), f32({1, 64, 56, 56}, b16)}), b16);
  EXPECT_EQ(planned_layout("Mul", {f32({1, 96, 14, 14}, b16), f32({1, 96, 1, 1}, b16)}), b16);
  EXPECT_EQ(planned_layout("Mul", {f32({1, 96, 1, 1}, b16), f32({1, 96, 14, 14}, b16)}), b16);
  EXPECT_EQ(planned_layout("Mul", {f32({2, 96, 14, 14}, b16), f32({2, 96, 1, 1}, Layout::plain)}), b16);
  // A constant [C,1,1] is reordered into the blocked layout at prepare; a
  // computed one cannot be (3-D), so both operands go plain.
  Tensor scale = random_tensor({96, 1, 1}, 1);
  EXPECT_EQ(planned_layout("Sub", {f32({2, 96, 14, 14}, b16), scale.desc()}, {nullptr, &scale}), b16);
  EXPECT_EQ(planned_layout("Sub", {f32({2, 96, 14, 14}, b16), scale.desc()}), Layout::plain);
  EXPECT_EQ(planned_layout("Add", {f32({1, 64, 56, 56}, b16), f32({1, 1, 56, 56}, b16)}), Layout::plain);
}

TEST(CpuBinary, IntegerDivisionByZeroThrows) {
  Tensor a = Tensor::from_vector<int64_t>({1, 2}, {2}), z = Tensor::from_vector<int64_t>({0}, {1});
  EXPECT_THROW(run_op_cpu(make_call("Div", {a, z})), Error);
}

// bf16 residual add and per-channel multiply through oneDNN: reference on
// the bf16 values in float64, Y rounded to bf16: 1e-2 * max|ref|.
TEST(CpuBinary, Bf16MatchesReferenceOnRoundedInputs) {
  TANDEM_SKIP_WITHOUT_CPU_BF16();
  auto to_bf16 = [](const Tensor& f) {
    Tensor t = Tensor::empty(DType::bf16, f.shape());
    for (int64_t i = 0; i < f.numel(); ++i) static_cast<uint16_t*>(t.raw())[i] = float_to_bf16(float(f.scalar_at(i)));
    return t;
  };
  Tensor x = to_bf16(random_tensor({2, 32, 5, 6}, 1)), same = to_bf16(random_tensor({2, 32, 5, 6}, 2));
  Tensor se = to_bf16(random_tensor({2, 32, 1, 1}, 3));
  for (Layout l : {Layout::plain, Layout::blocked16})
    for (const auto& [op, other] : {std::pair<std::string, Tensor>{"Add", same}, {"Mul", se}}) {
      Shape ys;
      std::vector<double> ref = reference(op, {x, other}, &ys);
      OpCall c = make_call(op, {x, other});
      c.input_layout = l;
      Tensor y = run_op_cpu(c)[0];
      ASSERT_EQ(y.dtype(), DType::bf16);
      double scale = 0, err = 0;
      for (size_t i = 0; i < ref.size(); ++i) {
        scale = std::max(scale, std::fabs(ref[i]));
        err = std::max(err, std::fabs(y.scalar_at(int64_t(i)) - ref[i]));
      }
      EXPECT_LE(err, 1e-2 * scale) << op << " bf16 " << layout_name(l);
    }
}
