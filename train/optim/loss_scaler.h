#pragma once
// Dynamic loss scaling for fp16 training, torch.cuda.amp.GradScaler's
// semantics: the loss is multiplied by scale() before backward; unscale()
// divides the gradients by it (multiplying by the float of 1/scale taken in
// double) and notes whether any was inf or nan; step() then runs the
// optimizer only if none was, otherwise counts a skipped step; update()
// halves the scale after an overflow, or doubles it after growth_interval
// clean steps in a row (if the doubled scale is finite). The scale is a
// float, as torch keeps it.
//
// Per iteration:  backward(loss * scale) ; [unscale ; clip] ; step ; update
#include <cstdint>

#include "train/optim/optimizer.h"

namespace tandem::train {

struct LossScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

// What a checkpoint keeps of a scaler.
struct LossScalerState {
  float scale = 0;
  int64_t growth_tracker = 0;  // clean steps since the last change
  int64_t skipped_steps = 0;
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerOptions& options = {});

  float scale() const { return state_.scale; }
  // Unscales the gradients in place; true if any gradient holds inf or nan.
  // Once per iteration (an Error if called again before update()).
  bool unscale(const ParameterList& params);
  // Unscales if that was not done yet, then steps the optimizer unless the
  // gradients overflowed. True if it stepped.
  bool step(Optimizer& optimizer);
  // Adjusts the scale from this iteration's overflow check; ends the iteration.
  void update();

  int64_t skipped_steps() const { return state_.skipped_steps; }
  const LossScalerState& state() const { return state_; }
  // Throws unless the scale is positive and finite and the counters fit.
  void check_state(const LossScalerState& state) const;
  // check_state, then takes the state; starts a fresh iteration.
  void load_state(const LossScalerState& state);

 private:
  LossScalerOptions options_;
  LossScalerState state_;
  bool unscaled_ = false;   // in this iteration
  bool found_inf_ = false;  // in this iteration's gradients
};

// Multiplies n contiguous host gradients by inv_scale; true if any input
// value was inf or nan. (Gradients on a GPU are unscaled there, by the same
// per-element rule.)
bool unscale_array(float* grad, int64_t n, float inv_scale);

}  // namespace tandem::train
