#include "train/layers/sequential.h"

namespace tandem::train {

Var Sequential::forward(const Var& x) {
  Var y = x;
  for (Module* m : layers_) y = m->forward(y);
  return y;
}

}  // namespace tandem::train
