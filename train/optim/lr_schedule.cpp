#include "train/optim/lr_schedule.h"

#include <cmath>
#include <numbers>
#include <string>

#include "core/error.h"

namespace tandem::train {

LrSchedule LrSchedule::constant(double lr) {
  check(lr >= 0, "learning rate must be >= 0, got " + std::to_string(lr));
  return LrSchedule(Kind::constant, lr);
}

LrSchedule LrSchedule::step(double lr, int64_t step_size, double gamma) {
  LrSchedule s = constant(lr);
  check(step_size > 0, "step schedule: step_size must be > 0, got " + std::to_string(step_size));
  check(gamma > 0, "step schedule: gamma must be > 0, got " + std::to_string(gamma));
  s.kind_ = Kind::step;
  s.period_ = step_size;
  s.gamma_ = gamma;
  return s;
}

LrSchedule LrSchedule::cosine(double lr, int64_t decay_steps, double min_lr) {
  LrSchedule s = constant(lr);
  check(decay_steps > 0, "cosine schedule: decay steps must be > 0, got " + std::to_string(decay_steps));
  check(min_lr >= 0 && min_lr <= lr, "cosine schedule: min lr must be in [0, lr], got " + std::to_string(min_lr));
  s.kind_ = Kind::cosine;
  s.period_ = decay_steps;
  s.min_lr_ = min_lr;
  return s;
}

LrSchedule LrSchedule::with_warmup(int64_t steps, double start_factor) const {
  check(steps >= 0, "warmup steps must be >= 0, got " + std::to_string(steps));
  check(start_factor > 0 && start_factor <= 1, "warmup start factor must be in (0, 1], got " +
                                                   std::to_string(start_factor));
  LrSchedule s = *this;
  s.warmup_steps_ = steps;
  s.warmup_start_ = start_factor;
  return s;
}

double LrSchedule::at(int64_t t) const {
  check(t >= 0, "learning rate asked for a negative step " + std::to_string(t));
  if (t < warmup_steps_)
    return base_ * (warmup_start_ + (1 - warmup_start_) * double(t) / double(warmup_steps_));
  return main_at(t - warmup_steps_);
}

double LrSchedule::main_at(int64_t t) const {
  switch (kind_) {
    case Kind::constant: return base_;
    case Kind::step: return base_ * std::pow(gamma_, double(t / period_));
    case Kind::cosine:
      if (t >= period_) return min_lr_;
      return min_lr_ + (base_ - min_lr_) * (1 + std::cos(std::numbers::pi * double(t) / double(period_))) / 2;
  }
  return base_;
}

}  // namespace tandem::train
