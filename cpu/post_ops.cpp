#include "cpu/post_ops.h"

namespace tandem::cpu {

void append_activation(dnnl::post_ops& po, const ops::FusedActivation& a) {
  using alg = dnnl::algorithm;
  using K = ops::ActivationKind;
  switch (a.kind) {
    case K::none: return;
    case K::relu: po.append_eltwise(1.f, alg::eltwise_relu, 0.f, 0.f); return;
    case K::leaky_relu: po.append_eltwise(1.f, alg::eltwise_relu, a.alpha, 0.f); return;
    case K::clip: po.append_eltwise(1.f, alg::eltwise_clip_v2, a.alpha, a.beta); return;
    case K::hard_swish: po.append_eltwise(a.gamma, alg::eltwise_hardswish, 0.f, 0.f); return;
    case K::sigmoid: po.append_eltwise(1.f, alg::eltwise_logistic, 0.f, 0.f); return;
    case K::tanh: po.append_eltwise(1.f, alg::eltwise_tanh, 0.f, 0.f); return;
    case K::silu: po.append_eltwise(1.f, alg::eltwise_swish, 1.f, 0.f); return;  // x * sigmoid(1 * x)
    case K::hard_sigmoid:
      // clip(alpha*x + beta, 0, max)
      po.append_eltwise(1.f, alg::eltwise_linear, a.alpha, a.beta);
      po.append_eltwise(1.f, alg::eltwise_clip_v2, 0.f, a.gamma);
      return;
  }
}

}  // namespace tandem::cpu
