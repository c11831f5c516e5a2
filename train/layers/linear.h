#pragma once
#include "train/layers/channel_layer.h"
#include "train/layers/init.h"

namespace tandem::train {

// PyTorch's nn.Linear: weight [out, in], bias [out], both U(±1/sqrt(in)).
// QAT and the CPU/GPU split: ChannelLayer.
class Linear : public ChannelLayer {
 public:
  Linear(int64_t in, int64_t out, bool bias, Rng& rng);
  Var forward(const Var& x) override;
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;

 private:
  ChannelOp channel_op() const override { return ChannelOp{ChannelOp::Kind::linear, {}}; }
};

}  // namespace tandem::train
