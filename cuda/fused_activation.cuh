#pragma once
// Device side of ops::FusedActivation (ops/activation.h): the activation a
// fusion pass folded into a Gemm, applied by an epilogue kernel.
#include <cuda_runtime.h>

#include "ops/activation.h"

namespace tandem::cuda {

__device__ __forceinline__ float apply_activation(const ops::FusedActivation& a, float x) {
  switch (a.kind) {
    case ops::ActivationKind::none: return x;
    case ops::ActivationKind::relu: return fmaxf(x, 0.f);
    case ops::ActivationKind::leaky_relu: return x >= 0.f ? x : a.alpha * x;
    case ops::ActivationKind::clip: return fminf(fmaxf(x, a.alpha), a.beta);
    case ops::ActivationKind::hard_swish: return a.gamma * x * fminf(fmaxf(x + 3.f, 0.f), 6.f) * (1.f / 6.f);
    case ops::ActivationKind::hard_sigmoid: return fminf(fmaxf(a.alpha * x + a.beta, 0.f), a.gamma);
    case ops::ActivationKind::sigmoid: return 1.f / (1.f + expf(-x));
    case ops::ActivationKind::tanh: return tanhf(x);
    case ops::ActivationKind::silu: return x / (1.f + expf(-x));
  }
  return x;
}

}  // namespace tandem::cuda
