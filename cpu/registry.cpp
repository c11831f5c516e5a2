#include "cpu/registry.h"

#include <map>
#include <mutex>

namespace tandem::cpu {

namespace {
std::map<std::string, KernelFactory>& table() {
  static std::map<std::string, KernelFactory> t;
  return t;
}

void register_all() {
  register_eltwise_kernels();
  register_reorder_kernels();
  register_reshape_kernels();
  register_constant_kernels();
  register_gather_kernels();
  register_transpose_kernels();
  register_slice_kernels();
  register_expand_kernels();
  register_pad_kernels();
  register_cast_kernels();
  register_compare_kernels();
  register_reduce_kernels();
  register_conv_kernels();
  register_gemm_kernels();
  register_batchnorm_kernels();
  register_layernorm_kernels();
  register_pool_kernels();
  register_softmax_kernels();
  register_binary_kernels();
  register_concat_kernels();
  register_scatter_kernels();
  register_resize_kernels();
  register_topk_kernels();
  register_quantize_kernels();
  register_mod_kernels();
}
}  // namespace

void register_kernel(const std::string& op_type, KernelFactory factory) {
  table()[op_type] = factory;
}

KernelFactory find_kernel(const std::string& op_type) {
  static std::once_flag once;
  std::call_once(once, register_all);
  auto it = table().find(op_type);
  return it == table().end() ? nullptr : it->second;
}

}  // namespace tandem::cpu
