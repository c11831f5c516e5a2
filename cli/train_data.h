#pragma once
// The datasets of `tandem train --data`: Debian's Fashion-MNIST, or an image
// folder in torchvision's ImageFolder layout, either
//   DIR/train/<class>/<image> with DIR/val/... or DIR/test/... (evaluated
//   after every epoch), or
//   DIR/<class>/<image> (training only, no evaluation),
// decoded by the tag pipeline's decoders and preprocessed as torchvision's
// Resize(S * 256 / 224) -> CenterCrop(S) -> Normalize(ImageNet), S =
// --image-size.
#include <memory>
#include <string>

#include "cli/train_setup.h"
#include "train/data/dataset.h"

namespace tandem::cli {

// A dataset and, with a limit, the view of its first samples.
struct Data {
  std::unique_ptr<train::Dataset> full;
  std::unique_ptr<train::Dataset> view;
  const train::Dataset& get() const { return view ? *view : *full; }
  explicit operator bool() const { return full != nullptr; }
};

struct TrainData {
  Data train, test;  // test: empty when the folder has no val/ or test/
  float fill = 0;    // a padded pixel of a random crop, normalized
};

TrainData load_train_data(const TrainCliOptions& o);

}  // namespace tandem::cli
