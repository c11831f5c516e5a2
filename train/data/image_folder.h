#pragma once
// torchvision's ImageFolder: DIR/<class>/<image>, classes in sorted order
// (label = index), images sorted by path within each class; the files whose
// extension torchvision accepts (.jpg .jpeg .png .webp, and .heic/.heif that
// tandem decodes too), case-insensitively. Samples go through the tag
// pipeline's decoders (JPEG DCT-scaled to the smallest size that covers the
// resize, EXIF orientation applied) and torchvision-style preprocessing:
// Resize(resize) -> CenterCrop(crop) -> ToTensor -> Normalize(mean, std).
// Random crops and flips are the DataLoader's (train/data/augment.h).
// A file that does not decode is an Error naming it, at the batch that reads
// it; an empty folder, a folder without class folders, or a class without
// images is an Error when the dataset is opened.
#include <string>
#include <vector>

#include "image/preprocess.h"
#include "train/data/dataset.h"

namespace tandem::train {

class ImageFolder final : public Dataset {
 public:
  ImageFolder(const std::string& root, const image::PreprocessConfig& config);

  int64_t size() const override { return int64_t(files_.size()); }
  Sample get(int64_t i) const override;
  int64_t read_into(int64_t i, float* image) const override;
  Shape image_shape() const override { return {3, config_.crop, config_.crop}; }
  int64_t num_classes() const override { return int64_t(classes_.size()); }

  const std::vector<std::string>& classes() const { return classes_; }
  const std::string& path(int64_t i) const { return files_.at(size_t(i)); }

 private:
  image::PreprocessConfig config_;
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
};

}  // namespace tandem::train
