#include "train/layers/stateless.h"

namespace tandem::train {

Var GlobalAvgPool2d::forward(const Var& x) { return global_avg_pool2d(x); }
Var Flatten::forward(const Var& x) { return flatten(x, start_dim_); }

Var Dropout::forward(const Var& x) {
  if (!training()) return x;
  return dropout(x, p_, seed_ + calls_++, true);
}

}  // namespace tandem::train
