#pragma once
// The float dtypes the CUDA kernels compute on: f32, and f16 and bf16, which
// are stored in two bytes and computed in f32. with_float_type maps a DType
// to its CUDA type so a kernel family instantiates once per type instead of
// repeating the dtype switch.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "core/dtype.h"
#include "core/error.h"

namespace tandem::cuda {

// f16 or bf16: tensor-core math, 16-byte pixels at 8 channels.
inline bool is_16bit_float(DType t) { return t == DType::f16 || t == DType::bf16; }

// Calls f(T{}) with T = float, __half or __nv_bfloat16 for `t`; any other
// dtype is unsupported ("<what> takes f32, f16 or bf16, not <t>").
template <typename F>
auto with_float_type(DType t, const std::string& what, const ErrorContext& where, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f16: return f(__half{});
    case DType::bf16: return f(__nv_bfloat16{});
    default: break;
  }
  throw Error::unsupported(what + " takes f32, f16 or bf16, not " + std::string(dtype_name(t)), where);
}

}  // namespace tandem::cuda
