#pragma once
// torch.optim.SGD: momentum (buffer starts as the first step), dampening,
// Nesterov, L2 weight decay added to the gradient (only for parameters with
// decay set).
#include <cstdint>

#include "ops/update_rules.h"
#include "train/optim/device_math.h"
#include "train/optim/optimizer.h"

namespace tandem::train {

struct SgdOptions {
  double lr = 0.01;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;  // needs momentum > 0 and dampening 0, as in torch
};

class Sgd : public Optimizer {
 public:
  Sgd(ParameterList params, const SgdOptions& options);
  std::string kind() const override { return "sgd"; }
  const SgdOptions& options() const { return options_; }

 private:
  void update(size_t i, Parameter& p) override;
  void finish_step() override;
  ops::SgdScalars scalars(bool decay) const;
  SgdOptions options_;
  DeviceStep on_gpu_;  // this step's GPU parameters
};

// One SGD step over n contiguous elements; `buf` may be null without momentum.
void sgd_update_array(float* param, const float* grad, float* buf, int64_t n, const ops::SgdScalars& s);

}  // namespace tandem::train
