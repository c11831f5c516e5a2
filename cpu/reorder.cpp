// tandem.Reorder: converts an activation between layouts (plain, nhwc,
// nChw8c, nChw16c) and, with attribute "to_dtype", between dtypes. The
// executor inserts it where a consumer needs another layout than its producer.
#include "cpu/dnnl_utils.h"
#include "cpu/registry.h"

namespace tandem::cpu {

namespace {

KernelPlan make_reorder(const OpDesc& op) {
  const TensorDesc& in = op.inputs[0];
  TensorDesc out = op.outputs[0];
  auto to = Layout(op.attributes().get_int("to_layout", int64_t(Layout::plain)));
  out.layout = to;
  dnnl::memory::desc src = md(in), dst = md(out);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::reorder::primitive_desc pd(engine(), src, engine(), dst, attr);
  auto k = std::make_unique<PrimitiveKernel>(dnnl::reorder(pd), pd.scratchpad_desc());
  k->bind_input(DNNL_ARG_FROM, 0, src);
  k->bind_output(DNNL_ARG_TO, 0, dst);
  KernelPlan plan;
  plan.kernel = std::move(k);
  plan.input_layouts = {in.layout};
  plan.output_layouts = {to};
  return plan;
}

}  // namespace

void register_reorder_kernels() { register_kernel(kReorderOp, make_reorder); }

}  // namespace tandem::cpu
