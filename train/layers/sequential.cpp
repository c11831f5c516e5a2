#include "train/layers/sequential.h"

#include "train/backend.h"
#include "train/layers/batch_norm.h"
#include "train/layers/stateless.h"

namespace tandem::train {

namespace {

// A plain ReLU layer (no output quantizer): what a batch norm before it
// can take into one fused op.
bool is_plain_relu(const Module* m) {
  auto* a = dynamic_cast<const Activation*>(m);
  return a && a->params().kind == ops::ActivationKind::relu && !a->quantizes_output();
}

// Whether x's device has a fused BN-ReLU to try: elsewhere the two layers
// run (and are profiled) one by one.
bool may_fuse(const Var& x) {
  return x.defined() && train_backend(x.device()).batch_norm_relu_forward != nullptr;
}

}  // namespace

const FakeQuantize* Sequential::wire_input_grids(const FakeQuantize* in) {
  for (Module* m : layers_) in = m->wire_input_grids(in);
  return output_quantizer() ? output_quantizer() : in;
}

Var Sequential::forward(const Var& x) {
  Var y = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    auto* bn = dynamic_cast<BatchNorm2d*>(layers_[i]);
    if (bn && i + 1 < layers_.size() && is_plain_relu(layers_[i + 1]) && may_fuse(y)) {
      y = bn->forward_relu(y);  // BN then ReLU, fused where the backend can
      ++i;
    } else {
      y = (*layers_[i])(y);
    }
  }
  return y;
}

ValueId Sequential::to_graph(ExportBuilder& g, ValueId x) const {
  for (const Module* m : layers_) x = m->graph(g, x);
  return x;
}

}  // namespace tandem::train
