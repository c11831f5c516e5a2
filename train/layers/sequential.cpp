#include "train/layers/sequential.h"

#include <optional>

#include "train/autocast.h"

namespace tandem::train {

Var Sequential::forward(const Var& x) {
  std::optional<AutocastGuard> autocast;
  if (autocast_ != DType::f32) autocast.emplace(autocast_);
  Var y = x;
  for (Module* m : layers_) y = (*m)(y);
  return y;
}

ValueId Sequential::to_graph(ExportBuilder& g, ValueId x) const {
  for (const Module* m : layers_) x = m->graph(g, x);
  return x;
}

}  // namespace tandem::train
