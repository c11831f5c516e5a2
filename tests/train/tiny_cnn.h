#pragma once
// The tiny CNN the PyTorch comparison (test_torch_cnn.cpp, with
// tiny_cnn_torch.py) and the CPU-vs-GPU comparison (tests/gpu/
// test_cuda_train_cnn.cpp) train: conv, BN, ReLU, max pool, a strided ResNet
// BasicBlock with a downsample, a dilated depthwise conv, hardswish, average
// and global pooling, flatten, linear, SiLU, dropout, linear; input
// [N, 1, H, W], 10 classes.
#include "train/layers.h"

namespace tandem::testing {

inline void build_tiny_cnn(train::Sequential& net, train::Rng& rng, float dropout) {
  using namespace tandem::train;
  net.emplace<Conv2d>(1, 4, 3, Conv2dOptions{.padding = 1, .bias = false}, rng);  // BN follows: a bias gets 0
  net.emplace<BatchNorm2d>(4);
  net.emplace<Activation>(EltwiseParams{EltwiseKind::relu});
  net.emplace<Pool2d>(max_pool_params(2, 2));
  net.emplace<BasicBlock>(4, 8, 2, rng);
  net.emplace<Conv2d>(8, 8, 3, Conv2dOptions{.padding = 2, .dilation = 2, .groups = 8}, rng);
  net.emplace<Activation>(EltwiseParams{EltwiseKind::hardswish});
  net.emplace<Pool2d>(avg_pool_params(3, 1, 1));
  net.emplace<GlobalAvgPool2d>();
  net.emplace<Flatten>();
  net.emplace<Linear>(8, 16, true, rng);
  net.emplace<Activation>(EltwiseParams{EltwiseKind::silu});
  net.emplace<Dropout>(dropout, rng);
  net.emplace<Linear>(16, 10, true, rng);
}

}  // namespace tandem::testing
