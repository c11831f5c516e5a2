#pragma once
// torch.optim.AdamW: decoupled weight decay (p *= 1 - lr * wd, only for
// parameters with decay set), bias-corrected moments, eps added to the
// corrected square root.
#include <cstdint>

#include "ops/update_rules.h"
#include "train/optim/device_math.h"
#include "train/optim/optimizer.h"

namespace tandem::train {

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
};

class AdamW : public Optimizer {
 public:
  AdamW(ParameterList params, const AdamWOptions& options);
  std::string kind() const override { return "adamw"; }
  const AdamWOptions& options() const { return options_; }

 private:
  void update(size_t i, Parameter& p) override;
  void finish_step() override;
  AdamWOptions options_;
  DeviceStep on_gpu_;  // this step's GPU parameters
};

// The scalars of step number `t` (1-based) at learning rate `lr`.
ops::AdamWScalars adamw_scalars(const AdamWOptions& o, double lr, int64_t t, bool decay);
// One AdamW step over n contiguous elements (m, v: the moment estimates).
void adamw_update_array(float* param, const float* grad, float* m, float* v, int64_t n, const ops::AdamWScalars& s);

}  // namespace tandem::train
