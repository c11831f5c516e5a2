#include "cli/train_data.h"

#include <cmath>
#include <filesystem>

#include "train/data/fashion_mnist.h"
#include "train/data/image_folder.h"
#include "train/data/subset.h"

namespace tandem::cli {

namespace {

namespace fs = std::filesystem;

Data limited(std::unique_ptr<train::Dataset> full, int64_t limit) {
  Data d{std::move(full), nullptr};
  if (limit > 0) d.view = std::make_unique<train::Prefix>(*d.full, std::min(limit, d.full->size()));
  return d;
}

TrainData fashion_mnist(const TrainCliOptions& o) {
  using train::FashionMnist;
  TrainData d;
  d.train = limited(std::make_unique<FashionMnist>(FashionMnist::load(train::Split::train)), o.limit_train);
  d.test = limited(std::make_unique<FashionMnist>(FashionMnist::load(train::Split::test)), o.limit_test);
  d.fill = -FashionMnist::kMean / FashionMnist::kStd;
  return d;
}

TrainData image_folder(const TrainCliOptions& o) {
  image::PreprocessConfig config;
  config.crop = int(o.image_size);
  config.resize = int(std::lround(double(o.image_size) * 256.0 / 224.0));
  const fs::path root(o.data);
  fs::path train_dir = root, test_dir;
  if (fs::is_directory(root / "train")) {
    train_dir = root / "train";
    for (const char* name : {"val", "test"})
      if (test_dir.empty() && fs::is_directory(root / name)) test_dir = root / name;
  }
  TrainData d;
  d.train = limited(std::make_unique<train::ImageFolder>(train_dir.string(), config), o.limit_train);
  if (!test_dir.empty()) {
    auto test = std::make_unique<train::ImageFolder>(test_dir.string(), config);
    const auto& want = static_cast<const train::ImageFolder&>(*d.train.full).classes();
    check(test->classes() == want, "the class folders of " + test_dir.string() + " differ from " + train_dir.string() +
                                       "'s (labels would not match)");
    d.test = limited(std::move(test), o.limit_test);
  }
  // A black pixel normalized by ImageNet's statistics is not one value per
  // channel; the augmentation pads with one, so pad with the mean colour.
  d.fill = 0;
  return d;
}

}  // namespace

TrainData load_train_data(const TrainCliOptions& o) {
  return o.data == "fashion-mnist" ? fashion_mnist(o) : image_folder(o);
}

}  // namespace tandem::cli
