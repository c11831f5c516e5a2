#pragma once
#include "train/layers/batch_norm.h"
#include "train/layers/conv2d.h"
#include "train/layers/sequential.h"

namespace tandem::train {

// torchvision's ResNet BasicBlock: relu(bn2(conv2(relu(bn1(conv1(x))))) + s(x)),
// 3x3 convs without bias (conv1 strided); s is the identity, or
// "downsample" = conv1x1(stride) + BN when the stride or width changes.
class BasicBlock : public Module {
 public:
  BasicBlock(int64_t in, int64_t out, int64_t stride, Rng& rng);
  Var forward(const Var& x) override;
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;
  const FakeQuantize* wire_input_grids(const FakeQuantize* in) override;
  // Quantization-aware training from now on, as torchvision's quantizable
  // block: int8 weights on every conv; uint8 activations after relu(bn1)
  // ("relu1_fake_quant"), after bn2 and downsample (the adds' inputs) and
  // after the block (its own output quantizer).
  void enable_qat();

 private:
  Conv2d* conv1_;
  BatchNorm2d* bn1_;
  Conv2d* conv2_;
  BatchNorm2d* bn2_;
  Sequential* downsample_ = nullptr;
  FakeQuantize* relu1_fake_quant_ = nullptr;
};

}  // namespace tandem::train
