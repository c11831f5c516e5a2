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
  if (split_) return split_->forward(x);
  Var w = Var::of(*weight_);
  if (weight_fake_quant_) w = (*weight_fake_quant_)(w);
  return linear(x, w, bias_ ? Var::of(*bias_) : Var());
}

void Linear::enable_qat() {
  if (weight_fake_quant_) return;
  check_supported(!split_, "quantization-aware training of a layer split between devices");
  weight_fake_quant_ = &add_module("weight_fake_quant",
                                   std::make_unique<FakeQuantize>(QuantSpec::weights(), weight_->value.dim(0)));
}

ChannelSplit& Linear::split(Device home) {
  if (split_) {
    check(split_->link().home() == home, "a layer split with " + split_->link().home().str() +
                                             " cannot be split with " + home.str() + " as well");
    return *split_;
  }
  check_supported(!weight_fake_quant_, "a layer under quantization-aware training cannot be split between devices");
  split_ = std::make_unique<ChannelSplit>(own_parameters(), ChannelOp{ChannelOp::Kind::linear, {}}, home, 1);
  weight_ = bias_ = nullptr;  // the split's parameters now
  return *split_;
}

ValueId Linear::to_graph(ExportBuilder& g, ValueId x) const {
  Attributes a;
  a.set("transB", int64_t(1));  // x [N, K] · w [M, K]ᵀ
  const WholeParameters wb = whole_parameters(split_.get(), weight_, bias_);
  ValueId wq = weight_fake_quant_ ? weight_fake_quant_->weight_to_graph(g, wb.weight_name, wb.weight)
                                  : g.constant(wb.weight_name, wb.weight);
  std::vector<ValueId> in{x, wq};
  if (wb.bias.defined()) in.push_back(g.constant(wb.bias_name, wb.bias));
  return g.node("Gemm", std::move(in), a);
}

}  // namespace tandem::train
