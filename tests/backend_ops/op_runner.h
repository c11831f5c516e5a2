#pragma once
// One op on any Backend through its public interface (core/backend.h), as
// the executor would: shapes inferred by ops/, a kernel prepared, every
// input in the backend's memory (constants handed to prepare too), inputs
// reordered to the layouts the kernel asks for, outputs brought back plain
// to the host.
#include <string>
#include <vector>

#include "core/backend.h"

namespace tandem::backend_ops {

struct OpCall {
  std::string op;
  const Attributes* attrs = nullptr;
  std::vector<Tensor> inputs;  // host tensors, plain; undefined = omitted optional input
  std::vector<bool> constant;  // per input
  int num_outputs = 1;
  int opset = 17;
  // Layout the 4-D non-constant float inputs arrive in (a producer's).
  Layout layout = Layout::plain;
};

// Whether the backend takes the call (Backend::supports on its description).
bool backend_supports(Backend& backend, const OpCall& call);
// Prepares the call's kernel and drops it: throws what prepare() throws
// (a kernel refusing a dtype or layout it lacks).
void prepare_call(Backend& backend, const OpCall& call);
// Outputs as plain host tensors. Throws Error as prepare() and the kernel do.
std::vector<Tensor> run_call(Backend& backend, const OpCall& call);

}  // namespace tandem::backend_ops
