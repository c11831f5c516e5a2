#pragma once
// The normalization and scaling layers of ConvNeXt-style networks.
#include "train/layers/init.h"
#include "train/layers/module.h"

namespace tandem::train {

// nn.LayerNorm(channels) over the last axis of x [..., channels]: weight 1,
// bias 0. Exports as LayerNormalization (axis -1, opset 17).
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t channels, float eps = 1e-5f);
  Var forward(const Var& x) override;
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;

 protected:
  // x's shape, checked: rank of at least `min_rank`, `channels` at `axis`
  // (negative from the end).
  void check_input(const Var& x, const char* layer, size_t min_rank, int64_t axis) const;

  float eps_;
  Parameter* weight_;
  Parameter* bias_;
};

// ConvNeXt's LayerNorm over the channels of x [N, C, H, W], each pixel on
// its own (nn.LayerNorm(C) on the channels-last permutation). Exports as
// Transpose to [N, H, W, C], LayerNormalization (axis -1), Transpose back,
// the nodes PyTorch writes for the permuting form.
class LayerNorm2d : public LayerNorm {
 public:
  using LayerNorm::LayerNorm;
  Var forward(const Var& x) override;
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;
};

// Per-channel scale of x [N, C, H, W] by "gamma" [C], initialized to
// `init` (ConvNeXt's layer scale, 1e-6 there; no weight decay). Runs as a
// depthwise 1x1 convolution without bias (one product per value, exactly
// gamma * x); exports as Mul by gamma [C, 1, 1].
class LayerScale : public Module {
 public:
  LayerScale(int64_t channels, float init);
  Var forward(const Var& x) override;
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;

 private:
  Parameter* gamma_;
};

}  // namespace tandem::train
