#pragma once
#include "train/layers/fake_quantize.h"
#include "train/layers/init.h"
#include "train/layers/module.h"

namespace tandem::train {

// PyTorch's nn.Linear: weight [out, in], bias [out], both U(±1/sqrt(in)).
class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, bool bias, Rng& rng);
  Var forward(const Var& x) override;
  // Quantization-aware training from now on: the weight passes through a
  // per-output-channel int8 fake quantizer (child "weight_fake_quant").
  void enable_qat();
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;

 private:
  Parameter* weight_;
  Parameter* bias_ = nullptr;
  FakeQuantize* weight_fake_quant_ = nullptr;
};

}  // namespace tandem::train
