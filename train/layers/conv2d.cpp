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
  Var w = Var::of(*weight_);
  if (weight_fake_quant_) w = (*weight_fake_quant_)(w);
  return conv2d(x, w, bias_ ? Var::of(*bias_) : Var(), params_);
}

void Conv2d::enable_qat() {
  if (weight_fake_quant_) return;
  weight_fake_quant_ = &add_module("weight_fake_quant",
                                   std::make_unique<FakeQuantize>(QuantSpec::weights(), weight_->value.dim(0)));
}

ValueId Conv2d::to_graph(ExportBuilder& g, ValueId x) const {
  const Shape& w = weight_->value.shape();
  const Conv2dParams& p = params_;
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{w[2], w[3]});
  a.set("strides", std::vector<int64_t>{p.stride[0], p.stride[1]});
  a.set("pads", std::vector<int64_t>{p.padding[0], p.padding[1], p.padding[0], p.padding[1]});
  a.set("dilations", std::vector<int64_t>{p.dilation[0], p.dilation[1]});
  a.set("group", p.groups);
  ValueId wq = weight_fake_quant_ ? weight_fake_quant_->weight_to_graph(g, weight_->name, weight_->value)
                                  : g.constant(weight_->name, weight_->value);
  std::vector<ValueId> in{x, wq};
  if (bias_) in.push_back(g.constant(bias_->name, bias_->value));
  return g.node("Conv", std::move(in), a);
}

}  // namespace tandem::train
