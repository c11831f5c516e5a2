// Element-wise, binary, comparison and reduction cases. Element-wise and
// binary ops have float64 references here; reductions and arg-reductions
// take the CPU backend's f32 result.
#include <algorithm>
#include <cmath>
#include <random>

#include "tests/backend_ops/harness.h"
#include "tests/backend_ops/op_cases.h"

namespace tandem::backend_ops {

namespace {

// Shape of numpy broadcasting of a and b.
Shape broadcast_shape(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape s(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    s[i] = std::max(da, db);
  }
  return s;
}

// Flat index into `from` (broadcast to `to`) of output element `i`.
int64_t broadcast_index(int64_t i, const Shape& to, const Shape& from) {
  int64_t idx = 0, stride = 1;
  for (size_t k = to.size(); k-- > 0;) {
    int64_t coord = i % to[k];
    i /= to[k];
    size_t off = to.size() - from.size();
    if (k < off) continue;
    int64_t extent = from[k - off];
    idx += (extent == 1 ? 0 : coord) * stride;
    stride *= extent;
  }
  return idx;
}

Tensor with_grid_values(Tensor t) {
  // Whole numbers in [-3, 3]: Equal finds equal pairs, the others ties.
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::round(t.data<float>()[i]);
  return t;
}

Tensor bools(const Shape& s, uint64_t seed) {
  Tensor u = uniform(s, seed);
  Tensor t = Tensor::empty(DType::boolean, s);
  for (int64_t i = 0; i < t.numel(); ++i)
    static_cast<uint8_t*>(t.raw())[i] = u.data<float>()[i] > 0;
  return t;
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double softplus(double x) { return std::log1p(std::exp(x)); }

struct Unary {
  const char* op;
  double (*f)(double);
  float lo, hi;
};

std::vector<Unary> unary_ops() {
  return {
      {"Relu", [](double x) { return std::max(x, 0.0); }, -2, 2},
      {"Sigmoid", sigmoid, -6, 6},
      {"Tanh", [](double x) { return std::tanh(x); }, -3, 3},
      {"HardSwish", [](double x) { return x * std::clamp(x + 3, 0.0, 6.0) / 6; }, -5, 5},
      {"Elu", [](double x) { return x > 0 ? x : std::expm1(x); }, -2, 2},
      {"Softplus", softplus, -5, 25},
      {"Exp", [](double x) { return std::exp(x); }, -3, 3},
      {"Sqrt", [](double x) { return std::sqrt(x); }, 0, 4},
      {"Abs", [](double x) { return std::fabs(x); }, -2, 2},
      {"Mish", [](double x) { return x * std::tanh(softplus(x)); }, -5, 5},
      {"Gelu", [](double x) { return x / 2 * (1 + std::erf(x / std::sqrt(2.0))); }, -5, 5},
      {"Neg", [](double x) { return -x; }, -2, 2},
      {"Identity", [](double x) { return x; }, -2, 2},
      {"Dropout", [](double x) { return x; }, -2, 2},  // inference: the identity
      {"Log", [](double x) { return std::log(x); }, 0.1f, 4},
      {"Floor", [](double x) { return std::floor(x); }, -3, 3},
      {"Ceil", [](double x) { return std::ceil(x); }, -3, 3},
      {"Reciprocal", [](double x) { return 1 / x; }, 0.5f, 3},
      {"Erf", [](double x) { return std::erf(x); }, -3, 3},
  };
}

void add_unary_cases(std::vector<OpCase>& cases) {
  Seeds seed{1000};
  for (const Unary& u : unary_ops()) {
    cases.push_back(OpCase(u.op, "4d")
                        .in(uniform({2, 3, 17, 33}, seed(), u.lo, u.hi))
                        .ref(unary_ref(u.f))
                        .channels_last());
    cases.push_back(
        OpCase(u.op, "1d-odd").in(uniform({1001}, seed(), u.lo, u.hi)).ref(unary_ref(u.f)));
  }
  cases.push_back(OpCase("LeakyRelu", "4d")
                      .in(uniform({2, 3, 17, 33}, seed(), -2, 2))
                      .attr("alpha", 0.1f)
                      .ref(unary_ref([](double x) { return x > 0 ? x : 0.1 * x; }))
                      .channels_last());
  cases.push_back(OpCase("HardSigmoid", "4d")
                      .in(uniform({2, 3, 17, 33}, seed(), -5, 5))
                      .attr("alpha", 0.25f)
                      .attr("beta", 0.4f)
                      .ref(unary_ref([](double x) { return std::clamp(0.25 * x + 0.4, 0.0, 1.0); }))
                      .channels_last());
  cases.push_back(OpCase("Gelu", "tanh")
                      .in(uniform({2, 3, 17, 33}, seed(), -5, 5))
                      .attr("approximate", std::string("tanh"))
                      .ref(unary_ref([](double x) {
                        return x / 2 *
                               (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
                      })));
  // A plain-layout op on an odd-sized 4-D tensor: exact.
  cases.push_back(OpCase("Relu", "odd-4d-exact")
                      .in(uniform({3, 37, 19, 23}, seed(), -2, 2))
                      .ref(unary_ref([](double x) { return std::max(x, 0.0); }))
                      .exactly());
  // Clip's bounds as constant inputs (opset 11 on).
  cases.push_back(OpCase("Clip", "constant-bounds")
                      .in(uniform({1000}, seed(), -2, 2))
                      .constant_in(Tensor::from_vector<float>({-0.5f}, {}))
                      .constant_in(Tensor::from_vector<float>({0.75f}, {}))
                      .ref([](const std::vector<Tensor>& in) {
                        std::vector<double> x = widen(in[0]);
                        double lo = in[1].scalar_at(0), hi = in[2].scalar_at(0);
                        for (double& v : x) v = std::clamp(v, lo, hi);
                        return std::vector<Tensor>{f64_tensor(in[0].shape(), x)};
                      }));
}

struct Binary {
  const char* op;
  double (*f)(double, double);
};

void add_binary_cases(std::vector<OpCase>& cases) {
  std::vector<Binary> ops = {{"Add", [](double a, double b) { return a + b; }},
                             {"Sub", [](double a, double b) { return a - b; }},
                             {"Mul", [](double a, double b) { return a * b; }},
                             {"Div", [](double a, double b) { return a / b; }},
                             {"Max", [](double a, double b) { return std::max(a, b); }},
                             {"Min", [](double a, double b) { return std::min(a, b); }}};
  Seeds seed{2000};
  for (const Binary& o : ops) {
    // The divisor kept away from 0.
    float lo = std::string(o.op) == "Div" ? 0.5f : -2.f, hi = 2.f;
    cases.push_back(OpCase(o.op, "broadcast")
                        .in(uniform({2, 3, 4, 5}, seed(), -2, 2))
                        .in(uniform({3, 1, 5}, seed(), lo, hi))
                        .ref(binary_ref(o.f)));
    cases.push_back(OpCase(o.op, "broadcast-left")
                        .in(uniform({3, 1, 5}, seed(), -2, 2))
                        .in(uniform({2, 3, 4, 5}, seed(), lo, hi))
                        .ref(binary_ref(o.f)));
    cases.push_back(OpCase(o.op, "per-channel")
                        .in(uniform({2, 16, 7, 7}, seed(), -2, 2))
                        .in(uniform({1, 16, 1, 1}, seed(), lo, hi))
                        .ref(binary_ref(o.f))
                        .channels_last());
    cases.push_back(OpCase(o.op, "per-channel-constant")
                        .in(uniform({2, 16, 7, 7}, seed(), -2, 2))
                        .constant_in(uniform({16, 1, 1}, seed(), lo, hi))
                        .ref(binary_ref(o.f)));
    cases.push_back(OpCase(o.op, "scalar-constant")
                        .in(uniform({2, 3, 4, 5}, seed(), -2, 2))
                        .constant_in(uniform({}, seed(), lo, hi))
                        .ref(binary_ref(o.f)));
    cases.push_back(OpCase(o.op, "scalar-left")
                        .in(uniform({1}, seed(), -2, 2))
                        .in(uniform({2, 3, 4, 5}, seed(), lo, hi))
                        .ref(binary_ref(o.f)));
    // The small side's extents one run of the full side's axes: a bias
    // along the last axis (either side), a middle run.
    cases.push_back(OpCase(o.op, "bias-last-axis")
                        .in(uniform({4, 7, 6}, seed(), -2, 2))
                        .constant_in(uniform({6}, seed(), lo, hi))
                        .ref(binary_ref(o.f)));
    cases.push_back(OpCase(o.op, "bias-left")
                        .in(uniform({1, 6}, seed(), -2, 2))
                        .in(uniform({4, 7, 6}, seed(), lo, hi))
                        .ref(binary_ref(o.f)));
    cases.push_back(OpCase(o.op, "middle-run")
                        .in(uniform({3, 5, 4}, seed(), -2, 2))
                        .in(uniform({1, 5, 1}, seed(), lo, hi))
                        .ref(binary_ref(o.f)));
    cases.push_back(OpCase(o.op, "same-shape")
                        .in(uniform({6, 7}, seed(), -2, 2))
                        .in(uniform({6, 7}, seed(), lo, hi))
                        .ref(binary_ref(o.f))
                        .channels_last());
  }
  auto pow = [](double a, double b) { return std::pow(a, b); };
  cases.push_back(OpCase("Pow", "broadcast")
                      .in(uniform({2, 3, 4, 5}, seed(), 0.1f, 3))
                      .in(uniform({3, 1, 5}, seed(), -2, 2))
                      .ref(binary_ref(pow)));
  cases.push_back(OpCase("Pow", "int64-exponent")
                      .in(uniform({4, 50}, seed(), -2, 2))
                      .constant_in(Tensor::from_vector<int64_t>({3}, {}))
                      .ref(binary_ref(pow)));
  for (const char* op : {"Add", "Mul"})
    cases.push_back(
        OpCase(op, "int64")
            .in(Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, -12}, {4, 3}))
            .constant_in(Tensor::from_vector<int64_t>({2, -3, 5}, {3}))
            .ref(binary_ref(std::string(op) == "Add" ? +[](double a, double b) { return a + b; }
                                                     : +[](double a, double b) { return a * b; })));
}

std::vector<Tensor> where_ref(const std::vector<Tensor>& in) {
  Shape s = broadcast_shape(broadcast_shape(in[0].shape(), in[1].shape()), in[2].shape());
  std::vector<double> c = widen(in[0]), x = widen(in[1]), y = widen(in[2]),
                      out(size_t(shape_numel(s)));
  for (int64_t i = 0; i < int64_t(out.size()); ++i)
    out[size_t(i)] = c[size_t(broadcast_index(i, s, in[0].shape()))]
                         ? x[size_t(broadcast_index(i, s, in[1].shape()))]
                         : y[size_t(broadcast_index(i, s, in[2].shape()))];
  return {f64_tensor(s, out)};
}

// Integers in [lo, hi] of dtype i32 or i64; `nonzero` moves zeros off 0
// (integer divisors: the CPU stops with an error there).
Tensor int_values(DType t, const Shape& s, uint64_t seed, int64_t lo, int64_t hi, bool nonzero) {
  Tensor r = Tensor::empty(t, s);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> u(lo, hi);
  for (int64_t i = 0; i < r.numel(); ++i) {
    int64_t v = u(rng);
    if (nonzero && v == 0) v = 1 + i % 3;
    if (t == DType::i64)
      r.data<int64_t>()[i] = v;
    else
      r.data<int32_t>()[i] = int32_t(v);
  }
  return r;
}

// Multiples of 1/4 in [-40, 40] (exact in f16 and bf16): many dividends
// are exact multiples of their divisor, many comparisons ties. `scale`
// divides and rounds them again (a coarser grid, more ties).
Tensor quarters(const Shape& s, uint64_t seed, bool nonzero, float scale = 1) {
  Tensor t = uniform(s, seed, -40, 40);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = std::round(t.data<float>()[i] * 4.f) / 4.f;
    if (scale != 1) v = std::round(v / scale);
    t.data<float>()[i] = nonzero && v == 0.f ? -1.25f : v;
  }
  return t;
}

struct ShapePair {
  Shape a, b;
};
// Same shape, general broadcast, a scalar, a trailing vector.
const ShapePair kPairs[] = {
    {{4, 33}, {4, 33}}, {{2, 3, 4, 5}, {3, 1, 5}}, {{2, 3, 4, 5}, {}}, {{3, 5, 7}, {7}}};

double python_mod(double a, double b) {
  double r = std::fmod(a, b);
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
double c_fmod(double a, double b) { return std::fmod(a, b); }

void add_mod_cases(std::vector<OpCase>& cases) {
  // fmod=0 takes the divisor's sign (Python's %), fmod=1 the dividend's (C's fmod).
  Seeds seed{2100};
  for (DType t : {DType::i32, DType::i64})
    for (int64_t fmod : {0, 1})
      for (const ShapePair& s : kPairs)
        cases.push_back(OpCase("Mod", std::string(dtype_name(t)) + "-fmod" + std::to_string(fmod) +
                                          "-" + shape_str(s.a) + "%" + shape_str(s.b))
                            .in(int_values(t, s.a, seed(), -1000, 1000, false))
                            .in(int_values(t, s.b, seed(), -17, 17, true))
                            .attr("fmod", fmod)
                            .ref(binary_ref(fmod ? c_fmod : python_mod)));
  for (int64_t fmod : {0, 1})
    for (const ShapePair& s : kPairs)
      cases.push_back(OpCase("Mod", "float-fmod" + std::to_string(fmod) + "-" + shape_str(s.a) +
                                        "%" + shape_str(s.b))
                          .in(quarters(s.a, seed(), false))
                          .in(quarters(s.b, seed(), true))
                          .attr("fmod", fmod)
                          .ref(binary_ref(fmod ? c_fmod : python_mod)));
  // TF's FloorMod / FloorDiv of int32 flat indices (CenterNet's decode):
  // Mod by a constant, then the integer Sub and Div.
  Tensor idx = int_values(DType::i32, {2, 100}, seed(), -5000, 1310719, false);
  Tensor d = Tensor::from_vector<int32_t>({80}, {});
  cases.push_back(
      OpCase("Mod", "int32-floor-mod-constant").in(idx).constant_in(d).ref(binary_ref(python_mod)));
  // (Integer Div's rounding of negative quotients: the CPU backend's.)
  cases.push_back(OpCase("Div", "int32-floor-div").in(idx).constant_in(d));
  cases.push_back(OpCase("Sub", "int32")
                      .in(idx)
                      .in(int_values(DType::i32, {2, 100}, seed(), -1000, 1000, false))
                      .ref(binary_ref([](double a, double b) { return a - b; })));
}

void add_compare_cases(std::vector<OpCase>& cases) {
  std::vector<Binary> ops = {{"Equal", [](double a, double b) { return double(a == b); }},
                             {"Less", [](double a, double b) { return double(a < b); }},
                             {"Greater", [](double a, double b) { return double(a > b); }},
                             {"LessOrEqual", [](double a, double b) { return double(a <= b); }},
                             {"GreaterOrEqual", [](double a, double b) { return double(a >= b); }}};
  Seeds seed{2200};
  for (const Binary& o : ops) {
    for (const ShapePair& s : kPairs)
      cases.push_back(OpCase(o.op, shape_str(s.a) + "," + shape_str(s.b))
                          .in(quarters(s.a, seed(), false, 8))
                          .in(quarters(s.b, seed(), false, 8))
                          .ref(binary_ref(o.f)));
    cases.push_back(OpCase(o.op, "per-channel")
                        .in(with_grid_values(uniform({2, 8, 3, 3}, seed(), -3, 3)))
                        .in(with_grid_values(uniform({1, 8, 1, 1}, seed(), -3, 3)))
                        .ref(binary_ref(o.f)));
    cases.push_back(OpCase(o.op, "int64")
                        .in(int_values(DType::i64, {5, 40}, seed(), -3, 3, false))
                        .in(int_values(DType::i64, {40}, seed(), -3, 3, false))
                        .ref(binary_ref(o.f)));
  }
  cases.push_back(OpCase("Not", "2d").in(bools({3, 50}, seed())).ref(unary_ref([](double x) {
    return double(x == 0);
  })));
  struct Where {
    Shape cond, x, y;
  };
  for (const Where& w : {Where{{4, 30}, {4, 30}, {4, 30}}, Where{{2, 3, 4, 5}, {3, 1, 5}, {1}},
                         Where{{5, 1, 20}, {6, 20}, {5, 6, 1}}, Where{{70}, {3, 70}, {2, 1, 70}}})
    for (bool integer : {false, true}) {
      auto values = [&](const Shape& s) {
        return integer ? int_values(DType::i64, s, seed(), -1000000, 1000000, false)
                       : uniform(s, seed());
      };
      cases.push_back(OpCase("Where", std::string(integer ? "int64-" : "") + shape_str(w.cond) +
                                          "," + shape_str(w.x) + "," + shape_str(w.y))
                          .in(bools(w.cond, seed()))
                          .in(values(w.x))
                          .in(values(w.y))
                          .ref(where_ref)
                          .exactly());
    }
}

void add_reduce_cases(std::vector<OpCase>& cases) {
  Seeds seed{2300};
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin"}) {
    cases.push_back(OpCase(op, "spatial-keepdims")
                        .in(uniform({2, 8, 5, 7}, seed()))
                        .attr("axes", std::vector<int64_t>{2, 3}));
    cases.push_back(OpCase(op, "spatial")
                        .in(uniform({2, 8, 5, 6}, seed()))
                        .attr("axes", std::vector<int64_t>{2, 3})
                        .attr("keepdims", int64_t(0)));
    cases.push_back(OpCase(op, "channels")
                        .in(uniform({2, 8, 5, 6}, seed()))
                        .attr("axes", std::vector<int64_t>{1})
                        .attr("keepdims", int64_t(0)));
    cases.push_back(OpCase(op, "last-axis")
                        .in(uniform({6, 33}, seed()))
                        .attr("axes", std::vector<int64_t>{-1})
                        .attr("keepdims", int64_t(0)));
  }
  cases.push_back(OpCase("ReduceSum", "spatial-keepdims")
                      .in(uniform({2, 8, 5, 7}, seed()))
                      .constant_in(Tensor::from_vector<int64_t>({2, 3}, {2})));
  cases.push_back(
      OpCase("ReduceSum", "all").in(uniform({4, 9, 3}, seed())).attr("keepdims", int64_t(0)));
  for (const char* op : {"ArgMax", "ArgMin"}) {
    cases.push_back(OpCase(op, "axis1")
                        .in(distinct({3, 7, 5}, seed()))
                        .attr("axis", int64_t(1))
                        .attr("keepdims", int64_t(0)));
    cases.push_back(
        OpCase(op, "last-keepdims").in(distinct({4, 9}, seed())).attr("axis", int64_t(-1)));
  }
}

}  // namespace

Reference unary_ref(double (*f)(double)) {
  return [f](const std::vector<Tensor>& in) {
    std::vector<double> x = widen(in[0]);
    for (double& v : x) v = f(v);
    return std::vector<Tensor>{f64_tensor(in[0].shape(), x)};
  };
}

Reference binary_ref(double (*f)(double, double)) {
  return [f](const std::vector<Tensor>& in) {
    Shape s = broadcast_shape(in[0].shape(), in[1].shape());
    std::vector<double> a = widen(in[0]), b = widen(in[1]), out(size_t(shape_numel(s)));
    for (int64_t i = 0; i < int64_t(out.size()); ++i)
      out[size_t(i)] = f(a[size_t(broadcast_index(i, s, in[0].shape()))],
                         b[size_t(broadcast_index(i, s, in[1].shape()))]);
    return std::vector<Tensor>{f64_tensor(s, out)};
  };
}

void add_math_cases(std::vector<OpCase>& cases) {
  add_unary_cases(cases);
  add_binary_cases(cases);
  add_mod_cases(cases);
  add_compare_cases(cases);
  add_reduce_cases(cases);
}

}  // namespace tandem::backend_ops
