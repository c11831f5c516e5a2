#pragma once
// The architectures `tandem train --arch` knows, one file each, built from
// train/layers with PyTorch state_dict names, so a PyTorch twin of the same
// definition (tests/train/torch_models.py) loads their weights strictly.
#include <memory>
#include <string>
#include <vector>

#include "train/layers.h"

namespace tandem::train {

struct ModelConfig {
  int64_t channels = 1;  // input [N, channels, height, width]
  int64_t height = 28;
  int64_t width = 28;
  int64_t classes = 10;
  float dropout = 0.5f;  // the cnn's; 0 for a run compared step by step with PyTorch
};

// The small Fashion-MNIST CNN the training figures use: features = conv32-BN-ReLU-pool, conv64-BN-ReLU-pool;
// classifier = flatten, fc128, ReLU, dropout, fc(classes). 3x3 convs with
// padding 1 and bias (PyTorch's default), 2x2 max pools: H and W multiples of 4.
std::unique_ptr<Sequential> make_cnn(const ModelConfig& c, Rng& rng);
// LeCun et al. 1998 as usually written for 28x28 today: conv6 5x5 pad 2,
// ReLU, max pool 2, conv16 5x5, ReLU, max pool 2, fc120, ReLU, fc84, ReLU,
// fc(classes) (ReLU and max pooling where the paper had tanh and subsampling).
std::unique_ptr<Sequential> make_lenet5(const ModelConfig& c, Rng& rng);
// He et al. 2016's CIFAR ResNet-20 on any input size (28x28 gives stages of
// 28, 14, 7): conv16 3x3, BN, ReLU, 3 stages of 3 BasicBlocks (16, 32, 64
// channels; stride 2 entering stages 2 and 3), global average pool, fc.
// Shortcuts that change shape are 1x1 conv + BN (the paper's option B), so
// the blocks are torchvision's BasicBlock.
std::unique_ptr<Sequential> make_resnet20(const ModelConfig& c, Rng& rng);
// torchvision.models.resnet18 (conv 7x7/2, max pool 3x3/2, 4 stages of 2
// BasicBlocks of 64..512 channels, global average pool, fc) with `channels`
// input channels and `classes` outputs; any input of at least 32x32 (smaller
// ones pool down to nothing). PyTorch's default initialization, not
// torchvision's kaiming_normal_ (weights for a comparison are loaded, never
// drawn on both sides).
std::unique_ptr<Sequential> make_resnet18(const ModelConfig& c, Rng& rng);
// A small ConvNeXt (Liu et al. 2022) for 28x28-sized inputs: stem = conv
// 2x2/2 to 32 channels + LayerNorm2d; stage1 = one ConvNeXtBlock(32);
// downsample1 = LayerNorm2d + conv 2x2/2 to 64; stage2 = one
// ConvNeXtBlock(64); global average pool, flatten, LayerNorm(64), head =
// fc(classes). H and W multiples of 4. Layer norms use eps 1e-6, the layer
// scales start at 1e-6 (the paper's); weights have PyTorch's default
// initialization, not the paper's truncated normal.
std::unique_ptr<Sequential> make_convnext(const ModelConfig& c, Rng& rng);

// A ResNet after its stem (`in` channels): stages "layer1", "layer2", ...
// of `blocks` BasicBlocks each, widths[i] channels, the first stage at
// stride 1 and the others at 2 (torchvision's ResNet._make_layer), then
// avgpool (global), flatten and fc(widths.back() -> classes).
void resnet_body(Sequential& net, int64_t in, const std::vector<int64_t>& widths, int blocks, int64_t classes,
                 Rng& rng);
// A model of two parts, "features" then "classifier" (torchvision's VGG,
// AlexNet): the cnn and lenet5.
std::unique_ptr<Sequential> features_classifier(std::unique_ptr<Sequential> features,
                                                std::unique_ptr<Sequential> classifier);

// "cnn", "lenet5", "resnet20", "resnet18", "convnext".
const std::vector<std::string>& model_names();
// The architecture named `arch`; an Error listing model_names() otherwise.
std::unique_ptr<Sequential> make_model(const std::string& arch, const ModelConfig& c, Rng& rng);

}  // namespace tandem::train
