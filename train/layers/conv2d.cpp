#include "train/layers/conv2d.h"

#include "train/export_builder.h"
#include "train/functional.h"

namespace tandem::train {

Conv2d::Conv2d(int64_t in, int64_t out, int64_t kernel, const Conv2dOptions& o, Rng& rng) {
  check(in > 0 && out > 0 && kernel > 0 && o.groups > 0 && in % o.groups == 0 && out % o.groups == 0,
        "Conv2d(" + std::to_string(in) + ", " + std::to_string(out) + ", kernel " + std::to_string(kernel) +
            ", groups " + std::to_string(o.groups) + "): channels must be positive multiples of groups");
  params_ = {{o.stride, o.stride}, {o.padding, o.padding}, {o.dilation, o.dilation}, o.groups};
  kernel_ = kernel;
  int64_t fan_in = in / o.groups * kernel * kernel;
  weight_ = &add_parameter("weight", Tensor::empty(DType::f32, {out, in / o.groups, kernel, kernel}), true);
  default_init(weight_->value, fan_in, rng);
  if (o.bias) {
    bias_ = &add_parameter("bias", Tensor::empty(DType::f32, {out}), false);
    default_init(bias_->value, fan_in, rng);
  }
}

Var Conv2d::forward(const Var& x) {
  if (split_) return split_forward(x);
  return conv2d(x, weight_var(), bias_var(), params_);
}

// A grouped conv splits only whole: a part of its groups would need its own
// slice of x's channels as well (a copy per step); r = 0 or 1.
int64_t Conv2d::split_step() const { return params_.groups > 1 ? weight_->value.dim(0) : 1; }

ValueId Conv2d::to_graph(ExportBuilder& g, ValueId x) const {
  const ops::Conv2dParams& p = params_;
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{kernel_, kernel_});
  a.set("strides", std::vector<int64_t>{p.stride[0], p.stride[1]});
  a.set("pads", std::vector<int64_t>{p.padding[0], p.padding[1], p.padding[0], p.padding[1]});
  a.set("dilations", std::vector<int64_t>{p.dilation[0], p.dilation[1]});
  a.set("group", p.groups);
  return g.node("Conv", weight_inputs(g, x), a);
}

}  // namespace tandem::train
