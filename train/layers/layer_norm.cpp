#include "train/layers/layer_norm.h"

#include "train/export_builder.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

Tensor filled(int64_t n, float v) {
  return Tensor::from_vector(std::vector<float>(size_t(n), v), {n});
}

ErrorContext layer_context(const char* layer, const Var& x) {
  return {"", "", layer, x.defined() ? shape_str(x.shape()) : ""};
}

ValueId transpose(ExportBuilder& g, ValueId x, std::vector<int64_t> perm) {
  Attributes a;
  a.set("perm", std::move(perm));
  return g.node("Transpose", {x}, a);
}

}  // namespace

LayerNorm::LayerNorm(int64_t channels, float eps) : eps_(eps) {
  check(channels > 0, "LayerNorm(" + std::to_string(channels) + "): channels must be positive");
  weight_ = &add_parameter("weight", filled(channels, 1), false);
  bias_ = &add_parameter("bias", filled(channels, 0), false);
}

void LayerNorm::check_input(const Var& x, const char* layer, size_t min_rank, int64_t axis) const {
  const int64_t channels = weight_->value.numel();
  TANDEM_CHECK(
      x.defined() && x.shape().size() >= min_rank &&
          x.shape()[size_t(axis < 0 ? int64_t(x.shape().size()) + axis : axis)] == channels,
      std::string(layer) + " wants " + std::to_string(channels) + " channels at axis " +
          std::to_string(axis),
      layer_context(layer, x));
}

Var LayerNorm::forward(const Var& x_in) {
  check_input(x_in, "LayerNorm", 1, -1);
  // The last axis of a channels-last tensor is not contiguous: plain first.
  const Var x = to_layout(x_in, Layout::plain);
  const int64_t rank = int64_t(x.shape().size());
  return layer_norm(x, Var::of(*weight_), Var::of(*bias_), rank - 1, rank, eps_);
}

ValueId LayerNorm::to_graph(ExportBuilder& g, ValueId x) const {
  Attributes a;
  a.set("axis", int64_t(-1));
  a.set("epsilon", eps_);
  return g.node(
      "LayerNormalization",
      {x, g.constant(weight_->name, weight_->value), g.constant(bias_->name, bias_->value)}, a);
}

Var LayerNorm2d::forward(const Var& x) {
  TANDEM_CHECK(x.defined() && x.shape().size() == 4, "LayerNorm2d wants x [N, C, H, W]",
               layer_context("LayerNorm2d", x));
  check_input(x, "LayerNorm2d", 4, 1);
  return layer_norm(x, Var::of(*weight_), Var::of(*bias_), 1, 2, eps_);
}

ValueId LayerNorm2d::to_graph(ExportBuilder& g, ValueId x) const {
  return transpose(g, LayerNorm::to_graph(g, transpose(g, x, {0, 2, 3, 1})), {0, 3, 1, 2});
}

LayerScale::LayerScale(int64_t channels, float init) {
  check(channels > 0, "LayerScale(" + std::to_string(channels) + "): channels must be positive");
  gamma_ = &add_parameter("gamma", filled(channels, init), false);
}

Var LayerScale::forward(const Var& x) {
  const int64_t c = gamma_->value.numel();
  TANDEM_CHECK(x.defined() && x.shape().size() == 4 && x.shape()[1] == c,
               "LayerScale wants x [N, " + std::to_string(c) + ", H, W]",
               layer_context("LayerScale", x));
  ops::Conv2dParams p;
  p.groups = c;
  return conv2d(x, reshape(Var::of(*gamma_), {c, 1, 1, 1}), Var(), p);
}

ValueId LayerScale::to_graph(ExportBuilder& g, ValueId x) const {
  const int64_t c = gamma_->value.numel();
  return g.node("Mul", {x, g.constant(gamma_->name, gamma_->value.reshaped({c, 1, 1}))});
}

}  // namespace tandem::train
