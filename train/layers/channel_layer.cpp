#include "train/layers/channel_layer.h"

#include "train/export_builder.h"

namespace tandem::train {

void ChannelLayer::enable_qat() {
  if (weight_fake_quant_) return;
  weight_fake_quant_ = &add_module("weight_fake_quant",
                                   std::make_unique<FakeQuantize>(QuantSpec::weights(), weight_->value.dim(0)));
}

ChannelSplit& ChannelLayer::split(Device home) {
  if (split_) {
    check(split_->link().home() == home, "a layer split with " + split_->link().home().str() +
                                             " cannot be split with " + home.str() + " as well");
    return *split_;
  }
  split_ = std::make_unique<ChannelSplit>(own_parameters(), channel_op(), home, split_step());
  weight_ = bias_ = nullptr;  // the split's parameters now
  return *split_;
}

const FakeQuantize* ChannelLayer::wire_input_grids(const FakeQuantize* in) {
  input_fake_quant_ = in;
  return output_quantizer();
}

Var ChannelLayer::split_forward(const Var& x) {
  SplitQuant q;
  q.weight = weight_fake_quant_ ? &weight_fake_quant_->quantizer() : nullptr;
  q.input = input_fake_quant_ ? &input_fake_quant_->quantizer() : nullptr;
  q.training = training();
  return split_->forward(x, q);
}

Var ChannelLayer::weight_var() {
  Var w = Var::of(*weight_);
  return weight_fake_quant_ ? (*weight_fake_quant_)(w) : w;
}

std::vector<ValueId> ChannelLayer::weight_inputs(ExportBuilder& g, ValueId x) const {
  const WholeParameters wb = whole_parameters(split_.get(), weight_, bias_);
  ValueId w = weight_fake_quant_ ? weight_fake_quant_->weight_to_graph(g, wb.weight_name, wb.weight)
                                 : g.constant(wb.weight_name, wb.weight);
  std::vector<ValueId> in{x, w};
  if (wb.bias.defined()) in.push_back(g.constant(wb.bias_name, wb.bias));
  return in;
}

}  // namespace tandem::train
