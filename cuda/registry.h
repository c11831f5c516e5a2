#pragma once
// CUDA kernels, one op family per file, registered like the CPU ones
// (cpu/registry.h). A factory prepares a kernel for fixed shapes: it picks
// algorithms, converts weights once, and returns the layouts it wants.
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "cuda/context.h"

namespace tandem::cuda {

using KernelFactory = KernelPlan (*)(const OpDesc& op, Context& ctx);

void register_kernel(const std::string& op_type, KernelFactory factory);
KernelFactory find_kernel(const std::string& op_type);

// The plan of a channels-last convolution: X (input 0) and a residual
// (input 3) in NHWC, the weights and bias plain, Y in NHWC.
KernelPlan channels_last_conv_plan(const OpDesc& op, std::unique_ptr<Kernel> kernel,
                                   std::vector<bool> keeps_constant);

}  // namespace tandem::cuda
