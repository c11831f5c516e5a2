#include "train/data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "image/decode.h"

namespace tandem::train {

namespace fs = std::filesystem;

namespace {

bool is_image_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (const char* e : {".jpg", ".jpeg", ".png", ".webp", ".heic", ".heif"})
    if (ext == e) return true;
  return false;
}

std::vector<fs::path> sorted_entries(const fs::path& dir, bool directories) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code type_ec;
    const bool is_dir = it->is_directory(type_ec);
    if (directories ? is_dir : (!is_dir && is_image_file(it->path()))) out.push_back(it->path());
  }
  check(!ec, "cannot list the folder: " + ec.message(), ErrorContext{dir.string(), "", "", ""});
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

ImageFolder::ImageFolder(const std::string& root, const image::PreprocessConfig& config) : config_(config) {
  const ErrorContext where{root, "", "", ""};
  image::Preprocessor check_config(config_);  // throws on a bad config
  check(fs::is_directory(root), "not a folder (an image-folder dataset is ROOT/<class>/<image>)", where);
  for (const fs::path& class_dir : sorted_entries(root, true)) {
    std::vector<fs::path> images = sorted_entries(class_dir, false);
    check(!images.empty(), "class folder without images", ErrorContext{class_dir.string(), "", "", ""});
    classes_.push_back(class_dir.filename().string());
    for (const fs::path& f : images) {
      files_.push_back(f.string());
      labels_.push_back(int64_t(classes_.size() - 1));
    }
  }
  check(!classes_.empty(), "no class folders (an image-folder dataset is ROOT/<class>/<image>)", where);
}

int64_t ImageFolder::read_into(int64_t i, float* out) const {
  check(i >= 0 && i < size(), "image-folder sample " + std::to_string(i) + " out of range");
  const std::string& file = files_[size_t(i)];
  try {
    const image::Image img = image::decode_image_file(file, config_.resize, config_.resize);
    image::Preprocessor pre(config_);
    pre.run(img, {out, pre.output_size()});
  } catch (const Error& e) {
    throw e.with_context(ErrorContext{file, "", "", ""});
  }
  return labels_[size_t(i)];
}

Sample ImageFolder::get(int64_t i) const {
  Sample s{Tensor::empty(DType::f32, image_shape()), 0};
  s.label = read_into(i, s.image.data<float>());
  return s;
}

}  // namespace tandem::train
