#include "train/optim/loss_scaler.h"

#include <cmath>
#include <string>

#include "ops/update_rules.h"
#include "train/optim/device_math.h"

namespace tandem::train {

LossScaler::LossScaler(const LossScalerOptions& options) : options_(options) {
  check(options.init_scale > 0 && std::isfinite(float(options.init_scale)),
        "loss scale must be a positive finite float, got " + std::to_string(options.init_scale));
  check(options.growth_factor > 1, "loss scale growth factor must be > 1");
  check(options.backoff_factor > 0 && options.backoff_factor < 1, "loss scale backoff factor must be in (0, 1)");
  check(options.growth_interval > 0, "loss scale growth interval must be > 0");
  state_.scale = float(options.init_scale);
}

bool unscale_array(float* grad, int64_t n, float inv_scale) {
  bool found_inf = false;
  for (int64_t i = 0; i < n; ++i) found_inf |= ops::unscale_update(grad[i], inv_scale);
  return found_inf;
}

bool LossScaler::unscale(const ParameterList& params) {
  check(!unscaled_, "unscale() was already called in this iteration (call update() after each step)");
  float inv_scale = float(1.0 / double(state_.scale));
  for (Parameter* p : params) {
    check_parameter(*p);
    if (p->grad.device().is_cpu()) found_inf_ |= unscale_array(p->grad.data<float>(), p->grad.numel(), inv_scale);
  }
  for (const std::vector<Tensor>& grads : gpu_gradients(params)) found_inf_ |= unscale_on_device(grads, inv_scale);
  unscaled_ = true;
  return found_inf_;
}

bool LossScaler::step(Optimizer& optimizer) {
  if (!unscaled_) unscale(optimizer.parameters());
  if (found_inf_) {
    ++state_.skipped_steps;
    return false;
  }
  optimizer.step();
  return true;
}

void LossScaler::update() {
  check(unscaled_, "update() without an overflow check in this iteration (call step() or unscale() first)");
  if (found_inf_) {
    state_.scale = float(double(state_.scale) * options_.backoff_factor);
    state_.growth_tracker = 0;
  } else if (++state_.growth_tracker == options_.growth_interval) {
    float grown = float(double(state_.scale) * options_.growth_factor);
    if (std::isfinite(grown)) state_.scale = grown;
    state_.growth_tracker = 0;
  }
  unscaled_ = false;
  found_inf_ = false;
}

void LossScaler::check_state(const LossScalerState& state) const {
  check(state.scale > 0 && std::isfinite(state.scale), "loss scaler state has a bad scale " + std::to_string(state.scale));
  check(state.growth_tracker >= 0 && state.growth_tracker < options_.growth_interval && state.skipped_steps >= 0,
        "loss scaler state has bad counters");
}

void LossScaler::load_state(const LossScalerState& state) {
  check_state(state);
  state_ = state;
  unscaled_ = false;
  found_inf_ = false;
}

}  // namespace tandem::train
