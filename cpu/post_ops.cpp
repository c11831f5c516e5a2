#include "cpu/post_ops.h"

namespace tandem::cpu {

std::vector<EltwiseStep> eltwise_steps(const ops::Activation& a) {
  using alg = dnnl::algorithm;
  using K = ops::ActivationKind;
  switch (a.kind) {
    case K::none: return {};
    // alpha -0, not 0: oneDNN's reference relu (all it has for most ops off
    // x86-64) computes x * alpha for x <= 0, and a negative x times +0 is
    // -0 where ONNX's max(0, x) is +0. Its JIT kernels take -0 == 0 as the
    // plain relu they are.
    case K::relu: return {{alg::eltwise_relu, -0.f}};
    case K::leaky_relu: return {{alg::eltwise_relu, a.alpha}};
    case K::clip: return {{alg::eltwise_clip_v2, a.alpha, a.beta}};
    case K::hard_swish: return {{alg::eltwise_hardswish, 0.f, 0.f, a.gamma}};
    case K::sigmoid: return {{alg::eltwise_logistic}};
    case K::tanh: return {{alg::eltwise_tanh}};
    case K::silu: return {{alg::eltwise_swish, 1.f}};  // x * sigmoid(1 * x)
    case K::elu: return {{alg::eltwise_elu, a.alpha}};
    case K::softplus: return {{alg::eltwise_soft_relu}};
    case K::gelu: return {{alg::eltwise_gelu_erf}};
    case K::gelu_tanh: return {{alg::eltwise_gelu_tanh}};
    // clip(alpha * x + beta, 0, gamma): oneDNN has no hard sigmoid of that form.
    case K::hard_sigmoid: return {{alg::eltwise_linear, a.alpha, a.beta}, {alg::eltwise_clip_v2, 0.f, a.gamma}};
  }
  return {};
}

void append_activation(dnnl::post_ops& po, const ops::Activation& a) {
  for (const EltwiseStep& s : eltwise_steps(a)) po.append_eltwise(s.scale, s.algorithm, s.alpha, s.beta);
}

}  // namespace tandem::cpu
