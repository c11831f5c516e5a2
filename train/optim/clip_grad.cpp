#include "train/optim/clip_grad.h"

#include <cmath>

#include "core/error.h"
#include "train/optim/device_math.h"
#include "train/optim/optimizer.h"

namespace tandem::train {

namespace {

double squares_of(const Parameter& p) {
  if (p.grad.device().is_cpu()) return sum_of_squares(p.grad.data<float>(), p.grad.numel());
  return sum_of_squares_on_device({&p.grad, 1});
}

void throw_nonfinite(const ParameterList& params, double norm) {
  for (const Parameter* p : params) {
    double s = squares_of(*p);
    check(std::isfinite(s), "gradient of parameter '" + p->name + "' holds inf or nan (global norm " +
                                std::to_string(norm) + ")");
  }
  throw Error("global gradient norm overflows: " + std::to_string(norm));
}

}  // namespace

double sum_of_squares(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
  return s;
}

ClipResult clip_grad_norm(const ParameterList& params, double max_norm, NonFinite on_nonfinite) {
  check(max_norm > 0, "max gradient norm must be > 0, got " + std::to_string(max_norm));
  double squares = 0;
  for (const Parameter* p : params) {
    check_parameter(*p);
    if (p->grad.device().is_cpu()) squares += sum_of_squares(p->grad.data<float>(), p->grad.numel());
  }
  std::vector<std::vector<Tensor>> on_gpus = gpu_gradients(params);
  for (const std::vector<Tensor>& grads : on_gpus) squares += sum_of_squares_on_device(grads);
  // torch keeps the norm as a float tensor; so does the coefficient below.
  float norm = float(std::sqrt(squares));
  ClipResult r{norm, std::isfinite(norm), false};
  if (!r.finite) {
    if (on_nonfinite == NonFinite::error) throw_nonfinite(params, norm);
    return r;
  }
  // max_norm / (norm + 1e-6) as torch evaluates it: reciprocal, then multiply.
  float coef = (1.0f / (norm + 1e-6f)) * float(max_norm);
  if (coef >= 1.0f) return r;
  for (Parameter* p : params) {
    if (!p->grad.device().is_cpu()) continue;
    float* g = p->grad.data<float>();
    for (int64_t i = 0; i < p->grad.numel(); ++i) g[i] *= coef;
  }
  for (const std::vector<Tensor>& grads : on_gpus) scale_on_device(grads, coef);
  r.clipped = true;
  return r;
}

}  // namespace tandem::train
