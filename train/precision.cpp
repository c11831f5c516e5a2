#include "train/precision.h"

#include "train/layers.h"
#include "train/layers/fake_quantize.h"

namespace tandem::train {

namespace {

bool follows_in_group(Module& m) {
  return dynamic_cast<BatchNorm2d*>(&m) != nullptr || dynamic_cast<Activation*>(&m) != nullptr;
}

// Each Conv2d / Linear gets int8 weights, and the last layer of its group
// (the weighted layer and the BatchNorm2d / activations right after it, what
// PyTorch would fuse) an output quantizer.
void prepare_children(Sequential& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    Module& m = s.layer(i);
    if (auto* seq = dynamic_cast<Sequential*>(&m)) {
      prepare_children(*seq);
    } else if (auto* block = dynamic_cast<BasicBlock*>(&m)) {
      block->enable_qat();
    } else if (dynamic_cast<ConvNeXtBlock*>(&m) || dynamic_cast<LayerNorm*>(&m)) {
      throw Error::unsupported("int8-qat: layer norms and ConvNeXt blocks have no quantized form");
    } else if (auto* layer = dynamic_cast<ChannelLayer*>(&m)) {
      layer->enable_qat();
      size_t last = i;
      while (last + 1 < s.size() && follows_in_group(s.layer(last + 1))) ++last;
      s.layer(last).quantize_output();
      i = last;
    }
  }
}

}  // namespace

void prepare_qat(Sequential& model) {
  prepare_children(model);
  model.add_front("quant", std::make_unique<QuantStub>());
  model.wire_input_grids(nullptr);
}

void apply_precision(Sequential& model, const std::string& precision) {
  // fp16 and bf16 are the loop's (TrainerOptions::autocast, loss scaling).
  if (precision == "fp32" || precision == "fp16" || precision == "bf16") return;
  if (precision == "int8-qat") {
    prepare_qat(model);
  } else {
    throw Error("unknown precision '" + precision + "' (known: fp32, fp16, bf16, int8-qat)");
  }
}

}  // namespace tandem::train
