#pragma once
// Learning rate as a function of the iteration (optimizer step) number, so
// a schedule has no state of its own: its position is the step count a
// checkpoint stores. Matches torch.optim.lr_scheduler's closed forms:
//   step:    StepLR           base * gamma^floor(t / step_size)
//   cosine:  CosineAnnealingLR min + (base - min) * (1 + cos(pi t / T)) / 2,
//            held at min after T (torch would climb back up)
//   warmup:  LinearLR in front, chained like SequentialLR:
//            base * (f + (1 - f) * t / W) for t < W, then the main schedule
//            at t - W.
#include <cstdint>

namespace tandem::train {

class LrSchedule {
 public:
  static LrSchedule constant(double lr);
  static LrSchedule step(double lr, int64_t step_size, double gamma);
  // `decay_steps` counts from the end of any warmup to the minimum.
  static LrSchedule cosine(double lr, int64_t decay_steps, double min_lr);
  // This schedule after `steps` of linear warmup from start_factor * lr.
  LrSchedule with_warmup(int64_t steps, double start_factor) const;

  // The learning rate of iteration `t` (0-based).
  double at(int64_t t) const;
  double base_lr() const { return base_; }

 private:
  enum class Kind { constant, step, cosine };
  LrSchedule(Kind kind, double base) : kind_(kind), base_(base) {}
  double main_at(int64_t t) const;

  Kind kind_;
  double base_;
  int64_t period_ = 0;  // step: step_size; cosine: decay steps
  double gamma_ = 1;    // step
  double min_lr_ = 0;   // cosine
  int64_t warmup_steps_ = 0;
  double warmup_start_ = 1;
};

}  // namespace tandem::train
