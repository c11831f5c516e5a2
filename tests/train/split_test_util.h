#pragma once
// A layer's forward and backward on one input, for comparing a split layer
// (train/split) with the same layer unsplit: y, dx and every parameter's
// gradient (slices gathered into whole tensors), all as host tensors.
#include <cmath>
#include <map>
#include <string>

#include "train/device_tensor.h"
#include "train/layers/init.h"
#include "train/layers/module.h"
#include "train/split/slice_names.h"

namespace tandem::testing {

struct LayerRun {
  Tensor y, dx;
  std::map<std::string, Tensor> grads;  // by plain name
};

inline Tensor random_host(const Shape& s, uint64_t seed) {
  Tensor t = Tensor::empty(DType::f32, s);
  train::Rng rng(seed);
  train::uniform_fill(t, -1, 1, rng);
  return t;
}

// y = layer(x) and the backward of sum(y * dy), x and dy uploaded to `home`.
inline LayerRun run_layer(train::Module& layer, const Tensor& x, const Tensor& dy, Device home) {
  using namespace train;
  Var xv(to_device(x, home), true);
  Var y = layer(xv);
  backward(y, to_device(dy, home));
  LayerRun r{to_host(y.value()), to_host(xv.grad()), {}};
  NamedTensors grads;
  for (Parameter* p : layer.parameters()) grads.emplace_back(p->name, p->grad);
  for (const auto& [name, g] : gather_slices(grads)) r.grads[name] = to_host(g);
  return r;
}

// ||a - b|| / ||b|| in double.
inline double rel_error(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    double d = double(a.data<float>()[i]) - double(b.data<float>()[i]);
    num += d * d;
    den += double(b.data<float>()[i]) * double(b.data<float>()[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace tandem::testing
