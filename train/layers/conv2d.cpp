#include "train/layers/conv2d.h"

#include "train/export_builder.h"
#include "train/functional.h"

namespace tandem::train {

Conv2d::Conv2d(int64_t in, int64_t out, int64_t kernel, const Conv2dOptions& o, Rng& rng) {
  check(in > 0 && out > 0 && kernel > 0 && o.groups > 0 && in % o.groups == 0 && out % o.groups == 0,
        "Conv2d(" + std::to_string(in) + ", " + std::to_string(out) + ", kernel " + std::to_string(kernel) +
            ", groups " + std::to_string(o.groups) + "): channels must be positive multiples of groups");
  params_ = {{o.stride, o.stride}, {o.padding, o.padding}, {o.dilation, o.dilation}, o.groups};
  int64_t fan_in = in / o.groups * kernel * kernel;
  weight_ = &add_parameter("weight", Tensor::empty(DType::f32, {out, in / o.groups, kernel, kernel}), true);
  default_init(weight_->value, fan_in, rng);
  if (o.bias) {
    bias_ = &add_parameter("bias", Tensor::empty(DType::f32, {out}), false);
    default_init(bias_->value, fan_in, rng);
  }
}

Var Conv2d::forward(const Var& x) {
  if (split_) return split_->forward(x);
  Var w = Var::of(*weight_);
  if (weight_fake_quant_) w = (*weight_fake_quant_)(w);
  return conv2d(x, w, bias_ ? Var::of(*bias_) : Var(), params_);
}

void Conv2d::enable_qat() {
  if (weight_fake_quant_) return;
  check_supported(!split_, "quantization-aware training of a layer split between devices");
  weight_fake_quant_ = &add_module("weight_fake_quant",
                                   std::make_unique<FakeQuantize>(QuantSpec::weights(), weight_->value.dim(0)));
}

ChannelSplit& Conv2d::split(Device home) {
  if (split_) {
    check(split_->link().home() == home, "a layer split with " + split_->link().home().str() +
                                             " cannot be split with " + home.str() + " as well");
    return *split_;
  }
  check_supported(!weight_fake_quant_, "a layer under quantization-aware training cannot be split between devices");
  // A grouped conv splits only whole: a part of its groups would need its
  // own slice of x's channels as well (a copy per step); r = 0 or 1.
  const int64_t step = params_.groups > 1 ? weight_->value.dim(0) : 1;
  split_ = std::make_unique<ChannelSplit>(own_parameters(), ChannelOp{ChannelOp::Kind::conv2d, params_}, home, step);
  weight_ = bias_ = nullptr;  // the split's parameters now
  return *split_;
}

ValueId Conv2d::to_graph(ExportBuilder& g, ValueId x) const {
  const WholeParameters wb = whole_parameters(split_.get(), weight_, bias_);
  const Shape& w = wb.weight.shape();
  const Conv2dParams& p = params_;
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{w[2], w[3]});
  a.set("strides", std::vector<int64_t>{p.stride[0], p.stride[1]});
  a.set("pads", std::vector<int64_t>{p.padding[0], p.padding[1], p.padding[0], p.padding[1]});
  a.set("dilations", std::vector<int64_t>{p.dilation[0], p.dilation[1]});
  a.set("group", p.groups);
  ValueId wq = weight_fake_quant_ ? weight_fake_quant_->weight_to_graph(g, wb.weight_name, wb.weight)
                                  : g.constant(wb.weight_name, wb.weight);
  std::vector<ValueId> in{x, wq};
  if (wb.bias.defined()) in.push_back(g.constant(wb.bias_name, wb.bias));
  return g.node("Conv", std::move(in), a);
}

}  // namespace tandem::train
