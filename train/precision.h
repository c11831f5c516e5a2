#pragma once
// `tandem train --precision`: what a precision changes in a model before its
// optimizer is made. fp32, fp16 and bf16 change nothing here: mixed
// precision is the loop's (TrainerOptions::autocast runs the forward, so the
// backward too, under AutocastGuard; fp16 adds dynamic loss scaling).
//   int8-qat  quantization-aware training from the first step (prepare_qat):
//             per-channel int8 fake-quant weights on every Conv2d and Linear,
//             per-tensor uint8 fake-quant activations where PyTorch's eager
//             QAT with fused conv-bn-relu / linear-relu modules observes: the
//             model's input ("quant"), each conv[-bn][-act] and
//             linear[-act] group's output, and inside residual blocks (see
//             BasicBlock::enable_qat)
#include <string>

#include "train/layers/sequential.h"

namespace tandem::train {

// "fp32", "fp16", "bf16" or "int8-qat"; an Error for anything else.
void apply_precision(Sequential& model, const std::string& precision);

// int8-qat's part of apply_precision.
void prepare_qat(Sequential& model);

}  // namespace tandem::train
