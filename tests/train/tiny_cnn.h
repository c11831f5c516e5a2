#pragma once
// The tiny CNN the PyTorch comparison (test_torch_cnn.cpp, with
// tiny_cnn_torch.py) and the CPU-vs-GPU comparison (tests/gpu/
// test_cuda_train_cnn.cpp) train: conv, BN, ReLU, max pool, a strided ResNet
// BasicBlock with a downsample, a dilated depthwise conv, hardswish, average
// and global pooling, flatten, linear, SiLU, dropout, linear; input
// [N, 1, H, W], 10 classes.
#include <vector>

#include "train/layers.h"

namespace tandem::testing {

inline void build_tiny_cnn(train::Sequential& net, train::Rng& rng, float dropout) {
  using namespace tandem::train;
  net.emplace<Conv2d>(1, 4, 3, Conv2dOptions{.padding = 1, .bias = false}, rng);  // BN follows: a bias gets 0
  net.emplace<BatchNorm2d>(4);
  net.emplace<Activation>(ops::Activation{ops::ActivationKind::relu});
  net.emplace<Pool2d>(max_pool_params(2, 2));
  net.emplace<BasicBlock>(4, 8, 2, rng);
  net.emplace<Conv2d>(8, 8, 3, Conv2dOptions{.padding = 2, .dilation = 2, .groups = 8}, rng);
  net.emplace<Activation>(ops::Activation{ops::ActivationKind::hard_swish});
  net.emplace<Pool2d>(avg_pool_params(3, 1, 1));
  net.emplace<GlobalAvgPool2d>();
  net.emplace<Flatten>();
  net.emplace<Linear>(8, 16, true, rng);
  net.emplace<Activation>(ops::Activation{ops::ActivationKind::silu});
  net.emplace<Dropout>(dropout, rng);
  net.emplace<Linear>(16, 10, true, rng);
}

// Two tiny CNNs with the same weights (both from `seed`), on `device`: one
// run as the reference of the other.
inline void build_tiny_cnn_twins(train::Sequential& a, train::Sequential& b, uint64_t seed,
                                 float dropout, Device device) {
  train::Rng rng_a(seed), rng_b(seed);
  build_tiny_cnn(a, rng_a, dropout);
  build_tiny_cnn(b, rng_b, dropout);
  a.to(device);
  b.to(device);
}

// Host labels (i * stride) % 10 for a batch of n.
inline Tensor tiny_cnn_labels(int64_t n, int64_t stride) {
  std::vector<int64_t> l;
  for (int64_t i = 0; i < n; ++i) l.push_back((i * stride) % 10);
  return Tensor::from_vector(l, {n});
}

}  // namespace tandem::testing
