#pragma once
// Quantization-aware training as layers, in PyTorch's eager QAT layout:
//   FakeQuantize     after an activation (per tensor, uint8), or as a conv or
//                    linear layer's weight_fake_quant (per output channel, int8)
// Its observer's range is kept as buffers named like PyTorch's
// ("activation_post_process.min_val" / ".max_val"), so checkpoints and
// export carry it. Exported, it is ONNX's QDQ form: an activation becomes a
// QuantizeLinear/DequantizeLinear pair, a weight an integer initializer and
// a DequantizeLinear (per channel, axis 0), with qparams named like
// PyTorch's FakeQuantize buffers ("<module>.scale", "<module>.zero_point").
#include "train/layers/module.h"
#include "train/quant/fake_quantizer.h"

namespace tandem::train {

class FakeQuantize : public Module {
 public:
  explicit FakeQuantize(QuantSpec spec = QuantSpec::activations(), int64_t channels = 1);
  Var forward(const Var& x) override { return quantizer_(x, training()); }
  const FakeQuantizer& quantizer() const { return quantizer_; }
  FakeQuantizer& quantizer() { return quantizer_; }
  // QuantizeLinear then DequantizeLinear of x (per tensor).
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;
  // The weight `w` as the initializer `name` holding its integers, then a
  // DequantizeLinear: the fake-quantized weight, stored int8.
  ValueId weight_to_graph(ExportBuilder& g, const std::string& name, const Tensor& w) const;

 private:
  // "<this module's name>." ("features.0.weight_fake_quant.").
  std::string prefix() const;
  // The scale and zero point as initializers (scalars per tensor).
  std::pair<ValueId, ValueId> qparams_to_graph(ExportBuilder& g) const;

  FakeQuantizer quantizer_;
  const Buffer* min_;
};

// torch.ao.quantization.QuantStub after prepare_qat: the identity with an
// output quantizer, where a model's float input becomes uint8.
class QuantStub : public Module {
 public:
  QuantStub() { quantize_output(); }
  Var forward(const Var& x) override { return x; }
  ValueId to_graph(ExportBuilder&, ValueId x) const override { return x; }
};

}  // namespace tandem::train
