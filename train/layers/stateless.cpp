#include "train/layers/stateless.h"

namespace tandem::train {

Var GlobalAvgPool2d::forward(const Var& x) { return global_avg_pool2d(x); }
ValueId GlobalAvgPool2d::to_graph(ExportBuilder& g, ValueId x) const { return g.node("GlobalAveragePool", {x}); }

Var Flatten::forward(const Var& x) { return flatten(x, start_dim_); }

ValueId Flatten::to_graph(ExportBuilder& g, ValueId x) const {
  // ONNX Flatten makes [d0 * ... * d(axis-1), rest]: the same as ours only from axis 1.
  check_supported(start_dim_ == 1, "export: Flatten from dim " + std::to_string(start_dim_) + " (only 1)");
  Attributes a;
  a.set("axis", int64_t(1));
  return g.node("Flatten", {x}, a);
}

Dropout::Dropout(float p, Rng& rng) : p_(p) {
  rng_ = &add_buffer("rng", Tensor::from_vector<int64_t>({int64_t(rng.next()), 0}, {2}), false);
}

Var Dropout::forward(const Var& x) {
  if (!training()) return x;
  int64_t* state = rng_->value.data<int64_t>();  // seed bits, calls
  return dropout(x, p_, uint64_t(state[0]) + uint64_t(state[1]++), true);
}

}  // namespace tandem::train
