// Unary activations on oneDNN's eltwise primitive. Works in whatever layout
// the input arrives in (eltwise is layout-agnostic), so activations never
// force a reorder between convolutions.
#include <cmath>

#include "cpu/dnnl_utils.h"
#include "cpu/registry.h"

namespace tandem::cpu {

namespace {

using alg = dnnl::algorithm;

struct EltwiseSpec {
  alg algorithm;
  float alpha = 0.f, beta = 0.f;
  // HardSigmoid has no oneDNN algorithm: linear then clip to [0,1] as a post-op.
  bool clip01_after = false;
};

// Clip's bounds are inputs since opset 11 and attributes before.
void clip_bounds(const OpDesc& op, float* lo, float* hi) {
  const Attributes& a = op.attributes();
  *lo = a.get_float("min", -INFINITY);
  *hi = a.get_float("max", INFINITY);
  auto bound = [&](size_t i, float* v) {
    if (!op.has_input(i)) return;
    check(op.constants[i] != nullptr, "Clip bounds must be constants");
    *v = float(op.constants[i]->scalar_at(0));
  };
  bound(1, lo);
  bound(2, hi);
}

EltwiseSpec spec_for(const OpDesc& op) {
  const Attributes& a = op.attributes();
  const std::string& t = op.op_type;
  if (t == "Relu") return {alg::eltwise_relu};
  if (t == "LeakyRelu") return {alg::eltwise_relu, a.get_float("alpha", 0.01f)};
  if (t == "Sigmoid") return {alg::eltwise_logistic};
  if (t == "Tanh") return {alg::eltwise_tanh};
  if (t == "HardSwish") return {alg::eltwise_hardswish};
  if (t == "HardSigmoid")
    return {alg::eltwise_linear, a.get_float("alpha", 0.2f), a.get_float("beta", 0.5f), true};
  if (t == "Elu") return {alg::eltwise_elu, a.get_float("alpha", 1.0f)};
  if (t == "Softplus") return {alg::eltwise_soft_relu};
  if (t == "Exp") return {alg::eltwise_exp};
  if (t == "Log") return {alg::eltwise_log};
  if (t == "Sqrt") return {alg::eltwise_sqrt};
  if (t == "Abs") return {alg::eltwise_abs};
  if (t == "Neg") return {alg::eltwise_linear, -1.f, 0.f};
  if (t == "Mish") return {alg::eltwise_mish};
  if (t == "Clip") {
    float lo, hi;
    clip_bounds(op, &lo, &hi);
    return {alg::eltwise_clip_v2, lo, hi};
  }
  throw Error::unsupported("no oneDNN eltwise algorithm for this op", op.context());
}

KernelPlan make_eltwise(const OpDesc& op) {
  if (op.inputs[0].dtype != DType::f32)
    throw Error::unsupported("CPU eltwise supports f32 only, got " + op.inputs[0].str());
  EltwiseSpec s = spec_for(op);
  dnnl::memory::desc m = md(op.inputs[0]);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (s.clip01_after) {
    dnnl::post_ops po;
    po.append_eltwise(1.f, alg::eltwise_clip_v2, 0.f, 1.f);
    attr.set_post_ops(po);
  }
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, s.algorithm, m, s.alpha, s.beta);
  dnnl::eltwise_forward::primitive_desc pd(d, attr, engine());
  auto k = std::make_unique<PrimitiveKernel>(dnnl::eltwise_forward(pd), pd.scratchpad_desc());
  k->bind_input(DNNL_ARG_SRC, 0, m);
  k->bind_output(DNNL_ARG_DST, 0, m);
  KernelPlan plan;
  plan.kernel = std::move(k);
  plan.input_layouts = {op.inputs[0].layout};
  plan.output_layouts = {op.inputs[0].layout};
  return plan;
}

// Identity and inference-time Dropout are views of their input.
KernelPlan make_alias(const OpDesc& op) {
  KernelPlan plan;
  plan.alias_input = 0;
  plan.input_layouts = {op.inputs[0].layout};
  plan.output_layouts = {op.inputs[0].layout};
  return plan;
}

}  // namespace

void register_eltwise_kernels() {
  for (const char* t : {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "Elu",
                        "Softplus", "Exp", "Log", "Sqrt", "Abs", "Neg", "Mish", "Clip"})
    register_kernel(t, make_eltwise);
  register_kernel("Identity", make_alias);
  register_kernel("Dropout", make_alias);
}

}  // namespace tandem::cpu
