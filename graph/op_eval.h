#pragma once
// Evaluates one op eagerly on a backend: infer output shapes, prepare a
// kernel, bring inputs into the layouts it asks for, run, return plain
// outputs. Used by constant folding and by kernel tests; the executor does
// the same work ahead of time for a whole graph.
#include <string>
#include <vector>

#include "core/backend.h"

namespace tandem {

struct OpEval {
  std::string op_type;
  std::string node;            // for errors; defaults to op_type
  const Attributes* attrs = nullptr;
  std::vector<Tensor> inputs;  // undefined Tensor = omitted optional input
  std::vector<bool> constant;  // per input: hand it to the kernel as a constant
  int num_outputs = 1;
  int opset = 17;
};

// Outputs as plain host tensors (views of an input where the kernel aliases).
std::vector<Tensor> evaluate_op(Backend& backend, const OpEval& call);
// Converts a host tensor to another layout with the backend's tandem.Reorder.
Tensor reorder_tensor(Backend& backend, const Tensor& t, Layout to);
// The backend's tandem.Reorder kernel from `from` to layout `to` (for
// buffers in the backend's own memory).
KernelPlan prepare_reorder(Backend& backend, const TensorDesc& from, Layout to);

}  // namespace tandem
