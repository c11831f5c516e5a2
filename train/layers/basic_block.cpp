#include "train/layers/basic_block.h"

#include "train/export_builder.h"
#include "train/functional.h"

namespace tandem::train {

BasicBlock::BasicBlock(int64_t in, int64_t out, int64_t stride, Rng& rng) {
  Conv2dOptions c3{.stride = stride, .padding = 1, .bias = false};
  conv1_ = &add_module("conv1", std::make_unique<Conv2d>(in, out, 3, c3, rng));
  bn1_ = &add_module("bn1", std::make_unique<BatchNorm2d>(out));
  conv2_ = &add_module("conv2", std::make_unique<Conv2d>(out, out, 3, Conv2dOptions{.padding = 1, .bias = false}, rng));
  bn2_ = &add_module("bn2", std::make_unique<BatchNorm2d>(out));
  if (stride != 1 || in != out) {
    auto down = std::make_unique<Sequential>();
    down->emplace<Conv2d>(in, out, 1, Conv2dOptions{.stride = stride, .bias = false}, rng);
    down->emplace<BatchNorm2d>(out);
    downsample_ = &add_module("downsample", std::move(down));
  }
}

Var BasicBlock::forward(const Var& x) {
  Var y = bn1_->forward_relu((*conv1_)(x));
  if (relu1_fake_quant_) y = (*relu1_fake_quant_)(y);
  return bn2_->forward_relu((*conv2_)(y), downsample_ ? (*downsample_)(x) : x);
}

ValueId BasicBlock::to_graph(ExportBuilder& g, ValueId x) const {
  ValueId y = g.node("Relu", {bn1_->graph(g, conv1_->graph(g, x))});
  if (relu1_fake_quant_) y = relu1_fake_quant_->graph(g, y);
  y = bn2_->graph(g, conv2_->graph(g, y));
  return g.node("Relu", {g.node("Add", {y, downsample_ ? downsample_->graph(g, x) : x})});
}

const FakeQuantize* BasicBlock::wire_input_grids(const FakeQuantize* in) {
  conv1_->wire_input_grids(in);
  conv2_->wire_input_grids(relu1_fake_quant_);
  if (downsample_) downsample_->wire_input_grids(in);
  return output_quantizer();
}

void BasicBlock::enable_qat() {
  if (relu1_fake_quant_) return;
  conv1_->enable_qat();
  conv2_->enable_qat();
  relu1_fake_quant_ = &add_module("relu1_fake_quant", std::make_unique<FakeQuantize>());
  bn2_->quantize_output();
  if (downsample_) {
    dynamic_cast<Conv2d&>(downsample_->layer(0)).enable_qat();
    downsample_->layer(1).quantize_output();
  }
  quantize_output();
}

}  // namespace tandem::train
