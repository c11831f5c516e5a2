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
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/graph.h"
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
};

struct CompileReport {
  int nodes_before = 0, nodes_after = 0;
  int batchnorms_folded = 0, epilogues_fused = 0;
  PlanStats plan;
};

// Per step of a plan, its time when run alone (ExecutionPlan::time_steps).
struct StepTimes {
  const ExecutionPlan* plan = nullptr;
  std::vector<double> ms;
};

class Session {
 public:
  Session(Graph graph, SessionOptions options = {});
  ~Session();

  // Inputs in the model's input order (see input_names()).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // Inputs by name; every model input must be given.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs);

  // Each step of the plan for these inputs timed alone (synchronized).
  StepTimes time_steps(const std::vector<Tensor>& inputs);

  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;
  // Declared input types; -1 extents are dynamic.
  std::vector<TensorDesc> input_descs() const;
  const Graph& graph() const { return graph_; }
  const SessionOptions& options() const { return options_; }

  // Compiles (or finds) the plan for these input shapes.
  const ExecutionPlan& plan_for(const std::vector<Shape>& input_shapes);
  // Compiles (or finds) the plan run(inputs) would use, specialized inputs
  // included, without running it: what the device cannot run is reported
  // here, apart from errors of the run itself.
  const ExecutionPlan& prepare(const std::vector<Tensor>& inputs);
  // What compiling the most recent new plan did.
  const CompileReport& last_compile() const { return report_; }

 private:
  // `values[i]` is the value of a specialized input, undefined otherwise.
  ExecutionPlan& plan_for_inputs(const std::vector<Tensor>& inputs);
  ExecutionPlan& plan_locked(const std::vector<Shape>& shapes, const std::vector<Tensor>& values);
  Graph graph_;
  // Per graph input: an op reads it as a float shape argument.
  std::vector<bool> shape_argument_;
  SessionOptions options_;
  Backend* backend_;
  std::map<std::string, std::unique_ptr<ExecutionPlan>> plans_;
  CompileReport report_;
  std::mutex mutex_;
};

}  // namespace tandem
