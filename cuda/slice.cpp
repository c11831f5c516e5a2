// Slice with any starts, ends, axes and steps (ops::slice_spec) as one index
// copy (cuda/index_copy.h), any dtype, plain or nhwc.
#include "cuda/index_copy.h"
#include "cuda/registry.h"
#include "ops/shape_ops.h"

namespace tandem::cuda {

namespace {

KernelPlan make_slice(const OpDesc& op, Context& c) {
  ops::SliceSpec s = ops::slice_spec(ops::infer_context_of(op));
  auto source = [&](size_t d, int64_t o) { return s.start[d] + o * s.step[d]; };
  return index_copy_plan(op, c, s.out, source);
}

}  // namespace

void register_slice_kernels() { register_kernel("Slice", make_slice); }

}  // namespace tandem::cuda
