#pragma once
// Quantization-aware training as layers, in PyTorch's eager QAT layout:
//   FakeQuantize     after an activation (per tensor, uint8), or as a conv or
//                    linear layer's weight_fake_quant (per output channel, int8)
// Its observer's range is kept as buffers named like PyTorch's
// ("activation_post_process.min_val" / ".max_val"), so checkpoints and
// export carry it.
#include "train/layers/module.h"
#include "train/quant/fake_quantizer.h"

namespace tandem::train {

class FakeQuantize : public Module {
 public:
  explicit FakeQuantize(QuantSpec spec = QuantSpec::activations(), int64_t channels = 1);
  Var forward(const Var& x) override { return quantizer_(x, training()); }
  const FakeQuantizer& quantizer() const { return quantizer_; }

 private:
  FakeQuantizer quantizer_;
};

}  // namespace tandem::train
