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
  throw Error("unknown calibration method '" + s + "' (minmax, percentile or entropy)");
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
    const int b = std::min(kBins - 1, int(std::fabs(double(v[i])) * inv));
    hist_[size_t(b)] += 1;
  }
  total_ += double(t.numel());
}

float RangeCollector::percentile_magnitude(double p) const {
  const double want = total_ * p / 100.0;
  double seen = 0;
  for (int b = 0; b < kBins; ++b) {
    seen += hist_[size_t(b)];
    if (seen >= want) return float((b + 1) * bin_width());
  }
  return float(kBins * bin_width());
}

// For each candidate threshold (bin i), the reference distribution P is
// the histogram's first i bins with everything beyond folded into the last;
// Q is P merged into `levels` quantization levels and spread back over the
// nonzero bins of each level. The threshold with the least KL(P || Q)
// wins: it trades clipping the tail against coarse steps in the body.
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
      for (int b = start; b < end && b < i; ++b) sum += p[size_t(b)], nonzero += p[size_t(b)] > 0;
      for (int b = start; b < end && b < i; ++b)
        if (p[size_t(b)] > 0) q[size_t(b)] = sum / nonzero;
    }
    double ps = 0, qs = 0;
    for (int b = 0; b < i; ++b) ps += p[size_t(b)], qs += q[size_t(b)];
    if (ps <= 0 || qs <= 0) continue;
    double kl = 0;
    for (int b = 0; b < i; ++b) {
      if (p[size_t(b)] <= 0) continue;
      const double pb = p[size_t(b)] / ps, qb = q[size_t(b)] / qs;
      // A bin P has and Q lost (the folded tail) costs as if Q had a sliver.
      kl += pb * std::log(pb / std::max(qb, 1e-12));
    }
    if (kl < best) best = kl, best_i = i;
  }
  return float((best_i + 0.5) * bin_width());
}

ActivationRange RangeCollector::range(CalibrationMethod m, double percentile) const {
  if (!seen_) return {0.f, 0.f};
  if (m == CalibrationMethod::minmax) return {lo_, hi_};
  const bool signed_values = lo_ < 0.f;
  const float t = m == CalibrationMethod::percentile ? percentile_magnitude(percentile)
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

}  // namespace tandem
