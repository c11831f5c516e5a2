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

Var Linear::forward(const Var& x) {
  if (split_) return split_forward(x);
  return linear(x, weight_var(), bias_var());
}

ValueId Linear::to_graph(ExportBuilder& g, ValueId x) const {
  Attributes a;
  a.set("transB", int64_t(1));  // x [N, K] · w [M, K]ᵀ
  return g.node("Gemm", weight_inputs(g, x), a);
}

}  // namespace tandem::train
