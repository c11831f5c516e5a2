#pragma once
// A layer's forward and backward on one input, for comparing a split layer
// (train/split) with the same layer unsplit: y, dx and every parameter's
// gradient (slices gathered into whole tensors), all as host tensors.
#include <map>
#include <string>
#include <vector>

#include "tests/tensor_compare.h"
#include "train/device_tensor.h"
#include "train/functional.h"
#include "train/layers/init.h"
#include "train/layers/module.h"
#include "train/optim/adamw.h"
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

// The split layer's run gives the whole layer's: y, dx and every parameter's
// gradient (by plain name, same shapes) within `tol` relative error.
inline void expect_same_layer_run(const LayerRun& split, const LayerRun& whole, const std::string& what,
                                  double tol) {
  EXPECT_LE(relative_error(split.y, whole.y), tol) << what << " y";
  EXPECT_LE(relative_error(split.dx, whole.dx), tol) << what << " dx";
  ASSERT_EQ(split.grads.size(), whole.grads.size()) << what;
  for (const auto& [name, g] : whole.grads) {
    ASSERT_TRUE(split.grads.count(name)) << what << " " << name;
    ASSERT_EQ(split.grads.at(name).shape(), g.shape()) << what << " " << name;
    EXPECT_LE(relative_error(split.grads.at(name), g), tol) << what << " d" << name;
  }
}

// Labels 0..9 for a batch of n (i * 7 mod 10).
inline Tensor class_labels(int64_t n) {
  std::vector<int64_t> l(static_cast<size_t>(n));
  for (size_t i = 0; i < l.size(); ++i) l[i] = int64_t(i * 7 % 10);
  return Tensor::from_vector(l, {n});
}

// Losses of `steps` AdamW steps of a Fashion-MNIST-shaped network on fixed
// random batches of 8 (seeds from `first_seed` on), on the host.
inline std::vector<double> adamw_losses(train::Module& net, int steps, uint64_t first_seed) {
  using namespace train;
  AdamW opt(net.parameters(), AdamWOptions{});
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Var loss = cross_entropy(net(Var(random_host({8, 1, 28, 28}, first_seed + uint64_t(s)))),
                             class_labels(8));
    losses.push_back(loss.value().scalar_at(0));
    backward(loss);
    opt.step();
  }
  return losses;
}

}  // namespace tandem::testing
