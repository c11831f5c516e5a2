#pragma once
// Mixed precision by scope, as torch.autocast: while an AutocastGuard(bf16)
// lives on this thread, conv2d multiplies in bf16 (ops::Conv2dParams::compute;
// tensors and every other op stay f32). f16 is the GPU's (the CPU table
// refuses it). The backward uses the precision the
// forward recorded, wherever it runs.
#include "core/dtype.h"

namespace tandem::train {

// f32 when no guard is active.
DType autocast_dtype();

class AutocastGuard {
 public:
  explicit AutocastGuard(DType compute);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DType previous_;
};

}  // namespace tandem::train
