// `tandem bench MODEL --batch B`: steady-state throughput and latency on
// random inputs. The first run (which compiles the plan) is reported apart;
// the last line is JSON for scripts.
#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <cstring>
#include <map>
#include <random>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/half.h"
#ifdef TANDEM_HAVE_CUDA
#include "cuda/context.h"
#endif
#include "pipeline/detector.h"
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
  bool host_input = false;  // GPU: copy the input from host memory at every run
  bool low_input = false;   // fp16/bf16: the input in that type (SessionOptions::low_precision_inputs)
  int per_op = 0;           // print the slowest op types and steps, each timed alone
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
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  if (d.dtype == DType::f32) {
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  } else if (d.dtype == DType::f16 || d.dtype == DType::bf16) {
    auto* h = static_cast<uint16_t*>(t.raw());
    for (int64_t i = 0; i < t.numel(); ++i) h[i] = d.dtype == DType::f16 ? float_to_f16(u(rng)) : float_to_bf16(u(rng));
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

// On a GPU the batch is uploaded once, as a model server or the tag
// pipeline hands it over already on the device; --host-input measures the
// per-run copy too.
class DeviceInputs {
 public:
  DeviceInputs() = default;
  DeviceInputs(const DeviceInputs&) = delete;
  DeviceInputs& operator=(const DeviceInputs&) = delete;
  ~DeviceInputs() {
    for (void* p : held_) backend_->deallocate(p);
  }
  std::vector<Tensor> place(std::vector<Tensor> host, Backend& backend) {
    if (backend.device().is_cpu()) return host;
    backend_ = &backend;
    for (Tensor& t : host) {
      held_.push_back(backend.allocate(t.bytes()));
      backend.copy_from_host(held_.back(), t.raw(), t.bytes());
      t = Tensor::wrap(t.desc(), held_.back(), backend.device());
    }
    backend.synchronize();
    return host;
  }

 private:
  Backend* backend_ = nullptr;
  std::vector<void*> held_;
};

// One step of a plan's part, with its time when run alone.
struct TimedStep {
  const Step* step;
  const ExecutionPlan* plan;
  bool on_cpu_fallback;
  double ms;
};

// Where the time of one run goes: op types by total, then the slowest steps.
void print_per_op(const StepTimes& t, int top) {
  std::vector<TimedStep> steps;
  for (size_t p = 0; p < t.plan->parts().size(); ++p) {
    const PartitionedPlan::Part& part = t.plan->parts()[p];
    for (size_t i = 0; i < part.plan->steps().size(); ++i)
      if (part.plan->steps()[i].kernel) steps.push_back({&part.plan->steps()[i], part.plan.get(), part.on_fallback, t.ms[p][i]});
  }
  std::map<std::string, std::pair<double, int>> by_type;
  double total = 0;
  for (const TimedStep& s : steps) {
    auto& e = by_type[s.step->op_type + (s.on_cpu_fallback ? " (cpu fallback)" : "")];
    e.first += s.ms, e.second += 1, total += s.ms;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> types(by_type.begin(), by_type.end());
  std::sort(types.begin(), types.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
  fmt::print("per op type (each step run alone, synchronized; total {:.3f} ms):\n", total);
  for (auto& [name, e] : types)
    fmt::print("  {:<24} {:>4} steps {:>9.3f} ms {:>5.1f}%\n", name, e.second, e.first, 100 * e.first / total);
  std::sort(steps.begin(), steps.end(), [](const TimedStep& a, const TimedStep& b) { return a.ms > b.ms; });
  fmt::print("slowest steps:\n");
  for (size_t k = 0; k < steps.size() && int(k) < top; ++k) {
    const Step& st = *steps[k].step;
    std::string shapes;
    for (int s : st.outputs) shapes += " " + steps[k].plan->slot_desc(s).str();
    fmt::print("  {:>8.3f} ms  {:<14} {:<40}{}{}\n", steps[k].ms, st.op_type, st.node, shapes,
               steps[k].on_cpu_fallback ? " (cpu fallback)" : "");
  }
}

int bench_command(BenchOptions& o) {
  // The default model is the detector `tandem tag` runs, timed as tag runs
  // it (its peaks ranked per image in the graph); the graph's own
  // post-processing takes a batch of one.
  bool default_model = o.model.empty() || o.model == pipeline::kDefaultModel;
  o.model = pipeline::resolve_model(o.model.empty() ? pipeline::kDefaultModel : o.model);
  profile::TraceSession trace(session_outputs(o.common));
  Session s = [&] {
    if (default_model && o.outputs.empty()) {
      pipeline::DetectorOptions det;
      det.model = o.model;
      det.rewrite = int8_rewrite(o.model, o.common);
      return Session(pipeline::detector_graph(det), session_options(o.common, o.low_input));
    }
    ModelLoadOptions load;
    load.tfjs.outputs = o.outputs;
    // TF.js converters fix the batch to 1; the convolutional part rarely cares.
    load.tfjs.dynamic_batch = o.batch != 1;
    return open_model(o.model, o.common, load, o.low_input);
  }();
  std::vector<Tensor> inputs;
  uint64_t seed = 1;
  for (const TensorDesc& d : s.input_descs()) inputs.push_back(make_input(d, o.batch, seed++));
  const Device device = s.options().device;
  DeviceInputs on_device;
  if (!o.host_input) inputs = on_device.place(std::move(inputs), s.backend());
  uint64_t t0 = profile::now_ns();
  s.run(inputs);
  double first_ms = double(profile::now_ns() - t0) / 1e6;
  for (int i = 1; i < o.warmup; ++i) s.run(inputs);
  // Device memory: the high-water mark so far includes preparation's
  // transient buffers (algorithm search); the timed runs are measured apart.
  size_t setup_peak = 0;
  (void)setup_peak;  // CPU-only builds
#ifdef TANDEM_HAVE_CUDA
  if (device.kind == DeviceKind::cuda) {
    setup_peak = cuda::device_peak_bytes();
    cuda::reset_device_peak();
  }
#endif
  std::vector<double> ms;
  uint64_t start = profile::now_ns();
  while (int(ms.size()) < o.iterations || double(profile::now_ns() - start) / 1e9 < o.min_seconds) {
    uint64_t a = profile::now_ns();
    s.run(inputs);
    ms.push_back(double(profile::now_ns() - a) / 1e6);
  }
  double total_s = double(profile::now_ns() - start) / 1e9;
  if (o.per_op > 0) print_per_op(s.time_steps(inputs), o.per_op);
  double ips = double(o.batch) * double(ms.size()) / total_s;
  const CompileReport& rep = s.last_compile();
  fmt::print("model {}  batch {}  threads {}  device {}\n", o.model, o.batch, cpu::num_threads(), device.str());
  fmt::print("compile+first run {:.1f} ms; {} nodes -> {} steps ({} BN folded, {} fused, {} reorders); arena {:.1f} MiB (unplanned {:.1f} MiB)\n",
             first_ms, rep.nodes_before, rep.plan.steps, rep.batchnorms_folded, rep.epilogues_fused,
             rep.plan.reorders, double(rep.plan.arena_bytes) / 1048576.0, double(rep.plan.unplanned_bytes) / 1048576.0);
  fmt::print("{} iterations: {:.2f} img/s; latency ms p50 {:.2f} p90 {:.2f} p99 {:.2f} min {:.2f}\n", ms.size(), ips,
             percentile(ms, 50), percentile(ms, 90), percentile(ms, 99), percentile(ms, 0));
  nlohmann::json j = {{"model", o.model},
                      {"batch", o.batch},
                      {"threads", cpu::num_threads()},
                      {"device", device.str()},
                      {"iterations", ms.size()},
                      {"img_per_s", ips},
                      {"first_run_ms", first_ms},
                      {"latency_ms",
                       {{"p50", percentile(ms, 50)}, {"p90", percentile(ms, 90)}, {"p99", percentile(ms, 99)}, {"min", percentile(ms, 0)}}}};
  j["precision"] = o.common.precision;
  j["input"] = device.is_cpu() || o.host_input ? "host" : "device";
  j["input_dtype"] = std::string(dtype_name(s.input_descs().empty() ? DType::f32 : s.input_descs()[0].dtype));
#ifdef TANDEM_HAVE_CUDA
  if (device.kind == DeviceKind::cuda) {
    // What tandem holds on the device: weights, arena, inputs, scratch.
    j["device_peak_bytes"] = cuda::device_peak_bytes();
    j["device_peak_with_setup_bytes"] = std::max(setup_peak, cuda::device_peak_bytes());
  }
#endif
  j["cpu_fallback_ops"] = s.fallback().ops;
  say_fallback_cost(s, total_s);
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
                  "TF.js models: tensors to compute (e.g. the network heads without batch-1 "
                  "post-processing; without it the default model runs as tag runs it)")
      ->delimiter(',');
  sub->add_option("--iterations,-n", o->iterations, "Timed runs")->check(CLI::PositiveNumber);
  sub->add_option("--warmup", o->warmup, "Untimed runs first (the first compiles)")->check(CLI::PositiveNumber);
  sub->add_flag("--host-input", o->host_input,
                "GPU: copy the batch from host memory at every run (default: uploaded once)");
  sub->add_flag("--low-precision-input", o->low_input,
                "fp16/bf16: take the input in that type, as a half model in PyTorch does (no float32 copy, no cast)");
  sub->add_option("--per-op", o->per_op, "After timing, run each step alone and print the N slowest")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--min-seconds", o->min_seconds, "Keep running until this much time has passed");
  add_common_options(sub, o->common);
  on_run(sub, [o] { return bench_command(*o); });
}

}  // namespace tandem::cli
