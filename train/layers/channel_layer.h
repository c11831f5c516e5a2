#pragma once
// What Conv2d and Linear share: a weight whose rows are the output channels
// (and an optional bias, one per channel), the two ways those rows can be
// taken over, and the export of the weight either way.
//   enable_qat()  quantization-aware training: the weight passes through a
//                 per-output-channel int8 fake quantizer (child
//                 "weight_fake_quant")
//   split(home)   the output channels split between `home` (a GPU, where x
//                 lives) and the host (train/split/place.h), all on home at
//                 first; the weight and bias become a ChannelSplit's
//                 parameters, so make the optimizer afterwards
// Both together: each side's weights pass through their channels of the
// fake quantizer, and a conv's host side runs its forward on integers
// (train/split/split_op.h) once wire_input_grids told it x's grid.
#include <memory>

#include "train/layers/fake_quantize.h"
#include "train/layers/module.h"
#include "train/split/channel_split.h"

namespace tandem::train {

class ChannelLayer : public Module {
 public:
  void enable_qat();
  ChannelSplit& split(Device home);
  ChannelSplit* channel_split() const { return split_.get(); }
  const FakeQuantize* wire_input_grids(const FakeQuantize* in) override;

 protected:
  // The op the split runs, and the multiple its home share is cut at.
  virtual ChannelOp channel_op() const = 0;
  virtual int64_t split_step() const { return 1; }

  // The layer's forward when it is not split: op(x, weight, bias) with the
  // weight fake-quantized under QAT.
  Var weight_var();
  Var bias_var() { return bias_ ? Var::of(*bias_) : Var(); }
  // The split's forward, its weights under QAT's quantizers.
  Var split_forward(const Var& x);
  // Export inputs: the (fake-quantized) whole weight, then the bias if any.
  std::vector<ValueId> weight_inputs(ExportBuilder& g, ValueId x) const;

  Parameter* weight_ = nullptr;
  Parameter* bias_ = nullptr;
  FakeQuantize* weight_fake_quant_ = nullptr;
  const FakeQuantize* input_fake_quant_ = nullptr;  // what put x on its grid (wire_input_grids)
  std::unique_ptr<ChannelSplit> split_;
};

}  // namespace tandem::train
