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

void register_eltwise_kernels();  // cuda/eltwise.cu
void register_reorder_kernels();  // cuda/reorder.cu
void register_conv_kernels();     // cuda/conv.cpp
void register_pool_kernels();     // cuda/pool.cpp
void register_gemm_kernels();     // cuda/gemm.cpp
void register_binary_kernels();   // cuda/binary.cu
void register_softmax_kernels();  // cuda/softmax.cu
void register_data_kernels();     // cuda/data.cu
void register_reduce_kernels();   // cuda/reduce.cu
void register_batchnorm_kernels();  // cuda/batchnorm.cu
void register_layernorm_kernels();  // cuda/layernorm.cu
void register_resize_kernels();     // cuda/resize.cu
void register_topk_kernels();       // cuda/topk.cu
void register_logical_kernels();    // cuda/logical.cu
void register_pad_kernels();        // cuda/pad.cpp
void register_slice_kernels();      // cuda/slice.cpp

}  // namespace tandem::cuda
