#include "graph/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace tandem {

CalibrationMethod parse_calibration_method(const std::string& s) {
  if (s == "minmax") return CalibrationMethod::minmax;
  if (s == "percentile") return CalibrationMethod::percentile;
  if (s == "entropy") return CalibrationMethod::entropy;
  if (s == "mse") return CalibrationMethod::mse;
  throw Error("unknown calibration method '" + s + "' (minmax, percentile, entropy or mse)");
}

const char* calibration_method_name(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::minmax:
      return "minmax";
    case CalibrationMethod::percentile:
      return "percentile";
    case CalibrationMethod::entropy:
      return "entropy";
    case CalibrationMethod::mse:
      return "mse";
  }
  return "?";
}

namespace {

const float* floats(const Tensor& t) {
  check(t.dtype() == DType::f32,
        "calibration reads f32 tensors, got " + std::string(dtype_name(t.dtype())));
  return t.data<float>();
}

}  // namespace

void RangeCollector::add_span(const Tensor& t) {
  const float* v = floats(t);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!std::isfinite(v[i])) continue;
    if (!seen_) lo_ = hi_ = v[i], seen_ = true;
    lo_ = std::min(lo_, v[i]);
    hi_ = std::max(hi_, v[i]);
  }
}

double RangeCollector::bin_width() const {
  const double m = std::max(std::fabs(double(lo_)), std::fabs(double(hi_)));
  return m > 0 ? m / kBins : 1.0;
}

void RangeCollector::add_histogram(const Tensor& t) {
  const float* v = floats(t);
  const double inv = 1.0 / bin_width();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!std::isfinite(v[i])) continue;
    // Exact zeros (half of a ReLU's output) quantize exactly at any scale:
    // in the histogram they would only pull the entropy choice towards
    // the narrowest range, whose first level holds them alone.
    if (v[i] == 0.f) {
      zeros_ += 1;
      continue;
    }
    const int b = std::min(kBins - 1, int(std::fabs(double(v[i])) * inv));
    hist_[size_t(b)] += 1;
  }
  total_ += double(t.numel());
}

float RangeCollector::percentile_magnitude(double p) const {
  const double want = total_ * p / 100.0;
  double seen = zeros_;
  for (int b = 0; b < kBins; ++b) {
    seen += hist_[size_t(b)];
    if (seen >= want) return float((b + 1) * bin_width());
  }
  return float(kBins * bin_width());
}

// For each candidate threshold (bin i), the reference distribution P is
// the histogram's first i bins with everything beyond folded into the last;
// Q is those i bins without the fold, merged into `levels` quantization
// levels and spread back over the nonzero bins of each level (built from P
// itself, Q would equal P at i = levels and the narrowest range would
// always win). The threshold with the least KL(P || Q)
// wins: it trades clipping the tail against coarse steps in the body.
namespace {

// Normalizes d and lends its empty bins a sliver of mass taken evenly from
// the others, so that a bin P has and Q lacks (the folded tail) costs a
// finite amount instead of ruling the threshold out. False when d is empty.
bool smooth(std::vector<double>& d) {
  constexpr double kEps = 1e-4;
  double sum = 0;
  size_t zeros = 0;
  for (double v : d) sum += v, zeros += v <= 0;
  if (sum <= 0 || zeros == d.size()) return false;
  const double take = kEps * double(zeros) / double(d.size() - zeros);
  for (double& v : d) v = v <= 0 ? kEps : v / sum - take;
  for (double v : d)
    if (v <= 0) return false;  // too few filled bins to lend from
  return true;
}

}  // namespace

float RangeCollector::entropy_magnitude(int levels) const {
  double best = std::numeric_limits<double>::infinity();
  int best_i = kBins;
  std::vector<double> p, q;
  for (int i = levels; i <= kBins; ++i) {
    p.assign(hist_.begin(), hist_.begin() + i);
    for (int b = i; b < kBins; ++b) p[size_t(i - 1)] += hist_[size_t(b)];
    q.assign(size_t(i), 0.0);
    const double per = double(i) / levels;
    for (int l = 0; l < levels; ++l) {
      const int start = int(std::floor(l * per)),
                end = std::max(start + 1, int(std::floor((l + 1) * per)));
      double sum = 0;
      int nonzero = 0;
      for (int b = start; b < end && b < i; ++b)
        sum += hist_[size_t(b)], nonzero += hist_[size_t(b)] > 0;
      for (int b = start; b < end && b < i; ++b)
        if (hist_[size_t(b)] > 0) q[size_t(b)] = sum / nonzero;
    }
    if (!smooth(p) || !smooth(q)) continue;
    double kl = 0;
    for (int b = 0; b < i; ++b)
      if (p[size_t(b)] > 0) kl += p[size_t(b)] * std::log(p[size_t(b)] / q[size_t(b)]);
    if (kl < best) best = kl, best_i = i;
  }
  return float((best_i + 0.5) * bin_width());
}

// Each bin's values sit at its centre c. Inside the range a value rounds to
// the nearest of the 8-bit steps: an error of c^2 where c is under half a
// step (it becomes 0, which is exact), else step^2 / 12 on average. Beyond
// the range it clips: (c - t)^2. The steps are those of u8_params over the
// clipped range [max(lo, -t), min(hi, t)], the CPU's activations.
float RangeCollector::mse_magnitude() const {
  const double w = bin_width(), lo = std::min(0.0, double(lo_)), hi = std::max(0.0, double(hi_));
  double best = std::numeric_limits<double>::infinity();
  int best_i = kBins;
  for (int i = 1; i <= kBins; ++i) {
    const double t = i * w, step = (std::min(hi, t) - std::max(lo, -t)) / 255.0;
    double err = 0;
    for (int b = 0; b < kBins; ++b) {
      const double n = hist_[size_t(b)];
      if (n == 0) continue;
      const double c = (b + 0.5) * w;
      if (c > t)
        err += n * (c - t) * (c - t);
      else
        err += n * (c < step / 2 ? c * c : step * step / 12.0);
    }
    if (err < best) best = err, best_i = i;
  }
  return float(best_i * w);
}

ActivationRange RangeCollector::range(CalibrationMethod m, double percentile) const {
  if (!seen_) return {0.f, 0.f};
  if (m == CalibrationMethod::minmax) return {lo_, hi_};
  const bool signed_values = lo_ < 0.f;
  const float t = m == CalibrationMethod::percentile ? percentile_magnitude(percentile)
                  : m == CalibrationMethod::mse      ? mse_magnitude()
                                                     : entropy_magnitude(signed_values ? 127 : 255);
  return {std::max(lo_, -t), std::min(hi_, t)};
}

QuantizationParams u8_params(ActivationRange r) {
  const float lo = std::min(r.lo, 0.f), hi = std::max(r.hi, 0.f);
  QuantizationParams q;
  if (hi - lo <= 0.f) return q;  // all zeros: any scale represents them
  q.scale = (hi - lo) / 255.f;
  q.zero_point = int(std::clamp(std::lround(-lo / q.scale), 0L, 255L));
  return q;
}

QuantizationParams s8_params(ActivationRange r) {
  QuantizationParams q;
  q.dtype = DType::i8;
  const float m = std::max(std::fabs(r.lo), std::fabs(r.hi));
  if (m > 0.f) q.scale = m / 127.f;
  return q;
}

QuantizationParams activation_params(ActivationRange r, DType activations) {
  return activations == DType::i8 ? s8_params(r) : u8_params(r);
}

}  // namespace tandem
