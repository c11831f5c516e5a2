// Pad in constant, reflect, edge and wrap modes (ops::pad_source_index) as
// one index copy (cuda/index_copy.h), any dtype, plain or nhwc. The constant
// is input 2 (Pad-11+, read on the device at run time), Pad-2's attribute
// `value`, or zero.
#include "cuda/element_bits.h"
#include "cuda/index_copy.h"
#include "cuda/registry.h"
#include "ops/shape_ops.h"

namespace tandem::cuda {

namespace {

KernelPlan make_pad(const OpDesc& op, Context& c) {
  const Shape& in = op.inputs[0].shape;
  ops::PadSpec s = ops::pad_spec(ops::infer_context_of(op));
  int fill_input = op.opset >= 11 && op.has_input(2) ? 2 : -1;
  double value = op.opset < 11 ? op.attributes().get_float("value", 0.f) : 0.0;
  auto source = [&](size_t d, int64_t o) {
    return ops::pad_source_index(o, s.begin[d], in[d], s.mode);
  };
  return index_copy_plan(op, c, op.outputs[0].shape, source,
                         element_bits(op.inputs[0].dtype, value), fill_input);
}

}  // namespace

void register_pad_kernels() { register_kernel("Pad", make_pad); }

}  // namespace tandem::cuda
