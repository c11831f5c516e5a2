#pragma once
// A loaded model ready to run: compiles an ExecutionPlan per distinct set of
// input shapes (a dynamic batch dimension gets one plan per batch size) and
// caches it, so repeated runs pay no preparation.
//
// Small integer or boolean inputs (<= 64 elements) and scalars are
// specialized: their values become constants of the plan and part of its
// cache key, so shape arguments fed at run time (Reshape's shape, Clip's
// bounds, Slice's starts) fold like initializers. So are small float inputs
// that an op reads as a shape argument (Resize's scales and roi; see
// ops::value_inputs).
//
// A batch that does not fit in device memory (ErrorKind::out_of_memory while
// compiling or running its plan) is run in halves, recursively, when every
// input has that batch as a dynamic dim 0 and every output is batched along
// dim 0 too; the outputs are joined, one warning goes to stderr, and later
// batches of the same per-sample shapes run in pieces of the size that fit.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/graph.h"
#include "graph/partitioned_plan.h"
#include "graph/plan.h"

namespace tandem {

enum class Precision { fp32, tf32, fp16, bf16 };

// "fp32", "tf32", "fp16", "bf16"; throws Error otherwise.
Precision parse_precision(const std::string& s);

struct SessionOptions {
  Device device = Device::cpu();
  int threads = 0;       // CPU compute threads; 0 = all cores
  bool optimize = true;  // BatchNorm folding and epilogue fusion
  // Arithmetic of the model's float work. Inputs and outputs stay float32;
  // fp16/bf16 run the graph in that type (graph/precision.cpp), tf32 lets
  // matrix units round float32 products.
  Precision precision = Precision::fp32;
  // fp16/bf16: float inputs are taken in that type instead of float32 (the
  // caller converts, as PyTorch's half model takes a half tensor): no float32
  // copy of the batch on the device and no cast step. input_descs() says so.
  bool low_precision_inputs = false;
  // The options most callers set: where, in what arithmetic, on how many
  // threads, and whether a CPU fallback is an error (strict_device below).
  static SessionOptions on(Device device, Precision precision = Precision::fp32, int threads = 0,
                           bool strict_device = false) {
    SessionOptions o;
    o.device = device, o.precision = precision, o.threads = threads, o.strict_device = strict_device;
    return o;
  }
  // Runs on this backend instead of the device's (not owned; must outlive
  // the session): for embedders with their own backend, and tests.
  Backend* backend = nullptr;
  // Nodes the device has no kernel for run on the CPU (graph/partition.h),
  // said once on stderr; strict makes them an error naming the node.
  bool strict_device = false;
};

struct CompileReport {
  int nodes_before = 0, nodes_after = 0;
  int batchnorms_folded = 0, epilogues_fused = 0, gelus_fused = 0, matmul_biases_fused = 0,
      attentions_fused = 0, convs_quantized = 0;
  // A QDQ model's convolutions the device's integer kernels do not take:
  // they run in float (said once on stderr).
  int convs_left_float = 0;
  PlanStats plan;
};

// Per step of each part of a plan, its time when run alone
// (ExecutionPlan::time_steps).
struct StepTimes {
  const PartitionedPlan* plan = nullptr;
  std::vector<std::vector<double>> ms;  // per part, per step
};

// The backend of a device, opened on first use (for a CUDA device: its
// context, stream and cuDNN/cuBLASLt handles, a few hundred ms). Thread-safe:
// a program may open it on another thread while it parses the model file.
Backend& open_backend(const Device& d);

class Session {
 public:
  Session(Graph graph, SessionOptions options = {});
  ~Session();

  // Inputs in the model's input order (see input_names()). A run that runs
  // out of memory drops its plan (see plan_for).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // Inputs by name; every model input must be given.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs);

  // Each step of the plan for these inputs timed alone (synchronized).
  StepTimes time_steps(const std::vector<Tensor>& inputs);

  std::vector<std::string> input_names() const;
  // f16 or bf16 for those precisions, else f32.
  DType low_dtype() const;
  std::vector<std::string> output_names() const;
  // Declared input types; -1 extents are dynamic.
  std::vector<TensorDesc> input_descs() const;
  const Graph& graph() const { return graph_; }
  const SessionOptions& options() const { return options_; }
  // The backend the session runs on (for host buffers it copies from fastest).
  Backend& backend() const { return *backend_; }

  // Compiles (or finds) the plan for these input shapes.
  const PartitionedPlan& plan_for(const std::vector<Shape>& input_shapes);
  // Compiles (or finds) the plan run(inputs) would use, specialized inputs
  // included, without running it: what the device cannot run is reported
  // here, apart from errors of the run itself.
  const PartitionedPlan& prepare(const std::vector<Tensor>& inputs);
  // What compiling the most recent new plan did.
  const CompileReport& last_compile() const { return report_; }
  // What ran on the CPU for want of a kernel on the device, in the most
  // recently compiled plan, and the time its CPU parts took over all runs of
  // all plans (ms). nodes == 0 when everything ran on the device.
  FallbackInfo fallback() const;
  double fallback_ms() const;

 private:
  // Per input: its shape, and its value when specialized (else undefined).
  struct PlanRequest {
    std::vector<Shape> shapes;
    std::vector<Tensor> values;
  };
  PlanRequest plan_request(const std::vector<Tensor>& inputs) const;
  PartitionedPlan& plan_for_inputs(const std::vector<Tensor>& inputs);
  PartitionedPlan& plan_locked(const std::vector<Shape>& shapes, const std::vector<Tensor>& values);
  // Throws, naming the node, when an op has a kernel on no backend: before
  // any input is read, not at the first run.
  void check_kernels_exist() const;
  void say_fallback();
  void say_float_convs();
  // Running with the mutex held: the whole batch in one plan; a batch in
  // pieces of the size known to fit; a batch halved until it fits (`fit`:
  // the largest piece that ran).
  std::vector<Tensor> run_whole(const std::vector<Tensor>& inputs);
  std::vector<Tensor> run_batched(const std::vector<Tensor>& inputs, int64_t batch);
  std::vector<Tensor> run_halving(const std::vector<Tensor>& inputs, int64_t batch, int64_t& fit);
  Graph graph_;
  // Per graph input: an op reads it as a float shape argument.
  std::vector<bool> shape_argument_;
  SessionOptions options_;
  Backend* backend_;
  std::map<std::string, std::unique_ptr<PartitionedPlan>> plans_;
  CompileReport report_;
  FallbackInfo fallback_;
  bool fallback_said_ = false, float_convs_said_ = false;
  // Per-sample input shapes -> the largest batch that ran after a larger one
  // ran out of memory.
  std::map<std::string, int64_t> fitting_batch_;
  std::mutex mutex_;
};

}  // namespace tandem
