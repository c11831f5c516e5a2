#include "train/models/models.h"

namespace tandem::train {

std::unique_ptr<Sequential> make_resnet20(const ModelConfig& c, Rng& rng) {
  auto net = std::make_unique<Sequential>();
  net->add("conv1", std::make_unique<Conv2d>(c.channels, 16, 3, Conv2dOptions{.padding = 1, .bias = false}, rng));
  net->add("bn1", std::make_unique<BatchNorm2d>(16));
  net->add("relu", std::make_unique<Activation>(ops::Activation{ops::ActivationKind::relu}));
  resnet_body(*net, 16, {16, 32, 64}, 3, c.classes, rng);
  return net;
}

}  // namespace tandem::train
