#include "train/layers/sequential.h"

namespace tandem::train {

Var Sequential::forward(const Var& x) {
  Var y = x;
  for (Module* m : layers_) y = (*m)(y);
  return y;
}

ValueId Sequential::to_graph(ExportBuilder& g, ValueId x) const {
  for (const Module* m : layers_) x = m->graph(g, x);
  return x;
}

}  // namespace tandem::train
