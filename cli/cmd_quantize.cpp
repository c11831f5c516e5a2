// `tandem quantize MODEL --calibrate DIR|FILE.npy --out MODEL.int8.onnx`:
// post-training quantization (graph/post_training.h) on the samples
// cli/calibration_data.h makes, written as a QDQ ONNX model.
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>

#include "cli/calibration_data.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "formats/load_model.h"
#include "formats/onnx/onnx_exporter.h"
#include "graph/post_training.h"
#include "pipeline/detector.h"
#include "pipeline/model_store.h"

namespace tandem::cli {

namespace {

struct QuantizeOptions {
  std::string model, calibrate, out;
  std::string method = "auto", activations = "u8", weight_rounding = "compensating";
  double percentile = 99.99;
  int samples = 64, batch = 8, float_layers = -1, threads = 0;
};

// A TF.js model is the detector: quantized up to the heads `tag` reads (its
// peak ranking and box decoding stay in float), with the batch left free.
ModelLoadOptions load_options(const std::string& model) {
  if (!is_tfjs_model_path(model)) return {};
  pipeline::DetectorOptions d;
  d.model = model;
  return pipeline::heads_load_options(d);
}

int quantize_command(const QuantizeOptions& o) {
  const std::string model = pipeline::resolve_model(o.model);
  check(!o.out.empty(), "--out is required");
  std::vector<Tensor> batches =
      calibration_batches({model, o.calibrate, o.samples, o.batch, o.threads});
  int64_t samples = 0;
  for (const Tensor& b : batches) samples += b.dim(0);
  fmt::print("calibrating on {} samples ({} batches of {})\n", samples, batches.size(),
             batches[0].dim(0));
  PtqOptions p;
  if (o.method != "auto") p.method = parse_calibration_method(o.method);
  p.percentile = o.percentile;
  p.float_layers = o.float_layers;
  p.threads = o.threads;
  p.activations = o.activations == "s8" ? DType::i8 : DType::u8;
  p.compensate_weights = o.weight_rounding == "compensating";
  PtqReport r;
  Graph q = quantize_post_training(load_model(model, load_options(model)), batches, p, &r);
  for (const auto& [m, e] : r.method_errors)
    fmt::print("{:>10} calibration: outputs move by {:.3g}\n", calibration_method_name(m), e);
  fmt::print("activation ranges by {}\n", calibration_method_name(r.method));
  std::vector<PtqLayer> worst = r.layers;
  std::sort(worst.begin(), worst.end(),
            [](const PtqLayer& a, const PtqLayer& b) { return a.error > b.error; });
  worst.resize(std::min<size_t>(worst.size(), 5));
  for (const PtqLayer& l : worst)
    if (l.error > 0)
      fmt::print("sensitive: {} alone moves the outputs by {:.3g}\n", l.node, l.error);
  for (const PtqLayer& l : r.layers)
    if (l.kept_float)
      fmt::print("kept in float: {} (alone it moves the outputs by {:.3g})\n", l.node, l.error);
  fmt::print(
      "{} of {} convolutions in int8; outputs move by {:.3g} (relative L2) on the first batch\n",
      r.quantized, r.layers.size(), r.error);
  OnnxExportOptions e;
  e.doc_string = "QDQ int8 from " + std::filesystem::path(model).filename().string() +
                 " by tandem quantize (" + calibration_method_name(r.method) + " calibration, " +
                 std::to_string(samples) + " samples)";
  save_onnx(q, o.out, e);
  fmt::print("wrote {}\n", o.out);
  return 0;
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* sub = app.add_subcommand(
      "quantize", "Quantize a model to int8 (QDQ ONNX) by calibrating on sample data");
  sub->add_option("model", o->model, "Model: .onnx, TF.js model.json, or an installed model's name")
      ->required();
  sub->add_option("--calibrate", o->calibrate,
                  "Folder of photos (through the model's preprocessing) or a .npy input")
      ->required();
  sub->add_option("--out,-o", o->out, "QDQ ONNX file to write")->required();
  sub->add_option(
         "--method", o->method,
         "Activation ranges: minmax, percentile, entropy, mse, or auto (the one that moves the "
         "outputs least)")
      ->check(CLI::IsMember({"auto", "minmax", "percentile", "entropy", "mse"}));
  sub->add_option("--activations", o->activations,
                  "Activation integers: u8 (for CPUs: oneDNN, ONNX Runtime) or s8, symmetric (for GPUs: "
                  "cuDNN's integer convolutions take only these)")
      ->check(CLI::IsMember({"u8", "s8"}));
  sub->add_option("--weight-rounding", o->weight_rounding,
                  "Integer weights: compensating (each rounding error spread over the weights not "
                  "yet rounded, by how the calibration inputs correlate: GPTQ) or nearest")
      ->check(CLI::IsMember({"compensating", "nearest"}));
  sub->add_option("--percentile", o->percentile, "Percentile for --method percentile")
      ->check(CLI::Range(50.0, 100.0));
  sub->add_option("--samples", o->samples, "Calibration samples at most")
      ->check(CLI::PositiveNumber);
  sub->add_option("--batch", o->batch, "Calibration batch size")->check(CLI::PositiveNumber);
  sub->add_option("--float-layers", o->float_layers,
                  "Convolutions kept in float, the ones that lose most (-1: chosen by measurement)")
      ->check(CLI::Range(-1, 1 << 20));
  sub->add_option("--threads", o->threads, "CPU threads (0: all cores)");
  on_run(sub, [o] { return quantize_command(*o); });
}

}  // namespace tandem::cli
