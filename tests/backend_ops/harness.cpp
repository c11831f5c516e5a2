#include "tests/backend_ops/harness.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "core/half.h"

namespace tandem::backend_ops {

double nmse(const Tensor& out, const Tensor& ref) {
  check(out.numel() == ref.numel(),
        "nmse: " + shape_str(out.shape()) + " against " + shape_str(ref.shape()));
  std::vector<double> a = widen(out), b = widen(ref);
  double err = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) && std::isfinite(b[i])) return INFINITY;
    if (!std::isfinite(b[i])) {
      // Both infinite (Log(0), Reciprocal at 0): they must agree exactly.
      if (a[i] != b[i] && !(std::isnan(a[i]) && std::isnan(b[i]))) return INFINITY;
      continue;
    }
    err += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  if (norm == 0) return err == 0 ? 0 : INFINITY;
  return err / norm;
}

double forward_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return 1e-5;
    case DType::bf16:
      return 1e-4;
    default:
      return 1e-10;
  }
}

double gradient_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return 1e-4;
    case DType::bf16:
      return 1e-3;
    default:
      return 1e-7;
  }
}

std::vector<double> widen(const Tensor& t) {
  check(t.layout() == Layout::plain, "widen: " + t.desc().str() + " is not plain");
  std::vector<double> v(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = t.scalar_at(i);
  return v;
}

Tensor narrow(const Tensor& f32, DType dtype) {
  if (dtype == DType::f32) return f32;
  check(dtype == DType::f16 || dtype == DType::bf16,
        "narrow: to " + std::string(dtype_name(dtype)));
  Tensor t = Tensor::empty(dtype, f32.shape());
  auto* p = static_cast<uint16_t*>(t.raw());
  const float* s = f32.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = dtype == DType::f16 ? float_to_f16(s[i]) : float_to_bf16(s[i]);
  return t;
}

Tensor to_f32(const Tensor& t) {
  if (t.dtype() == DType::f32) return t;
  Tensor r = Tensor::empty(DType::f32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) r.data<float>()[i] = float(t.scalar_at(i));
  return r;
}

Tensor f64_tensor(const Shape& shape, std::vector<double> values) {
  return Tensor::from_vector<double>(values, shape);
}

Tensor uniform(const Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor t = Tensor::empty(DType::f32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

Tensor distinct(const Shape& shape, uint64_t seed) {
  Tensor t = Tensor::empty(DType::f32, shape);
  check(t.numel() <= 256, "distinct: at most 256 values, asked " + shape_str(shape));
  std::vector<int> k(256);
  std::iota(k.begin(), k.end(), -128);
  std::shuffle(k.begin(), k.end(), std::mt19937_64(seed));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(k[size_t(i)]) * 0.25f;
  return t;
}

Tensor away_from(const Shape& shape, uint64_t seed, float lo, float hi, std::vector<float> kinks,
                 float gap) {
  Tensor t = Tensor::empty(DType::f32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v;
    do v = u(rng);
    while (
        std::any_of(kinks.begin(), kinks.end(), [&](float k) { return std::fabs(v - k) < gap; }));
    t.data<float>()[i] = v;
  }
  return t;
}

void Tally::record(const std::string& backend, const std::string& what, Verdict v,
                   const std::string& detail) {
  Counts& c = counts_[backend];
  const char* word = "pass";
  switch (v) {
    case Verdict::pass:
      ++c.pass;
      break;
    case Verdict::unsupported:
      ++c.unsupported;
      word = "unsupported";
      break;
    case Verdict::known:
      ++c.known;
      word = "known";
      break;
    case Verdict::fail:
      ++c.fail;
      word = "FAIL";
      failures_.push_back(backend + " " + what + ": " + detail);
      break;
  }
  if (verbose_ || v == Verdict::fail || v == Verdict::known)
    std::printf("%-11s %-6s %s %s\n", word, backend.c_str(), what.c_str(), detail.c_str());
}

void Tally::fail(const std::string& what) {
  failures_.push_back(what);
  std::printf("FAIL        %s\n", what.c_str());
}

void Tally::print_summary() const {
  std::printf("\n%-12s %6s %6s %12s %6s\n", "backend", "pass", "fail", "unsupported", "known");
  for (const auto& [name, c] : counts_)
    std::printf("%-12s %6d %6d %12d %6d\n", name.c_str(), c.pass, c.fail, c.unsupported, c.known);
  if (!failures_.empty()) {
    std::printf("\n%zu failure(s):\n", failures_.size());
    for (const std::string& f : failures_) std::printf("  %s\n", f.c_str());
  }
}

}  // namespace tandem::backend_ops
