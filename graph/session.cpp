#include "graph/session.h"

#include <algorithm>
#include <iostream>
#include <optional>

#include "cpu/cpu_backend.h"
#ifdef TANDEM_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif
#include "graph/batch_split.h"
#include "graph/partition.h"
#include "graph/passes.h"
#include "ops/schema.h"
#include "profile/zone.h"

namespace tandem {

Precision parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::fp32;
  if (s == "tf32") return Precision::tf32;
  if (s == "fp16") return Precision::fp16;
  if (s == "bf16") return Precision::bf16;
  throw Error("unknown precision '" + s + "' (fp32, tf32, fp16 or bf16)");
}

Backend& open_backend(const Device& d) {
  TANDEM_ZONE_CAT("open backend (first use: CUDA context, handles)", "graph");
  if (d.is_cpu()) return cpu::cpu_backend();
#ifdef TANDEM_HAVE_CUDA
  if (d.kind == DeviceKind::cuda) return cuda::cuda_backend(d.index);
#endif
  throw Error("device " + d.str() + " is not available in this build (built without CUDA)");
}

namespace {

bool specialized(const TensorDesc& d, bool shape_argument) {
  int64_t n = d.numel();
  bool integral = d.dtype == DType::i64 || d.dtype == DType::i32 || d.dtype == DType::boolean;
  return ((integral || shape_argument) && n <= 64) || n <= 1;
}

// Per graph input: whether some node reads it where its schema takes a float
// shape argument.
std::vector<bool> shape_arguments(const Graph& g) {
  std::vector<bool> of_value(g.values.size(), false);
  for (const Node& n : g.nodes) {
    if (n.dead) continue;
    for (int i : ops::value_inputs(n.op_type)) {
      ValueId v = size_t(i) < n.inputs.size() ? n.inputs[size_t(i)] : kNoValue;
      if (v != kNoValue) of_value[size_t(v)] = true;
    }
  }
  std::vector<bool> r;
  for (ValueId v : g.inputs) r.push_back(of_value[size_t(v)]);
  return r;
}

// Cache key: every input's shape, plus the bytes of specialized inputs.
std::string plan_key(const std::vector<Shape>& shapes, const std::vector<Tensor>& values) {
  std::string k;
  for (size_t i = 0; i < shapes.size(); ++i) {
    k += shape_str(shapes[i]);
    if (i < values.size() && values[i].defined()) {
      k += "=";
      k.append(static_cast<const char*>(values[i].raw()), values[i].bytes());
    }
    k += ";";
  }
  return k;
}

// The input shapes without dim 0: what the batch that fits is remembered for.
std::string sample_key(const std::vector<Tensor>& inputs) {
  std::string k;
  for (const Tensor& t : inputs) k += shape_str(Shape(t.shape().begin() + 1, t.shape().end())) + ";";
  return k;
}

int live_nodes(const Graph& g) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.dead ? 0 : 1;
  return n;
}
}  // namespace

Session::Session(Graph graph, SessionOptions options)
    : graph_(std::move(graph)),
      shape_argument_(shape_arguments(graph_)),
      options_(options),
      backend_(options.backend ? options.backend : &open_backend(options.device)) {
  cpu::set_num_threads(options_.threads);
  check_kernels_exist();
}

void Session::check_kernels_exist() const {
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    const Node& node = graph_.nodes[n];
    if (node.dead) continue;
    const OpDesc d = placement_desc(graph_, node);
    if (!backend_->supports(d) && !cpu::cpu_backend().supports(d))
      throw Error::unsupported("no backend has a kernel for this op", graph_.context(NodeId(n)));
  }
}

Session::~Session() = default;

std::vector<std::string> Session::input_names() const {
  std::vector<std::string> r;
  for (ValueId v : graph_.inputs) r.push_back(graph_.value(v).name);
  return r;
}

std::vector<std::string> Session::output_names() const {
  std::vector<std::string> r;
  for (ValueId v : graph_.outputs) r.push_back(graph_.value(v).name);
  return r;
}

DType Session::low_dtype() const {
  switch (options_.precision) {
    case Precision::fp16: return DType::f16;
    case Precision::bf16: return DType::bf16;
    default: return DType::f32;
  }
}

std::vector<TensorDesc> Session::input_descs() const {
  std::vector<TensorDesc> r;
  for (ValueId v : graph_.inputs) {
    DType t = graph_.value(v).dtype;
    if (t == DType::f32 && options_.low_precision_inputs && low_dtype() != DType::f32) t = low_dtype();
    r.push_back({t, graph_.value(v).shape});
  }
  return r;
}

// Shapes and types inferred, constant subgraphs evaluated on the host.
static void fold(Graph& g, bool keep_dequantize = false) {
  TANDEM_ZONE_CAT("infer shapes + fold constants", "graph");
  infer_and_fold(g, cpu::cpu_backend(), keep_dequantize);
  g.compact();
}

PartitionedPlan& Session::plan_locked(const std::vector<Shape>& shapes, const std::vector<Tensor>& values) {
  std::string key = plan_key(shapes, values);
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  TANDEM_ZONE_CAT("compile plan", "graph");
  check(shapes.size() == graph_.inputs.size(),
        "model takes " + std::to_string(graph_.inputs.size()) + " inputs, got " + std::to_string(shapes.size()),
        {graph_.source, "", "", ""});
  Graph g = [&] {
    TANDEM_ZONE_CAT("copy graph", "graph");
    return graph_;
  }();
  std::map<std::string, Shape> named;
  for (size_t i = 0; i < shapes.size(); ++i) named[g.value(g.inputs[i]).name] = shapes[i];
  CompileReport rep;
  rep.nodes_before = live_nodes(g);
  bind_input_shapes(g, named);
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].defined()) g.value(g.inputs[i]).constant = values[i].clone();
  // Optimized, a QDQ model's convolutions run on integers where the
  // backend's integer convolution takes their form (fuse_qdq below,
  // graph/passes.h): the first fold keeps the weights' DequantizeLinear for
  // it, and the last folds what it left to floats.
  fold(g, options_.optimize);
  if (options_.optimize) {
    TANDEM_ZONE_CAT("fold batchnorm + fuse epilogues", "graph");
    rep.gelus_fused = fuse_gelu(g);
    // The GPU adds a bias in cuBLASLt's epilogue for free; on the CPU
    // oneDNN's matmul and a separate add beat its Gemm (ViT-B/16, batch 1,
    // 2 threads: 185 ms against 215).
    if (!backend_->device().is_cpu()) rep.matmul_biases_fused = fuse_matmul_bias(g);
    rep.batchnorms_folded = fold_batchnorm(g);
    rep.epilogues_fused = fuse_conv_epilogues(g);
    rep.convs_quantized =
        fuse_qdq(g, backend_->device().is_cpu() ? cpu_integer_conv_form() : gpu_integer_conv_form(),
                 &rep.convs_left_float);
    // On the CPU oneDNN's matmuls with the head copies beat the fused op's
    // loops (cpu/attention.cpp); on the GPU the copies are the cost.
    if (!backend_->device().is_cpu()) rep.attentions_fused = fuse_attention(g);
    fold(g);
  }
  g.allow_tf32 = options_.precision == Precision::tf32;
  if (options_.precision == Precision::fp16 || options_.precision == Precision::bf16) {
    {
      TANDEM_ZONE_CAT("lower precision", "graph");
      lower_precision(g, low_dtype(), options_.low_precision_inputs);
    }
    fold(g);
  }
  rep.nodes_after = live_nodes(g);
  TANDEM_ZONE_CAT("build plan (prepare kernels)", "graph");
  PartitionOptions po;
  po.strict = options_.strict_device;
  auto plan = std::make_unique<PartitionedPlan>(g, *backend_, cpu::cpu_backend(), po);
  rep.plan = plan->stats();
  report_ = rep;
  fallback_ = plan->fallback();
  say_fallback();
  say_float_convs();
  return *(plans_[key] = std::move(plan));
}

// Once per session: a run on the CPU that the user asked to run on a GPU is
// slower than they think, and they should know which ops are to blame.
void Session::say_fallback() {
  if (fallback_said_ || fallback_.nodes == 0) return;
  fallback_said_ = true;
  std::cerr << "tandem: " << fallback_.nodes << (fallback_.nodes == 1 ? " op has" : " ops have") << " no kernel on "
            << backend_->name() << " and run" << (fallback_.nodes == 1 ? "s" : "") << " on the CPU: " << fallback_.ops
            << " (first: node '" << fallback_.first_node << "'); " << fallback_.crossings << " copies between devices, "
            << fallback_.crossing_bytes / 1024 << " KiB a run; --strict-device makes this an error\n";
}

// Once per session: a QDQ model whose convolutions run in float where the
// user expects integers.
void Session::say_float_convs() {
  if (float_convs_said_ || report_.convs_left_float == 0) return;
  float_convs_said_ = true;
  std::cerr << "tandem: " << report_.convs_left_float << " of "
            << report_.convs_left_float + report_.convs_quantized
            << " quantized convolutions run in float on " << backend_->name()
            << (backend_->device().is_cpu()
                    ? ": their operands are not 8-bit per-tensor activations and i8 weights\n"
                    : ": the GPU's integer convolutions take symmetric s8 activations "
                      "(zero point 0), 2-D with one group and equal pads, ReLU or no "
                      "activation, and channels in multiples of 16 (tandem quantize "
                      "--activations s8 writes such models)\n");
}

FallbackInfo Session::fallback() const { return fallback_; }

double Session::fallback_ms() const {
  double ms = 0;
  for (const auto& [key, plan] : plans_) ms += plan->fallback_ms();
  return ms;
}

const PartitionedPlan& Session::plan_for(const std::vector<Shape>& input_shapes) {
  std::lock_guard<std::mutex> lock(mutex_);
  return plan_locked(input_shapes, {});
}

Session::PlanRequest Session::plan_request(const std::vector<Tensor>& inputs) const {
  PlanRequest r;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    r.shapes.push_back(t.defined() ? t.shape() : Shape{});
    bool shape_argument = i < shape_argument_.size() && shape_argument_[i];
    bool spec = t.defined() && t.device().is_cpu() && t.layout() == Layout::plain &&
                specialized(t.desc(), shape_argument);
    r.values.push_back(spec ? t : Tensor());
  }
  return r;
}

PartitionedPlan& Session::plan_for_inputs(const std::vector<Tensor>& inputs) {
  PlanRequest r = plan_request(inputs);
  return plan_locked(r.shapes, r.values);
}

const PartitionedPlan& Session::prepare(const std::vector<Tensor>& inputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  return plan_for_inputs(inputs);
}

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t batch = shared_batch(inputs, input_descs());
  return batch > 1 ? run_batched(inputs, batch) : run_whole(inputs);
}

// A plan that ran out of memory is dropped, and the backend's pooled memory
// released, so that a retry on a smaller batch finds that memory free.
std::vector<Tensor> Session::run_whole(const std::vector<Tensor>& inputs) {
  PlanRequest r = plan_request(inputs);
  try {
    return plan_locked(r.shapes, r.values).run(inputs);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::out_of_memory) {
      plans_.erase(plan_key(r.shapes, r.values));
      backend_->release_cached_memory();
    }
    throw;
  }
}

std::vector<Tensor> Session::run_batched(const std::vector<Tensor>& inputs, int64_t batch) {
  std::string key = sample_key(inputs);
  auto known = fitting_batch_.find(key);
  int64_t chunk = known == fitting_batch_.end() ? batch : std::min(batch, known->second);
  std::vector<std::vector<Tensor>> parts;
  std::vector<int64_t> counts;
  int64_t fit = 0;
  for (int64_t begin = 0; begin < batch; begin += chunk) {
    int64_t count = std::min(chunk, batch - begin);
    parts.push_back(run_halving(count == batch ? inputs : batch_rows(inputs, begin, count), count, fit));
    counts.push_back(count);
  }
  if (fit < chunk) {
    fitting_batch_[key] = fit;
    std::cerr << "tandem: warning: a batch of " << batch << " does not fit in the memory of " << backend_->name()
              << "; running it in batches of " << fit << "\n";
  }
  if (parts.size() == 1) return std::move(parts[0]);
  check(joinable(parts, counts), "the model's outputs are not batched along dim 0", {graph_.source, "", "", ""});
  return join_batches(parts);
}

// Out of memory on more than one row: each half on its own (halved again
// as needed). When the halves cannot stand for the whole (their outputs are
// not batched along dim 0, or a smaller batch is not valid for the model),
// the original error stands.
std::vector<Tensor> Session::run_halving(const std::vector<Tensor>& inputs, int64_t batch, int64_t& fit) {
  std::optional<Error> oom;
  try {
    std::vector<Tensor> out = run_whole(inputs);
    fit = std::max(fit, batch);
    return out;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::out_of_memory || batch <= 1) throw;
    oom = e;
  }
  int64_t half = (batch + 1) / 2;
  try {
    std::vector<std::vector<Tensor>> parts;
    parts.push_back(run_halving(batch_rows(inputs, 0, half), half, fit));
    parts.push_back(run_halving(batch_rows(inputs, half, batch - half), batch - half, fit));
    if (joinable(parts, {half, batch - half})) return join_batches(parts);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::out_of_memory) throw;
  }
  throw *oom;
}

StepTimes Session::time_steps(const std::vector<Tensor>& inputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  PartitionedPlan& plan = plan_for_inputs(inputs);
  return {&plan, plan.time_steps(inputs)};
}

std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& inputs) {
  std::vector<Tensor> ordered;
  for (ValueId v : graph_.inputs) {
    auto it = inputs.find(graph_.value(v).name);
    check(it != inputs.end(), "missing input '" + graph_.value(v).name + "'", {graph_.source, "", "", ""});
    ordered.push_back(it->second);
  }
  check(inputs.size() == ordered.size(), "unknown input name given", {graph_.source, "", "", ""});
  return run(ordered);
}

}  // namespace tandem
