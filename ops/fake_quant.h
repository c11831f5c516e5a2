#pragma once
// Fake quantization of one element, as PyTorch's fake_quantize_per_*_affine
// computes it (ATen's cachemask kernels), so a QAT run here and in PyTorch
// round the same values the same way:
//   q = zero_point + nearbyint(x * (1 / scale))      (as an integer)
//   y = (clamp(q, qmin, qmax) - zero_point) * scale
//   in range (the straight-through estimator's mask): qmin <= q <= qmax
// Header-only and dependency-free so a CUDA kernel can use the same rule.
#include <cmath>
#include <cstdint>

#include "core/host_device.h"


namespace tandem::ops {

// Per tensor (axis -1: one scale and zero point) or per channel along
// `axis`; integer range [qmin, qmax] (int8: -128..127, uint8: 0..255).
struct FakeQuantParams {
  int64_t axis = -1;
  int64_t qmin = -128, qmax = 127;
};

struct FakeQuantResult {
  float y;
  bool in_range;
};

// The integer x rounds to, before clamping (q above).
TANDEM_HOST_DEVICE inline int64_t quantized(float x, float scale, int64_t zero_point) {
  return static_cast<int64_t>(float(zero_point) + std::nearbyint(x * (1.0f / scale)));
}

TANDEM_HOST_DEVICE inline FakeQuantResult fake_quant(float x, float scale, int64_t zero_point, int64_t qmin,
                                                     int64_t qmax) {
  const int64_t q = quantized(x, scale, zero_point);
  const int64_t c = q < qmin ? qmin : (q > qmax ? qmax : q);
  return {float(c - zero_point) * scale, q >= qmin && q <= qmax};
}

}  // namespace tandem::ops
