#include "train/layers/convnext_block.h"

#include "train/export_builder.h"
#include "train/functional.h"

namespace tandem::train {

PointwiseLinear::PointwiseLinear(int64_t in, int64_t out, Rng& rng) {
  check(in > 0 && out > 0, "PointwiseLinear(" + std::to_string(in) + ", " + std::to_string(out) +
                               "): sizes must be positive");
  weight_ = &add_parameter("weight", Tensor::empty(DType::f32, {out, in}), true);
  default_init(weight_->value, in, rng);
  bias_ = &add_parameter("bias", Tensor::empty(DType::f32, {out}), false);
  default_init(bias_->value, in, rng);
}

Var PointwiseLinear::forward(const Var& x) {
  const Shape& w = weight_->value.shape();
  return conv2d(x, reshape(Var::of(*weight_), {w[0], w[1], 1, 1}), Var::of(*bias_),
                ops::Conv2dParams{});
}

ValueId PointwiseLinear::to_graph(ExportBuilder& g, ValueId x) const {
  const Shape& w = weight_->value.shape();
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{1, 1});
  return g.node("Conv",
                {x, g.constant(weight_->name, weight_->value.reshaped({w[0], w[1], 1, 1})),
                 g.constant(bias_->name, bias_->value)},
                a);
}

ConvNeXtBlock::ConvNeXtBlock(int64_t dim, Rng& rng, float layer_scale_init) {
  dwconv_ = &add_module(
      "dwconv",
      std::make_unique<Conv2d>(dim, dim, 7, Conv2dOptions{.padding = 3, .groups = dim}, rng));
  norm_ = &add_module("norm", std::make_unique<LayerNorm2d>(dim, 1e-6f));
  pwconv1_ = &add_module("pwconv1", std::make_unique<PointwiseLinear>(dim, 4 * dim, rng));
  pwconv2_ = &add_module("pwconv2", std::make_unique<PointwiseLinear>(4 * dim, dim, rng));
  layer_scale_ = &add_module("layer_scale", std::make_unique<LayerScale>(dim, layer_scale_init));
}

Var ConvNeXtBlock::forward(const Var& x) {
  Var y = gelu((*pwconv1_)((*norm_)((*dwconv_)(x))));
  return add(x, (*layer_scale_)((*pwconv2_)(y)));
}

ValueId ConvNeXtBlock::to_graph(ExportBuilder& g, ValueId x) const {
  ValueId y = pwconv1_->graph(g, norm_->graph(g, dwconv_->graph(g, x)));
  y = export_op(g, y, ops::Activation{ops::ActivationKind::gelu});
  return g.node("Add", {x, layer_scale_->graph(g, pwconv2_->graph(g, y))});
}

}  // namespace tandem::train
