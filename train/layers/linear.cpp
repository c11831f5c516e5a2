#include "train/layers/linear.h"

#include "train/export_builder.h"
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

ValueId Linear::to_graph(ExportBuilder& g, ValueId x) const {
  Attributes a;
  a.set("transB", int64_t(1));  // x [N, K] · w [M, K]ᵀ
  std::vector<ValueId> in{x, g.constant(weight_->name, weight_->value)};
  if (bias_) in.push_back(g.constant(bias_->name, bias_->value));
  return g.node("Gemm", std::move(in), a);
}

}  // namespace tandem::train
