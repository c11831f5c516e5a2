#include "train/models/models.h"

namespace tandem::train {

namespace {

void conv_bn_relu_pool(Sequential& s, int64_t in, int64_t out, Rng& rng) {
  s.emplace<Conv2d>(in, out, 3, Conv2dOptions{.padding = 1}, rng);
  s.emplace<BatchNorm2d>(out);
  s.emplace<Activation>(ops::Activation{ops::ActivationKind::relu});
  s.emplace<Pool2d>(max_pool_params(2, 2));
}

}  // namespace

std::unique_ptr<Sequential> make_cnn(const ModelConfig& c, Rng& rng) {
  check(c.height % 4 == 0 && c.width % 4 == 0, "cnn: the input's height and width must be multiples of 4, got " +
                                                   std::to_string(c.height) + "x" + std::to_string(c.width));
  auto features = std::make_unique<Sequential>();
  conv_bn_relu_pool(*features, c.channels, 32, rng);
  conv_bn_relu_pool(*features, 32, 64, rng);
  auto classifier = std::make_unique<Sequential>();
  classifier->emplace<Flatten>();
  classifier->emplace<Linear>(64 * (c.height / 4) * (c.width / 4), 128, true, rng);
  classifier->emplace<Activation>(ops::Activation{ops::ActivationKind::relu});
  classifier->emplace<Dropout>(c.dropout, rng);
  classifier->emplace<Linear>(128, c.classes, true, rng);
  return features_classifier(std::move(features), std::move(classifier));
}

}  // namespace tandem::train
