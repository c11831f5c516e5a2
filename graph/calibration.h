#pragma once
// Activation ranges for post-training quantization, collected over
// calibration batches: each watched tensor's minimum and maximum (first
// pass), then a histogram over that span (second pass) from which the
// range is chosen by one of three rules:
//   minmax      the whole span seen;
//   percentile  the span holding all but (100 - p)% of the values at each
//               end that reaches past zero;
//   entropy     the clipping threshold whose quantized histogram is
//               closest to the real one in Kullback-Leibler divergence
//               (TensorRT's calibrator), over the magnitudes;
//   mse         the clipping threshold whose u8 quantization has the
//               least expected squared error over the histogram (rounding
//               inside the range, clipping beyond it).
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tandem {

enum class CalibrationMethod { minmax, percentile, entropy, mse };
CalibrationMethod parse_calibration_method(const std::string& s);
const char* calibration_method_name(CalibrationMethod m);

struct ActivationRange {
  float lo = 0.f, hi = 0.f;
};

// One tensor's statistics. add_span() over every batch first, then
// add_histogram() over every batch, then range().
class RangeCollector {
 public:
  static constexpr int kBins = 2048;
  void add_span(const Tensor& t);
  void add_histogram(const Tensor& t);
  ActivationRange range(CalibrationMethod m, double percentile = 99.99) const;

 private:
  float lo_ = 0.f, hi_ = 0.f;
  bool seen_ = false;
  // Magnitudes |x| over [0, max(|lo|, |hi|)], kBins bins.
  std::vector<double> hist_ = std::vector<double>(kBins, 0.0);
  double total_ = 0, zeros_ = 0;  // every value seen; exact zeros (not in hist_)
  double bin_width() const;
  float percentile_magnitude(double p) const;
  float entropy_magnitude(int levels) const;
  float mse_magnitude() const;
};

// The 8-bit quantization of a range: u8 with zero point 0 for a tensor that
// is never negative (after ReLU), else u8 with the zero point where 0
// falls. The range is widened to contain 0 (ONNX requires 0 to be exact).
struct QuantizationParams {
  float scale = 1.f;
  int zero_point = 0;
  DType dtype = DType::u8;
};
QuantizationParams u8_params(ActivationRange r);
// Symmetric s8 (zero point 0) over the range's larger magnitude: the form
// GPU integer convolutions take (cuDNN has no u8 activations), at the cost
// of one bit for a tensor that is never negative.
QuantizationParams s8_params(ActivationRange r);
// s8_params for DType::i8, else u8_params.
QuantizationParams activation_params(ActivationRange r, DType activations);

}  // namespace tandem
