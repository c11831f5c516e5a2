#pragma once
// Post-training quantization of a float graph: calibrate the activations
// the convolutions read on sample batches, measure how much each
// convolution alone loses when quantized, keep the worst in float, round
// the others' weights against the calibration inputs, and return the QDQ
// graph (graph/quantize_graph.h) a Session runs on integers and any ONNX
// runtime can read.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/calibration.h"
#include "graph/graph.h"

namespace tandem {

struct PtqOptions {
  // None: each method is tried and the one whose quantized model moves the
  // outputs least is kept.
  std::optional<CalibrationMethod> method;
  double percentile = 99.99;  // for CalibrationMethod::percentile
  // Convolutions left in float: -1 chooses by measurement (those losing
  // more than three times the median, at most a tenth of them), else this
  // many of the worst.
  int float_layers = -1;
  int threads = 0;  // CPU threads for the calibration runs (0: all)
  // u8 (zero point where 0 falls; what oneDNN and ONNX Runtime's CPU
  // kernels prefer) or i8 (symmetric: what the GPU's integer convolutions
  // take).
  DType activations = DType::u8;
  // Weights rounded column by column, each column's error spread over the
  // rest by how the calibration inputs correlate (graph/weight_rounding.h),
  // else each to nearest. Per-layer sensitivities are measured with the
  // nearest rounding either way.
  bool compensate_weights = true;
};

struct PtqLayer {
  std::string node;
  double error = 0;  // relative L2 error of the outputs with only this one quantized
  bool kept_float = false;
};

struct PtqReport {
  CalibrationMethod method = CalibrationMethod::minmax;  // the one used
  // When the method was chosen: each one's error, everything quantized.
  std::vector<std::pair<CalibrationMethod, double>> method_errors;
  std::vector<PtqLayer> layers;  // in graph order
  int quantized = 0;
  double error = 0;  // relative L2 error of the outputs, everything chosen quantized
};

// `g`: a float graph whose single input takes each of `batches` (same
// shape). Folds constants and batch norms first, so the QDQ graph holds the
// folded weights. Error when the graph has no convolution to quantize or
// no batch is given.
Graph quantize_post_training(Graph g, const std::vector<Tensor>& batches, const PtqOptions& o,
                             PtqReport* report = nullptr);

}  // namespace tandem
