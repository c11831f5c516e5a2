// Softmax and LogSoftmax on oneDNN's softmax_v2_forward (softmax_accurate /
// softmax_log). X is viewed as [outer, len, inner] (ops/softmax.h) in plain
// layout and normalized over len; Y is plain. Exception: a 4-D X normalized
// over channels alone (opset >= 13, axis 1) runs in nChw16c or nhwc, where
// oneDNN has a JIT kernel (plain has only a scalar reference one): the
// layout X arrives in if it is one of those, else nhwc; Y has that layout.
#include "cpu/dnnl_utils.h"
#include "cpu/registry.h"
#include "ops/softmax.h"

namespace tandem::cpu {

namespace {

KernelPlan make_softmax(const OpDesc& op) {
  const TensorDesc& x = op.inputs[0];
  check_supported(x.dtype == DType::f32 || x.dtype == DType::bf16, "CPU softmax supports f32 and bf16, got " + x.str());
  ops::SoftmaxSplit s = ops::softmax_split(op.attributes(), op.opset, x.shape);
  bool channels = x.shape.size() == 4 && s.len == x.shape[1] && s.outer == x.shape[0] && s.inner > 1;
  Layout l = Layout::plain;
  if (channels) l = (x.layout == Layout::blocked16 || x.layout == Layout::nhwc) ? x.layout : Layout::nhwc;
  // A trailing axis is the 2-D case oneDNN's vectorized kernels handle best.
  Shape view = s.inner == 1 ? Shape{s.outer, s.len} : Shape{s.outer, s.len, s.inner};
  if (channels) view = x.shape;
  dnnl::memory::desc m = md(x.dtype, view, l);
  auto alg = op.op_type == "LogSoftmax" ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
  dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, m, m, 1);
  dnnl::softmax_v2_forward::primitive_desc pd(d, user_scratchpad_attr(), engine());
  return single_primitive_plan(dnnl::softmax_v2_forward(pd), pd.scratchpad_desc(), m, l, m, l);
}

}  // namespace

void register_softmax_kernels() {
  register_kernel("Softmax", make_softmax);
  register_kernel("LogSoftmax", make_softmax);
}

}  // namespace tandem::cpu
