#pragma once
// CUDA kernels, one op family per file, registered like the CPU ones
// (cpu/registry.h). A factory prepares a kernel for fixed shapes: it picks
// algorithms, converts weights once, and returns the layouts it wants.
#include <string>

#include "core/backend.h"
#include "cuda/context.h"

namespace tandem::cuda {

using KernelFactory = KernelPlan (*)(const OpDesc& op, Context& ctx);

void register_kernel(const std::string& op_type, KernelFactory factory);
KernelFactory find_kernel(const std::string& op_type);

}  // namespace tandem::cuda
