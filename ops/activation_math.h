#pragma once
// The math of every activation kind, forward and derivative, written once
// for each kernel that computes it itself: CUDA's standalone activation ops,
// the activations fused into CUDA's conv and gemm epilogues, and CUDA's
// training entries (forward and backward). A model trained on the GPU
// therefore infers there bit for bit what its training forward computed.
// (The CPU computes activations with oneDNN, cpu/post_ops.h, for inference
// and training alike, but for the derivatives of clip and hard_swish, whose
// lower kink oneDNN puts on the other side (cpu/eltwise.cpp);
// tests/backend_ops holds both to the same reference.)
//
// Where ONNX leaves a choice, PyTorch's CPU kernels decide:
//   relu(x) = x < 0 ? 0 : x: relu(NaN) = NaN, relu(-inf) = 0, relu(-0) = -0
//   hard_swish(x) = x * clamp(x + 3, 0, 6) / 6, divided by 6 (one rounding),
//     d/dx = 0 below -3, x / 3 + 1/2 up to and including 3, 1 above
//   clip and hard_sigmoid propagate NaN, as torch.clamp does
// Derivatives are dy/dx computed from x (not y), in float.
#include <cmath>
#include <type_traits>

#include "core/host_device.h"
#include "ops/activation.h"

namespace tandem::ops {

namespace activation_detail {

// Clamp that lets NaN through (fminf/fmaxf would turn it into a bound).
TANDEM_HOST_DEVICE inline float clamp_keep_nan(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

TANDEM_HOST_DEVICE inline float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

constexpr float kRsqrt2 = 0.70710678118654752f;       // 1 / sqrt(2)
constexpr float kRsqrt2Pi = 0.39894228040143268f;     // 1 / sqrt(2 pi)
constexpr float kSqrt2OverPi = 0.79788456080286536f;  // sqrt(2 / pi)

TANDEM_HOST_DEVICE inline float gelu_tanh_arg(float x) { return kSqrt2OverPi * (x + 0.044715f * x * x * x); }

}  // namespace activation_detail

// One kind's forward, the kind fixed at compile time.
template <ActivationKind K>
TANDEM_HOST_DEVICE inline float activate(const Activation& a, float x) {
  using namespace activation_detail;
  if constexpr (K == ActivationKind::relu) return x < 0.f ? 0.f : x;
  else if constexpr (K == ActivationKind::leaky_relu) return x > 0.f ? x : a.alpha * x;
  else if constexpr (K == ActivationKind::clip) return clamp_keep_nan(x, a.alpha, a.beta);
  else if constexpr (K == ActivationKind::hard_swish) return a.gamma * x * clamp_keep_nan(x + 3.f, 0.f, 6.f) / 6.f;
  else if constexpr (K == ActivationKind::hard_sigmoid) return clamp_keep_nan(a.alpha * x + a.beta, 0.f, a.gamma);
  else if constexpr (K == ActivationKind::sigmoid) return sigmoid(x);
  else if constexpr (K == ActivationKind::tanh) return tanhf(x);
  else if constexpr (K == ActivationKind::silu) return x / (1.f + expf(-x));
  else if constexpr (K == ActivationKind::elu) return x > 0.f ? x : a.alpha * expm1f(x);
  // Above 20, log1p(e^x) is x to float precision (PyTorch's threshold).
  else if constexpr (K == ActivationKind::softplus) return x > 20.f ? x : log1pf(expf(x));
  else if constexpr (K == ActivationKind::gelu) return 0.5f * x * (1.f + erff(x * kRsqrt2));
  else if constexpr (K == ActivationKind::gelu_tanh) return 0.5f * x * (1.f + tanhf(gelu_tanh_arg(x)));
  else return x;
}

// One kind's dy/dx at x.
template <ActivationKind K>
TANDEM_HOST_DEVICE inline float activate_grad(const Activation& a, float x) {
  using namespace activation_detail;
  if constexpr (K == ActivationKind::relu) return x <= 0.f ? 0.f : 1.f;
  else if constexpr (K == ActivationKind::leaky_relu) return x > 0.f ? 1.f : a.alpha;
  else if constexpr (K == ActivationKind::clip) return x >= a.alpha && x <= a.beta ? 1.f : 0.f;
  else if constexpr (K == ActivationKind::hard_swish) return a.gamma * (x < -3.f ? 0.f : x <= 3.f ? x / 3.f + 0.5f : 1.f);
  else if constexpr (K == ActivationKind::hard_sigmoid) {
    const float v = a.alpha * x + a.beta;
    return v > 0.f && v < a.gamma ? a.alpha : 0.f;
  } else if constexpr (K == ActivationKind::sigmoid) {
    const float s = sigmoid(x);
    return s * (1.f - s);
  } else if constexpr (K == ActivationKind::tanh) {
    const float t = tanhf(x);
    return 1.f - t * t;
  } else if constexpr (K == ActivationKind::silu) {
    const float s = sigmoid(x);
    return s * (1.f + x * (1.f - s));
  } else if constexpr (K == ActivationKind::elu) return x > 0.f ? 1.f : a.alpha * expf(x);
  else if constexpr (K == ActivationKind::softplus) return x > 20.f ? 1.f : sigmoid(x);
  else if constexpr (K == ActivationKind::gelu) return 0.5f * (1.f + erff(x * kRsqrt2)) + x * kRsqrt2Pi * expf(-0.5f * x * x);
  else if constexpr (K == ActivationKind::gelu_tanh) {
    const float t = tanhf(gelu_tanh_arg(x));
    return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * kSqrt2OverPi * (1.f + 3.f * 0.044715f * x * x);
  } else return 1.f;
}

// Calls f(std::integral_constant<ActivationKind, k>{}): a kernel takes the
// kind's branch once, outside its loop, instead of once per value.
template <typename F>
TANDEM_HOST_DEVICE inline void with_activation_kind(ActivationKind k, F&& f) {
  using K = ActivationKind;
  switch (k) {
    case K::none: return f(std::integral_constant<K, K::none>{});
    case K::relu: return f(std::integral_constant<K, K::relu>{});
    case K::leaky_relu: return f(std::integral_constant<K, K::leaky_relu>{});
    case K::clip: return f(std::integral_constant<K, K::clip>{});
    case K::hard_swish: return f(std::integral_constant<K, K::hard_swish>{});
    case K::hard_sigmoid: return f(std::integral_constant<K, K::hard_sigmoid>{});
    case K::sigmoid: return f(std::integral_constant<K, K::sigmoid>{});
    case K::tanh: return f(std::integral_constant<K, K::tanh>{});
    case K::silu: return f(std::integral_constant<K, K::silu>{});
    case K::elu: return f(std::integral_constant<K, K::elu>{});
    case K::softplus: return f(std::integral_constant<K, K::softplus>{});
    case K::gelu: return f(std::integral_constant<K, K::gelu>{});
    case K::gelu_tanh: return f(std::integral_constant<K, K::gelu_tanh>{});
  }
}

// The kind chosen at run time (one branch per value).
TANDEM_HOST_DEVICE inline float activate(const Activation& a, float x) {
  float y = x;
  with_activation_kind(a.kind, [&](auto k) { y = activate<decltype(k)::value>(a, x); });
  return y;
}

TANDEM_HOST_DEVICE inline float activate_grad(const Activation& a, float x) {
  float d = 1.f;
  with_activation_kind(a.kind, [&](auto k) { d = activate_grad<decltype(k)::value>(a, x); });
  return d;
}

}  // namespace tandem::ops
