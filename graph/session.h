#pragma once
// A loaded model ready to run: compiles an ExecutionPlan per distinct set of
// input shapes (a dynamic batch dimension gets one plan per batch size) and
// caches it, so repeated runs pay no preparation.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/graph.h"
#include "graph/plan.h"

namespace tandem {

struct SessionOptions {
  Device device = Device::cpu();
  int threads = 0;       // CPU compute threads; 0 = all cores
  bool optimize = true;  // BatchNorm folding and epilogue fusion
};

struct CompileReport {
  int nodes_before = 0, nodes_after = 0;
  int batchnorms_folded = 0, epilogues_fused = 0;
  PlanStats plan;
};

class Session {
 public:
  Session(Graph graph, SessionOptions options = {});
  ~Session();

  // Inputs in the model's input order (see input_names()).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // Inputs by name; every model input must be given.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs);

  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;
  // Declared input types; -1 extents are dynamic.
  std::vector<TensorDesc> input_descs() const;
  const Graph& graph() const { return graph_; }
  const SessionOptions& options() const { return options_; }

  // Compiles (or finds) the plan for these input shapes.
  const ExecutionPlan& plan_for(const std::vector<Shape>& input_shapes);
  // What compiling the most recent new plan did.
  const CompileReport& last_compile() const { return report_; }

 private:
  ExecutionPlan& plan_locked(const std::vector<Shape>& shapes);
  Graph graph_;
  SessionOptions options_;
  Backend* backend_;
  std::map<std::vector<Shape>, std::unique_ptr<ExecutionPlan>> plans_;
  CompileReport report_;
  std::mutex mutex_;
};

}  // namespace tandem
