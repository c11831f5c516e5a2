#include "cpu/post_ops.h"

#include <cstdlib>
#include <cstring>

#include "cpu/dnnl_utils.h"

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

std::vector<dnnl::primitive> activation_in_place(const dnnl::memory::desc& data,
                                                 const ops::Activation& a) {
  std::vector<dnnl::primitive> prims;
  auto add = [&](dnnl::algorithm alg, float alpha, float beta) {
    dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, alg, data, alpha, beta);
    prims.emplace_back(dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(d, engine())));
  };
  for (const EltwiseStep& s : eltwise_steps(a)) {
    add(s.algorithm, s.alpha, s.beta);
    // A post-op's scale multiplies its result; a primitive has none.
    if (s.scale != 1.f) add(dnnl::algorithm::eltwise_linear, s.scale, 0.f);
  }
  return prims;
}

bool fused_activation_trusted(const std::string& impl, const ops::Activation& a) {
  using K = ops::ActivationKind;
  if (a.kind == K::none || a.kind == K::relu) return true;
  const char* forced = std::getenv("TANDEM_CPU_UNFUSED_ACTIVATIONS");
  if (forced && std::strcmp(forced, "1") == 0) return false;
  const bool clips = a.kind == K::clip || a.kind == K::hard_swish || a.kind == K::hard_sigmoid;
  return !clips || dnnl_version()->major >= 3 || impl.find("sve") == std::string::npos;
}

}  // namespace tandem::cpu
