// tandem.Reorder: converts an activation between layouts (plain, nhwc,
// nChw8c, nChw16c) and, with attribute "to_dtype", between dtypes. The
// executor inserts it where a consumer needs another layout than its producer.
#include "cpu/dnnl_utils.h"
#include "cpu/registry.h"

namespace tandem::cpu {

namespace {

KernelPlan make_reorder(const OpDesc& op) {
  TensorDesc in = op.inputs[0];
  TensorDesc out = op.outputs[0];
  auto to = Layout(op.attributes().get_int("to_layout", int64_t(Layout::plain)));
  out.layout = to;
  // A bool mask (a comparison run in a blocked layout) moves as the bytes it
  // is: oneDNN has no bool.
  if (in.dtype == DType::boolean && out.dtype == DType::boolean) in.dtype = out.dtype = DType::u8;
  dnnl::memory::desc src = md(in), dst = md(out);
  dnnl::reorder::primitive_desc pd(engine(), src, engine(), dst, user_scratchpad_attr());
  return single_primitive_plan(dnnl::reorder(pd), pd.scratchpad_desc(), src, in.layout, dst, to, 1,
                               DNNL_ARG_FROM, DNNL_ARG_TO);
}

}  // namespace

void register_reorder_kernels() { register_kernel(kReorderOp, make_reorder); }

}  // namespace tandem::cpu
