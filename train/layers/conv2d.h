#pragma once
#include "ops/train_backend.h"
#include "train/layers/channel_layer.h"
#include "train/layers/init.h"

namespace tandem::train {

struct Conv2dOptions {
  int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
  bool bias = true;
};

// PyTorch's nn.Conv2d with a square kernel: weight [out, in/groups, k, k],
// bias [out], both U(±1/sqrt(fan_in)), fan_in = in/groups * k * k. QAT and
// the CPU/GPU split: ChannelLayer.
class Conv2d : public ChannelLayer {
 public:
  Conv2d(int64_t in, int64_t out, int64_t kernel, const Conv2dOptions& o, Rng& rng);
  Var forward(const Var& x) override;
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;

 private:
  ChannelOp channel_op() const override { return ChannelOp{ChannelOp::Kind::conv2d, params_}; }
  int64_t split_step() const override;

  ops::Conv2dParams params_;
  int64_t kernel_ = 0;
};

}  // namespace tandem::train
