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
  Var w = Var::of(*weight_);
  if (weight_fake_quant_) w = (*weight_fake_quant_)(w);
  return linear(x, w, bias_ ? Var::of(*bias_) : Var());
}

void Linear::enable_qat() {
  if (weight_fake_quant_) return;
  weight_fake_quant_ = &add_module("weight_fake_quant",
                                   std::make_unique<FakeQuantize>(QuantSpec::weights(), weight_->value.dim(0)));
}

ValueId Linear::to_graph(ExportBuilder& g, ValueId x) const {
  Attributes a;
  a.set("transB", int64_t(1));  // x [N, K] · w [M, K]ᵀ
  ValueId wq = weight_fake_quant_ ? weight_fake_quant_->weight_to_graph(g, weight_->name, weight_->value)
                                  : g.constant(weight_->name, weight_->value);
  std::vector<ValueId> in{x, wq};
  if (bias_) in.push_back(g.constant(bias_->name, bias_->value));
  return g.node("Gemm", std::move(in), a);
}

}  // namespace tandem::train
