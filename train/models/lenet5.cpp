#include "train/models/models.h"

namespace tandem::train {

std::unique_ptr<Sequential> make_lenet5(const ModelConfig& c, Rng& rng) {
  // 5x5 conv pad 2, pool /2, 5x5 conv, pool /2: 28 -> 28 -> 14 -> 10 -> 5.
  const int64_t h = (c.height / 2 - 4) / 2, w = (c.width / 2 - 4) / 2;
  check(h > 0 && w > 0, "lenet5: the input must be at least 12x12, got " + std::to_string(c.height) + "x" +
                            std::to_string(c.width));
  const ops::Activation relu{ops::ActivationKind::relu};
  auto features = std::make_unique<Sequential>();
  features->emplace<Conv2d>(c.channels, 6, 5, Conv2dOptions{.padding = 2}, rng);
  features->emplace<Activation>(relu);
  features->emplace<Pool2d>(max_pool_params(2, 2));
  features->emplace<Conv2d>(6, 16, 5, Conv2dOptions{}, rng);
  features->emplace<Activation>(relu);
  features->emplace<Pool2d>(max_pool_params(2, 2));
  auto classifier = std::make_unique<Sequential>();
  classifier->emplace<Flatten>();
  classifier->emplace<Linear>(16 * h * w, 120, true, rng);
  classifier->emplace<Activation>(relu);
  classifier->emplace<Linear>(120, 84, true, rng);
  classifier->emplace<Activation>(relu);
  classifier->emplace<Linear>(84, c.classes, true, rng);
  return features_classifier(std::move(features), std::move(classifier));
}

}  // namespace tandem::train
