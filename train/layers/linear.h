#pragma once
#include "train/layers/fake_quantize.h"
#include "train/layers/init.h"
#include "train/layers/module.h"
#include "train/split/channel_split.h"

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
  // From now on the output channels are split between `home` (a GPU, where
  // x lives) and the host (train/split/place.h), all on home at first; the
  // weight and bias become a ChannelSplit's parameters, so make the optimizer
  // afterwards. Not with QAT (an Error after enable_qat, and enable_qat after).
  ChannelSplit& split(Device home);
  ChannelSplit* channel_split() const { return split_.get(); }

 private:
  Parameter* weight_;
  Parameter* bias_ = nullptr;
  FakeQuantize* weight_fake_quant_ = nullptr;
  std::unique_ptr<ChannelSplit> split_;
};

}  // namespace tandem::train
