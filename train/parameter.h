#pragma once
// A trainable tensor: fp32 master value and its gradient, named like PyTorch's
// state_dict keys ("features.0.weight") so checkpoints and ONNX initializers
// line up with a PyTorch model of the same architecture.
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tandem::train {

struct Parameter {
  std::string name;
  Tensor value;  // f32, plain layout; the optimizer updates it in place
  Tensor grad;   // f32, same shape; backward accumulates into it
  // AdamW/SGD weight decay applies (PyTorch users usually exclude BN and bias).
  bool decay = true;
};

using ParameterList = std::vector<Parameter*>;

}  // namespace tandem::train
