#pragma once
// Device side of an activation a fusion pass folded into a Gemm or Conv,
// applied by an epilogue kernel; the math is ops/activation_math.h's, the
// same the standalone activation ops and training use.
#include <cuda_runtime.h>

#include "ops/activation_math.h"

namespace tandem::cuda {

__device__ __forceinline__ float apply_activation(const ops::Activation& a, float x) { return ops::activate(a, x); }

// All N values with the kind's branch taken once: in a kernel whose thread
// finishes tens of outputs, a switch per value costs about as many
// instructions as the arithmetic that made them.
template <int N>
__device__ __forceinline__ void apply_activation(const ops::Activation& a, float (&v)[N]) {
  ops::with_activation_kind(a.kind, [&](auto k) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = ops::activate<decltype(k)::value>(a, v[i]);
  });
}

}  // namespace tandem::cuda
