#include "train/models/models.h"

namespace tandem::train {

std::unique_ptr<Sequential> make_resnet18(const ModelConfig& c, Rng& rng) {
  check(c.height >= 32 && c.width >= 32, "resnet18: the input must be at least 32x32 (it is downsampled 32x), got " +
                                             std::to_string(c.height) + "x" + std::to_string(c.width));
  auto net = std::make_unique<Sequential>();
  Conv2dOptions stem{.stride = 2, .padding = 3, .bias = false};
  net->add("conv1", std::make_unique<Conv2d>(c.channels, 64, 7, stem, rng));
  net->add("bn1", std::make_unique<BatchNorm2d>(64));
  net->add("relu", std::make_unique<Activation>(ops::Activation{ops::ActivationKind::relu}));
  net->add("maxpool", std::make_unique<Pool2d>(max_pool_params(3, 2, 1)));
  resnet_body(*net, 64, {64, 128, 256, 512}, 2, c.classes, rng);
  return net;
}

}  // namespace tandem::train
