#include "train/layers/linear.h"

#include "train/functional.h"

namespace tandem::train {

Linear::Linear(int64_t in, int64_t out, bool bias, Rng& rng) {
  check(in > 0 && out > 0, "Linear(" + std::to_string(in) + ", " + std::to_string(out) + "): sizes must be positive");
  weight_ = &add_parameter("weight", Tensor::empty(DType::f32, {out, in}), true);
  default_init(weight_->value, in, rng);
  if (bias) {
    bias_ = &add_parameter("bias", Tensor::empty(DType::f32, {out}), false);
    default_init(bias_->value, in, rng);
  }
}

Var Linear::forward(const Var& x) { return linear(x, Var::of(*weight_), bias_ ? Var::of(*bias_) : Var()); }

}  // namespace tandem::train
