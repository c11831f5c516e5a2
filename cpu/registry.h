#pragma once
// CPU kernels, one op family per file (conv.cpp, pool.cpp, ...), in the manner
// of ncnn's layer registry. Each family's file defines
// register_<family>_kernels(), which adds its factories; cpu/registry.cpp
// calls those of the families ops/op_families.cmake lists for the CPU.
#include <string>

#include "core/backend.h"

namespace tandem::cpu {

using KernelFactory = KernelPlan (*)(const OpDesc& op);

void register_kernel(const std::string& op_type, KernelFactory factory);
// nullptr when no CPU kernel exists for the op.
KernelFactory find_kernel(const std::string& op_type);

}  // namespace tandem::cpu
