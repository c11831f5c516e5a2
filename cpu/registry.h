#pragma once
// CPU kernels, one op family per file (conv.cpp, pool.cpp, ...), in the manner
// of ncnn's layer registry. Each file exposes a register_*() that adds its
// factories; cpu/registry.cpp calls them all explicitly.
#include <string>

#include "core/backend.h"

namespace tandem::cpu {

using KernelFactory = KernelPlan (*)(const OpDesc& op);

void register_kernel(const std::string& op_type, KernelFactory factory);
// nullptr when no CPU kernel exists for the op.
KernelFactory find_kernel(const std::string& op_type);

// Registration functions, one per kernel file.
void register_eltwise_kernels();   // cpu/eltwise.cpp
void register_reorder_kernels();   // cpu/reorder.cpp
void register_reshape_kernels();   // cpu/reshape.cpp
void register_constant_kernels();  // cpu/constant.cpp
void register_gather_kernels();    // cpu/gather.cpp
void register_transpose_kernels(); // cpu/transpose.cpp
void register_slice_kernels();     // cpu/slice.cpp
void register_expand_kernels();    // cpu/expand.cpp
void register_pad_kernels();       // cpu/pad.cpp
void register_cast_kernels();      // cpu/cast.cpp
void register_compare_kernels();   // cpu/compare.cpp
void register_reduce_kernels();    // cpu/reduce.cpp
void register_conv_kernels();      // cpu/conv.cpp
void register_gemm_kernels();      // cpu/gemm.cpp
void register_batchnorm_kernels(); // cpu/batchnorm.cpp
void register_layernorm_kernels(); // cpu/layernorm.cpp
void register_pool_kernels();      // cpu/pool.cpp
void register_softmax_kernels();   // cpu/softmax.cpp
void register_binary_kernels();    // cpu/binary.cpp
void register_concat_kernels();    // cpu/concat.cpp
void register_scatter_kernels();   // cpu/scatter.cpp
void register_resize_kernels();    // cpu/resize.cpp
void register_topk_kernels();      // cpu/topk.cpp
void register_quantize_kernels();  // cpu/quantize.cpp
void register_mod_kernels();       // cpu/mod.cpp

}  // namespace tandem::cpu
