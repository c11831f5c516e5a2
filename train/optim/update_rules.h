#pragma once
// Per-element optimizer updates, shared by the CPU loops (sgd.cpp, adamw.cpp)
// and, later, a CUDA kernel that includes this header: the same float
// operations in the same order on both devices, so a step does not depend on
// where it ran. Header-only and free of tandem types for that reason.
//
// The operation order follows torch.optim's single-tensor paths (PyTorch 1.13)
// so that results agree to float rounding: every hyperparameter the Python
// code computes in double (1 - beta1, lr / bias_correction1, ...) is computed
// in double on the host and passed here as the float it becomes there.
#include <cmath>

#if defined(__CUDACC__)
#define TANDEM_HOST_DEVICE __host__ __device__
#else
#define TANDEM_HOST_DEVICE
#endif

namespace tandem::train {

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
  float d = s.weight_decay != 0.0f ? g + s.weight_decay * p : g;
  if (s.momentum != 0.0f) {
    buf = s.first_step ? d : buf * s.momentum + s.one_minus_dampening * d;
    d = s.nesterov ? d + s.momentum * buf : buf;
  }
  p = p + s.neg_lr * d;
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
TANDEM_HOST_DEVICE inline void adamw_update(float& p, float g, float& m, float& v,
                                            const AdamWScalars& s) {
  p = p * s.decay_factor;
  m = m * s.beta1 + s.one_minus_beta1 * g;
  v = v * s.beta2 + s.one_minus_beta2 * g * g;
  float denom = std::sqrt(v) / s.bias_correction2_sqrt + s.eps;
  p = p + s.neg_step_size * (m / denom);
}

}  // namespace tandem::train
