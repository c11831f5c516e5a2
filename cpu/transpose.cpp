// Transpose: out dim d walks input dim perm[d] (plain layouts, any dtype);
// NHWC <-> NCHW as a view in the channels-last layout.
#include <optional>

#include "cpu/dnnl_utils.h"
#include "cpu/index_copy.h"
#include "cpu/registry.h"
#include "ops/shape_ops.h"

namespace tandem::cpu {

namespace {

// NHWC <-> NCHW of a 4-D tensor as a view: plain [N,H,W,C] memory is the
// channels-last layout of [N,C,H,W], so the turn is a relabelling, no copy
// (a TF.js image input before the first convolution; the heads turned back
// to NHWC after the last, from whatever layout they are in with one reorder
// instead of a reorder and a transposition).
std::optional<KernelPlan> transpose_view(const TensorDesc& in, const std::vector<int64_t>& perm) {
  // oneDNN must be able to reorder it: a reorder may follow the view.
  if (in.shape.size() != 4 || !dnnl_type(in.dtype)) return std::nullopt;
  KernelPlan plan;
  plan.alias_input = 0;
  if (perm == std::vector<int64_t>{0, 3, 1, 2} && in.layout == Layout::plain) {
    plan.input_layouts = {Layout::plain};
    plan.output_layouts = {Layout::nhwc};
    return plan;
  }
  if (perm == std::vector<int64_t>{0, 2, 3, 1}) {
    plan.input_layouts = {Layout::nhwc};
    plan.output_layouts = {Layout::plain};
    return plan;
  }
  return std::nullopt;
}

KernelPlan make_transpose(const OpDesc& op) {
  const TensorDesc& in = op.inputs[0];
  std::vector<int64_t> perm = ops::transpose_perm(ops::infer_context_of(op));
  if (std::optional<KernelPlan> view = transpose_view(in, perm)) return std::move(*view);
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
