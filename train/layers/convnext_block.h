#pragma once
#include "train/layers/conv2d.h"
#include "train/layers/layer_norm.h"

namespace tandem::train {

// A Linear over the channels of x [N, in, H, W] at every pixel: weight
// [out, in] and bias [out] as nn.Linear's (and its initialization), run as
// a 1x1 convolution, so the block needs no permutation to channels last.
// Exports as Conv with the weight as [out, in, 1, 1].
class PointwiseLinear : public Module {
 public:
  PointwiseLinear(int64_t in, int64_t out, Rng& rng);
  Var forward(const Var& x) override;
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;

 private:
  Parameter* weight_;
  Parameter* bias_;
};

// Liu et al. 2022's ConvNeXt block on x [N, dim, H, W]:
//   x + layer_scale(pwconv2(gelu(pwconv1(norm(dwconv(x))))))
// dwconv 7x7 depthwise (padding 3, bias), norm a LayerNorm over the
// channels (eps 1e-6), pwconv1 dim -> 4 dim, exact GELU, pwconv2 back,
// per-channel layer scale (drop path left out). Its state_dict keys are
// those of the paper's Block ("dwconv", "norm", "pwconv1", "pwconv2"), the
// layer scale's "gamma" under "layer_scale".
class ConvNeXtBlock : public Module {
 public:
  ConvNeXtBlock(int64_t dim, Rng& rng, float layer_scale_init = 1e-6f);
  Var forward(const Var& x) override;
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;

 private:
  Conv2d* dwconv_;
  LayerNorm2d* norm_;
  PointwiseLinear* pwconv1_;
  PointwiseLinear* pwconv2_;
  LayerScale* layer_scale_;
};

}  // namespace tandem::train
