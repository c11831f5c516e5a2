#pragma once
// GPU kernel names as people read them in tables and traces.
#include <string>

namespace tandem::profile {

// "_ZN6tandem4cuda12_GLOBAL__N_110pad_kernelIfEEvPKT_PS3_NS0_11PadGeometryE"
//   -> "tandem::cuda::(anonymous namespace)::pad_kernel<float>"
// Demangled (a name that is not mangled is kept), without the return type and
// the argument list: they repeat what the name says and make rows unreadable.
// Parentheses inside the name ("(anonymous namespace)", template arguments
// such as "(cudnnKernelDataType_t)2") are kept.
std::string short_kernel_name(const char* mangled);

}  // namespace tandem::profile
