// Transpose: out dim d walks input dim perm[d] (plain layouts, any dtype).
#include "cpu/index_copy.h"
#include "cpu/registry.h"
#include "ops/shape_ops.h"

namespace tandem::cpu {

namespace {

KernelPlan make_transpose(const OpDesc& op) {
  const TensorDesc& in = op.inputs[0];
  std::vector<int64_t> perm = ops::transpose_perm(ops::infer_context_of(op));
  std::vector<int64_t> strides = contiguous_strides(in.shape);
  size_t elem = dtype_size(in.dtype);
  std::vector<std::vector<int64_t>> tables;
  for (int64_t p : perm)
    tables.push_back(IndexCopy::strided(in.shape[size_t(p)], 0, 1, strides[size_t(p)], elem));
  IndexCopy copy(op.outputs[0].shape, std::move(tables), elem);
  return plain_plan(op, std::make_unique<IndexCopyKernel>(std::move(copy)));
}

}  // namespace

void register_transpose_kernels() { register_kernel("Transpose", make_transpose); }

}  // namespace tandem::cpu
