#include "train/optim/adamw.h"

#include <cmath>

#include "train/optim/device_math.h"

namespace tandem::train {

namespace {

const AdamWOptions& checked(const AdamWOptions& o) {
  check(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1,
        "AdamW betas must be in [0, 1), got " + std::to_string(o.beta1) + ", " + std::to_string(o.beta2));
  check(o.eps >= 0 && o.weight_decay >= 0, "AdamW eps and weight decay must be >= 0");
  return o;
}

}  // namespace

AdamW::AdamW(ParameterList params, const AdamWOptions& options)
    : Optimizer(std::move(params), options.lr, {"exp_avg", "exp_avg_sq"}), options_(checked(options)) {}

ops::AdamWScalars adamw_scalars(const AdamWOptions& o, double lr, int64_t t, bool decay) {
  // Python computes these in double and hands torch the rounded floats.
  double bias_correction1 = 1 - std::pow(o.beta1, double(t));
  double bias_correction2 = 1 - std::pow(o.beta2, double(t));
  return ops::AdamWScalars{decay ? float(1 - lr * o.weight_decay) : 1.0f,
                      float(o.beta1),
                      float(1 - o.beta1),
                      float(o.beta2),
                      float(1 - o.beta2),
                      float(std::sqrt(bias_correction2)),
                      float(o.eps),
                      float(-(lr / bias_correction1))};
}

void AdamW::update(size_t i, Parameter& p) {
  if (!p.value.device().is_cpu()) return on_gpu_.add(p, slots(i)[0], slots(i)[1]);
  ops::AdamWScalars s = adamw_scalars(options_, lr(), steps() + 1, p.decay);
  adamw_update_array(p.value.data<float>(), p.grad.data<float>(), slots(i)[0].data<float>(),
                     slots(i)[1].data<float>(), p.value.numel(), s);
}

void AdamW::finish_step() {
  for (const auto& [key, group] : on_gpu_.groups())
    adamw_steps_on_device(group, adamw_scalars(options_, lr(), steps() + 1, key.second));
  on_gpu_.clear();
}

void adamw_update_array(float* param, const float* grad, float* m, float* v, int64_t n, const ops::AdamWScalars& s) {
  for (int64_t k = 0; k < n; ++k) ops::adamw_update(param[k], grad[k], m[k], v[k], s);
}

}  // namespace tandem::train
