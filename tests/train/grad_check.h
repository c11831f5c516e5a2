#pragma once
// Gradient checks against central finite differences of a float64 reference
// forward that each test writes from the op's textbook definition.
// For an op y = f(x0, x1, ...) and a fixed random r like y, the loss is
// L = sum(r * y); the fp32 backward seeded with r gives dL/dxi, and
//   dL/dxi[j] ~ (L(xi[j] + h) - L(xi[j] - h)) / 2h     (float64, h = 1e-4)
// whose error (h^2 times a third derivative, plus 1e-16 / h rounding) is far
// below fp32's, so the comparison measures the fp32 kernels.
// Tolerances: forward |y - ref| <= 1e-5 * max|ref| + 1e-5 * |ref|;
// gradients |g - fd| <= 1e-3 * |fd| + 1e-5 * max|fd| (the floor is for
// elements that cancel to near zero, where fp32 rounding of the larger
// terms dominates).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "train/autograd.h"

namespace tandem::testing {

using Doubles = std::vector<double>;
using RefForward = std::function<Doubles(const std::vector<Doubles>&)>;
using OpUnderTest = std::function<train::Var(const std::vector<train::Var>&)>;

// Test-local generator (splitmix64), independent of the library's.
class TestRng {
 public:
  explicit TestRng(uint64_t seed) : s_(seed) {}
  double uniform(double lo, double hi) {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return lo + (hi - lo) * double(z >> 11) * 0x1.0p-53;
  }

 private:
  uint64_t s_;
};

inline Tensor random_tensor(const Shape& s, uint64_t seed, double lo = -1, double hi = 1) {
  TestRng rng(seed);
  Tensor t = Tensor::empty(DType::f32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(rng.uniform(lo, hi));
  return t;
}

// Distinct values (a random permutation of (k + 1/2) * gap, centered on 0):
// at least `gap` apart and gap/2 from 0, so a finite-difference step never
// crosses a kink (relu's 0, a max-pooling tie).
inline Tensor distinct_tensor(const Shape& s, uint64_t seed, double gap) {
  Tensor t = Tensor::empty(DType::f32, s);
  int64_t n = t.numel();
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[size_t(i)] = i;
  TestRng rng(seed);
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(perm[size_t(i)], perm[size_t(int64_t(rng.uniform(0, double(i + 1))))]);
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = float((double(perm[size_t(i)] - n / 2) + 0.5) * gap);
  return t;
}

inline Doubles to_doubles(const Tensor& t) {
  Doubles d(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) d[size_t(i)] = t.scalar_at(i);
  return d;
}

inline double max_abs(const Doubles& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

inline void expect_near_scaled(const Tensor& got, const Doubles& want, double rel, double floor,
                               const std::string& what) {
  ASSERT_EQ(got.numel(), int64_t(want.size())) << what;
  double scale = max_abs(want);
  for (size_t i = 0; i < want.size(); ++i) {
    double g = got.scalar_at(int64_t(i));
    ASSERT_LE(std::fabs(g - want[i]), rel * std::fabs(want[i]) + floor * scale)
        << what << " element " << i << ": got " << g << ", want " << want[i];
  }
}

struct GradCase {
  std::string what;
  std::vector<Tensor> inputs;            // f32
  std::vector<bool> differentiable;      // empty: all
  OpUnderTest op;
  RefForward reference;
  double h = 1e-4;
};

inline double weighted_sum(const Doubles& r, const Doubles& y) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += r[i] * y[i];
  return s;
}

// dL/d inputs[i] by central differences of the reference.
inline Doubles finite_difference(const GradCase& c, const Doubles& r, size_t i) {
  std::vector<Doubles> x;
  for (const Tensor& t : c.inputs) x.push_back(to_doubles(t));
  Doubles g(x[i].size());
  for (size_t j = 0; j < x[i].size(); ++j) {
    double keep = x[i][j];
    x[i][j] = keep + c.h;
    double plus = weighted_sum(r, c.reference(x));
    x[i][j] = keep - c.h;
    double minus = weighted_sum(r, c.reference(x));
    x[i][j] = keep;
    g[j] = (plus - minus) / (2 * c.h);
  }
  return g;
}

inline void check_gradients(const GradCase& c) {
  SCOPED_TRACE(c.what);
  std::vector<train::Var> vars;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    vars.emplace_back(c.inputs[i], c.differentiable.empty() || c.differentiable[i]);
  train::Var y = c.op(vars);
  std::vector<Doubles> x;
  for (const Tensor& t : c.inputs) x.push_back(to_doubles(t));
  expect_near_scaled(y.value(), c.reference(x), 1e-5, 1e-5, "forward");
  Tensor r = random_tensor(y.shape(), 1234);
  train::backward(y, r);
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!vars[i].requires_grad()) continue;
    ASSERT_TRUE(vars[i].grad().defined()) << "input " << i << " got no gradient";
    expect_near_scaled(vars[i].grad(), finite_difference(c, to_doubles(r), i), 1e-3, 1e-5,
                       "gradient of input " + std::to_string(i));
  }
}

}  // namespace tandem::testing
