#pragma once
// Per-element optimizer updates, shared by the CPU loops (train/optim/sgd.cpp,
// adamw.cpp) and the CUDA kernels (cuda/optimizer.cu): the same float
// operations in the same order on both devices, so a step does not depend on
// where it ran. Header-only and free of tandem types for that reason.
//
// Every multiply, add, divide and square root is rounded on its own (the rn_*
// helpers): nvcc would otherwise fuse a * b + c into one FMA, which rounds
// once and breaks bit-equality with the host. The host side relies on the
// compiler not contracting either (-ffp-contract=off on the files that
// include this, train/CMakeLists.txt).
//
// The operation order follows torch.optim's single-tensor paths (PyTorch 1.13)
// so that results agree to float rounding: every hyperparameter the Python
// code computes in double (1 - beta1, lr / bias_correction1, ...) is computed
// in double on the host and passed here as the float it becomes there.
#include <cmath>

#include "core/host_device.h"

namespace tandem::ops {

TANDEM_HOST_DEVICE inline float rn_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

TANDEM_HOST_DEVICE inline float rn_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

TANDEM_HOST_DEVICE inline float rn_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

TANDEM_HOST_DEVICE inline float rn_sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

// torch.optim.SGD for one step; weight_decay is 0 for a parameter that does
// not decay.
struct SgdScalars {
  float neg_lr;              // -lr
  float momentum;            // 0: plain SGD, no buffer
  float one_minus_dampening;
  float weight_decay;
  bool nesterov;
  bool first_step;           // torch starts the buffer as a copy of the step
};

// p: parameter, g: its gradient, buf: momentum buffer (unused without momentum).
TANDEM_HOST_DEVICE inline void sgd_update(float& p, float g, float& buf, const SgdScalars& s) {
  float d = s.weight_decay != 0.0f ? rn_add(g, rn_mul(s.weight_decay, p)) : g;
  if (s.momentum != 0.0f) {
    buf = s.first_step ? d : rn_add(rn_mul(buf, s.momentum), rn_mul(s.one_minus_dampening, d));
    d = s.nesterov ? rn_add(d, rn_mul(s.momentum, buf)) : buf;
  }
  p = rn_add(p, rn_mul(s.neg_lr, d));
}

// torch.optim.AdamW for one step (decoupled decay, bias correction, eps added
// after the bias-corrected square root).
struct AdamWScalars {
  float decay_factor;         // 1 - lr * weight_decay (1 for no decay)
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float bias_correction2_sqrt;  // sqrt(1 - beta2^t)
  float eps;
  float neg_step_size;          // -lr / (1 - beta1^t)
};

// m, v: first and second moment estimates.
TANDEM_HOST_DEVICE inline void adamw_update(float& p, float g, float& m, float& v, const AdamWScalars& s) {
  p = rn_mul(p, s.decay_factor);
  m = rn_add(rn_mul(m, s.beta1), rn_mul(s.one_minus_beta1, g));
  v = rn_add(rn_mul(v, s.beta2), rn_mul(rn_mul(s.one_minus_beta2, g), g));
  float denom = rn_add(rn_div(rn_sqrt(v), s.bias_correction2_sqrt), s.eps);
  p = rn_add(p, rn_mul(s.neg_step_size, rn_div(m, denom)));
}

// The loss scaler's unscale of one gradient: true when it was inf or nan
// (checked before scaling, as torch's _amp_foreach_non_finite_check_and_unscale_).
TANDEM_HOST_DEVICE inline bool unscale_update(float& g, float inv_scale) {
#if defined(__CUDA_ARCH__)
  bool nonfinite = !isfinite(g);
#else
  bool nonfinite = !std::isfinite(g);
#endif
  g = rn_mul(g, inv_scale);
  return nonfinite;
}

}  // namespace tandem::ops
