#include "train/models/models.h"

namespace tandem::train {

namespace {

// ConvNeXt's downsampling: LayerNorm over the channels, then a 2x2 conv of stride 2.
std::unique_ptr<Sequential> downsample(int64_t in, int64_t out, Rng& rng) {
  auto s = std::make_unique<Sequential>();
  s->emplace<LayerNorm2d>(in, 1e-6f);
  s->emplace<Conv2d>(in, out, 2, Conv2dOptions{.stride = 2}, rng);
  return s;
}

}  // namespace

std::unique_ptr<Sequential> make_convnext(const ModelConfig& c, Rng& rng) {
  check(c.height % 4 == 0 && c.width % 4 == 0,
        "convnext halves the input twice: height and width must be multiples of 4, got " +
            std::to_string(c.height) + "x" + std::to_string(c.width));
  const std::vector<int64_t> dims{32, 64};
  auto net = std::make_unique<Sequential>();
  auto stem = std::make_unique<Sequential>();
  stem->emplace<Conv2d>(c.channels, dims[0], 2, Conv2dOptions{.stride = 2}, rng);
  stem->emplace<LayerNorm2d>(dims[0], 1e-6f);
  net->add("stem", std::move(stem));
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) net->add("downsample" + std::to_string(i), downsample(dims[i - 1], dims[i], rng));
    auto stage = std::make_unique<Sequential>();
    stage->emplace<ConvNeXtBlock>(dims[i], rng);
    net->add("stage" + std::to_string(i + 1), std::move(stage));
  }
  net->add("avgpool", std::make_unique<GlobalAvgPool2d>());
  net->add("flatten", std::make_unique<Flatten>());
  net->add("norm", std::make_unique<LayerNorm>(dims.back(), 1e-6f));
  net->add("head", std::make_unique<Linear>(dims.back(), c.classes, true, rng));
  return net;
}

}  // namespace tandem::train
