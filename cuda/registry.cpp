#include "cuda/registry.h"

#include <map>
#include <mutex>

#include "core/error.h"

namespace tandem::cuda {

// Each family's register_<family>_kernels(), in cuda/<family>.*: the families
// this backend implements are listed once, in ops/op_families.cmake.
#define TANDEM_OP_FAMILY(family) void register_##family##_kernels();
#include "tandem_cuda_op_families.inc"
#undef TANDEM_OP_FAMILY

namespace {
std::map<std::string, KernelFactory>& table() {
  static std::map<std::string, KernelFactory> t;
  return t;
}

void register_all() {
#define TANDEM_OP_FAMILY(family) register_##family##_kernels();
#include "tandem_cuda_op_families.inc"
#undef TANDEM_OP_FAMILY
}
}  // namespace

void register_kernel(const std::string& op_type, KernelFactory factory) {
  // The families register in the list's order; a second kernel for one op
  // type would silently replace the first, so the registry refuses it.
  check(table().emplace(op_type, factory).second, "two CUDA kernels registered for op " + op_type);
}

KernelPlan channels_last_conv_plan(const OpDesc& op, std::unique_ptr<Kernel> kernel,
                                   std::vector<bool> keeps_constant) {
  KernelPlan plan;
  plan.kernel = std::move(kernel);
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.input_layouts[0] = Layout::nhwc;
  if (op.inputs.size() > 3) plan.input_layouts[3] = Layout::nhwc;
  plan.output_layouts = {Layout::nhwc};
  plan.keeps_constant = std::move(keeps_constant);
  return plan;
}

KernelFactory find_kernel(const std::string& op_type) {
  static std::once_flag once;
  std::call_once(once, register_all);
  auto it = table().find(op_type);
  return it == table().end() ? nullptr : it->second;
}

}  // namespace tandem::cuda
