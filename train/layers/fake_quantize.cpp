#include "train/layers/fake_quantize.h"

#include "train/device_tensor.h"
#include "train/export_builder.h"

namespace tandem::train {

FakeQuantize::FakeQuantize(QuantSpec spec, int64_t channels) : quantizer_(spec, channels) {
  // Shallow: the buffers are the quantizer's own range tensors.
  // The observer updates its range on the host whatever device trains.
  Buffer& min = add_buffer("activation_post_process.min_val", quantizer_.min());
  min.host_only = true;
  min_ = &min;
  add_buffer("activation_post_process.max_val", quantizer_.max()).host_only = true;
}

std::string FakeQuantize::prefix() const {
  const std::string suffix = "activation_post_process.min_val";
  return min_->name.substr(0, min_->name.size() - suffix.size());
}

std::pair<ValueId, ValueId> FakeQuantize::qparams_to_graph(ExportBuilder& g) const {
  check(quantizer_.observed(), "export: the fake quantizer " + prefix() + " has observed nothing (train first)");
  auto [scale, zero_point] = quantizer_.qparams();
  const bool per_tensor = quantizer_.spec().scheme == QScheme::per_tensor_affine;
  const Shape shape = per_tensor ? Shape{} : scale.shape();
  Tensor zp = Tensor::empty(quantizer_.spec().qmin < 0 ? DType::i8 : DType::u8, shape);
  for (int64_t i = 0; i < zp.numel(); ++i) {
    const int64_t z = zero_point.data<int64_t>()[i];
    if (zp.dtype() == DType::i8)
      zp.data<int8_t>()[i] = int8_t(z);
    else
      zp.data<uint8_t>()[i] = uint8_t(z);
  }
  Tensor s = Tensor::empty(DType::f32, shape);
  for (int64_t i = 0; i < s.numel(); ++i) s.data<float>()[i] = scale.data<float>()[i];
  return {g.constant(prefix() + "scale", s), g.constant(prefix() + "zero_point", zp)};
}

ValueId FakeQuantize::to_graph(ExportBuilder& g, ValueId x) const {
  check_supported(quantizer_.spec().scheme == QScheme::per_tensor_affine,
                  "export: a per-channel fake quantizer of activations");
  auto [scale, zero_point] = qparams_to_graph(g);
  return g.node("DequantizeLinear", {g.node("QuantizeLinear", {x, scale, zero_point}), scale, zero_point});
}

ValueId FakeQuantize::weight_to_graph(ExportBuilder& g, const std::string& name, const Tensor& w) const {
  auto [scale, zero_point] = qparams_to_graph(g);
  Attributes a;
  a.set("axis", quantizer_.spec().axis);
  return g.node("DequantizeLinear",
                {g.constant(name, quantizer_.quantize(to_host(w))), scale, zero_point}, a);
}

}  // namespace tandem::train
