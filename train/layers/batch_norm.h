#pragma once
#include "ops/train_backend.h"
#include "train/layers/module.h"

namespace tandem::train {

// PyTorch's nn.BatchNorm2d (affine, tracking running statistics): weight 1,
// bias 0, buffers running_mean 0, running_var 1, num_batches_tracked (i64).
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t channels, float eps = 1e-5f, float momentum = 0.1f);
  Var forward(const Var& x) override;
  // relu(forward(x) + residual), residual optional: batch_norm_relu's one
  // fused op where the backend has it (a ResNet block's BN-ReLU and
  // BN-add-ReLU), composed when this layer's output is fake-quantized.
  Var forward_relu(const Var& x, const Var& residual = Var());
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;

 private:
  void check_input(const Var& x) const;

  float eps_, momentum_;
  Parameter* weight_;
  Parameter* bias_;
  Buffer* running_mean_;
  Buffer* running_var_;
  Buffer* batches_;
};

}  // namespace tandem::train
