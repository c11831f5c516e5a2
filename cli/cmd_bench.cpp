// `tandem bench MODEL --batch B`: steady-state throughput and latency on
// random inputs. The first run (which compiles the plan) is reported apart;
// the last line is JSON for scripts.
#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <cstring>
#include <random>

#include "cli/commands.h"
#include "cli/common.h"
#ifdef TANDEM_HAVE_CUDA
#include "cuda/context.h"
#include "cuda/device_buffer.h"
#endif
#include "pipeline/model_store.h"
#include "cpu/cpu_backend.h"
#include "profile/clock.h"
#include "profile/session.h"

namespace tandem::cli {

namespace {

struct BenchOptions {
  std::string model;
  int64_t batch = 1;
  int iterations = 20;
  int warmup = 3;
  double min_seconds = 0;
  std::vector<std::string> outputs;  // TF.js: tensors to compute instead of the signature's
  CommonOptions common;
};

// Random input for a declared type: batch fills the first dynamic extent.
Tensor make_input(const TensorDesc& d, int64_t batch, uint64_t seed) {
  Shape s = d.shape;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] >= 0) continue;
    check(i == 0, "input has a dynamic extent other than the batch: " + shape_str(d.shape));
    s[i] = batch;
  }
  if (!s.empty() && d.shape[0] >= 0 && d.shape[0] != batch)
    throw Error("model has a fixed batch of " + std::to_string(d.shape[0]) + ", --batch " + std::to_string(batch) + " asked");
  Tensor t = Tensor::empty(d.dtype, s);
  std::mt19937 rng{static_cast<uint32_t>(seed)};
  if (d.dtype == DType::f32) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  } else {
    std::memset(t.raw(), 0, t.bytes());
  }
  return t;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = size_t(std::min<double>(double(v.size() - 1), p / 100.0 * double(v.size() - 1) + 0.5));
  return v[i];
}

int bench_command(BenchOptions& o) {
  o.model = pipeline::resolve_model(o.model.empty() ? pipeline::kDefaultModel : o.model);
  profile::TraceSession trace(o.common.trace_path);
  ModelLoadOptions load;
  load.tfjs.outputs = o.outputs;
  // TF.js converters fix the batch to 1; the convolutional part rarely cares.
  load.tfjs.dynamic_batch = o.batch != 1;
  Session s = open_model(o.model, o.common, load);
  std::vector<Tensor> inputs;
  uint64_t seed = 1;
  for (const TensorDesc& d : s.input_descs()) inputs.push_back(make_input(d, o.batch, seed++));
  uint64_t t0 = profile::now_ns();
  s.run(inputs);
  double first_ms = double(profile::now_ns() - t0) / 1e6;
  for (int i = 1; i < o.warmup; ++i) s.run(inputs);
  std::vector<double> ms;
  uint64_t start = profile::now_ns();
  while (int(ms.size()) < o.iterations || double(profile::now_ns() - start) / 1e9 < o.min_seconds) {
    uint64_t a = profile::now_ns();
    s.run(inputs);
    ms.push_back(double(profile::now_ns() - a) / 1e6);
  }
  double total_s = double(profile::now_ns() - start) / 1e9;
  double ips = double(o.batch) * double(ms.size()) / total_s;
  const CompileReport& rep = s.last_compile();
  fmt::print("model {}  batch {}  threads {}  device {}\n", o.model, o.batch, cpu::num_threads(), o.common.device);
  fmt::print("compile+first run {:.1f} ms; {} nodes -> {} steps ({} BN folded, {} fused, {} reorders); arena {:.1f} MiB (unplanned {:.1f} MiB)\n",
             first_ms, rep.nodes_before, rep.plan.steps, rep.batchnorms_folded, rep.epilogues_fused,
             rep.plan.reorders, double(rep.plan.arena_bytes) / 1048576.0, double(rep.plan.unplanned_bytes) / 1048576.0);
  fmt::print("{} iterations: {:.2f} img/s; latency ms p50 {:.2f} p90 {:.2f} p99 {:.2f} min {:.2f}\n", ms.size(), ips,
             percentile(ms, 50), percentile(ms, 90), percentile(ms, 99), percentile(ms, 0));
  nlohmann::json j = {{"model", o.model},
                      {"batch", o.batch},
                      {"threads", cpu::num_threads()},
                      {"device", o.common.device},
                      {"iterations", ms.size()},
                      {"img_per_s", ips},
                      {"first_run_ms", first_ms},
                      {"latency_ms",
                       {{"p50", percentile(ms, 50)}, {"p90", percentile(ms, 90)}, {"p99", percentile(ms, 99)}, {"min", percentile(ms, 0)}}}};
  j["precision"] = o.common.precision;
#ifdef TANDEM_HAVE_CUDA
  // The device pool's high-water mark: weights, arena, inputs, workspaces.
  if (Device d = resolve_device(o.common); d.kind == DeviceKind::cuda) {
    j["device"] = d.str();
    // Pool (arena, inputs, workspaces) plus kernels' own buffers (weights);
    // the two peaks may not coincide, so this bounds the true peak from above.
    j["device_peak_bytes"] = cuda::pool_peak_bytes(d.index) + cuda::device_buffer_peak_bytes();
  }
#endif
  fmt::print("{}\n", j.dump());
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand("bench", "Measure throughput and latency on random inputs");
  sub->add_option("model", o->model,
                  "Model: .onnx, TF.js model.json, or an installed model's name (default: the shipped detector)");
  sub->add_option("--batch,-b", o->batch, "Batch size")->check(CLI::PositiveNumber);
  sub->add_option("--outputs", o->outputs,
                  "TF.js models: tensors to compute (e.g. the network heads without batch-1 post-processing)")
      ->delimiter(',');
  sub->add_option("--iterations,-n", o->iterations, "Timed runs")->check(CLI::PositiveNumber);
  sub->add_option("--warmup", o->warmup, "Untimed runs first (the first compiles)")->check(CLI::PositiveNumber);
  sub->add_option("--min-seconds", o->min_seconds, "Keep running until this much time has passed");
  add_common_options(sub, o->common);
  on_run(sub, [o] { return bench_command(*o); });
}

}  // namespace tandem::cli
