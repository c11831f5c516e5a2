#pragma once
// Device side of ops::FusedActivation (ops/activation.h): the activation a
// fusion pass folded into a Gemm or Conv, applied by an epilogue kernel.
#include <cuda_runtime.h>

#include <type_traits>

#include "ops/activation.h"

namespace tandem::cuda {

// One kind's formula, the kind fixed at compile time.
template <ops::ActivationKind K>
__device__ __forceinline__ float activate(const ops::FusedActivation& a, float x) {
  using ops::ActivationKind;
  if constexpr (K == ActivationKind::relu) return fmaxf(x, 0.f);
  else if constexpr (K == ActivationKind::leaky_relu) return x >= 0.f ? x : a.alpha * x;
  else if constexpr (K == ActivationKind::clip) return fminf(fmaxf(x, a.alpha), a.beta);
  else if constexpr (K == ActivationKind::hard_swish) return a.gamma * x * fminf(fmaxf(x + 3.f, 0.f), 6.f) * (1.f / 6.f);
  else if constexpr (K == ActivationKind::hard_sigmoid) return fminf(fmaxf(a.alpha * x + a.beta, 0.f), a.gamma);
  else if constexpr (K == ActivationKind::sigmoid) return 1.f / (1.f + expf(-x));
  else if constexpr (K == ActivationKind::tanh) return tanhf(x);
  else if constexpr (K == ActivationKind::silu) return x / (1.f + expf(-x));
  else return x;
}

// Calls f(std::integral_constant<ActivationKind, k>{}).
template <typename F>
__device__ __forceinline__ void with_activation_kind(ops::ActivationKind k, F&& f) {
  using ops::ActivationKind;
  switch (k) {
    case ActivationKind::none: return f(std::integral_constant<ActivationKind, ActivationKind::none>{});
    case ActivationKind::relu: return f(std::integral_constant<ActivationKind, ActivationKind::relu>{});
    case ActivationKind::leaky_relu: return f(std::integral_constant<ActivationKind, ActivationKind::leaky_relu>{});
    case ActivationKind::clip: return f(std::integral_constant<ActivationKind, ActivationKind::clip>{});
    case ActivationKind::hard_swish: return f(std::integral_constant<ActivationKind, ActivationKind::hard_swish>{});
    case ActivationKind::hard_sigmoid:
      return f(std::integral_constant<ActivationKind, ActivationKind::hard_sigmoid>{});
    case ActivationKind::sigmoid: return f(std::integral_constant<ActivationKind, ActivationKind::sigmoid>{});
    case ActivationKind::tanh: return f(std::integral_constant<ActivationKind, ActivationKind::tanh>{});
    case ActivationKind::silu: return f(std::integral_constant<ActivationKind, ActivationKind::silu>{});
  }
}

__device__ __forceinline__ float apply_activation(const ops::FusedActivation& a, float x) {
  float y = x;
  with_activation_kind(a.kind, [&](auto k) { y = activate<decltype(k)::value>(a, x); });
  return y;
}

// All N values with the kind's branch taken once: in a kernel whose thread
// finishes tens of outputs, a switch per value costs about as many
// instructions as the arithmetic that made them.
template <int N>
__device__ __forceinline__ void apply_activation(const ops::FusedActivation& a, float (&v)[N]) {
  with_activation_kind(a.kind, [&](auto k) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = activate<decltype(k)::value>(a, v[i]);
  });
}

}  // namespace tandem::cuda
