#include "cli/common.h"

#include <fmt/core.h>

#include <mutex>
#include <optional>

#include "cli/calibration_data.h"
#include "cli/int8_cache.h"
#include "formats/load_model.h"
#include "graph/post_training.h"
#include "pipeline/sql.h"
#ifdef TANDEM_HAVE_CUDA
#include "cuda/context.h"
#endif

namespace tandem::cli {

void add_common_options(CLI::App* sub, CommonOptions& opts) {
  sub->add_option("--trace", opts.trace_path, "Write a Chrome trace (Perfetto) of the run to FILE");
  sub->add_option("--profile", opts.profile_dir,
                  "Profile the run into DIR: trace.json, summary.txt (where the time went; also printed) and "
                  "summary.json (for tandem profile-diff)");
  sub->add_option("--threads", opts.threads, "CPU compute threads (0 = all cores)")->check(CLI::NonNegativeNumber);
  sub->add_option("--device", opts.device,
                  "cpu, cuda[:N], cuda:all or a list (tag: a pipeline on each GPU) or auto (default: the GPU when one is "
                  "present, else the CPU)");
  sub->add_option("--precision", opts.precision,
                  "fp32, tf32, fp16, bf16, int8 (quantized after calibrating on --calibrate; s8 on a GPU) or "
                  "auto: fp16 on a GPU, fp32 on the CPU (inputs and outputs stay float32; default: " +
                      opts.precision + ")")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16", "int8", "auto"}));
  sub->add_option("--calibrate", opts.calibrate,
                  "--precision int8: photos (through the model's preprocessing) or a .npy input to calibrate on");
  sub->add_option("--float-layers", opts.float_layers,
                  "--precision int8: convolutions kept in float, the ones that lose most (-1: chosen by measurement)")
      ->check(CLI::Range(-1, 1 << 20));
  sub->add_flag("--strict-device", opts.strict_device,
                "Fail when an op has no kernel on the device, instead of running it on the CPU");
}

profile::SessionOutputs session_outputs(const CommonOptions& opts) {
  return {opts.trace_path, opts.profile_dir};
}

Device resolve_device(const CommonOptions& opts) {
  if (opts.device != "auto") return Device::parse(opts.device);
#ifdef TANDEM_HAVE_CUDA
  if (cuda::device_count() > 0) return Device::cuda(0);
  // Said once per process by a CUDA build: auto is the default, and a user
  // expecting the GPU should learn why the run is slow.
  static std::once_flag said;
  std::call_once(said, [] { fmt::print(stderr, "tandem: no CUDA GPU found; --device auto runs on the CPU\n"); });
#endif
  return Device::cpu();
}

std::vector<Device> resolve_devices(const CommonOptions& opts) {
  if (opts.device.find(',') != std::string::npos) {
    std::vector<Device> listed;
    for (size_t start = 0; start <= opts.device.size();) {
      const size_t end = std::min(opts.device.find(',', start), opts.device.size());
      listed.push_back(Device::parse(std::string_view(opts.device).substr(start, end - start)));
      start = end + 1;
    }
    // One precision and one set of thread counts serve every pipeline.
    for (const Device& d : listed)
      check(d.kind == listed.front().kind, "--device " + opts.device + ": list devices of one kind");
    return listed;
  }
  if (opts.device != "cuda:all") return {resolve_device(opts)};
  std::vector<Device> all;
#ifdef TANDEM_HAVE_CUDA
  for (int i = 0; i < cuda::device_count(); ++i) all.push_back(Device::cuda(i));
  check(!all.empty(), "--device cuda:all: no CUDA GPU found");
#else
  check(false, "--device cuda:all: this tandem was built without CUDA");
#endif
  return all;
}

Precision resolve_precision(const CommonOptions& opts, const Device& device) {
  if (opts.precision == "auto") return device.kind == DeviceKind::cuda ? Precision::fp16 : Precision::fp32;
  check_supported(opts.precision != "int8",
                  "--precision int8 is for run, bench, tag, detect and faces");
  return parse_precision(opts.precision);
}

namespace {

Graph int8_graph(Graph g, const std::string& model, const CommonOptions& opts) {
  check(!opts.calibrate.empty(), "--precision int8 needs --calibrate DIR|FILE.npy (or a model tandem quantize wrote)");
  std::vector<Tensor> batches = calibration_batches({model, opts.calibrate, 64, 8, opts.threads});
  return quantize_for_device(std::move(g), batches, opts, "", opts.calibrate);
}

}  // namespace

Graph quantize_for_device(Graph g, const std::vector<Tensor>& batches, const CommonOptions& opts,
                          const std::string& name, const std::string& source) {
  PtqOptions p;
  p.threads = opts.threads;
  p.float_layers = opts.float_layers;
  p.activations = resolve_device(opts).is_cpu() ? DType::u8 : DType::i8;
  const std::string cached = int8_cache_path(g, batches, p);
  if (std::optional<Graph> q = load_cached_int8(cached)) {
    fmt::print(stderr, "tandem: int8: {}quantized before on the same calibration data: {}\n",
               name.empty() ? "" : name + ": ", cached);
    return std::move(*q);
  }
  PtqReport r;
  Graph q = quantize_post_training(std::move(g), batches, p, &r);
  fmt::print(stderr,
             "tandem: int8: {}{} of {} convolutions quantized ({} activations, {} calibration on {}), outputs move "
             "by {:.3g}\n",
             name.empty() ? "" : name + ": ", r.quantized, r.layers.size(), dtype_name(p.activations),
             calibration_method_name(r.method), source, r.error);
  store_cached_int8(q, cached);
  return q;
}

Precision graph_precision(const CommonOptions& opts, const Device& device) {
  return opts.precision == "int8" ? Precision::fp32 : resolve_precision(opts, device);
}

std::function<Graph(Graph)> int8_rewrite(const std::string& model, const CommonOptions& opts) {
  if (opts.precision != "int8") return {};
  return [model, opts](Graph g) { return int8_graph(std::move(g), model, opts); };
}

SessionOptions session_options(const CommonOptions& opts, bool low_precision_inputs) {
  SessionOptions so;
  so.low_precision_inputs = low_precision_inputs;
  so.device = resolve_device(opts);
  so.precision = graph_precision(opts, so.device);
  so.threads = opts.threads;
  so.strict_device = opts.strict_device;
  return so;
}

Session open_model(const std::string& path, const CommonOptions& opts, const ModelLoadOptions& load,
                   bool low_precision_inputs) {
  SessionOptions so = session_options(opts, low_precision_inputs);
  check_supported(load.tfjs.outputs.empty() || is_tfjs_model_path(path),
                  "choosing outputs is supported for TF.js models only", {path, "", "", ""});
  Graph g = load_model(path, load);
  if (auto int8 = int8_rewrite(path, opts)) g = int8(std::move(g));
  return Session(std::move(g), so);
}


void say_fallback_cost(const Session& s, double wall_s) {
  FallbackInfo f = s.fallback();
  if (f.nodes == 0) return;
  double secs = s.fallback_ms() / 1e3;
  fmt::print(stderr, "tandem: CPU fallback ({}) took {:.2f} s{}, plus {} copies of {} KiB between devices a run\n",
             f.ops, secs, wall_s > 0 ? fmt::format(" ({:.0f}% of the run)", 100 * secs / wall_s) : "", f.crossings,
             f.crossing_bytes / 1024);
}

std::string sanitize_name(const std::string& name) {
  std::string r;
  for (char c : name) r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  return r.empty() ? "output" : r;
}

CLI::Validator existing_catalog() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (pipeline::sql::is_postgres_url(value)) return "";
        return CLI::ExistingFile(value);
      },
      "FILE|URL");
}

}  // namespace tandem::cli
