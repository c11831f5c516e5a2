// Reshape, Flatten, Squeeze, Unsqueeze: on a plain layout the bytes are
// already right, so the output is a view of input 0 and there is no kernel.
#include "cpu/registry.h"

namespace tandem::cpu {

namespace {

KernelPlan make_view(const OpDesc& op) {
  check(op.outputs.at(0).dtype == op.inputs.at(0).dtype, "view changes dtype", op.context());
  KernelPlan plan;
  plan.alias_input = 0;
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.output_layouts = {Layout::plain};
  return plan;
}

}  // namespace

void register_reshape_kernels() {
  for (const char* t : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) register_kernel(t, make_view);
}

}  // namespace tandem::cpu
