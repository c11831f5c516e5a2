#include "train/models/models.h"

namespace tandem::train {

void resnet_body(Sequential& net, int64_t in, const std::vector<int64_t>& widths, int blocks, int64_t classes,
                 Rng& rng) {
  for (size_t i = 0; i < widths.size(); ++i) {
    auto stage = std::make_unique<Sequential>();
    for (int b = 0; b < blocks; ++b) stage->emplace<BasicBlock>(b ? widths[i] : in, widths[i], i && !b ? 2 : 1, rng);
    net.add("layer" + std::to_string(i + 1), std::move(stage));
    in = widths[i];
  }
  net.add("avgpool", std::make_unique<GlobalAvgPool2d>());
  net.add("flatten", std::make_unique<Flatten>());
  net.add("fc", std::make_unique<Linear>(in, classes, true, rng));
}

std::unique_ptr<Sequential> features_classifier(std::unique_ptr<Sequential> features,
                                                std::unique_ptr<Sequential> classifier) {
  auto net = std::make_unique<Sequential>();
  net->add("features", std::move(features));
  net->add("classifier", std::move(classifier));
  return net;
}

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names{"cnn", "lenet5", "resnet20", "resnet18", "convnext"};
  return names;
}

std::unique_ptr<Sequential> make_model(const std::string& arch, const ModelConfig& c, Rng& rng) {
  check(c.channels > 0 && c.height > 0 && c.width > 0 && c.classes > 0,
        "model '" + arch + "' needs a positive input shape and class count");
  if (arch == "cnn") return make_cnn(c, rng);
  if (arch == "lenet5") return make_lenet5(c, rng);
  if (arch == "resnet20") return make_resnet20(c, rng);
  if (arch == "resnet18") return make_resnet18(c, rng);
  if (arch == "convnext") return make_convnext(c, rng);
  std::string known;
  for (const std::string& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown architecture '" + arch + "' (known: " + known + ")");
}

}  // namespace tandem::train
