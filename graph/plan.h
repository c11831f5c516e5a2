#pragma once
// An execution plan: the graph compiled for fixed input shapes on one
// backend. Every tensor lives in a "slot": a runtime input, a constant, a view
// of another slot, or a range of one arena planned so that values whose
// lifetimes do not overlap share memory.
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/graph.h"
#include "profile/thread_buffer.h"

namespace tandem {

struct Slot {
  enum class Kind { input, constant, arena, view };
  Kind kind = Kind::arena;
  TensorDesc desc;
  int input_index = -1;          // Kind::input: index into run()'s inputs
  std::shared_ptr<void> storage; // Kind::constant: device copy of the value
  // Kind::constant, off the CPU: the value, until a step that reads it on
  // the device asks for the copy (a kernel that keeps its own converted
  // copy never does, so such weights are not held twice).
  Tensor pending;
  int view_of = -1;              // Kind::view: slot whose memory this reuses
  size_t offset = 0;             // Kind::arena: byte offset in the arena
  int first_step = -1, last_step = -1;  // lifetime, in steps
};

struct Step {
  std::string node;     // node name (or "reorder:<value>")
  std::string op_type;
  std::unique_ptr<Kernel> kernel;  // null for pure views
  std::vector<int> inputs, outputs;  // slots; -1 for an omitted optional input
  const profile::SourceLocation* zone = nullptr;  // trace zone "op_type node"
  int scratch = -1;  // arena slot lent to the kernel as its scratch, if it needs one
};

struct PlanStats {
  size_t arena_bytes = 0;
  size_t unplanned_bytes = 0;  // what the arena would be without reuse
  size_t scratch_bytes = 0;  // the largest one step borrows (from the arena)
  int reorders = 0;
  int steps = 0;
};

class ExecutionPlan {
 public:
  // Compiles a graph whose shapes are all static (after infer_and_fold).
  ExecutionPlan(const Graph& g, Backend& backend);
  ~ExecutionPlan();
  ExecutionPlan(const ExecutionPlan&) = delete;
  ExecutionPlan& operator=(const ExecutionPlan&) = delete;

  // Inputs in graph-input order; outputs in graph-output order, plain, on the
  // host. An output whose entry in `into` is defined is copied into that
  // host tensor (of the output's type; page-locked memory makes it one DMA
  // copy) and returned; the others are allocated.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& into = {});

  // Runs each step alone (synchronizing after each) and returns its wall
  // time in ms, index by index with steps(): where the time goes, at the
  // cost of the overlap a normal run has. Outputs are not fetched.
  std::vector<double> time_steps(const std::vector<Tensor>& inputs);

  const std::vector<Step>& steps() const { return steps_; }
  const PlanStats& stats() const { return stats_; }
  const TensorDesc& slot_desc(int slot) const { return slots_[size_t(slot)].desc; }
  const std::vector<TensorDesc>& input_descs() const { return input_descs_; }

 private:
  class Builder;
  Backend& backend_;
  std::vector<Slot> slots_;
  std::vector<Step> steps_;
  std::vector<int> output_slots_;
  std::vector<TensorDesc> input_descs_;
  std::vector<std::string> input_names_;
  PlanStats stats_;
  void* arena_ = nullptr;
  // On a device other than the CPU: one device buffer per input, which host
  // inputs are copied into at each run.
  std::vector<void*> device_inputs_;
  // The steps recorded as one replayable unit (a CUDA graph) for the buffer
  // pointers they were recorded with; made at the second run, so that lazy
  // library initialization happens in the first.
  std::unique_ptr<Recording> recording_;
  std::vector<void*> recorded_pointers_;
  int runs_ = 0;
  std::string source_;

  void add_scratch_slots();
  void* input_pointer(size_t index, const Tensor& t);
  // Checks the inputs and returns every slot's address for this run.
  std::vector<void*> bind(const std::vector<Tensor>& inputs);
  std::vector<Tensor> fetch_outputs(const std::vector<void*>& ptr, const std::vector<Tensor>& into);
  // Enqueues every step; with step_ms, waits after each and records its time.
  void launch_steps(const std::vector<void*>& ptr, std::vector<double>* step_ms = nullptr);
};

// Assigns arena offsets to slots of Kind::arena by greedy best fit over their
// lifetimes (largest first). Returns the arena size in bytes.
size_t plan_memory(std::vector<Slot>& slots);

}  // namespace tandem
