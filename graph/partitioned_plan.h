#pragma once
// A graph compiled for fixed input shapes on a device, with the nodes that
// device has no kernel for on the CPU (graph/partition.h): one ExecutionPlan
// per segment, run in order. A value crossing from one device to the other
// is copied once, into page-locked host memory kept from run to run, so the
// GPU copies it with its DMA engine and no staging copy. A graph with no
// fallback is one plan, run exactly as before.
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/graph.h"
#include "graph/plan.h"
#include "profile/thread_buffer.h"

namespace tandem {

struct PartitionOptions {
  // A node the device cannot run is an error naming it, instead of running
  // on the CPU.
  bool strict = false;
};

// What fell back to the CPU in one compiled plan.
struct FallbackInfo {
  int nodes = 0;          // nodes on the CPU
  std::string ops;        // "Resize ×3, TopK"
  std::string first_node; // the first of them, for messages
  int crossings = 0;      // values copied between the devices per run
  size_t crossing_bytes = 0;
};

class PartitionedPlan {
 public:
  struct Part {
    bool on_fallback = false;
    std::unique_ptr<ExecutionPlan> plan;
    std::vector<ValueId> inputs, outputs;  // values of the whole graph
    const profile::SourceLocation* zone = nullptr;
  };

  // Throws Error (with the node) when neither backend can run a node, or
  // with o.strict when the primary cannot.
  PartitionedPlan(const Graph& g, Backend& primary, Backend& fallback, const PartitionOptions& o = {});
  ~PartitionedPlan();
  PartitionedPlan(const PartitionedPlan&) = delete;
  PartitionedPlan& operator=(const PartitionedPlan&) = delete;

  // Inputs in graph-input order; outputs in graph-output order, plain, on the host.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // Each part's steps run alone (ExecutionPlan::time_steps), in part order.
  std::vector<std::vector<double>> time_steps(const std::vector<Tensor>& inputs);

  const std::vector<Part>& parts() const { return parts_; }
  // The parts' statistics added up.
  PlanStats stats() const;
  const FallbackInfo& fallback() const { return fallback_; }
  // Wall time spent in the CPU's parts over all runs so far, ms.
  double fallback_ms() const { return fallback_ms_; }

 private:
  Backend& primary_;
  std::vector<Part> parts_;
  std::vector<ValueId> graph_inputs_, graph_outputs_;
  // Graph outputs that no part computes (a constant, or an input passed through).
  std::vector<Tensor> output_constants_;
  // Per value crossing between devices: its page-locked host tensor.
  std::vector<std::pair<ValueId, Tensor>> crossing_;
  std::vector<HostBuffer> crossing_memory_;
  FallbackInfo fallback_;
  double fallback_ms_ = 0;

  void build(const Graph& g, Backend& fallback, const PartitionOptions& o);
  void allocate_crossings(const Graph& g);
  Tensor crossing_tensor(ValueId v) const;
};

}  // namespace tandem
